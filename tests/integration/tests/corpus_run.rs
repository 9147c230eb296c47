//! The compute and fragment shaders of the engine's hand-written corpus (`engine/tests/in/`, GLSL and HLSL)
//! run on lavapipe through bb-testapp's `spirv-run`, which binds whatever buffers, images and samplers each
//! declares (and gives a fragment shader a vertex shader matching its inputs): every module gives the same
//! bits without Blackbox and with it, at its defaults (asserts and printf) and with NaN checks of outputs;
//! with NaN checks of operations all but two do. Each source is compiled as SPIR-V 1.0 and 1.6 (compute:
//! `LocalSizeId`), with `-g`, with `-gVS` (GLSL) and through `spirv-opt -O`. The other stages are validated
//! by the engine's tests, not run: each would need a harness of its own.
//!
//! One exception, lavapipe's, shown by the runs below:
//! - `blur.comp.hlsl` at NaN `ops`: differences of 1-2 ulps in 41% of its output components. The checks add uses of the
//!   products and `exp` results, and the driver then evaluates the arithmetic differently, as SPIR-V allows
//!   without `NoContraction`. It must run and report no NaN.

use blackbox_integration::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Compiles every compute and fragment source of `engine/tests/in` into `dir`; returns the files.
fn compile(dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).unwrap();
    let sources = workspace_root().join("engine/tests/in");
    let includes = format!("-I{}", workspace_root().join("shaders").display());
    let spirv_opt = workspace_root().join(".venv/bin/spirv-opt");
    assert!(
        spirv_opt.is_file(),
        "{} missing: run scripts/setup.sh",
        spirv_opt.display()
    );
    let mut names: Vec<String> = std::fs::read_dir(&sources)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            [".comp", ".comp.hlsl", ".frag", ".frag.hlsl"]
                .iter()
                .any(|e| n.ends_with(e))
        })
        // The loop-budget and integer-check fixtures divide by zero, shift past the width and index out of
        // range on purpose (undefined results, nothing to compare), and loop on push constants spirv-run
        // leaves at 0; tests/loops.rs runs those checks end to end instead.
        .filter(|n| !n.starts_with("int_ub.") && !n.starts_with("loops."))
        // What spirv-run cannot bind: an r32ui storage image (bitcast.comp) and float atomics, a feature it
        // does not enable (atomic_float.comp). shader_errors.rs runs their NaN checks end to end.
        .filter(|n| !["bitcast.comp", "atomic_float.comp"].contains(&n.as_str()))
        .collect();
    names.sort();
    let mut files = Vec::new();
    for name in &names {
        let hlsl = name.ends_with(".hlsl");
        let text = std::fs::read_to_string(sources.join(name)).unwrap();
        // `bb-envs:` restricts the environments (coherent.comp needs the Vulkan memory model of 1.1+).
        let low = if text.contains("bb-envs: vulkan1.1") {
            "vulkan1.1"
        } else {
            "vulkan1.0"
        };
        let mut specs = vec![
            (low, ""),
            (low, "-g"),
            ("vulkan1.3", ""),
            ("vulkan1.3", "-g"),
        ];
        if !hlsl {
            specs.push(("vulkan1.3", "-gVS"));
        }
        for (env, debug) in specs {
            let out = dir.join(format!("{name}.{env}{debug}.spv"));
            let mut args = vec!["-V", "--target-env", env, &includes];
            if !debug.is_empty() {
                args.push(debug);
            }
            if hlsl {
                let stage = if name.contains(".frag") {
                    "frag"
                } else {
                    "comp"
                };
                args.extend(["-D", "-e", "main", "-S", stage]);
            }
            glslang(&sources, &args, name, &out);
            files.push(out.clone());
            if debug.is_empty() {
                let optimized = dir.join(format!("{name}.{env}.O.spv"));
                let status = Command::new(&spirv_opt)
                    .args(["-O", &format!("--target-env={env}")])
                    .arg(&out)
                    .arg("-o")
                    .arg(&optimized)
                    .status()
                    .expect("spirv-opt");
                assert!(status.success(), "spirv-opt -O {}", out.display());
                files.push(optimized);
            }
        }
    }
    files
}

