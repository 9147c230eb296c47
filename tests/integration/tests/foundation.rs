//! The foundation: the layer loads through the real loader (explicit and implicit manifests), steps aside
//! cleanly (the app computes the same results), keeps the validation layer below it silent (with
//! synchronization validation and best practices on; for vulkaninfo and vkcube, which are not silent
//! under best practices by themselves: adds nothing to what they get without Blackbox), and handles its
//! variables as documented.

use blackbox_integration::*;
use std::collections::BTreeMap;
use std::process::Command;

fn testapp_all(home: &TempDir) -> Command {
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("all");
    cmd
}

/// Runs `bb-testapp all` with validation alone: the reference checksums.
fn reference_checksums() -> BTreeMap<String, String> {
    let home = TempDir::new("reference");
    let mut cmd = testapp_all(&home);
    cmd.env("VK_INSTANCE_LAYERS", VALIDATION);
    let run = run(&mut cmd);
    run.assert_success().assert_no_validation_messages();
    assert_eq!(
        run.start_up_lines(),
        0,
        "the layer must not be loaded here\n{}",
        run.dump()
    );
    let sums = run.checksums();
    assert!(
        sums.len() >= 9,
        "expected every scenario's checksum\n{}",
        run.dump()
    );
    sums
}

#[test]
fn explicit_layer_keeps_every_checksum_and_validation_silent() {
    let reference = reference_checksums();
    let home = TempDir::new("explicit");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = testapp_all(&home);
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    run.assert_success().assert_no_validation_messages();
    assert_eq!(run.checksums(), reference, "\n{}", run.dump());
    // One start-up line per device: `instances` creates six devices, every other scenario shares the app's.
    assert!(run.start_up_lines() >= 2, "{}", run.dump());
}

#[test]
fn explicit_layer_found_through_vk_layer_path() {
    let home = TempDir::new("layer-path");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(testapp(), home.path());
    // VK_LAYER_PATH replaces the loader's search path, so it names the validation layer's folder too
    // (without it, the loader would leave the validation layer out and say nothing).
    let mut path = manifests.into_os_string();
    path.push(format!(":{VALIDATION_MANIFEST_DIR}"));
    cmd.arg("compute").env("VK_LAYER_PATH", &path).env(
        "VK_INSTANCE_LAYERS",
        format!("VK_LAYER_blackbox:{VALIDATION}"),
    );
    let run = run(&mut cmd);
    run.assert_success().assert_no_validation_messages();
    assert_eq!(run.start_up_lines(), 1, "{}", run.dump());
}

#[test]
fn implicit_layer_via_blackbox_run_keeps_every_checksum() {
    let reference = reference_checksums();
    let home = TempDir::new("implicit-run");
    let mut cmd = vulkan_command(blackbox(), home.path());
    cmd.args(["run", "--validation", "--"])
        .arg(testapp())
        .arg("all");
    let run = run(&mut cmd);
    // The CLI adds the validation layer itself; the settings come from the environment it passes on.
    run.assert_success()
        .assert_validation_on()
        .assert_no_validation_messages();
    assert_eq!(run.checksums(), reference, "\n{}", run.dump());
    assert!(run.start_up_lines() >= 2, "{}", run.dump());
}

#[test]
fn implicit_manifest_obeys_enable_and_disable_variables() {
    let home = TempDir::new("implicit-env");
    write_manifest(
        &home.path().join("data/vulkan/implicit_layer.d"),
        "VkLayer_blackbox_implicit.json",
    );
    let compute = |vars: &[(&str, &str)]| {
        let mut cmd = vulkan_command(testapp(), home.path());
        cmd.arg("compute")
            .env("VK_INSTANCE_LAYERS", VALIDATION)
            .envs(vars.iter().copied());
        let run = run(&mut cmd);
        run.assert_success().assert_no_validation_messages();
        run.start_up_lines()
    };
    assert_eq!(
        compute(&[]),
        0,
        "an implicit layer is off until VK_BLACKBOX_ENABLE=1"
    );
    assert_eq!(compute(&[("VK_BLACKBOX_ENABLE", "1")]), 1);
    assert_eq!(
        compute(&[("VK_BLACKBOX_ENABLE", "1"), ("VK_BLACKBOX_DISABLE", "1")]),
        0
    );
}

