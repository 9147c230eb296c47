//! Breadcrumbs, the watchdog and crash reports, end to end on lavapipe: the reports name the work in
//! flight inside the app's labels, with its pipeline and shader.

use blackbox_integration::run as run_cmd;
use blackbox_integration::*;
use blackbox_report::{Kind, State};

/// `hang --hang-groups`: dispatch 3 runs 2-4 s on lavapipe on two CPUs, past the 1 s watchdog of these
/// tests (the default 8000 workgroups ran 25 s a run on a loaded 2-core machine).
const HANG_GROUPS: &str = "3000";

/// Runs a test-app scenario through the explicit layer with validation below it.
fn scenario(home: &TempDir, args: &[&str], vars: &[(&str, &str)]) -> Run {
    run(&mut testapp_with_blackbox(home, args, vars))
}

/// The dispatches of the `hang` scenario, by label, with their states.
fn dispatch_states(report: &blackbox_report::Report) -> Vec<(String, State)> {
    let sub = &report.queues[0].submissions[0];
    commands_with_labels(&sub.command_buffers[0])
        .into_iter()
        .filter(|(_, name, _)| name == "vkCmdDispatch")
        .map(|(labels, _, state)| (labels.join(" > "), state))
        .collect()
}

#[test]
fn watchdog_reports_the_dispatch_in_flight_during_a_hang() {
    let home = TempDir::new("hang");
    let run = scenario(
        &home,
        &["hang", "--hang-groups", HANG_GROUPS],
        &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
    );
    run.assert_success().assert_no_validation_messages();
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "one hang report\n{}", run.dump());
    let (dir, report) = &reports[0];
    assert_eq!(report.kind, Kind::Hang);
    assert!(
        run.stderr.contains(&format!(
            "report written to {}",
            dir.join("report.txt").display()
        )),
        "{}",
        run.dump()
    );
    assert_eq!(
        dispatch_states(report),
        vec![
            ("frame > dispatch 1".to_owned(), State::Finished),
            ("frame > dispatch 2".to_owned(), State::Finished),
            ("frame > dispatch 3".to_owned(), State::InFlight),
            ("frame > dispatch 4".to_owned(), State::NotStarted),
            ("frame > dispatch 5".to_owned(), State::NotStarted),
        ],
        "{}",
        std::fs::read_to_string(dir.join("report.txt")).unwrap()
    );
    let in_flight = &report.in_flight[0];
    assert_eq!(in_flight.labels, ["frame", "dispatch 3"]);
    assert_eq!(in_flight.command, "vkCmdDispatch");
    let pipeline = in_flight
        .pipeline
        .as_ref()
        .expect("the dispatch's pipeline");
    assert_eq!(pipeline.name.as_deref(), Some("long-pipeline"));
    assert_eq!(pipeline.shaders.len(), 1);
    assert_eq!(pipeline.shaders[0].id.len(), 16);
    assert_eq!(pipeline.shaders[0].entry_points, ["main (compute)"]);
    let last = report.last_finished.as_ref().expect("last finished");
    assert_eq!(last.labels, ["frame", "dispatch 2"]);
    // The scopes' states follow their commands.
    let cb = &report.queues[0].submissions[0].command_buffers[0];
    let scope = |name: &str| cb.scopes.iter().find(|s| s.name == name).unwrap().state;
    assert_eq!(scope("frame"), State::InFlight);
    assert_eq!(scope("dispatch 1"), State::Finished);
    assert_eq!(scope("dispatch 5"), State::NotStarted);
    assert!(
        report.progress.markers.contains("fill-buffer"),
        "{:?}",
        report.progress
    );
    // Dispatch 3 ends (the app exits 0 after it): the work was slow, not hung, and the report, written
    // again, says so; the rest of it is what the watchdog saw when it fired.
    let resumed = report
        .resumed
        .as_ref()
        .unwrap_or_else(|| panic!("the report says the work moved again\n{}", run.dump()));
    assert!(resumed.after_ms >= 1000, "{resumed:?}");
    assert!(
        resumed.time > report.time,
        "{resumed:?} after {}",
        report.time
    );
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    let line = format!(
        "  resumed    the work moved again {:.1} s after its last progress ({}): slow work, not a hang\n",
        resumed.after_ms as f64 / 1000.0,
        resumed.time
    );
    assert!(text.contains(&line), "`{line}`\n{text}");
    let logged = format!(
        " moved again {:.1} s after its last progress: slow work, not a hang; {} says so now",
        resumed.after_ms as f64 / 1000.0,
        dir.join("report.txt").display()
    );
    let expected = format!(
        "[blackbox] warn: GPU work on {}{logged}",
        report.device.name
    );
    assert_eq!(run.warnings(), [expected.as_str()], "{}", run.dump());
}

