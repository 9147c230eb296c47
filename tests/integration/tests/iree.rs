//! IREE's compiler (the pinned `iree-base-compiler` from PyPI, in `.venv-apps/`): an MLIR-based compiler
//! that lowers ML kernels to SPIR-V of its own shape, which no other test's compiler makes (its math
//! expanded into polynomials and selects, subgroup reductions, workgroup memory; no debug information).
//! IREE's runtime refuses llvmpipe by name, so bb-testapp's `spirv-run` runs the kernels it compiles
//! (`apps/iree_kernels.mlir`) on lavapipe, each once with the buffers it declares: without Blackbox, then
//! through it at the defaults, NaN `outputs` and NaN `ops`, with the validation layer below. The same
//! results and every validation id as often; the NaNs five kernels make and the Infs of an `exp` seen where
//! they are stored, and at `ops` named where they start (among them the select of IREE's NaN constant in
//! its `log` of negative inputs, the division of 0 by 0 in its `atan2(0, 0)`, and the product by a power
//! of two built from bits where its `exp` overflows); the -Inf of its `pow`'s `log(0)`, a step to
//! `pow(0, b) = 0`, and the 0 / 0 its `expm1(0)` throws away, no line.

use blackbox_integration::*;
use std::path::PathBuf;
use std::process::Command;

/// IREE's compiler in `.venv-apps/`, where scripts/setup.sh installs it.
fn iree_compile() -> PathBuf {
    installed_by_setup(
        ".venv-apps/bin/iree-compile",
        "IREE's compiler into .venv-apps",
    )
}

/// IREE 3.1 labels its modules SPIR-V 1.0 or 1.3 while what they hold is SPIR-V 1.4: `NoSignedWrap` on
/// integer arithmetic and every global variable in the entry point's interface, both errors below 1.4.
/// Drivers take such a module; spirv-val stops at its first error, so the validation layer below Blackbox
/// would check nothing else. Each module is labelled 1.4 (a valid module then, spirv-val says), so that
/// the validation layer checks the whole of it, as Blackbox gives it on.
fn label_spirv_1_4(module: &mut [u8]) {
    const SPIRV_1_4: u32 = 0x0001_0400;
    let version = u32::from_le_bytes(module[4..8].try_into().expect("a SPIR-V header"));
    module[4..8].copy_from_slice(&version.max(SPIRV_1_4).to_le_bytes());
}

/// Compiles the kernels for a Vulkan target and returns the SPIR-V modules IREE made, sorted by name, each
/// labelled with the SPIR-V version it is (see [`label_spirv_1_4`]).
fn compiled_kernels(home: &TempDir) -> Vec<PathBuf> {
    let dump = home.path().join("executables");
    let vmfb = home.path().join("kernels.vmfb");
    let mut compile = Command::new(iree_compile());
    compile
        .arg("--iree-hal-target-device=vulkan")
        .arg("--iree-vulkan-target=valhall")
        .arg(format!(
            "--iree-hal-dump-executable-binaries-to={}",
            dump.display()
        ))
        .arg(workspace_root().join("tests/integration/apps/iree_kernels.mlir"))
        .arg("-o")
        .arg(&vmfb);
    run(&mut compile).assert_success();
    let mut modules: Vec<PathBuf> = std::fs::read_dir(&dump)
        .expect("IREE's executables")
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "spv"))
        .collect();
    modules.sort();
    for path in &modules {
        let mut module = std::fs::read(path).expect("reading a kernel");
        label_spirv_1_4(&mut module);
        std::fs::write(path, module).expect("writing a kernel");
    }
    modules
}

