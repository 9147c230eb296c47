//! GFXReconstruct (Debian 12's `gfxreconstruct` 0.9.18), LunarG's capture and replay tool, with Blackbox:
//! its capture layer records vkcube's frames into a file, and `gfxrecon-replay` plays such a file back, a
//! Vulkan program that recreates another program's objects from a stream of calls. On Xvfb, on lavapipe,
//! with the validation layer below.
//!
//! - Capturing through Blackbox: GFXReconstruct's layer tracks what an app writes to mapped memory by
//!   protecting the pages it hands out and resolving the SIGSEGV of each first write (its page guard).
//!   Blackbox's fatal-signal handler, installed after it, took those faults for crashes: a fatal-signal
//!   report and an error line for a healthy capture. Its handler now gets such faults first. Required: the
//!   same exit as without Blackbox, no report, no Blackbox line but its start-up line and the one saying
//!   that a tracing tool is below it, every validation id as often, and a capture that replays (without
//!   Blackbox) to the same frames as one made without it.
//! - Replaying through Blackbox, at the defaults, NaN `ops`, everything at once and frame capture: the same
//!   frames, bit for bit, as the replay without it, every validation id as often, and no Blackbox line but
//!   its start-up line and frame capture's.
//!
//! Debian 12's loader (1.3.239) puts explicit layers in the order it finds their manifests, not the order
//! `VK_INSTANCE_LAYERS` names them: Blackbox's (`VK_ADD_LAYER_PATH`) comes above GFXReconstruct's, so the
//! capture holds Blackbox's calls too.

use blackbox_integration::*;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

const CAPTURE_LAYER: &str = "VK_LAYER_LUNARG_gfxreconstruct";
const FRAMES: usize = 10;

/// vkcube for [`FRAMES`] frames on `display`, captured into `file` by GFXReconstruct's layer, with the
/// validation layer alone or through Blackbox with `vars`.
fn capture(
    home: &TempDir,
    display: &str,
    file: &Path,
    blackbox: Option<&[(&str, &str)]>,
) -> Command {
    let mut cmd = vulkan_command("vkcube", home.path());
    cmd.args(["--c", &FRAMES.to_string()])
        .env("DISPLAY", display);
    captured(&mut cmd, home, file, blackbox);
    cmd
}

/// `cmd` captured into `file` by GFXReconstruct's layer, with the validation layer alone or through
/// Blackbox with `vars`.
fn captured(cmd: &mut Command, home: &TempDir, file: &Path, blackbox: Option<&[(&str, &str)]>) {
    cmd.env("GFXRECON_CAPTURE_FILE", file)
        .env("GFXRECON_CAPTURE_FILE_TIMESTAMP", "false");
    validation_alone_or_through_blackbox(cmd, home, blackbox);
    let layers = cmd
        .get_envs()
        .find(|(k, _)| *k == "VK_INSTANCE_LAYERS")
        .and_then(|(_, v)| v)
        .map(|v| v.to_string_lossy().into_owned())
        .expect("the layers");
    cmd.env("VK_INSTANCE_LAYERS", format!("{CAPTURE_LAYER}:{layers}"));
}

/// `gfxrecon-replay` of `file` on `display`, a screenshot of every frame into `shots`, with the validation
/// layer alone or through Blackbox with `vars`.
fn replay(
    home: &TempDir,
    display: &str,
    file: &Path,
    shots: &Path,
    blackbox: Option<&[(&str, &str)]>,
) -> Command {
    std::fs::create_dir_all(shots).expect("screenshot folder");
    let mut cmd = vulkan_command("gfxrecon-replay", home.path());
    cmd.args(["--wsi", "xcb", "--screenshot-all", "--screenshot-dir"])
        .arg(shots)
        .arg(file)
        .env("DISPLAY", display);
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    cmd
}

