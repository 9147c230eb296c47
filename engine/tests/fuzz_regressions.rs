//! Inputs the fuzzer (`scripts/fuzz.sh`) found failing, kept so the bugs stay fixed. Each file is what the
//! fuzz target takes: two bytes of options (`common/fuzz_input.rs`), then the module's bytes. The same properties as the target's
//! are checked: no panic, a result or a reason, deterministic output that parses again, and valid output
//! (spirv-val) wherever the input is valid.

mod common;

use blackbox_engine::{instrument, needs_instrumentation, shader_info, Options};
use common::{env_for_version, validate_all, write_words, ValJob};
use std::path::Path;

include!("common/fuzz_input.rs");

/// Checks one finding; returns the input and output modules when it instruments, for validation.
fn check(data: &[u8]) -> Option<(Vec<u32>, Vec<u32>)> {
    let (options, words) = fuzz_input(data)?;
    let _ = shader_info(&words);
    let _ = needs_instrumentation(&words, &options);
    let out = instrument(&words, &options).ok()?;
    assert_eq!(
        instrument(&words, &options).ok().as_ref(),
        Some(&out),
        "deterministic"
    );
    shader_info(&out.words).expect("instrumented output parses");
    Some((words, out.words))
}

#[test]
fn every_kept_fuzzer_finding_passes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/fuzz")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no findings in {}", dir.display());
    let scratch = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fuzz_regressions");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut jobs = Vec::new();
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} panics", file.display());
        if let Ok(Some((input, output))) = outcome {
            let stem = file.file_stem().unwrap().to_string_lossy();
            for (suffix, words) in [("in", &input), ("out", &output)] {
                let path = scratch.join(format!("{stem}.{suffix}.spv"));
                write_words(&path, words);
                let env = env_for_version(&input).to_string();
                jobs.push(ValJob { path, env });
            }
        }
    }
    let results = validate_all(&jobs);
    for (pair, result) in jobs.chunks(2).zip(results.chunks(2)) {
        if result[0].is_none() {
            assert!(
                result[1].is_none(),
                "{} is valid but its instrumented output is not: {}",
                pair[0].path.display(),
                result[1].as_deref().unwrap_or_default()
            );
        }
    }
}

#[test]
fn an_ext_inst_import_without_a_name_is_no_instruction_set() {
    // Found by the fuzzer: OpExtInstImport with a word count of 1 made the quick scan slice past its end.
    let mut words = vec![blackbox_engine::module::MAGIC, 0x0001_0000, 0, 10, 0];
    words.push(1 << 16 | spirv::Op::ExtInstImport as u32);
    assert!(!needs_instrumentation(&words, &Options::default()));
}
