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

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use blackbox_engine::module::Module;
use blackbox_engine::record::BufferLayout;
use blackbox_engine::{instrument, ClockScope, LoopClock, LoopMode, NanLevel, Options};
use spirv::{Op, StorageClass};

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

/// The error buffer's sizes as the layer has them (`shader_errors::LAYOUT`).
const LAYOUT: BufferLayout = BufferLayout {
    counter_count: 64 * 1024,
    records_capacity: 1024 * 1024,
};

/// NaN checks of operations whose records are kept to the invocation's end, the buffer's sizes baked in:
/// what the layer gives CPU devices.
#[test]
fn instrumented_modules_pass_spirv_val() {
    let options = Options {
        error_buffer_address: 0x0000_7f00_1234_5000,
        site_base: 100,
        nan: NanLevel::Ops,
        buffer_layout: Some(LAYOUT),
        ..Options::default()
    };
    instrumented_modules_pass_spirv_val_with(&options, "shared_corpus");
}

/// Loop budgets at `break` (the rewrite of every loop header's branch) with a clock, integer checks, and
/// NaN checks of operations whose records are written where they fire, the buffer's sizes read from its
/// header (as the layer has them on GPUs): the glslang and DXC loops of the corpus.
#[test]
fn loop_budgets_integer_checks_and_immediate_nan_records_pass_spirv_val() {
    let options = Options {
        error_buffer_address: 0x0000_7f00_1234_5000,
        site_base: 100,
        nan: NanLevel::Ops,
        records_at_end: false,
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

/// Whether a module writes floats out of the invocation, judged from the module alone rather than by the
/// engine's NaN pass: an `OpStore`, `OpCopyMemory`, `OpImageWrite` or float atomic into memory the
/// invocation does not own (outputs, buffers, images, ray-tracing and task payloads), whose value or
/// pointee type holds a float, or whose integer value is an `OpBitcast` of a float; or an
/// `OpReportIntersectionKHR` (its hit distance is a float).
fn writes_floats(module: &Module) -> bool {
    #[derive(Clone)]
    enum T {
        Float,
        Pointer(StorageClass, u32),
        Composite(Vec<u32>),
        Other,
    }
    let mut types: HashMap<u32, T> = HashMap::new();
    for i in &module.globals {
        let (Some(op), Some(id)) = (i.op(), i.result_id) else {
            continue;
        };
        let o = &i.operands;
        let t = match op {
            Op::TypeFloat => T::Float,
            Op::TypeVector | Op::TypeMatrix | Op::TypeArray | Op::TypeRuntimeArray => {
                T::Composite(vec![o[0]])
            }
            Op::TypeStruct => T::Composite(o.to_vec()),
            Op::TypePointer => match StorageClass::from_u32(o[0]) {
                Some(s) => T::Pointer(s, o[1]),
                None => T::Other,
            },
            _ => T::Other,
        };
        types.insert(id, t);
    }
    fn has_float(types: &HashMap<u32, T>, ty: u32, depth: usize) -> bool {
        match types.get(&ty) {
            Some(T::Float) => true,
            Some(T::Composite(parts)) if depth < 8 => {
                parts.iter().any(|&p| has_float(types, p, depth + 1))
            }
            _ => false,
        }
    }
    let mut value_type: HashMap<u32, u32> = HashMap::new();
    let mut bitcast_of: HashMap<u32, u32> = HashMap::new();
    let all = module
        .globals
        .iter()
        .chain(module.functions.iter().flat_map(|f| {
            f.params
                .iter()
                .chain(f.blocks.iter().flat_map(|b| b.instructions.iter()))
        }));
    for i in all.clone() {
        if let (Some(t), Some(id)) = (i.result_type, i.result_id) {
            value_type.insert(id, t);
            if i.is(Op::Bitcast) {
                bitcast_of.insert(id, i.operands[0]);
            }
        }
    }
    let float_value = |v: u32| {
        let direct = value_type.get(&v).is_some_and(|&t| has_float(&types, t, 0));
        let bits = bitcast_of
            .get(&v)
            .and_then(|s| value_type.get(s))
            .is_some_and(|&t| has_float(&types, t, 0));
        direct || bits
    };
    let out_of_invocation = |pointer: u32| {
        use StorageClass as S;
        match value_type.get(&pointer).and_then(|t| types.get(t)) {
            Some(T::Pointer(s, pointee)) => {
                let leaves = matches!(
                    s,
                    S::Output
                        | S::StorageBuffer
                        | S::PhysicalStorageBuffer
                        | S::Uniform
                        | S::Image
                        | S::RayPayloadKHR
                        | S::IncomingRayPayloadKHR
                        | S::CallableDataKHR
                        | S::IncomingCallableDataKHR
                        | S::HitAttributeKHR
                        | S::TaskPayloadWorkgroupEXT
                );
                leaves.then_some(*pointee)
            }
            _ => None,
        }
    };
    for i in all {
        let o = &i.operands;
        let writes = match i.op() {
            Some(Op::Store) => out_of_invocation(o[0]).is_some() && float_value(o[1]),
            Some(Op::CopyMemory) => {
                out_of_invocation(o[0]).is_some_and(|pointee| has_float(&types, pointee, 0))
            }
            Some(Op::ImageWrite) => float_value(o[2]),
            Some(Op::AtomicFAddEXT | Op::AtomicFMinEXT | Op::AtomicFMaxEXT) => {
                out_of_invocation(o[0]).is_some()
            }
            Some(Op::ReportIntersectionKHR) => true,
            _ => false,
        };
        if writes {
            return true;
        }
    }
    false
}

fn is_ray_tracing_or_mesh(name: &str) -> bool {
    [
        ".rgen.", ".rchit.", ".rmiss.", ".rahit.", ".rint.", ".rcall.", ".mesh.", ".task.",
    ]
    .iter()
    .any(|s| name.contains(s))
}

/// Issue 11: a module is left without NaN-output sites only when it writes no float out of the
/// invocation. The ray-tracing modules (which write floats only into payloads) and the mesh and task
/// modules included; those that write no float are named.
#[test]
fn every_module_that_writes_floats_has_nan_output_sites() {
    let options = Options {
        nan: NanLevel::Outputs,
        asserts: false,
        printf: false,
        ..Options::default()
    };
    let mut uninstrumented = Vec::new();
    let mut no_float_writes = Vec::new();
    let mut ray_tracing_or_mesh = 0;
    for path in corpus_files() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let words = common::read_words(&path);
        let module = Module::parse(&words).expect("the corpus parses");
        if !writes_floats(&module) {
            no_float_writes.push(name);
            continue;
        }
        if is_ray_tracing_or_mesh(&name) {
            ray_tracing_or_mesh += 1;
        }
        match instrument(&words, &options) {
            Ok(out) if !out.info.sites.is_empty() => {}
            Ok(_) => uninstrumented.push(format!("{name}: no site")),
            Err(e) => uninstrumented.push(format!("{name}: {e}")),
        }
    }
    println!(
        "{} modules write no float out of the invocation: {}",
        no_float_writes.len(),
        no_float_writes.join(", ")
    );
    println!("{ray_tracing_or_mesh} ray-tracing, mesh and task modules write floats");
    assert!(
        uninstrumented.is_empty(),
        "modules that write floats but have no NaN-output site:\n{}",
        uninstrumented.join("\n")
    );
    assert!(ray_tracing_or_mesh >= 50, "{ray_tracing_or_mesh}");
    // The oracle is not blind: few modules write no float.
    assert!(no_float_writes.len() < 20, "{no_float_writes:?}");
}

/// No two sites of a module read alike at any level, and each site's instruction is a line of
/// `spirv-dis --raw-id` of the module: the shared corpus has no debug info, so its sites are named by
/// instruction and function.
#[test]
fn site_descriptions_are_unique_and_name_real_instructions() {
    let files = corpus_files();
    let disassemblies = common::raw_disassembly_lines(&files);
    let mut sites = 0;
    for (path, lines) in files.iter().zip(&disassemblies) {
        let words = common::read_words(path);
        for nan in NanLevel::ALL {
            let options = Options {
                nan,
                ..Options::default()
            };
            let Ok(out) = instrument(&words, &options) else {
                continue;
            };
            let mut seen = HashSet::new();
            for s in &out.info.sites {
                sites += 1;
                let d = s.describe();
                assert!(
                    seen.insert(d.clone()),
                    "{} at NaN {nan}: two sites read {d:?}",
                    path.display()
                );
                assert!(
                    lines.as_ref().is_none_or(|l| l.contains(&s.instruction)),
                    "{}: site {} names {:?}, not a line of spirv-dis --raw-id",
                    path.display(),
                    s.local_index,
                    s.instruction
                );
            }
        }
    }
    let unread = disassemblies.iter().filter(|d| d.is_none()).count();
    assert!(
        unread < 5,
        "spirv-dis read only {} modules",
        files.len() - unread
    );
    assert!(sites > 4000, "{sites}");
}
