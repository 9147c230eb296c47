//! Device-lost and fatal-signal reports end to end on lavapipe.
//!
//! A healthy driver never loses its device, so the test-only fault layer (tests/fault-layer) sits right
//! below Blackbox and turns a fence wait that lasts longer than `BB_FAULT_LOST_AFTER_MS` into
//! `VK_ERROR_DEVICE_LOST` (and every later wait, submit and status query too), while the GPU work really
//! is inside a long command. The validation layer sits below both and must stay silent. A fatal signal needs
//! no help: on lavapipe a shader writing through a bad address is a SIGSEGV in a driver thread.
//!
//! What lavapipe can tell: it has no `VK_AMD_buffer_marker`, so Blackbox's markers are `vkCmdFillBuffer`
//! writes, which are not allowed inside render passes. Commands outside passes are one unit each; a render
//! pass (classic or dynamic) is one unit as a whole, and every command inside it shares its state: while the
//! pass runs, all its draws are in flight, the long one and the short ones around it alike. With
//! `VK_AMD_buffer_marker` (e.g. on an AMD GPU) every command is its own unit, render passes included: there
//! the report would show draw 1 finished, draw 2 in flight and draw 3 not started.
//!
//! The tests run one at a time (`serial`): each keeps lavapipe busy until the loss (then the app stops the
//! long shader), and on a small machine parallel runs would only stretch each other's timing.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use blackbox_integration::*;
use blackbox_report::{CommandBuffer, Kind, Report, State};

/// How long a fence wait may last before the fault layer turns it into a device loss.
const LOST_AFTER_MS: &str = "500";
/// `hang --hang-groups`: dispatch 3 runs about 15 s on lavapipe with two CPU threads, far past the loss. Its
/// length costs nothing: once its wait fails, the app sets the long shader's `stop` word, and the rest of
/// the dispatch ends in milliseconds (before, each test waited seconds for it in the teardown).
const HANG_GROUPS: &str = "8000";
/// `hang-draw --hang-size`: draw 2 runs about 15 s on lavapipe with two CPU threads, stopped the same way.
const HANG_SIZE: &str = "1024";

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs the tests of this file one at a time (a failed test poisons the lock: the others go on).
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A run that lost its device, with its single report.
struct Lost {
    run: Run,
    report: Report,
    /// report.txt, for assertion messages.
    text: String,
    /// The report's folder (under the run's home, removed with it).
    _home: TempDir,
}

/// Runs bb-testapp with `args` under Blackbox, the fault layer and validation, the fault layer losing the
/// device in the first wait that lasts `LOST_AFTER_MS`; checks what every such run must show (the app's
/// error, the injected loss, no validation message, exactly one device-lost report, logged once) and
/// returns the report.
fn device_lost(label: &str, args: &[&str]) -> Lost {
    let (home, run) = run_to_loss(label, args, &[("BB_FAULT_LOST_AFTER_MS", LOST_AFTER_MS)]);
    let output = home.path().join("reports");

    // The app sees the loss in its fence wait, reports it and exits with its runtime-error code.
    assert_eq!(run.status.code(), Some(1), "{}", run.dump());
    assert!(
        run.stderr
            .contains("[fault-layer] injected VK_ERROR_DEVICE_LOST in vkWaitForFences after")
            && run
                .stderr
                .contains("vkWaitForFences failed: ERROR_DEVICE_LOST"),
        "{}",
        run.dump()
    );
    // Nothing the layers did reached the driver in an invalid way, the teardown after the loss included
    // (the fault layer waits for the real work before the first destroy).
    run.assert_no_validation_messages();

    let reports = reports_in(&output);
    assert_eq!(reports.len(), 1, "exactly one report\n{}", run.dump());
    let (dir, report) = reports.into_iter().next().unwrap();
    let text = std::fs::read_to_string(dir.join("report.txt")).expect("report.txt");
    assert_eq!(report.kind, Kind::DeviceLost, "{text}");
    // The loss is named by the first call that sees it: the app's fence wait, or, when its poll comes in
    // between the loss and the wait's return (seen once in a fresh Debian root's run of the test command),
    // the watchdog's. Either names the same loss, and the report is the same otherwise.
    let by_app = report.reason == "vkWaitForFences returned VK_ERROR_DEVICE_LOST";
    let by_watchdog = report
        .reason
        .ends_with(" (watchdog) returned VK_ERROR_DEVICE_LOST");
    assert!(by_app || by_watchdog, "{text}");
    let written = format!(
        "[blackbox] error: device lost report written to {}",
        dir.join("report.txt").display()
    );
    assert_eq!(
        run.stderr
            .lines()
            .filter(|l| l.contains("report written to"))
            .count(),
        1,
        "{}",
        run.dump()
    );
    assert!(run.stderr.contains(&written), "`{written}`\n{}", run.dump());
    Lost {
        run,
        report,
        text,
        _home: home,
    }
}