/// `program` with `args` and the validation layer alone: the reference a run through Blackbox is compared
/// with (these third-party programs are not clean under best practices by themselves).
fn reference_run(program: &str, home: &TempDir, args: &[&str], display: Option<&str>) -> Run {
    let mut cmd = vulkan_command(program, home.path());
    cmd.args(args).env("VK_INSTANCE_LAYERS", VALIDATION);
    if let Some(display) = display {
        cmd.env("DISPLAY", display);
    }
    let run = run(&mut cmd);
    run.assert_success().assert_validation_on();
    assert_eq!(run.start_up_lines(), 0, "{}", run.dump());
    run
}

#[test]
fn vulkaninfo_through_the_layer() {
    let home = TempDir::new("vulkaninfo");
    let reference = reference_run("vulkaninfo", &home, &[], None);
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command("vulkaninfo", home.path());
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    run.assert_success()
        .assert_validation_messages_unchanged(&reference);
    assert!(run.stdout.contains("VK_LAYER_blackbox"), "{}", run.dump());
    assert!(run.stdout.contains("llvmpipe"), "{}", run.dump());
    assert!(run.start_up_lines() >= 1, "{}", run.dump());
}

#[test]
fn vkcube_renders_100_frames_under_xvfb() {
    let xvfb = Xvfb::start();
    let home = TempDir::new("vkcube");
    let reference = reference_run("vkcube", &home, &["--c", "100"], Some(&xvfb.display));
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command("vkcube", home.path());
    cmd.args(["--c", "100"]).env("DISPLAY", &xvfb.display);
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    run.assert_success()
        .assert_validation_messages_unchanged(&reference);
    assert_eq!(run.start_up_lines(), 1, "{}", run.dump());
    assert!(
        run.stderr.contains("active in \"vkcube\""),
        "{}",
        run.dump()
    );
}

/// Runs the compute scenario through the explicit layer with extra variables.
fn compute_with(home: &TempDir, vars: &[(&str, &str)]) -> Run {
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("compute").envs(vars.iter().copied());
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    run.assert_success().assert_no_validation_messages();
    assert_eq!(run.checksums().len(), 1, "{}", run.dump());
    run
}

#[test]
fn bad_log_filter_warns_and_uses_info() {
    let home = TempDir::new("bad-log");
    let run = compute_with(&home, &[("VK_BLACKBOX_LOG", "verbose")]);
    assert!(
        run.stderr
            .contains("[blackbox] warn: VK_BLACKBOX_LOG=\"verbose\" is not valid")
            && run.stderr.contains("off, error, warn, info, debug, trace")
            && run.stderr.contains("using the default `info`"),
        "{}",
        run.dump()
    );
    assert_eq!(
        run.start_up_lines(),
        1,
        "the default `info` is in force\n{}",
        run.dump()
    );
}

#[test]
fn checkpoints_asked_for_where_the_device_has_none_are_said_to_be_left_off() {
    // lavapipe has no VK_NV_device_diagnostic_checkpoints: `on` cannot be honoured, and the start-up line
    // says so rather than naming the setting alone. (Where the device has them, the breadcrumbs entry
    // reads "(..., NV checkpoints)": the H200, scripts/gpu-apps.sh.)
    let home = TempDir::new("checkpoints-on");
    let run = compute_with(&home, &[("VK_BLACKBOX_CHECKPOINTS", "on")]);
    assert!(
        run.stderr.contains("breadcrumbs command (fill-buffer), ")
            && run.stderr.contains(
                "left off: VK_NV_device_diagnostic_checkpoints (VK_BLACKBOX_CHECKPOINTS=on, but the device \
                 does not have it)"
            ),
        "{}",
        run.dump()
    );
    let run = compute_with(&home, &[]);
    assert!(
        !run.stderr.contains("left off"),
        "`auto` asks only where the device has them\n{}",
        run.dump()
    );
}

#[test]
fn log_filter_is_obeyed() {
    let home = TempDir::new("log-warn");
    let run = compute_with(&home, &[("VK_BLACKBOX_LOG", "warn")]);
    assert_eq!(run.start_up_lines(), 0, "{}", run.dump());
    assert!(!run.stderr.contains("[blackbox]"), "{}", run.dump());
}

