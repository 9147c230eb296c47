//! mpv (Debian 12's 0.35) playing FFmpeg's `testsrc2` pattern on Xvfb, presenting through a Vulkan
//! swapchain on lavapipe, with the validation layer below Blackbox: its two renderers, `gpu-next`
//! (libplacebo's) and `gpu` (mpv's own). At 1 s of playback a script of ours pauses, takes a screenshot of
//! the window (mpv renders the frame again and reads it back from the GPU) and quits.
//!
//! What this program showed that no test of ours had: libplacebo submits batches that pass a signal array
//! with a count of 0, which best practices reports (`UNASSIGNED-BestPractices-SemaphoreCount`). Blackbox
//! added its own signal to that batch, and the report vanished.

use blackbox_integration::*;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// The lavapipe device by name: mpv leaves software devices out unless named.
const DEVICE: &str = "llvmpipe (LLVM 15.0.6, 256 bits)";

/// Pauses at 1 s of playback, writes a screenshot of the window to `$SHOT`, quits.
const SCRIPT: &str = r#"
local done = false
mp.observe_property("time-pos", "number", function(_, t)
  if t and t >= 1.0 and not done then
    done = true
    mp.set_property("pause", "yes")
    mp.command_native({"screenshot-to-file", os.getenv("SHOT"), "window"})
    mp.command("quit")
  end
end)
"#;

/// How long one run may take (about 3 s on an idle 2-core machine, compiling every shader with Mesa's
/// shader cache off): a run that waits on the GPU for ever is killed instead of holding the test.
const LIMIT: Duration = Duration::from_secs(20);

/// How many times a run that hangs is tried. mpv's screenshot hangs now and then on lavapipe, with or
/// without Blackbox: lavapipe's queue thread waits for ever on a lock whose memory was freed, while
/// libplacebo waits for the download's fence. In 400 runs of 4 at once on a 2-core machine, the layer of
/// 5636900: 1 hang in 100 runs with the validation layer alone, 1 in 300 through Blackbox. Far more often
/// with Mesa's shader cache empty, as on a fresh machine: with `MESA_SHADER_CACHE_DISABLE=true`, 4 of 9
/// runs of this file had a hang (2026-12-04; 2 of 4 with Blackbox's fixed error-buffer address, 2 of 5
/// without). A hang of Blackbox's own that came every time would still fail.
const ATTEMPTS: usize = 3;

/// Best practices' text for a batch that passes `pSignalSemaphores` with a count of 0.
const SIGNAL_ARRAY_WITHOUT_COUNT: &str =
    "pSignalSemaphores is set, but pSubmits[0].signalSemaphoreCount is 0";

/// `mpv` with the renderer `vo`, its screenshot written to `shot`: with the validation layer alone, or
/// through Blackbox with `vars` when `blackbox`.
fn mpv(
    home: &TempDir,
    display: &str,
    vo: &str,
    shot: &Path,
    blackbox: Option<&[(&str, &str)]>,
) -> Command {
    let script = home.path().join("screenshot.lua");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut cmd = vulkan_command("mpv", home.path());
    cmd.args([
        "--no-config",
        "--msg-level=all=warn",
        &format!("--vo={vo}"),
        "--gpu-api=vulkan",
        "--gpu-context=x11vk",
        &format!("--vulkan-device={DEVICE}"),
        // Every frame rendered, however slow: a frame mpv drops to keep up has no validation messages,
        // and the counts compared are per frame (see `mpv_renderer_looks_and_validates_the_same_through_blackbox`).
        "--framedrop=no",
    ])
    .arg(format!("--script={}", script.display()))
    .arg("av://lavfi:testsrc2=size=320x240:rate=10")
    .env("DISPLAY", display)
    .env("SHOT", shot);
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    cmd
}

/// Runs `cmd`, again when it hangs (up to [`ATTEMPTS`] times); `Err` with the last hang.
fn play(mut cmd: Command, shot: &Path) -> Result<Run, String> {
    let mut hangs = Vec::new();
    while hangs.len() < ATTEMPTS {
        let _ = std::fs::remove_file(shot);
        match run_within(&mut cmd, LIMIT) {
            Ok(run) => return Ok(run),
            Err(e) => hangs.push(e),
        }
    }
    Err(format!(
        "hung {ATTEMPTS} times; the last:\n{}",
        hangs.pop().unwrap()
    ))
}

/// How many times the validation layer reported a signal array passed with a count of 0.
fn signal_arrays_without_count(run: &Run) -> usize {
    run.stdout.matches(SIGNAL_ARRAY_WITHOUT_COUNT).count()
}