/// On a GPU the fixed loop count of `hang` runs for milliseconds (and `blackbox demo` would show no hang), so
/// on a device that is not a CPU the app times its long dispatch first, in short dispatches, and sets the
/// count for about 3 s; lavapipe keeps the fixed count unless `--hang-seconds` asks, as here. The timing
/// dispatches go through Blackbox with nothing for validation, and dispatch 3 runs the count they gave, with
/// the bits a run without Blackbox gets for that count. (lavapipe stops loops at 65,535 iterations whatever
/// the count, so how long it runs is not checked here.)
#[test]
fn a_hang_timed_on_the_device_runs_the_loop_count_its_timing_gave() {
    let home = TempDir::new("hang-timed");
    let args = ["hang", "--hang-groups", "200", "--hang-seconds", "0.5"];
    let run = scenario(&home, &args, &[("VK_BLACKBOX_WATCHDOG_MS", "0")]);
    run.assert_success().assert_no_validation_messages();
    let timed: u32 = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("bb-testapp: hang: ") && l.contains(" iterations took "))
        .find_map(|l| {
            l.strip_suffix(" for about 0.5 s")?
                .rsplit_once(": ")?
                .1
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no timing line\n{}", run.dump()));
    assert!(
        run.stderr.contains(&format!(
            "dispatch 3 runs 200 workgroups x 64 invocations x {} multiply-adds",
            u64::from(timed) * 4
        )),
        "{}",
        run.dump()
    );
    assert!(
        reports_in(&home.path().join("reports")).is_empty(),
        "{}",
        run.dump()
    );
    let plain = run_cmd(&mut testapp_with_validation_only(
        &home,
        &[
            "hang",
            "--hang-groups",
            "200",
            "--hang-iterations",
            &timed.to_string(),
        ],
    ));
    plain.assert_success();
    assert_eq!(run.checksums(), plain.checksums(), "{}", run.dump());
}

#[test]
fn no_watchdog_report_when_work_finishes_in_time() {
    let home = TempDir::new("no-hang");
    let run = scenario(&home, &["all"], &[("VK_BLACKBOX_WATCHDOG_MS", "5000")]);
    run.assert_success().assert_no_validation_messages();
    assert!(
        reports_in(&home.path().join("reports")).is_empty(),
        "{}",
        run.dump()
    );
}

#[test]
fn same_bug_same_signature_other_bug_other_signature() {
    let run_hang = |home: &TempDir, frame: &str| {
        let run = scenario(
            home,
            &["hang", "--hang-groups", HANG_GROUPS, "--frame", frame],
            &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
        );
        run.assert_success();
        let reports = reports_in(&home.path().join("reports"));
        assert_eq!(reports.len(), 1, "{}", run.dump());
        reports[0].1.clone()
    };
    let a = run_hang(&TempDir::new("sig-a"), "8112");
    let b = run_hang(&TempDir::new("sig-b"), "9377");
    assert_ne!(
        a.in_flight[0].labels, b.in_flight[0].labels,
        "the runs differ in their frame labels"
    );
    assert_eq!(
        a.signature, b.signature,
        "{} vs {}",
        a.signature_text, b.signature_text
    );

    let home = TempDir::new("sig-draw");
    let run = scenario(
        &home,
        // Draw 2 runs 2-4 s at 640 x 640 (the default 1024 x 1024 is 2.6 times that).
        &["hang-draw", "--hang-size", "640"],
        &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
    );
    run.assert_success();
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    assert_ne!(reports[0].1.signature, a.signature);
}

#[test]
fn a_command_buffer_pending_twice_is_credited_to_its_first_run_and_flagged() {
    let home = TempDir::new("simultaneous");
    let run = scenario(
        &home,
        &["hang", "--simultaneous", "--hang-groups", HANG_GROUPS],
        &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
    );
    // Best practices reports the app's SIMULTANEOUS_USE itself; Blackbox must add nothing. The reference
    // records and submits the same commands, with a short dispatch 3.
    let reference = run_cmd(&mut testapp_with_validation_only(
        &home,
        &["hang", "--simultaneous", "--hang-groups", "1"],
    ));
    run.assert_same_exit(&reference)
        .assert_validation_messages_unchanged(&reference);
    assert!(
        run.checksums().contains_key("hang"),
        "the app finished\n{}",
        run.dump()
    );
    let reports = reports_in(&home.path().join("reports"));
    // The first report comes while both runs are pending.
    let (_, report) = reports
        .first()
        .unwrap_or_else(|| panic!("a hang report\n{}", run.dump()));
    let subs = &report.queues[0].submissions;
    assert_eq!(subs.len(), 2, "both runs pending");
    assert_eq!(
        (subs[0].seq, subs[0].state, subs[1].seq, subs[1].state),
        (1, State::InFlight, 2, State::NotStarted)
    );
    for s in subs {
        let note = s.command_buffers[0].note.as_deref().unwrap_or_default();
        assert!(
            note.contains("pending in 2 submissions at once (simultaneous use)"),
            "{note}"
        );
    }
    assert_eq!(
        (
            report.in_flight[0].submission,
            report.in_flight[0].labels.join(" > ")
        ),
        (1, "frame > dispatch 3".to_owned())
    );
}

#[test]
fn with_breadcrumbs_off_the_watchdog_still_names_the_submission() {
    let home = TempDir::new("crumbs-off");
    let run = scenario(
        &home,
        &["hang", "--hang-groups", HANG_GROUPS],
        &[
            ("VK_BLACKBOX_WATCHDOG_MS", "1000"),
            ("VK_BLACKBOX_BREADCRUMBS", "off"),
        ],
    );
    run.assert_success().assert_no_validation_messages();
    assert!(run.stderr.contains("breadcrumbs off"), "{}", run.dump());
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let report = &reports[0].1;
    assert_eq!(report.progress.markers, "none");
    // Recording was not watched: the submission is known, its commands are not.
    let subs = &report.queues[0].submissions;
    assert_eq!(
        (subs.len(), subs[0].seq, subs[0].command.as_str()),
        (1, 1, "vkQueueSubmit")
    );
    assert!(
        subs[0].command_buffers.is_empty(),
        "{:?}",
        subs[0].command_buffers
    );
}

/// The faked marker writes and dispatches the fault layer logged (`BB_FAULT_LOG_MARKERS`), in recording
/// order: `Some((stage, value))` for a marker, `None` for a dispatch.
fn marker_log(stderr: &str) -> Vec<Option<(String, u32)>> {
    stderr
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix("[fault-layer] ")?;
            if rest == "vkCmdDispatch" {
                return Some(None);
            }
            let mut words = rest.strip_prefix("vkCmdWriteBufferMarkerAMD ")?.split(' ');
            let stage = words.next()?.to_owned();
            Some(Some((stage, words.next()?.parse().ok()?)))
        })
        .collect()
}