/// Runs bb-testapp with `args` under Blackbox (reports in `reports` under the home returned), the fault
/// layer and validation, with `vars` set (`BB_FAULT_LOST_AFTER_MS` among them), after the other tests of the
/// file.
fn run_to_loss(label: &str, args: &[&str], vars: &[(&str, &str)]) -> (TempDir, Run) {
    let home = TempDir::new(label);
    let manifests = home.path().join("manifests");
    write_manifest(&manifests.join("blackbox"), "VkLayer_blackbox.json");
    write_fault_manifest(&manifests.join("fault"));
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.args(args)
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
        .envs(vars.iter().copied())
        // lavapipe runs as many threads as there are CPUs: two keep the long command long on a big machine.
        .env("LP_NUM_THREADS", "2");
    enable_with_fault_layer(
        &mut cmd,
        &manifests.join("blackbox"),
        &manifests.join("fault"),
    );
    let run = {
        let _serial = serial();
        run(&mut cmd)
    };
    (home, run)
}

/// A command buffer's commands as `(label path, command, state)`, the path joined with ` > `.
fn listing(cb: &CommandBuffer) -> Vec<(String, String, State)> {
    commands_with_labels(cb)
        .into_iter()
        .map(|(labels, name, state)| (labels.join(" > "), name, state))
        .collect()
}

/// `listing` with `&str`s, for comparing with literal expectations.
fn entries(expected: &[(&str, &str, State)]) -> Vec<(String, String, State)> {
    expected
        .iter()
        .map(|&(labels, name, state)| (labels.to_owned(), name.to_owned(), state))
        .collect()
}

/// The states of the `hang` scenario's dispatches in `cb`, by label path.
fn dispatch_states(cb: &CommandBuffer) -> Vec<(String, State)> {
    listing(cb)
        .into_iter()
        .filter(|(_, name, _)| name == "vkCmdDispatch")
        .map(|(labels, _, state)| (labels, state))
        .collect()
}

fn dispatches(expected: &[(&str, State)]) -> Vec<(String, State)> {
    expected
        .iter()
        .map(|&(labels, state)| (labels.to_owned(), state))
        .collect()
}

/// The name of the pipeline of command `index` of `cb`.
fn pipeline_name(cb: &CommandBuffer, index: usize) -> Option<&str> {
    cb.commands[index].pipeline.as_ref()?.name.as_deref()
}

/// The one queue of lavapipe, with the one pending submission of the draw scenarios.
fn only_submission(lost: &Lost) -> &CommandBuffer {
    let report = &lost.report;
    assert_eq!(report.queues.len(), 1, "{}", lost.text);
    let subs = &report.queues[0].submissions;
    assert_eq!(subs.len(), 1, "{}", lost.text);
    assert_eq!(
        (subs[0].seq, subs[0].state),
        (1, State::InFlight),
        "{}",
        lost.text
    );
    assert_eq!(subs[0].command_buffers.len(), 1, "{}", lost.text);
    &subs[0].command_buffers[0]
}

