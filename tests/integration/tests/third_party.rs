//! Real third-party Vulkan programs through Blackbox, on lavapipe, with the validation layer below it
//! (synchronization validation and best practices on): wgpu (wgpu-py, a compute shader and a render to a
//! texture), ncnn (a small convolutional network's forward pass on its Vulkan device), Taichi (two
//! kernels, one making NaNs) and pygfx (a lit scene over wgpu-py, whose anti-aliasing pass makes NaNs of
//! its own), all from PyPI (pinned in `tests/integration/apps/requirements.txt`,
//! installed into `.venv-apps/` by scripts/setup.sh), driven by the scripts in
//! `tests/integration/apps/`. Each runs without Blackbox (the reference), then through it at the defaults
//! and at `VK_BLACKBOX_NAN=outputs` (Taichi and pygfx also at `ops`): the same output hashes, Blackbox
//! active (one start-up line for the one device), and every validation id as often as in the reference.

use blackbox_integration::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The Python of `.venv-apps/`, where scripts/setup.sh installs the pinned wgpu, ncnn, Taichi and pygfx.
fn python() -> PathBuf {
    installed_by_setup(
        ".venv-apps/bin/python",
        "wgpu, ncnn, Taichi and pygfx into .venv-apps",
    )
}

fn app(script: &str) -> PathBuf {
    workspace_root().join("tests/integration/apps").join(script)
}

/// How a program finds lavapipe.
#[derive(Clone, Copy)]
enum Driver {
    /// `VK_DRIVER_FILES`, as every other end-to-end test.
    DriverFiles,
    /// `VK_LOADER_DRIVERS_SELECT` with `VK_DRIVER_FILES` unset: ncnn's wheel loads the driver that
    /// `VK_DRIVER_FILES` names itself, bypassing the loader and every layer.
    LoaderSelect,
}

/// `script` with `args` under the validation layer, through Blackbox with `vars` when `blackbox`.
fn program(
    home: &TempDir,
    driver: Driver,
    script: &str,
    args: &[&str],
    blackbox: Option<&[(&str, &str)]>,
) -> Command {
    let mut cmd = vulkan_command(python(), home.path());
    cmd.arg(app(script))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1");
    if let Driver::LoaderSelect = driver {
        cmd.env_remove("VK_DRIVER_FILES")
            .env("VK_LOADER_DRIVERS_SELECT", "*lvp*");
    }
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    cmd
}

/// The `result <name> sha256 <hex>` lines of a run.
fn results(run: &Run) -> BTreeMap<String, String> {
    run.stdout
        .lines()
        .filter_map(
            |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                ["result", name, "sha256", hash] => Some((name.to_owned(), hash.to_owned())),
                _ => None,
            },
        )
        .collect()
}

/// The runs of one program through Blackbox, and what went wrong in them (all of it, so that one failure
/// does not hide the others).
struct Compared {
    defaults: Run,
    outputs: Run,
    /// The run at NaN `ops`, where asked for.
    ops: Option<Run>,
    problems: Vec<String>,
}

impl Compared {
    /// Panics with every problem found, each with the run it came from.
    fn finish(self) {
        if !self.problems.is_empty() {
            let ops = self
                .ops
                .map(|run| format!("\n=== run at NaN ops ===\n{}", run.dump()))
                .unwrap_or_default();
            panic!(
                "{}\n=== run at the defaults ===\n{}\n=== run at NaN outputs ===\n{}{ops}",
                self.problems.join("\n\n"),
                self.defaults.dump(),
                self.outputs.dump()
            );
        }
    }
}