/// Plays with `vo` without Blackbox, then through it with each of `settings`; checks each run through
/// Blackbox: it ends as without, Blackbox is active and warns of nothing, the screenshot is the same
/// bytes, and the validation layer says the same (each id as often, but for `app_varies`).
fn compare(vo: &str, app_varies: &[(&str, usize)]) {
    let xvfb = Xvfb::start();
    let home = TempDir::new(&format!("mpv-{vo}"));
    let shot = |name: &str| home.path().join(format!("{name}.png"));
    let reference = play(
        mpv(&home, &xvfb.display, vo, &shot("reference"), None),
        &shot("reference"),
    )
    .unwrap_or_else(|e| panic!("without Blackbox: {e}"));
    reference.assert_success().assert_validation_on();
    let expected = std::fs::read(shot("reference"))
        .unwrap_or_else(|e| panic!("the screenshot: {e}\n{}", reference.dump()));
    // libplacebo's batches with a signal array and no count: what this test must not lose.
    let signal_arrays = signal_arrays_without_count(&reference);
    assert!(signal_arrays > 0, "{}", reference.dump());
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    for (name, vars) in [
        ("defaults", &[][..]),
        ("frames", &[("VK_BLACKBOX_FRAMES", "8")][..]),
        (
            "nan-ops",
            &[
                ("VK_BLACKBOX_NAN", "ops"),
                ("VK_BLACKBOX_BREADCRUMBS", "command"),
            ][..],
        ),
    ] {
        let run = match play(
            mpv(&home, &xvfb.display, vo, &shot(name), Some(vars)),
            &shot(name),
        ) {
            Ok(run) => run,
            Err(e) => {
                problems.push(format!("{name}: {e}"));
                continue;
            }
        };
        problems.extend(run.problems_through_blackbox(name));
        if !run.warnings().is_empty() {
            problems.push(format!("{name}: Blackbox warned: {:#?}", run.warnings()));
        }
        match std::fs::read(shot(name)) {
            Ok(bytes) if bytes == expected => {}
            Ok(_) => problems.push(format!(
                "{name}: the screenshot differs from the one without Blackbox ({} and {})",
                shot(name).display(),
                shot("reference").display()
            )),
            Err(e) => problems.push(format!("{name}: no screenshot: {e}")),
        }
        if let Err(e) = run.validation_messages_changed_beyond(&reference, app_varies) {
            problems.push(format!("{name}: {e}"));
        }
        let got = signal_arrays_without_count(&run);
        // 10-12 in the runs above, one per frame libplacebo presents; 0 through Blackbox before it left
        // such batches alone.
        if got.abs_diff(signal_arrays) > 2 {
            problems.push(format!(
                "{name}: \"{SIGNAL_ARRAY_WITHOUT_COUNT}\" {got} times with Blackbox, {signal_arrays} without"
            ));
        }
        runs.push((name, run));
    }
    fail_on_problems(&problems, &runs);
}

#[test]
fn libplacebo_renderer_looks_and_validates_the_same_through_blackbox() {
    compare(
        "gpu-next",
        &[
            // libplacebo's own calls, whose number follows how many frames it renders in the second and
            // how many it has in flight. In 160 runs, four at a time on a 2-core machine, the same spread
            // without Blackbox (80 runs) and through it (80): SemaphoreCount 28-37, ExtensionNotEnabled
            // 310-333 (it names the fences it makes, without VK_EXT_debug_utils), 2-4 small allocations,
            // 5-8 small dedicated ones. Once, at NaN `ops` during the whole test suite (the debug build's
            // slower instrumentation on a loaded machine): 6 and 9 small ones, against 2 and 5 in the
            // reference. Blackbox allocates no small memory: its two allocations are 4 MiB or more.
            ("UNASSIGNED-BestPractices-SemaphoreCount", 10),
            ("UNASSIGNED-GeneralParameterError-ExtensionNotEnabled", 25),
            (
                "UNASSIGNED-BestPractices-vkAllocateMemory-small-allocation",
                6,
            ),
            (
                "UNASSIGNED-BestPractices-vkBindMemory-small-dedicated-allocation",
                6,
            ),
        ],
    );
}

#[test]
fn mpv_renderer_looks_and_validates_the_same_through_blackbox() {
    // mpv's own renderer: the same counts in nearly every run, its 13 synchronization hazards included.
    // Twice, at NaN `ops` during the whole test suite (the debug build's slower instrumentation on a
    // loaded 2-core machine; 2026-12-02 and 2026-12-04, the second with `--framedrop=no`), the same fewer
    // of the three ids that come with each frame mpv renders: 12 hazards against 13, 31 SemaphoreCount
    // against 34, 317 ExtensionNotEnabled against 330, with the same screenshot and no other id changed.
    // Those three move together, as messages that come per frame do; why mpv renders less then is not
    // known (not measured). More than these spreads still fails.
    compare(
        "gpu",
        &[
            ("SYNC-HAZARD-READ-AFTER-WRITE", 2),
            ("UNASSIGNED-BestPractices-SemaphoreCount", 6),
            ("UNASSIGNED-GeneralParameterError-ExtensionNotEnabled", 30),
        ],
    );
}