/// Checks that the report names the long draw (`frame > draw 2`, `long-pipeline`, fullscreen.vert and
/// hang.frag) among the commands in flight.
fn assert_long_draw_in_flight(lost: &Lost) {
    let draw = lost
        .report
        .in_flight
        .iter()
        .find(|l| l.labels == ["frame", "draw 2"])
        .unwrap_or_else(|| panic!("draw 2 is in flight\n{}", lost.text));
    assert_eq!(draw.command, "vkCmdDraw");
    assert_eq!(draw.submission, 1);
    let pipeline = draw.pipeline.as_ref().expect("the draw's pipeline");
    assert_eq!(pipeline.name.as_deref(), Some("long-pipeline"));
    let stages: Vec<_> = pipeline
        .shaders
        .iter()
        .map(|s| (s.entry_points.clone(), s.sources.clone(), s.id.len()))
        .collect();
    assert_eq!(
        stages,
        vec![
            (
                vec!["main (vertex)".to_owned()],
                vec!["fullscreen.vert".to_owned()],
                16
            ),
            (
                vec!["main (fragment)".to_owned()],
                vec!["hang.frag".to_owned()],
                16
            ),
        ],
        "{}",
        lost.text
    );
}

#[test]
fn device_lost_inside_a_classic_render_pass() {
    let lost = device_lost("lost-pass", &["hang-draw", "--hang-size", HANG_SIZE]);
    let cb = only_submission(&lost);
    // On lavapipe the pass is one unit: begun, not ended. Its begin, all three draws and its end share the
    // in-flight state; the copy after it has not started. (With VK_AMD_buffer_marker: draw 1 finished, draw 2
    // in flight, draw 3 not started.)
    assert_eq!(
        listing(cb),
        entries(&[
            ("frame", "vkCmdBeginRenderPass", State::InFlight),
            ("frame > draw 1", "vkCmdDraw", State::InFlight),
            ("frame > draw 2", "vkCmdDraw", State::InFlight),
            ("frame > draw 3", "vkCmdDraw", State::InFlight),
            ("frame", "vkCmdEndRenderPass", State::InFlight),
            ("", "vkCmdCopyImageToBuffer", State::NotStarted),
            ("", "vkCmdPipelineBarrier", State::NotStarted),
        ]),
        "{}",
        lost.text
    );
    assert_eq!(
        (0..4).map(|i| pipeline_name(cb, i)).collect::<Vec<_>>(),
        [
            None,
            Some("short-pipeline"),
            Some("long-pipeline"),
            Some("short-pipeline")
        ]
    );
    assert!(cb.commands[0].first_unfinished, "{}", lost.text);
    assert_long_draw_in_flight(&lost);
    // The pass is the submission's first unit: nothing is known finished.
    assert!(lost.report.last_finished.is_none(), "{}", lost.text);
    assert!(
        lost.report
            .progress
            .coverage
            .contains("each render pass as a whole"),
        "{:?}",
        lost.report.progress
    );
}

#[test]
fn device_lost_inside_dynamic_rendering() {
    let lost = device_lost(
        "lost-dynamic",
        &["hang-draw", "--hang-size", HANG_SIZE, "--dynamic"],
    );
    let cb = only_submission(&lost);
    // As with a classic pass: vkCmdBeginRendering..vkCmdEndRendering is one unit on lavapipe. The layout
    // transition before it finished (the unit after it started); the one after it has not started.
    assert_eq!(
        listing(cb),
        entries(&[
            ("frame", "vkCmdPipelineBarrier2", State::Finished),
            ("frame", "vkCmdBeginRendering", State::InFlight),
            ("frame > draw 1", "vkCmdDraw", State::InFlight),
            ("frame > draw 2", "vkCmdDraw", State::InFlight),
            ("frame > draw 3", "vkCmdDraw", State::InFlight),
            ("frame", "vkCmdEndRendering", State::InFlight),
            ("frame", "vkCmdPipelineBarrier2", State::NotStarted),
            ("", "vkCmdCopyImageToBuffer", State::NotStarted),
            ("", "vkCmdPipelineBarrier", State::NotStarted),
        ]),
        "{}",
        lost.text
    );
    assert!(cb.commands[1].first_unfinished, "{}", lost.text);
    assert!(
        lost.report
            .in_flight
            .iter()
            .any(|l| l.command == "vkCmdBeginRendering" && l.labels == ["frame"]),
        "{}",
        lost.text
    );
    assert_long_draw_in_flight(&lost);
}