/// Runs `script` without Blackbox, then through it at the defaults, at NaN `outputs` and, with `ops`, at
/// NaN `ops`; checks each run with Blackbox against the reference.
fn compare(
    label: &str,
    driver: Driver,
    script: &str,
    args: &[&str],
    expected_results: usize,
    app_varies: &[(&str, usize)],
    ops: bool,
) -> Compared {
    let home = TempDir::new(label);
    let reference = run(&mut program(&home, driver, script, args, None));
    reference.assert_success().assert_validation_on();
    assert_eq!(reference.start_up_lines(), 0, "{}", reference.dump());
    let expected = results(&reference);
    assert_eq!(
        expected.len(),
        expected_results,
        "the program's results\n{}",
        reference.dump()
    );
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    let levels = [
        ("defaults", &[][..]),
        ("NaN outputs", &[("VK_BLACKBOX_NAN", "outputs")][..]),
        ("NaN ops", &[("VK_BLACKBOX_NAN", "ops")][..]),
    ];
    for (level, vars) in &levels[..if ops { 3 } else { 2 }] {
        let run = run(&mut program(&home, driver, script, args, Some(vars)));
        problems.extend(run.problems_through_blackbox(level));
        let got = results(&run);
        if got != expected {
            problems.push(format!(
                "{level}: results {got:?}, without Blackbox {expected:?}"
            ));
        }
        if let Err(e) = run.validation_messages_changed_beyond(&reference, app_varies) {
            problems.push(format!("{level}: {e}"));
        }
        runs.push(run);
    }
    let ops = if ops { runs.pop() } else { None };
    let outputs = runs.pop().unwrap();
    let defaults = runs.pop().unwrap();
    Compared {
        defaults,
        outputs,
        ops,
        problems,
    }
}

#[test]
fn wgpu_compute_and_render_are_unchanged_and_its_nan_is_reported_before_it_has_its_results() {
    let mut c = compare(
        "wgpu",
        Driver::DriverFiles,
        "wgpu_app.py",
        &["--nan"],
        2,
        &[],
        false,
    );
    if !c.defaults.warnings().is_empty() {
        c.problems
            .push("defaults: Blackbox warned, with NaN checks off".into());
    }
    // The one NaN (invocation 12 of the compute shader), reported before wgpu hands the results back.
    let lines: Vec<&str> = c.outputs.stderr.lines().collect();
    let nan = lines
        .iter()
        .position(|l| l.starts_with("[blackbox] warn: NaN") && l.contains("invocation (12, 0, 0)"));
    let reading = lines.iter().position(|l| *l == "wgpu-app: reading results");
    if !matches!((nan, reading), (Some(n), Some(r)) if n < r) {
        c.problems.push(format!(
            "NaN outputs: the NaN line (line {nan:?}) must come before `wgpu-app: reading results` \
             (line {reading:?})"
        ));
    }
    let others = c
        .outputs
        .warnings()
        .iter()
        .filter(|w| !w.starts_with("[blackbox] warn: NaN"))
        .count();
    if others > 0 {
        c.problems.push(format!(
            "NaN outputs: {others} Blackbox warning(s) besides the NaN"
        ));
    }
    c.finish();
}

#[test]
fn ncnn_forward_pass_on_vulkan_is_unchanged_through_the_loader() {
    let mut c = compare(
        "ncnn",
        Driver::LoaderSelect,
        "ncnn_app.py",
        &[],
        2,
        &[],
        false,
    );
    for (level, run) in [("defaults", &c.defaults), ("NaN outputs", &c.outputs)] {
        if !run.stderr.contains("active in \"ncnn\"") {
            c.problems.push(format!(
                "{level}: Blackbox is not active in ncnn's own instance"
            ));
        }
        if !run.warnings().is_empty() {
            c.problems.push(format!(
                "{level}: Blackbox warned; there is nothing to report"
            ));
        }
    }
    c.finish();
}

/// Taichi begins its command buffers (each with SIMULTANEOUS_USE, one best-practices warning per begin) 12
/// times, sometimes 13 on a loaded machine with a fresh HOME: the validation layer placed above Blackbox,
/// where it sees only Taichi's calls, counted 13 in 1 of 18 such runs. Blackbox itself begins none (it
/// records only for frame capture, which needs a swapchain).
const TAICHI_VARIES: &[(&str, usize)] = &[(
    "UNASSIGNED-BestPractices-vkBeginCommandBuffer-simultaneous-use",
    1,
)];

