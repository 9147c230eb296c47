//! piglit (Debian 12's piglit 0~git20220119-124bca3c9-1), the OpenGL test suite's shader tests, on Vulkan
//! through Mesa's zink on lavapipe, through Blackbox with the validation layer below it. piglit's
//! `shader_runner` compiles a test's GLSL (or its SPIR-V, for `ARB_gl_spirv`), draws, and probes pixels
//! against what the GL specification says they must be (`PIGLIT: {"result": "pass" }`); zink turns it all
//! into Vulkan and SPIR-V of its own making. Each test runs without Blackbox (the reference), then through it
//! at the defaults, NaN `outputs` and NaN `ops`: the same verdict, every validation id as often as without
//! Blackbox, and exactly the lines the test's own shader calls for.
//!
//! By hand, 4,100 of piglit's shader tests (the GLSL 1.10 to 1.50 execution tests, the generated built-in
//! function and precision tests, a sample of the GLSL 4.x, fp64 and int64 ones, and every `ARB_gl_spirv`
//! test) gave the reference's verdict at NaN `ops`; one, `ARB_gl_spirv`'s `ubo/aoa-2`, crashed the process
//! at NaN `outputs` and `ops` before the layer handed lavapipe its checked values through a select
//! (`Options::nan_values_through_select`): it is here, with a few tests whose shaders make a NaN or an Inf
//! on purpose and a few that must make none.

use blackbox_integration::*;

/// Where Debian's piglit keeps `bin/shader_runner` and its tests.
const PIGLIT: &str = "/usr/lib/x86_64-linux-gnu/piglit";

/// A test (under `PIGLIT`) and the lines its shader calls for at NaN `outputs` and at NaN `ops`: each line
/// must hold every piece of one entry (a piece `a | b`: `a` or `b`), and each entry must match a line.
struct Case {
    test: &'static str,
    outputs: Lines,
    ops: Lines,
}