#[test]
fn device_lost_while_a_secondary_command_buffer_runs_inside_a_render_pass() {
    let lost = device_lost(
        "lost-secondary",
        &["hang-draw", "--hang-size", HANG_SIZE, "--secondary"],
    );
    let cb = only_submission(&lost);
    // The primary holds the pass (one unit on lavapipe) and the vkCmdExecuteCommands inside it.
    assert_eq!(
        listing(cb),
        entries(&[
            ("frame", "vkCmdBeginRenderPass", State::InFlight),
            ("frame", "vkCmdExecuteCommands", State::InFlight),
            ("frame", "vkCmdEndRenderPass", State::InFlight),
            ("", "vkCmdCopyImageToBuffer", State::NotStarted),
            ("", "vkCmdPipelineBarrier", State::NotStarted),
        ]),
        "{}",
        lost.text
    );
    assert!(
        lost.report
            .in_flight
            .iter()
            .any(|l| l.command == "vkCmdExecuteCommands" && l.labels == ["frame"]),
        "{}",
        lost.text
    );
    // The secondary it ran, by name, with its own labels and the three draws' pipelines. It continues the
    // render pass, where lavapipe's fill-buffer markers cannot go: it has no markers of its own (with
    // VK_AMD_buffer_marker each of its draws would be a unit).
    assert_eq!(cb.commands[1].secondaries_from, Some(0), "{}", lost.text);
    assert_eq!(cb.secondaries.len(), 1, "{}", lost.text);
    let secondary = &cb.secondaries[0];
    assert_eq!(secondary.name.as_deref(), Some("draws-secondary"));
    assert_eq!(secondary.level, "secondary");
    assert!(secondary.units.is_none(), "{}", lost.text);
    assert_eq!(
        listing(secondary)
            .into_iter()
            .map(|(labels, name, _)| (labels, name))
            .collect::<Vec<_>>(),
        [
            ("draw 1", "vkCmdDraw"),
            ("draw 2", "vkCmdDraw"),
            ("draw 3", "vkCmdDraw")
        ]
        .map(|(l, n)| (l.to_owned(), n.to_owned())),
        "{}",
        lost.text
    );
    assert_eq!(
        (0..3)
            .map(|i| pipeline_name(secondary, i))
            .collect::<Vec<_>>(),
        [
            Some("short-pipeline"),
            Some("long-pipeline"),
            Some("short-pipeline")
        ]
    );
}

/// The secondary's draws run inside the primary's pass unit: on lavapipe they share its state, in flight,
/// as the same draws recorded inline do (`device_lost_inside_a_classic_render_pass`), and the long draw is
/// named among the commands in flight.
#[test]
fn secondary_draws_inside_a_render_pass_share_the_pass_state() {
    let lost = device_lost(
        "lost-secondary-state",
        &["hang-draw", "--hang-size", HANG_SIZE, "--secondary"],
    );
    let cb = only_submission(&lost);
    assert_eq!(cb.commands[1].state, State::InFlight, "{}", lost.text);
    let secondary = &cb.secondaries[0];
    assert_eq!(
        (
            secondary.state,
            secondary
                .commands
                .iter()
                .map(|c| c.state)
                .collect::<Vec<_>>()
        ),
        (State::InFlight, vec![State::InFlight; 3]),
        "the draws of a secondary executed inside an in-flight pass are in flight, not unknown\n{}",
        lost.text
    );
    assert!(
        lost.report
            .in_flight
            .iter()
            .any(|l| l.command == "vkCmdDraw"
                && l.labels.last().map(String::as_str) == Some("draw 2")
                && l.pipeline.as_ref().and_then(|p| p.name.as_deref()) == Some("long-pipeline")),
        "the secondary's long draw is named in flight\n{}",
        lost.text
    );
}