/// `cmd` with llvmpipe running the workgroups of a dispatch one after another (`LP_NUM_THREADS=1`).
/// spirv-run launches a 64x64 grid for 2D workgroups, where IREE's matmul expects 2 workgroups in x: the
/// rest write over other rows of its output (`8 * WorkgroupId.x + LocalInvocationId.x` past the row's 16
/// vectors) with other values, a write-write race whose winner changes with how llvmpipe's threads
/// interleave. Without any layer its checksum came out two ways (19 runs and 1 in 20), and once a run
/// through Blackbox differed from the one without it on a fresh machine. In one thread the same values win
/// in every run (30 runs of 30 gave one checksum, as with `LP_NUM_THREADS=0`).
fn one_thread(cmd: &mut Command) -> &mut Command {
    cmd.env("LP_NUM_THREADS", "1")
}

/// The `spirv <file> checksum <hex>` lines of a spirv-run, and its scenario checksum.
fn results(run: &Run) -> Vec<String> {
    run.stdout
        .lines()
        .filter(|l| l.starts_with("spirv ") || l.starts_with("scenario "))
        .map(str::to_owned)
        .collect()
}

/// The kernels of `apps/iree_kernels.mlir`, and those whose NaNs or Infs reach memory with the inputs
/// spirv-run gives them (the same pattern in both buffers: some zeros, negatives, values past 1).
const KERNELS: [&str; 10] = [
    "acos",
    "atan2",
    "elementwise",
    "exp",
    "expm1",
    "log1p",
    "matmul",
    "pow",
    "rsqrt",
    "softmax",
];
const STORING: [&str; 6] = ["acos", "atan2", "elementwise", "exp", "log1p", "rsqrt"];

