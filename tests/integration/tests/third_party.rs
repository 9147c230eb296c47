//! Real third-party Vulkan programs through Blackbox, on lavapipe, with the validation layer below it
//! (synchronization validation and best practices on): wgpu (wgpu-py, a compute shader and a render to a
//! texture), ncnn (a small convolutional network's forward pass on its Vulkan device) and Taichi (two
//! kernels, one making NaNs), all from PyPI (pinned in `tests/integration/apps/requirements.txt`,
//! installed into `.venv-apps/` by scripts/setup.sh), driven by the scripts in
//! `tests/integration/apps/`. Each runs without Blackbox (the reference), then through it at the defaults
//! and at `VK_BLACKBOX_NAN=outputs`: the same output hashes, Blackbox active (one start-up line for the
//! one device), and every validation id as often as in the reference.

use blackbox_integration::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// The Python of `.venv-apps/`, where scripts/setup.sh installs the pinned wgpu, ncnn and Taichi.
fn python() -> PathBuf {
    let python = workspace_root().join(".venv-apps/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh (it installs wgpu, ncnn and Taichi into .venv-apps)",
        python.display()
    );
    python
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
    problems: Vec<String>,
}

impl Compared {
    /// Panics with every problem found, each with the run it came from.
    fn finish(self) {
        if !self.problems.is_empty() {
            panic!(
                "{}\n=== run at the defaults ===\n{}\n=== run at NaN outputs ===\n{}",
                self.problems.join("\n\n"),
                self.defaults.dump(),
                self.outputs.dump()
            );
        }
    }
}

/// Runs `script` without Blackbox, then through it at the defaults and at NaN `outputs`; checks each run
/// with Blackbox against the reference.
fn compare(
    label: &str,
    driver: Driver,
    script: &str,
    args: &[&str],
    expected_results: usize,
    app_varies: &[(&str, usize)],
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
    for (level, vars) in [
        ("defaults", &[][..]),
        ("NaN outputs", &[("VK_BLACKBOX_NAN", "outputs")][..]),
    ] {
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
    let outputs = runs.pop().unwrap();
    let defaults = runs.pop().unwrap();
    Compared {
        defaults,
        outputs,
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
    let mut c = compare("ncnn", Driver::LoaderSelect, "ncnn_app.py", &[], 2, &[]);
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
    c.finish();

    let home = TempDir::new("taichi-ops");
    let args = ["--nan"];
    let reference = run(&mut program(
        &home,
        Driver::DriverFiles,
        "taichi_app.py",
        &args,
        None,
    ));
    reference.assert_success().assert_validation_on();
    let ops = run(&mut program(
        &home,
        Driver::DriverFiles,
        "taichi_app.py",
        &args,
        Some(&[("VK_BLACKBOX_NAN", "ops")]),
    ));
    ops.assert_success();
    if let Err(e) = ops.validation_messages_changed_beyond(&reference, TAICHI_VARIES) {
        panic!("NaN ops: {e}\n{}", ops.dump());
    }
    assert_eq!(results(&ops), results(&reference), "{}", ops.dump());
    // The first record is invocation 0's: x[0] = -12.
    let warns = ops.warnings();
    assert!(
        warns.iter().any(|w| w.contains("NaN from sqrt()")
            && w.contains("operands -12 -> NaN")
            && w.contains(" x12 ")),
        "NaN ops: no sqrt line with its operand and count\n{}",
        ops.dump()
    );
}