#[test]
fn device_lost_in_the_second_of_two_submissions_ordered_by_a_semaphore() {
    let lost = device_lost(
        "lost-two-queues",
        &["hang", "--hang-groups", HANG_GROUPS, "--two-queues"],
    );
    let report = &lost.report;
    let text = &lost.text;
    // lavapipe has one queue: both submissions went to queue 0.0, #1 (dispatches 1-2) then #2 (3-5).
    assert!(
        lost.run
            .stderr
            .contains("the queue family has one queue; using it twice"),
        "{}",
        lost.run.dump()
    );
    assert_eq!(report.queues.len(), 1, "{text}");
    let queue = &report.queues[0];
    // #1 finished long before the loss: either known complete (gone from the pending list), or listed with
    // its command buffer and every dispatch finished (the submission itself then still counts as in flight:
    // its completion was not seen).
    for sub in queue.submissions.iter().filter(|s| s.seq == 1) {
        assert_eq!(sub.command_buffers[0].state, State::Finished, "{text}");
        assert_eq!(
            dispatch_states(&sub.command_buffers[0]),
            dispatches(&[
                ("frame > dispatch 1", State::Finished),
                ("frame > dispatch 2", State::Finished),
            ]),
            "{text}"
        );
    }
    let second = queue
        .submissions
        .iter()
        .find(|s| s.seq == 2)
        .unwrap_or_else(|| panic!("submission #2 is pending\n{text}"));
    assert_eq!(second.state, State::InFlight, "{text}");
    assert_eq!(second.command_buffers.len(), 1, "{text}");
    assert_eq!(
        dispatch_states(&second.command_buffers[0]),
        dispatches(&[
            ("frame > dispatch 3", State::InFlight),
            ("frame > dispatch 4", State::NotStarted),
            ("frame > dispatch 5", State::NotStarted),
        ]),
        "{text}"
    );
    assert_eq!(report.in_flight.len(), 1, "{text}");
    let in_flight = &report.in_flight[0];
    assert_eq!((in_flight.queue.as_str(), in_flight.submission), ("0.0", 2));
    assert_eq!(in_flight.labels, ["frame", "dispatch 3"]);
    assert_eq!(
        in_flight.pipeline.as_ref().and_then(|p| p.name.as_deref()),
        Some("long-pipeline")
    );
    let last = report.last_finished.as_ref().expect("last finished");
    assert_eq!(
        (last.submission, last.labels.clone()),
        (1, vec!["frame".to_owned(), "dispatch 2".to_owned()]),
        "{text}"
    );
}

#[test]
fn device_lost_in_a_resubmitted_command_buffer_names_the_second_run() {
    let lost = device_lost(
        "lost-resubmit",
        &["hang", "--hang-groups", HANG_GROUPS, "--resubmit"],
    );
    let report = &lost.report;
    let text = &lost.text;
    assert!(
        lost.run
            .stderr
            .contains("the first (short) submission is done; submitting it again"),
        "{}",
        lost.run.dump()
    );
    assert_eq!(report.queues.len(), 1, "{text}");
    let queue = &report.queues[0];
    // The first run finished (the app waited for its fence): only the second is pending.
    assert_eq!(queue.completed, 1, "{text}");
    assert_eq!(queue.submissions.len(), 1, "{text}");
    let sub = &queue.submissions[0];
    assert_eq!((sub.seq, sub.state), (2, State::InFlight), "{text}");
    // The same recording as the finished run #1, whose markers said "all done": the second run's progress
    // is its own (its marker slot is reset at the start of each execution).
    let cb = &sub.command_buffers[0];
    assert!(cb.units.is_some(), "{text}");
    assert_eq!(
        dispatch_states(cb),
        dispatches(&[
            ("frame > dispatch 1", State::Finished),
            ("frame > dispatch 2", State::Finished),
            ("frame > dispatch 3", State::InFlight),
            ("frame > dispatch 4", State::NotStarted),
            ("frame > dispatch 5", State::NotStarted),
        ]),
        "{text}"
    );
    assert_eq!(report.in_flight.len(), 1, "{text}");
    let in_flight = &report.in_flight[0];
    assert_eq!(
        (in_flight.submission, in_flight.labels.clone()),
        (2, vec!["frame".to_owned(), "dispatch 3".to_owned()]),
        "{text}"
    );
    assert_eq!(in_flight.command_buffer, cb.handle);
    let last = report.last_finished.as_ref().expect("last finished");
    assert_eq!(
        (last.submission, last.labels.clone()),
        (2, vec!["frame".to_owned(), "dispatch 2".to_owned()]),
        "{text}"
    );
}