#[test]
fn log_file_receives_the_log() {
    let home = TempDir::new("log-file");
    let log = home.path().join("blackbox.log");
    let run = compute_with(&home, &[("VK_BLACKBOX_LOG_FILE", log.to_str().unwrap())]);
    assert!(!run.stderr.contains("[blackbox]"), "{}", run.dump());
    let text = std::fs::read_to_string(&log).expect("log file written");
    assert!(text.contains(START_UP_LINE), "{text}");
}

#[test]
fn unopenable_log_file_warns_and_uses_stderr() {
    let home = TempDir::new("bad-log-file");
    let run = compute_with(
        &home,
        &[("VK_BLACKBOX_LOG_FILE", "/proc/no-such-dir/blackbox.log")],
    );
    assert!(
        run.stderr.contains(
            "[blackbox] warn: VK_BLACKBOX_LOG_FILE=/proc/no-such-dir/blackbox.log: cannot open it"
        ),
        "{}",
        run.dump()
    );
    assert_eq!(run.start_up_lines(), 1, "{}", run.dump());
}

#[test]
fn unwritable_output_folder_warns_and_falls_back() {
    let home = TempDir::new("bad-output");
    let run = compute_with(&home, &[("VK_BLACKBOX_OUTPUT", "/proc/blackbox-reports")]);
    assert!(
        run.stderr.contains("[blackbox] warn: VK_BLACKBOX_OUTPUT=/proc/blackbox-reports: cannot create or write the report folder"),
        "{}",
        run.dump()
    );
    // SAFETY: getuid has no preconditions.
    let fallback = std::env::temp_dir().join(format!("blackbox-{}", unsafe { libc_getuid() }));
    assert!(
        run.stderr
            .contains(&format!("reports: {}", fallback.display())),
        "{}",
        run.dump()
    );
}

#[test]
fn output_folder_is_created_and_named_in_the_start_up_line() {
    let home = TempDir::new("output");
    let out = home.path().join("reports/deep");
    let run = compute_with(&home, &[("VK_BLACKBOX_OUTPUT", out.to_str().unwrap())]);
    assert!(out.is_dir());
    assert!(
        run.stderr.contains(&format!("reports: {}", out.display())),
        "{}",
        run.dump()
    );
    // The default: $XDG_STATE_HOME/blackbox.
    let run = compute_with(&home, &[]);
    assert!(
        run.stderr.contains(&format!(
            "reports: {}",
            home.path().join("state/blackbox").display()
        )),
        "{}",
        run.dump()
    );
}

extern "C" {
    #[link_name = "getuid"]
    fn libc_getuid() -> u32;
}

/// A demo that draws until it is stopped, `seconds` under Xvfb then SIGTERM, with `env`: once with the
/// validation layer alone, once through Blackbox with `vars` and `VK_BLACKBOX_DUMP_SHADERS`. Both must run
/// the whole time (timeout(1) exits 124 when it had to stop the program). Returns both runs and the dump
/// folder, in `home`.
fn demo_runs(
    home: &TempDir,
    demo: &str,
    seconds: &str,
    env: &[(&str, &str)],
    vars: &[(&str, &str)],
) -> (Run, Run, std::path::PathBuf) {
    let xvfb = Xvfb::start();
    let command = || {
        let mut cmd = vulkan_command("timeout", home.path());
        cmd.args(["-s", "TERM", seconds, demo])
            .env("DISPLAY", &xvfb.display)
            .envs(env.iter().copied());
        cmd
    };
    let stopped = |run: &Run| assert_eq!(run.status.code(), Some(124), "{}", run.dump());
    let reference = run(command().env("VK_INSTANCE_LAYERS", VALIDATION));
    stopped(&reference);
    reference.validation().assert_enabled().unwrap();
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let dump = home.path().join("dump");
    let mut cmd = command();
    cmd.envs(vars.iter().copied())
        .env("VK_BLACKBOX_DUMP_SHADERS", &dump)
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"));
    enable_explicit(&mut cmd, &manifests);
    let run = run(&mut cmd);
    stopped(&run);
    (reference, run, dump)
}