/// Taichi stores every f32 through an integer bitcast into its root buffer: NaN `outputs` must see the
/// float through it, and NaN `ops` must name the `sqrt` that made it, with its operand and exact count.
#[test]
fn taichi_kernels_are_unchanged_and_their_nans_are_seen_through_its_bitcast_stores() {
    let mut c = compare(
        "taichi",
        Driver::DriverFiles,
        "taichi_app.py",
        &["--nan"],
        2,
        TAICHI_VARIES,
        true,
    );
    if !c.defaults.warnings().is_empty() {
        c.problems
            .push("defaults: Blackbox warned, with NaN checks off".into());
    }
    // The compute kernel's 12 NaNs where it stores them, and the same values again where Taichi's copy
    // to NumPy stores them: each line a bitcast store, nothing else.
    let outputs = c.outputs.warnings();
    if outputs
        .iter()
        .any(|w| !w.contains("NaN in storage buffer store of a bitcast float"))
        || !outputs.iter().any(|w| w.contains(" x12 "))
    {
        c.problems.push(format!(
            "NaN outputs: expected bitcast-store NaN lines, one x12, and nothing else: {outputs:#?}"
        ));
    }
    // The first record is invocation 0's: x[0] = -12.
    let ops = c.ops.as_ref().expect("the ops run").warnings();
    if !ops.iter().any(|w| {
        w.contains("NaN from sqrt()") && w.contains("operands -12 -> NaN") && w.contains(" x12 ")
    }) {
        c.problems
            .push("NaN ops: no sqrt line with its operand and count".into());
    }
    c.finish();
}

/// pygfx 0.17 (a scene graph over wgpu-py, `apps/pygfx_app.py`): a lit, shadowed scene with points, a thick
/// line and text, rendered offscreen. The same image at every level. Its anti-aliasing pass (a Mitchell
/// filter, whose negative lobes push a few colours below zero) takes `pow(color.rgb, vec3(1.0))`, a NaN for
/// each negative component, and writes it to the frame: NaN `outputs` sees the store, and NaN `ops` names
/// the `pow` and its negative base.
#[test]
fn pygfx_renders_the_same_image_and_the_nans_of_its_anti_aliasing_are_named() {
    let mut c = compare(
        "pygfx",
        Driver::DriverFiles,
        "pygfx_app.py",
        &[],
        1,
        &[],
        true,
    );
    if !c.defaults.warnings().is_empty() {
        c.problems
            .push("defaults: Blackbox warned, with NaN checks off".into());
    }
    let outputs = c.outputs.warnings();
    if outputs.is_empty() || outputs.iter().any(|w| !w.contains("NaN in output at")) {
        c.problems.push(format!(
            "NaN outputs: expected the anti-aliasing pass's NaNs in its output, and nothing else: {outputs:#?}"
        ));
    }
    // `pow(<rgb>, (1, 1, 1))` with a negative component in the base.
    let negative_base = |w: &&str| {
        w.split_once("NaN from pow() at ")
            .and_then(|(_, rest)| rest.split_once("operands ("))
            .and_then(|(_, rest)| rest.split_once("), (1, 1, 1) -> ("))
            .is_some_and(|(base, _)| base.split(", ").any(|v| v.starts_with('-')))
    };
    let ops = c.ops.as_ref().expect("the ops run").warnings();
    if !ops.iter().any(negative_base) {
        c.problems.push(format!(
            "NaN ops: no `pow` line with a negative base and an exponent of 1: {ops:#?}"
        ));
    }
    c.finish();
}

/// pygfx exits without destroying its device. On NVIDIA's driver, Blackbox's monitor thread then went on
/// polling the device while the driver tore itself down at exit: a SIGSEGV in that thread in 5 of 6 runs
/// on the H200. The thread is now stopped when the process begins to exit; on lavapipe, which survives
/// the polls, the debug log shows it happen.
#[test]
fn an_app_that_exits_with_its_device_alive_has_the_monitor_thread_stopped_first() {
    let home = TempDir::new("pygfx-exit");
    let run = run(&mut program(
        &home,
        Driver::DriverFiles,
        "pygfx_app.py",
        &[],
        Some(&[("VK_BLACKBOX_LOG", "debug")]),
    ));
    run.assert_success();
    assert!(
        run.stderr.contains(
            "[blackbox] debug: exit with 1 device(s) alive: the monitor thread is stopped"
        ),
        "{}",
        run.dump()
    );
}