#[test]
fn device_lost_during_a_long_dispatch_is_reported_once() {
    let lost = device_lost("lost-hang", &["hang", "--hang-groups", HANG_GROUPS]);
    let report = &lost.report;
    let text = &lost.text;
    let queue = &report.queues[0];
    assert_eq!(queue.submissions.len(), 1, "{text}");
    assert_eq!(
        dispatch_states(&queue.submissions[0].command_buffers[0]),
        dispatches(&[
            ("frame > dispatch 1", State::Finished),
            ("frame > dispatch 2", State::Finished),
            ("frame > dispatch 3", State::InFlight),
            ("frame > dispatch 4", State::NotStarted),
            ("frame > dispatch 5", State::NotStarted),
        ]),
        "{text}"
    );
    assert_eq!(report.in_flight.len(), 1, "{text}");
    let in_flight = &report.in_flight[0];
    assert_eq!(in_flight.labels, ["frame", "dispatch 3"]);
    assert_eq!(in_flight.command, "vkCmdDispatch");
    let groups: u64 = HANG_GROUPS.parse().unwrap();
    assert_eq!(in_flight.params, [groups, 1, 1]);
    let pipeline = in_flight
        .pipeline
        .as_ref()
        .expect("the dispatch's pipeline");
    assert_eq!(pipeline.name.as_deref(), Some("long-pipeline"));
    assert_eq!(pipeline.shaders.len(), 1, "{text}");
    let shader = &pipeline.shaders[0];
    assert!(
        shader.id.len() == 16 && shader.id.chars().all(|c| c.is_ascii_hexdigit()),
        "{}",
        shader.id
    );
    assert_eq!(shader.entry_points, ["main (compute)"]);
    assert_eq!(shader.sources, ["hang.comp"]);
    assert!(
        text.contains("hang.comp") && text.contains(&shader.id),
        "{text}"
    );
    let last = report.last_finished.as_ref().expect("last finished");
    assert_eq!(last.labels, ["frame", "dispatch 2"]);
    assert_eq!(
        last.pipeline.as_ref().and_then(|p| p.name.as_deref()),
        Some("short-pipeline")
    );

    // Once: the loss in vkWaitForFences wrote the report; every later call that returned
    // VK_ERROR_DEVICE_LOST (Blackbox's own completion polls, the app's vkDeviceWaitIdle in its teardown)
    // wrote nothing more (`device_lost` checked the one report and the one "written to" line).
    let stderr = &lost.run.stderr;
    let later = stderr
        .lines()
        .filter(|l| {
            l.starts_with("[fault-layer] injected VK_ERROR_DEVICE_LOST in")
                && l.ends_with("(device lost since vkWaitForFences)")
        })
        .count();
    assert!(later >= 2, "later calls failed too\n{}", lost.run.dump());
    assert!(
        stderr.contains("bb-testapp: vkDeviceWaitIdle after the error: ERROR_DEVICE_LOST"),
        "{}",
        lost.run.dump()
    );
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("[blackbox] error:")
                && l.contains("returned VK_ERROR_DEVICE_LOST"))
            .count(),
        1,
        "{}",
        lost.run.dump()
    );
    assert!(
        stderr.contains("bb-testapp: objects destroyed after the error"),
        "the app still tore everything down\n{}",
        lost.run.dump()
    );
}