/// A setting's variables.
type Vars = &'static [(&'static str, &'static str)];
/// The lines a setting calls for (see [`Case`]).
type Lines = &'static [&'static [&'static str]];

const CASES: &[Case] = &[
    // Its fragment shader's colour is read from uniform buffers alone, checked and stored: lavapipe of
    // Mesa 22.3 inlined it as a uniform and crashed when the draw began.
    Case {
        test: "tests/spec/arb_gl_spirv/execution/ubo/aoa-2.shader_test",
        outputs: &[],
        ops: &[],
    },
    // `isnan(vec2(1.0, 0.0) / vec2(1.0, 0.0))`.
    Case {
        test: "tests/spec/glsl-1.30/execution/fs-isnan-vec2.shader_test",
        outputs: &[],
        // Its two draws swap the components: the invocation recorded first says which.
        ops: &[&[
            "NaN from division()",
            "operands (1, 0), (1, 0) -> (1, NaN) | operands (0, 1), (0, 1) -> (NaN, 1)",
        ]],
    },
    // `isinf(exp(vec2(1.0, 1000.0)))` in a vertex shader (zink writes `exp` as `exp2` of x * log2(e)).
    Case {
        test: "tests/spec/glsl-1.30/execution/vs-isinf-vec2.shader_test",
        outputs: &[],
        ops: &[&["Inf from exp2()", "2.718282", "inf", "vertex "]],
    },
    // `log2(vec4(1, 2, 4, 0))`, the -inf stored in the output's alpha.
    Case {
        test: "tests/spec/glsl-1.10/execution/builtins/glsl-fs-log2.shader_test",
        outputs: &[&["Inf in output", "-inf", "pixel "]],
        ops: &[&[
            "Inf from log2()",
            "operands (1, 2, 4, 0) -> (0, 1, 2, -inf)",
        ]],
    },
    // `clamp(0.0 / 0.0, 0.0, 1.0)` must not be folded away by range analysis.
    Case {
        test: "tests/spec/glsl-1.30/execution/range_analysis_fsat_of_nan.shader_test",
        outputs: &[],
        ops: &[&["NaN from division()", "operands 0, 0 -> NaN"]],
    },
    // Precision tests of functions over finite inputs: no line.
    Case {
        test: "generated_tests/spec/arb_shader_precision/fs-exp-float.shader_test",
        outputs: &[],
        ops: &[],
    },
    Case {
        test: "generated_tests/spec/arb_shader_precision/fs-inversesqrt-vec4.shader_test",
        outputs: &[],
        ops: &[],
    },
    Case {
        test:
            "generated_tests/spec/glsl-1.30/execution/built-in-functions/fs-atanh-vec4.shader_test",
        outputs: &[],
        ops: &[],
    },
];

/// Runs `test` with shader_runner through zink, with the validation layer alone or through Blackbox with
/// `vars`; returns the run (the validation layer's log as its stdout) and piglit's verdict.
fn shader_runner(
    home: &TempDir,
    test: &str,
    name: &str,
    blackbox: Option<&[(&str, &str)]>,
) -> (Run, String) {
    let mut cmd = vulkan_command(format!("{PIGLIT}/bin/shader_runner"), home.path());
    cmd.arg(format!("{PIGLIT}/{test}"))
        .args(["-auto", "-fbo"])
        // No window: an offscreen EGL context.
        .env("PIGLIT_PLATFORM", "surfaceless_egl");
    let (run, stdout) = run_on_zink(cmd, home, name, blackbox);
    let verdict = stdout
        .lines()
        .find_map(|l| l.strip_prefix("PIGLIT: "))
        .unwrap_or("none")
        .to_owned();
    (run, verdict)
}

/// What is wrong with `warnings` against `expected`: a line no entry matches, or an entry no line matches.
fn unexpected_lines(name: &str, warnings: &[&str], expected: &[&[&str]]) -> Vec<String> {
    let matches = |line: &str, pieces: &[&str]| {
        pieces
            .iter()
            .all(|p| p.split(" | ").any(|alternative| line.contains(alternative)))
    };
    let mut problems = Vec::new();
    for line in warnings {
        if !expected.iter().any(|pieces| matches(line, pieces)) {
            problems.push(format!(
                "{name}: a line its shader does not call for: {line}"
            ));
        }
    }
    for pieces in expected {
        if !warnings.iter().any(|line| matches(line, pieces)) {
            problems.push(format!("{name}: no line with {pieces:?}"));
        }
    }
    problems
}

#[test]
fn shader_tests_give_their_verdicts_and_the_lines_their_shaders_call_for() {
    let home = TempDir::new("piglit");
    // Two tests at a time (each run is one thread, CI has two cores), each test's runs in order.
    let problems: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = CASES
            .chunks(CASES.len().div_ceil(2))
            .map(|cases| {
                let home = &home;
                scope.spawn(move || {
                    cases
                        .iter()
                        .flat_map(|case| check(home, case))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        runs.into_iter()
            .flat_map(|r| r.join().expect("a test's runs"))
            .collect()
    });
    assert!(problems.is_empty(), "{problems:#?}");
}

/// Runs one case at every setting; its problems.
fn check(home: &TempDir, case: &Case) -> Vec<String> {
    let short = case.test.rsplit('/').next().unwrap_or(case.test);
    let (reference, verdict) = shader_runner(home, case.test, &format!("{short}-reference"), None);
    reference.assert_success().assert_validation_on();
    // If zink or lavapipe no longer passed it, a run through Blackbox that failed would still match.
    assert_eq!(verdict, r#"{"result": "pass" }"#, "{}", reference.dump());
    let settings: [(&str, Vars, Option<Lines>); 3] = [
        ("defaults", &[], None),
        (
            "nan-outputs",
            &[("VK_BLACKBOX_NAN", "outputs")],
            Some(case.outputs),
        ),
        ("nan-ops", &[("VK_BLACKBOX_NAN", "ops")], Some(case.ops)),
    ];
    let mut problems = Vec::new();
    for (setting, vars, lines) in settings {
        let name = format!("{short} {setting}");
        let (run, got) = shader_runner(home, case.test, &name.replace(' ', "-"), Some(vars));
        problems.extend(run.problems_against(&reference, &name, lines.is_some()));
        if got != verdict {
            problems.push(format!(
                "{name}: {got} where the reference gave {verdict}\n{}",
                run.stderr
            ));
        }
        if let Some(lines) = lines {
            problems.extend(unexpected_lines(&name, &run.warnings(), lines));
        }
    }
    problems
}