#[test]
fn on_the_shared_buffer_marker_path_a_dispatch_is_marked_right_after_it() {
    // The buffer-marker path, faked on lavapipe by the fault layer below (which logs each marker write and
    // each dispatch as it is recorded), at `command`, without synchronization validation below: a
    // recording's "started" marks share one word, and each goes right after its command. (With
    // synchronization validation below, Blackbox takes the fill path here. The real driver's path ran on
    // the H200: the README's "GPU time where the app's barriers are narrow".)
    let home = TempDir::new("marker-placement");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests.join("blackbox"), "VkLayer_blackbox.json");
    write_fault_manifest(&manifests.join("fault"));
    let mut paths = std::ffi::OsString::from(manifests.join("blackbox"));
    paths.push(":");
    paths.push(manifests.join("fault"));
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.args(["--cmdbufs", "1", "--draws", "100", "--iters", "1"])
        .args(["--record-only", "record-bench"])
        .env("VK_ADD_LAYER_PATH", paths)
        .env(
            "VK_INSTANCE_LAYERS",
            format!("VK_LAYER_blackbox:{FAULT_LAYER}"),
        )
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
        .env("VK_BLACKBOX_BREADCRUMBS", "command")
        .env("BB_FAULT_FAKE_BUFFER_MARKER", "1")
        .env("BB_FAULT_LOG_MARKERS", "1");
    let run = run_cmd(&mut cmd);
    run.assert_success();
    assert!(
        run.stderr.contains("breadcrumbs command (buffer markers)"),
        "{}",
        run.dump()
    );
    let log = marker_log(&run.stderr);
    let top = |i: usize| match log.get(i) {
        Some(Some((stage, value))) if stage == "TOP_OF_PIPE" => Some(*value),
        _ => None,
    };
    let dispatches: Vec<usize> = (0..log.len()).filter(|&i| log[i].is_none()).collect();
    // record-bench records a dispatch after each render pass of 50 draws: one per recording here, in its
    // warm-up iterations and the timed one.
    assert!(dispatches.len() >= 2, "{log:?}\n{}", run.dump());
    for &d in &dispatches {
        // Right after the dispatch, its own "started" write; right before it, the last draw's, one less.
        let unit = top(d + 1).unwrap_or_else(|| panic!("no mark right after a dispatch\n{log:?}"));
        assert_eq!(d.checked_sub(1).and_then(top), Some(unit - 1), "{log:?}");
    }
}