/// A hang that ends in a device loss was a hang: the watchdog's report of it, written before the loss,
/// never says the work moved again, though the app then stops the long shader and lavapipe finishes it.
#[test]
fn a_hang_report_before_the_device_is_lost_stays_a_hang() {
    let (home, run) = run_to_loss(
        "hang-then-lost",
        &["hang", "--hang-groups", HANG_GROUPS],
        &[
            ("VK_BLACKBOX_WATCHDOG_MS", "500"),
            // Long after the watchdog's 500 ms, far before dispatch 3's 15 s.
            ("BB_FAULT_LOST_AFTER_MS", "4000"),
        ],
    );
    let output = home.path().join("reports");
    assert_eq!(run.status.code(), Some(1), "{}", run.dump());
    run.assert_no_validation_messages();
    let mut reports = reports_in(&output);
    reports.sort_by_key(|(_, r)| r.unix_ms);
    let kinds: Vec<Kind> = reports.iter().map(|(_, r)| r.kind).collect();
    assert_eq!(kinds, [Kind::Hang, Kind::DeviceLost], "{}", run.dump());
    let (dir, hang) = &reports[0];
    assert!(hang.resumed.is_none(), "{:?}\n{}", hang.resumed, run.dump());
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert!(!text.contains("resumed"), "{text}");
    assert!(!run.stderr.contains("moved again"), "{}", run.dump());
}

#[test]
fn fatal_signal_from_a_bad_address_write_is_reported() {
    let home = TempDir::new("signal");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let output = home.path().join("reports");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("bad-address").env("VK_BLACKBOX_OUTPUT", &output);
    enable_explicit(&mut cmd, &manifests);
    let run = {
        let _serial = serial();
        run(&mut cmd)
    };

    // Blackbox writes its report, then chains to the default action: the process dies of SIGSEGV.
    assert_eq!(run.status.signal(), Some(11), "SIGSEGV\n{}", run.dump());
    assert!(run.checksums().is_empty(), "{}", run.dump());
    run.assert_no_validation_messages();

    let dirs: Vec<PathBuf> = std::fs::read_dir(&output)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(dirs.len(), 1, "one report folder\n{}", run.dump());
    let json = std::fs::read_to_string(dirs[0].join("report.json")).expect("report.json");
    // Complete JSON: it parses, with every field of the schema.
    let report = Report::from_json(&json).unwrap_or_else(|e| panic!("{e}\n{json}"));
    validate_json(&report_schema(), &[dirs[0].join("report.json")])
        .unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(dirs[0].join("report.txt")).expect("report.txt");
    assert!(
        run.stderr.contains(&format!(
            "fatal signal report written to {}",
            dirs[0].join("report.txt").display()
        )),
        "{}",
        run.dump()
    );
    assert_eq!(report.kind, Kind::Signal, "{text}");
    assert_eq!(report.reason, "the process received SIGSEGV");
    let signal = report.signal.as_ref().expect("the signal");
    assert_eq!((signal.number, signal.name.as_str()), (11, "SIGSEGV"));
    // The faulting address is inside the 256 bytes dispatch 2 writes at 0xdead0000.
    let address = signal
        .address
        .as_deref()
        .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
        .expect("the faulting address");
    assert!(
        (0xdead_0000..0xdead_0100).contains(&address),
        "{address:#x}\n{text}"
    );

    let cb = &report.queues[0].submissions[0].command_buffers[0];
    assert_eq!(
        dispatch_states(cb),
        dispatches(&[
            ("frame > dispatch 1", State::Finished),
            ("frame > dispatch 2", State::InFlight),
            ("frame > dispatch 3", State::NotStarted),
        ]),
        "{text}"
    );
    assert_eq!(report.in_flight.len(), 1, "{text}");
    let in_flight = &report.in_flight[0];
    assert_eq!(in_flight.labels, ["frame", "dispatch 2"]);
    assert_eq!(in_flight.command, "vkCmdDispatch");
    let pipeline = in_flight
        .pipeline
        .as_ref()
        .expect("the dispatch's pipeline");
    assert_eq!(pipeline.name.as_deref(), Some("address-writer"));
    assert_eq!(pipeline.shaders.len(), 1);
    assert_eq!(pipeline.shaders[0].entry_points, ["main (compute)"]);
    assert_eq!(pipeline.shaders[0].sources, ["bad_address.comp"]);
    assert!(!report.signature.is_empty(), "{text}");
}