/// The screenshots in `dir`, by file name.
fn screenshots(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.expect("a directory entry").path())
                .map(|p| {
                    let name = p.file_name().unwrap().to_string_lossy().into_owned();
                    (name, std::fs::read(&p).expect("a screenshot"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Blackbox's lines other than its start-up line and those that start with one of `allowed`.
fn other_lines<'a>(run: &'a Run, allowed: &[&str]) -> Vec<&'a str> {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("[blackbox]") && !l.starts_with(START_UP_LINE))
        .filter(|l| !allowed.iter().any(|a| l.starts_with(a)))
        .collect()
}

/// What differs between two sets of screenshots, or `None`.
fn frames_differ(
    got: &BTreeMap<String, Vec<u8>>,
    expected: &BTreeMap<String, Vec<u8>>,
) -> Option<String> {
    if got == expected {
        return None;
    }
    let differing: Vec<&String> = expected
        .keys()
        .filter(|k| got.get(*k) != expected.get(*k))
        .collect();
    Some(format!(
        "{} screenshots, without Blackbox {}; differing or missing: {differing:?}",
        got.len(),
        expected.len()
    ))
}

#[test]
fn a_capture_through_blackbox_has_no_report_and_replays_to_the_same_frames() {
    let xvfb = Xvfb::start();
    let home = TempDir::new("gfxr-capture");
    let plain_file = home.path().join("plain.gfxr");
    let reference = run(&mut capture(&home, &xvfb.display, &plain_file, None));
    reference.assert_success().assert_validation_on();
    let through_file = home.path().join("through-blackbox.gfxr");
    let through = run(&mut capture(&home, &xvfb.display, &through_file, Some(&[])));
    let mut problems = through.problems_against(&reference, "capture through Blackbox", false);
    // One line says what the capture holds: GFXReconstruct reports itself as a tracing tool.
    let tracing = "[blackbox] info: GFXReconstruct, a tracing tool, is below Blackbox on llvmpipe";
    if through
        .stderr
        .lines()
        .filter(|l| l.starts_with(tracing))
        .count()
        != 1
    {
        problems.push(format!(
            "capture through Blackbox: not one `{tracing}` line"
        ));
    }
    let lines = other_lines(&through, &[tracing]);
    if !lines.is_empty() {
        problems.push(format!(
            "capture through Blackbox: Blackbox said {lines:#?}"
        ));
    }
    let reports = reports_in(&home.path().join("reports"));
    if !reports.is_empty() {
        problems.push(format!(
            "capture through Blackbox: {} report(s): {:?}",
            reports.len(),
            reports.iter().map(|(p, _)| p).collect::<Vec<_>>()
        ));
    }
    // Each capture played back without Blackbox.
    let shots = |name: &str| home.path().join("shots").join(name);
    let plain_replay = run(&mut replay(
        &home,
        &xvfb.display,
        &plain_file,
        &shots("plain"),
        None,
    ));
    plain_replay.assert_success();
    let expected = screenshots(&shots("plain"));
    assert_eq!(expected.len(), FRAMES, "{}", plain_replay.dump());
    let through_replay = run(&mut replay(
        &home,
        &xvfb.display,
        &through_file,
        &shots("through"),
        None,
    ));
    if !through_replay.status.success() {
        problems.push(format!(
            "the capture through Blackbox does not replay: {:?}",
            through_replay.status
        ));
    }
    if let Some(d) = frames_differ(&screenshots(&shots("through")), &expected) {
        problems.push(format!(
            "the capture through Blackbox replays to other frames: {d}"
        ));
    }
    fail_on_problems(
        &problems,
        &[
            ("capture", reference),
            ("capture through Blackbox", through),
            ("replay of the capture through Blackbox", through_replay),
        ],
    );
}

#[test]
fn gfxrecon_replay_through_blackbox_draws_the_same_frames() {
    let xvfb = Xvfb::start();
    let home = TempDir::new("gfxr-replay");
    let file = home.path().join("vkcube.gfxr");
    run(&mut capture(&home, &xvfb.display, &file, None)).assert_success();
    let shots = |name: &str| home.path().join("shots").join(name);
    let reference = run(&mut replay(
        &home,
        &xvfb.display,
        &file,
        &shots("reference"),
        None,
    ));
    reference.assert_success().assert_validation_on();
    let expected = screenshots(&shots("reference"));
    assert_eq!(expected.len(), FRAMES, "{}", reference.dump());
    let settings: &[Setting] = &[
        ("defaults", &[], false),
        ("NaN ops", &[("VK_BLACKBOX_NAN", "ops")], false),
        ("everything", EVERYTHING, false),
        ("frame capture", &[("VK_BLACKBOX_FRAMES", "4")], false),
    ];
    let mut k = 0;
    compare_settings(reference, settings, |_, vars| {
        k += 1;
        let dir = shots(&format!("setting-{k}"));
        let run = run(&mut replay(&home, &xvfb.display, &file, &dir, Some(vars)));
        let mut problems = Vec::new();
        if let Some(d) = frames_differ(&screenshots(&dir), &expected) {
            problems.push(d);
        }
        // Frame capture logs what its copies cost, once.
        let lines = other_lines(&run, &["[blackbox] info: frame capture: "]);
        if !lines.is_empty() {
            problems.push(format!("Blackbox said {lines:#?}"));
        }
        (run, problems)
    });
}

/// A real crash while capturing: the test app writes to a page mapped read-only (`SEGV_ACCERR`, the kind
/// of fault the page guard makes, on a page it does not protect). The page guard hands it to the handler
/// before it, the app's own, which gives up; Blackbox writes its report of the SIGSEGV, and the process
/// ends with it.
#[test]
fn a_crash_while_capturing_is_reported() {
    let home = TempDir::new("gfxr-crash");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("crash-read-only");
    captured(
        &mut cmd,
        &home,
        &home.path().join("crash.gfxr"),
        Some(&[("VK_BLACKBOX_LOG", "debug")]),
    );
    let run = run(without_core_dumps(&mut cmd));
    assert_eq!(run.status.signal(), Some(libc::SIGSEGV), "{}", run.dump());
    // The page guard's handler was there before Blackbox's, and got the fault first.
    for line in [
        "[blackbox] debug: SIGSEGV's handler is GFXReconstruct's page guard's",
        "[blackbox] error: SIGSEGV in thread bb-testapp",
    ] {
        assert!(run.stderr.contains(line), "{line}\n{}", run.dump());
    }
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let text = std::fs::read_to_string(reports[0].0.join("report.txt")).expect("report.txt");
    assert!(
        text.contains("reason     the process received SIGSEGV"),
        "{text}"
    );
}