/// Checks that `VK_BLACKBOX_DUMP_SHADERS` wrote at least `at_least` modules into `dump`, each with its
/// instrumented form; returns their site tables, one after the other.
fn every_module_instrumented(dump: &std::path::Path, at_least: usize, run: &Run) -> String {
    let names: Vec<String> = std::fs::read_dir(dump)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", dump.display(), run.dump()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let modules: Vec<&String> = names
        .iter()
        .filter(|n| n.ends_with(".spv") && !n.ends_with(".instrumented.spv"))
        .collect();
    assert!(modules.len() >= at_least, "{names:?}");
    for m in &modules {
        let id = m.trim_end_matches(".spv");
        assert!(
            names.contains(&format!("{id}.instrumented.spv")),
            "{m} was left unchanged: {names:?}"
        );
    }
    names
        .iter()
        .filter(|n| n.ends_with(".sites.txt"))
        .map(|n| std::fs::read_to_string(dump.join(n)).unwrap())
        .collect()
}

/// vkd3d's Direct3D 12 triangle demo (Debian's vkd3d-demos): its shaders are vkd3d-shader's SPIR-V, which
/// writes the fragment outputs with `OpCopyMemory`, and vkd3d adds compute shaders of its own that store
/// floats through bitcasts into images. It draws until it is stopped: each run is 3 s, then SIGTERM.
#[test]
fn vkd3d_triangle_runs_through_blackbox_with_every_module_instrumented() {
    let home = TempDir::new("vkd3d");
    let (reference, run, dump) = demo_runs(
        &home,
        "vkd3d-triangle",
        "3",
        &[],
        &[("VK_BLACKBOX_NAN", "outputs")],
    );
    run.assert_validation_messages_unchanged(&reference);
    assert!(
        run.stderr.contains("active in \"vkd3d-triangle\"") && run.warnings().is_empty(),
        "{}",
        run.dump()
    );
    // Every module the demo and vkd3d made has float writes: each comes out instrumented.
    let sites = every_module_instrumented(&dump, 3, &run);
    assert!(
        sites
            .lines()
            .any(|l| l.contains("copy to output") && l.contains("in entry point main (frag)")),
        "the fragment shader's OpCopyMemory to its output is not checked:\n{sites}"
    );
}

/// An OpenGL ES demo (Debian's mesa-utils `es2tri`) on Vulkan through Mesa's zink, on lavapipe: zink is a
/// demanding Vulkan app (dozens of device extensions, its own SPIR-V compiler, descriptor and pipeline
/// caches). It draws once and waits for window events: each run is 6 s, then SIGTERM. Through Blackbox at
/// NaN `ops` with `command` breadcrumbs: every module zink makes comes out instrumented (the fragment
/// shader's output checked), no warning, and every validation id as often as without Blackbox. One
/// allowance: best practices' message for es2tri's draw comes once per draw, and a run on a loaded machine
/// may draw once more or less than the other in its 6 s (Blackbox draws nothing itself).
#[test]
fn zink_es2tri_runs_through_blackbox_with_every_module_instrumented() {
    let home = TempDir::new("zink");
    let (reference, run, dump) = demo_runs(
        &home,
        "es2tri",
        "6",
        // Zink takes a CPU Vulkan device (lavapipe) only for a software context.
        &[("LIBGL_ALWAYS_SOFTWARE", "1"), ("GALLIUM_DRIVER", "zink")],
        &[
            ("VK_BLACKBOX_NAN", "ops"),
            ("VK_BLACKBOX_BREADCRUMBS", "command"),
        ],
    );
    let per_draw = [("UNASSIGNED-BestPractices-DrawState-VtxIndexOutOfBounds", 1)];
    if let Err(e) = run.validation_messages_changed_beyond(&reference, &per_draw) {
        panic!("{e}\n{}", run.dump());
    }
    assert!(
        run.stderr.contains("active in \"es2tri\"") && run.warnings().is_empty(),
        "{}",
        run.dump()
    );
    let sites = every_module_instrumented(&dump, 2, &run);
    assert!(
        sites
            .lines()
            .any(|l| l.contains("nan-output output") && l.contains("in entry point main (frag)")),
        "zink's fragment shader's output is not checked:\n{sites}"
    );
}