/// `spirv <file> checksum <sum>` lines; panics on a `skipped` line (every module here must run).
fn checksums(run: &Run) -> BTreeMap<String, String> {
    let mut sums = BTreeMap::new();
    for line in run.stdout.lines() {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            ["spirv", name, "checksum", sum] => {
                sums.insert(name.to_string(), sum.to_string());
            }
            ["spirv", name, "skipped:", ..] => panic!("{name} was not run: {line}\n{}", run.dump()),
            _ => {}
        }
    }
    sums
}

/// Runs `files` without Blackbox (`vars` None, the validation layer on) or with it and `vars`. A run with
/// Blackbox adds no validation message to those of `reference` (the same files without it, when given:
/// best practices reports some of these shaders by itself, e.g. glslang's `WorkgroupSize`).
fn run_files(
    home: &TempDir,
    files: &[&PathBuf],
    vars: Option<&[(&str, &str)]>,
    reference: Option<&Run>,
) -> Run {
    let mut cmd = match vars {
        None => {
            let mut cmd = vulkan_command(testapp(), home.path());
            cmd.env("VK_INSTANCE_LAYERS", VALIDATION);
            cmd
        }
        Some(vars) => testapp_with_blackbox(home, &[], vars),
    };
    cmd.arg("spirv-run");
    for f in files {
        cmd.arg("--spirv").arg(f);
    }
    let run = run(&mut cmd);
    run.assert_validation_on();
    run.assert_testapp_finished();
    if let Some(reference) = reference {
        run.assert_validation_messages_unchanged(reference);
    }
    assert_eq!(checksums(&run).len(), files.len(), "{}", run.dump());
    run
}

/// An environment variable for Blackbox.
type Var<'a> = (&'a str, &'a str);

fn is(file: &str, source: &str) -> bool {
    file.starts_with(&format!("{source}."))
}

#[test]
fn hand_written_compute_and_fragment_shaders_give_the_same_bits_with_blackbox() {
    let home = TempDir::new("corpus-run");
    let files = compile(&home.path().join("spv"));
    assert!(files.len() >= 50, "{} modules", files.len());
    let all: Vec<&PathBuf> = files.iter().collect();
    let alone = run_files(&home, &all, None, None);
    let reference = checksums(&alone);
    let name = |f: &PathBuf| f.file_name().unwrap().to_string_lossy().into_owned();
    // precision.comp passes an f16 `pow` to debugPrintfEXT: the printf and the pow run through Blackbox.
    assert!(all.iter().any(|f| is(&name(f), "precision.comp")));
    // The three runs through Blackbox at once: each is one process compiling one pipeline at a time, and CI
    // has two cores.
    let settings: [&[Var]; 3] = [
        &[],
        &[("VK_BLACKBOX_NAN", "outputs")],
        &[("VK_BLACKBOX_NAN", "ops")],
    ];
    let runs: Vec<Run> = std::thread::scope(|scope| {
        let started: Vec<_> = settings
            .iter()
            .map(|vars| scope.spawn(|| run_files(&home, &all, Some(vars), Some(&alone))))
            .collect();
        started
            .into_iter()
            .map(|run| run.join().expect("a run through Blackbox"))
            .collect()
    });
    let [defaults, outputs, run]: [Run; 3] = runs.try_into().ok().expect("three runs");
    for (vars, other) in settings.iter().zip([&defaults, &outputs]) {
        for (file, sum) in checksums(other) {
            assert_eq!(
                Some(&sum),
                reference.get(&file),
                "{file} {vars:?}\n{}",
                other.dump()
            );
        }
    }

    let mut compared = 0;
    for (file, sum) in checksums(&run) {
        if is(&file, "blur.comp.hlsl") {
            continue;
        }
        assert_eq!(
            Some(&sum),
            reference.get(&file),
            "{file} NaN ops\n{}",
            run.dump()
        );
        compared += 1;
    }
    assert!(compared >= 40, "{compared} modules compared at NaN ops");
    let nan_reports: Vec<&str> = run
        .warnings()
        .into_iter()
        .filter(|w| w.contains("blur.comp.hlsl") && w.contains("NaN"))
        .collect();
    assert!(nan_reports.is_empty(), "{nan_reports:#?}");
}
