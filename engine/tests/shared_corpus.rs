//! The engine over the shared real-world corpus (656 glslang and DXC modules of the SaschaWillems Vulkan
//! samples, every stage): every module round-trips word for word, and its instrumented form (NaN checks at
//! the `ops` level, asserts and printf; and loop budgets at `break` with a clock and integer checks)
//! passes spirv-val wherever the input does.
//!
//! The corpus is found at `$BLACKBOX_SHARED_CORPUS`, else `<workspace>/../shared/corpus/spv`; the test fails
//! when it is missing. It lives outside this repository, so this target is opt-in (`test = false` in
//! Cargo.toml): `cargo test -p blackbox-engine --test shared_corpus`, which scripts/test.sh runs when the
//! corpus is there.

mod common;

use std::path::PathBuf;
use std::time::Instant;

use blackbox_engine::module::Module;
use blackbox_engine::{instrument, ClockScope, LoopClock, LoopMode, NanLevel, Options};

fn corpus_dir() -> PathBuf {
    let dir = match std::env::var_os("BLACKBOX_SHARED_CORPUS") {
        Some(p) => PathBuf::from(p),
        None => common::workspace().join("../shared/corpus/spv"),
    };
    assert!(
        dir.is_dir(),
        "shared corpus not found at {} (set BLACKBOX_SHARED_CORPUS to its spv/ directory)",
        dir.display()
    );
    dir
}

fn corpus_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("reading the corpus directory")
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "spv"))
        .collect();
    files.sort();
    assert!(
        files.len() > 100,
        "expected hundreds of modules in the shared corpus, found {}",
        files.len()
    );
    files
}

#[test]
fn every_module_round_trips() {
    let files = corpus_files();
    let mut bytes = 0usize;
    let start = Instant::now();
    for path in &files {
        let words = common::read_words(path);
        bytes += words.len() * 4;
        let module = Module::parse(&words).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            module.to_words() == words,
            "{} does not round-trip",
            path.display()
        );
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "round trip: {} modules, {:.1} MB, {:.1} MB/s",
        files.len(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs
    );
}

#[test]
fn instrumented_modules_pass_spirv_val() {
    let options = Options {
        error_buffer_address: 0x0000_7f00_1234_5000,
        site_base: 100,
        nan: NanLevel::Ops,
        ..Options::default()
    };
    instrumented_modules_pass_spirv_val_with(&options, "shared_corpus");
}

/// Loop budgets at `break` (the rewrite of every loop header's branch) with a clock, and integer checks:
/// the glslang and DXC loops of the corpus.
#[test]
fn loop_budgets_and_integer_checks_pass_spirv_val() {
    let options = Options {
        error_buffer_address: 0x0000_7f00_1234_5000,
        site_base: 100,
        loops: LoopMode::Break,
        loop_clock: Some(LoopClock {
            scope: ClockScope::Device,
            budget_ticks: 1 << 33,
        }),
        int_checks: true,
        ..Options::default()
    };
    instrumented_modules_pass_spirv_val_with(&options, "shared_corpus_loops");
}

fn instrumented_modules_pass_spirv_val_with(options: &Options, out: &str) {
    let files = corpus_files();
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(out);
    std::fs::create_dir_all(&out_dir).expect("creating the output directory");
    let mut jobs = Vec::new();
    let mut outputs = Vec::new();
    let mut refused: Vec<(String, String)> = Vec::new();
    let mut bytes = 0usize;
    let mut sites = 0usize;
    let mut engine_time = 0.0f64;
    for path in &files {
        let words = common::read_words(path);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        jobs.push(common::ValJob {
            path: path.clone(),
            env: "vulkan1.3".into(),
        });
        let start = Instant::now();
        let result = instrument(&words, options);
        engine_time += start.elapsed().as_secs_f64();
        bytes += words.len() * 4;
        match result {
            Ok(out) => {
                sites += out.info.sites.len();
                let out_path = out_dir.join(&name);
                common::write_words(&out_path, &out.words);
                outputs.push(Some(jobs.len()));
                jobs.push(common::ValJob {
                    path: out_path,
                    env: "vulkan1.3".into(),
                });
            }
            Err(e) => {
                outputs.push(None);
                refused.push((name, e.to_string()));
            }
        }
    }
    let results = common::validate_all(&jobs);
    let mut input_valid = 0;
    let mut failures = Vec::new();
    let mut input_index = 0;
    for (i, path) in files.iter().enumerate() {
        let input_ok = results[input_index].is_none();
        input_index += 1;
        if let Some(out_index) = outputs[i] {
            input_index += 1;
            if input_ok {
                input_valid += 1;
                if let Some(err) = &results[out_index] {
                    failures.push(format!(
                        "{}: {}",
                        path.display(),
                        err.lines().take(3).collect::<Vec<_>>().join(" | ")
                    ));
                }
            }
        } else if input_ok {
            input_valid += 1;
        }
    }
    println!(
        "shared corpus: {} modules ({} valid inputs), {} instrumented with {} sites, {} refused, {} failed \
         spirv-val; engine {:.1} MB/s",
        files.len(),
        input_valid,
        files.len() - refused.len(),
        sites,
        refused.len(),
        failures.len(),
        bytes as f64 / 1e6 / engine_time.max(1e-9)
    );
    for (name, reason) in &refused {
        println!("  refused {name}: {reason}");
    }
    for f in failures.iter().take(20) {
        println!("  INVALID {f}");
    }
    assert!(
        failures.is_empty(),
        "{} instrumented modules fail spirv-val",
        failures.len()
    );
}