#[test]
fn iree_kernels_compute_the_same_and_their_nans_are_named_where_they_start() {
    let home = TempDir::new("iree");
    let modules = compiled_kernels(&home);
    let names: Vec<String> = modules
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), KERNELS.len(), "IREE made {names:?}");
    let mut args = vec!["spirv-run".to_string()];
    for m in &modules {
        args.extend(["--spirv".to_string(), m.display().to_string()]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let reference = run(one_thread(&mut testapp_with_validation_only(&home, &args)));
    reference.assert_success().assert_validation_on();
    let expected = results(&reference);
    assert_eq!(
        expected.iter().filter(|l| l.contains(" checksum ")).count(),
        KERNELS.len() + 1,
        "every kernel ran\n{}",
        reference.dump()
    );
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    for (level, value) in [
        ("defaults", None),
        ("NaN outputs", Some("outputs")),
        ("NaN ops", Some("ops")),
    ] {
        let vars: Vec<(&str, &str)> = value.map(|v| ("VK_BLACKBOX_NAN", v)).into_iter().collect();
        let run = run(one_thread(&mut testapp_with_blackbox(&home, &args, &vars)));
        // No warning at the defaults; at the NaN levels the lines are checked below.
        problems.extend(run.problems_against(&reference, level, value.is_some()));
        if results(&run) != expected {
            problems.push(format!(
                "{level}: results {:#?}, without Blackbox {expected:#?}",
                results(&run)
            ));
        }
        runs.push((level, run));
    }
    let warnings = |i: usize| runs[i].1.warnings();
    // Five kernels store NaNs: sqrt(log(a) / b) where a < 1, atan2(a, b) where both are 0, acos past 1,
    // log1p below -1, rsqrt below 0; exp(60 a) stores Infs. Each is seen where it is stored, once;
    // pow(a, b), whose log(0) is -Inf on the way to pow(0, b), is no line at all.
    let in_kernel =
        |w: &str, kernel: &str| w.contains(&format!("(entry point {kernel}_dispatch_0_"));
    let is_store = |w: &str| {
        ["NaN", "Inf"].iter().any(|v| {
            w.contains(&format!(
                "{v} in storage buffer store at instruction OpStore"
            ))
        })
    };
    let outputs = warnings(1);
    let storing: Vec<&str> = KERNELS
        .into_iter()
        .filter(|k| outputs.iter().any(|w| in_kernel(w, k) && is_store(w)))
        .collect();
    if storing != STORING || outputs.len() != STORING.len() {
        problems.push(format!(
            "NaN outputs: expected one store line for each of {STORING:?}: {outputs:#?}"
        ));
    }
    // At `ops`, where they start, the stores' lines then debug lines. The log's NaN: the select of IREE's
    // NaN constant, with the other choice and the input compared, negative where the result is NaN.
    let ops = warnings(2);
    let log_named = |w: &&str| {
        in_kernel(w, "elementwise")
            && w.split_once("NaN from select (choosing a NaN constant) at instruction %")
                .and_then(|(_, rest)| rest.split_once(" = OpSelect "))
                .and_then(|(_, rest)| rest.split_once("), ("))
                .and_then(|(_, rest)| rest.split_once(") -> ("))
                .is_some_and(|(compared, result)| {
                    compared
                        .split(", ")
                        .zip(result.split(", "))
                        .any(|(a, r)| a.starts_with('-') && r.starts_with("NaN"))
                })
    };
    // atan2's: the division of its expansion, 0 / 0 where the result is NaN.
    let atan2_named = |w: &&str| {
        in_kernel(w, "atan2")
            && w.split_once("NaN from division() at instruction %")
                .and_then(|(_, rest)| rest.split_once(": operands ("))
                .and_then(|(_, rest)| rest.split_once(") -> ("))
                .is_some_and(|(operands, result)| {
                    let (dividend, divisor) = operands.split_once("), (").unwrap_or(("", ""));
                    dividend
                        .split(", ")
                        .zip(divisor.split(", "))
                        .zip(result.split(", "))
                        .any(|((a, b), r)| a == "0" && b == "0" && r.starts_with("NaN"))
                })
    };
    // exp's Inf: the product of its polynomial and the power of two 2^k it builds from bits, checked
    // against k (finite, and 127, the largest its clamp lets through, where the result is Inf).
    let exp_named = |w: &&str| {
        in_kernel(w, "exp")
            && w.split_once(
                "Inf from product by 2^k (built from exponent bits: an expanded exp) at instruction %",
            )
            .and_then(|(_, rest)| rest.split_once(" = OpFMul "))
            .and_then(|(_, rest)| rest.split_once(": operands ("))
            .and_then(|(_, rest)| rest.split_once(") -> ("))
            .is_some_and(|(k, result)| {
                k.split(", ")
                    .zip(result.split(", "))
                    .any(|(k, r)| k == "127" && r.starts_with("inf"))
            })
    };
    if !ops.iter().any(log_named) || !ops.iter().any(atan2_named) || !ops.iter().any(exp_named) {
        problems.push(format!(
            "NaN ops: expected the select of the log's NaN constant (a negative input where the result \
             is NaN), atan2's division of 0 by 0 and exp's product by 2^127 where the result is Inf: \
             {ops:#?}"
        ));
    }
    // Every kernel whose NaNs or Infs reach memory has them named where they start (acos: a sqrt of a
    // negative 1 - x * x; log1p: the select of its NaN constant; rsqrt: inversesqrt), and nothing else is
    // a line: no store (a debug line once the same invocation has the operation's record), nothing for
    // pow or for softmax, whose expanded exps are checked too but do not overflow, and nothing for expm1,
    // whose 0 / 0 where a is 0 a select throws away.
    let named: Vec<&str> = KERNELS
        .into_iter()
        .filter(|k| {
            ops.iter().any(|w| {
                in_kernel(w, k)
                    && ["NaN", "Inf"]
                        .iter()
                        .any(|v| w.starts_with(&format!("[blackbox] warn: {v} from ")))
            })
        })
        .collect();
    if named != STORING || ops.iter().any(|w| is_store(w) || in_kernel(w, "pow")) {
        problems.push(format!(
            "NaN ops: expected the origin named in each of {STORING:?}, and no other line: {ops:#?}"
        ));
    }
    if !problems.is_empty() {
        let dumps: Vec<String> = runs
            .iter()
            .map(|(level, run)| format!("=== {level} ===\n{}", run.dump()))
            .collect();
        panic!("{}\n{}", problems.join("\n\n"), dumps.join("\n"));
    }
}
