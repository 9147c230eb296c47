//! Table tests of progress inference: small hand-built snapshots, the state expected of every command, and
//! what `in_flight` and `last_finished` name.

use blackbox_report::progress::{
    combine, infer, CommandBufferSnapshot, Inferred, LabelScope, QueueSnapshot, RecordedCommand,
    RecordedLog, Snapshot, SubmissionSnapshot, MAX_IN_FLIGHT,
};
use blackbox_report::{CommandBuffer, CommandClass, Location, Pipeline, State};
use State::{Finished, InFlight, NotStarted, Unknown};

// ---- Building snapshots ----

fn pipeline(name: &str) -> Pipeline {
    Pipeline {
        handle: "0x99".into(),
        name: Some(name.into()),
        shaders: Vec::new(),
    }
}

fn command(name: &str, class: CommandClass, unit: Option<u32>) -> RecordedCommand {
    RecordedCommand {
        name: name.into(),
        class,
        params: Vec::new(),
        scope: None,
        unit,
        pipeline: None,
        executed: None,
        skipped: false,
    }
}

fn dispatch(unit: Option<u32>) -> RecordedCommand {
    RecordedCommand {
        params: vec![64, 1, 1],
        pipeline: Some(pipeline("sim")),
        ..command("vkCmdDispatch", CommandClass::Action, unit)
    }
}

fn draw(unit: Option<u32>) -> RecordedCommand {
    RecordedCommand {
        params: vec![3, 1, 0, 0],
        pipeline: Some(pipeline("mesh")),
        ..command("vkCmdDraw", CommandClass::Action, unit)
    }
}

fn copy(unit: Option<u32>) -> RecordedCommand {
    command("vkCmdCopyBuffer", CommandClass::Action, unit)
}

fn barrier() -> RecordedCommand {
    command("vkCmdPipelineBarrier", CommandClass::Sync, None)
}

fn begin_pass(unit: Option<u32>) -> RecordedCommand {
    command("vkCmdBeginRenderPass", CommandClass::Action, unit)
}

fn end_pass(unit: Option<u32>) -> RecordedCommand {
    command("vkCmdEndRenderPass", CommandClass::State, unit)
}

/// `vkCmdExecuteCommands` of `count` secondaries from `first` in the log's `executed`.
fn execute(unit: Option<u32>, first: u32, count: u64) -> RecordedCommand {
    RecordedCommand {
        params: vec![count],
        executed: Some(first),
        ..command("vkCmdExecuteCommands", CommandClass::Action, unit)
    }
}

fn scoped(scope: u32, c: RecordedCommand) -> RecordedCommand {
    RecordedCommand {
        scope: Some(scope),
        ..c
    }
}

fn scope(name: &str, parent: Option<u32>, first: u32, end: u32) -> LabelScope {
    LabelScope {
        name: name.into(),
        parent,
        first_command: first,
        end_command: Some(end),
        inserted: false,
    }
}

fn log(units: u32, commands: Vec<RecordedCommand>) -> RecordedLog {
    RecordedLog {
        commands,
        units,
        ..RecordedLog::default()
    }
}

fn primary(handle: u64, progress: Option<(u32, u32)>, log: RecordedLog) -> CommandBufferSnapshot {
    CommandBufferSnapshot {
        handle,
        name: None,
        secondary: false,
        progress,
        log: Some(log),
    }
}

fn secondary(handle: u64, progress: Option<(u32, u32)>, log: RecordedLog) -> CommandBufferSnapshot {
    CommandBufferSnapshot {
        secondary: true,
        ..primary(handle, progress, log)
    }
}

fn named(name: &str, cb: CommandBufferSnapshot) -> CommandBufferSnapshot {
    CommandBufferSnapshot {
        name: Some(name.into()),
        ..cb
    }
}

fn submission(seq: u64, command_buffers: Vec<CommandBufferSnapshot>) -> SubmissionSnapshot {
    SubmissionSnapshot {
        seq,
        command: "vkQueueSubmit".into(),
        age_ms: 10,
        command_buffers,
    }
}

fn queue(family: u32, pending: Vec<SubmissionSnapshot>) -> QueueSnapshot {
    QueueSnapshot {
        family,
        index: 0,
        completed: pending.first().map_or(0, |s| s.seq - 1),
        pending,
        last_finished: None,
    }
}

fn one_queue(pending: Vec<SubmissionSnapshot>) -> Inferred {
    infer(&Snapshot {
        queues: vec![queue(0, pending)],
    })
}

// ---- Reading what was inferred ----

fn states(cb: &CommandBuffer) -> Vec<State> {
    cb.commands.iter().map(|c| c.state).collect()
}

/// A location as (queue, submission, command index, command, labels).
type Place = (String, u64, u32, String, Vec<String>);

fn place(l: &Location) -> Place {
    (
        l.queue.clone(),
        l.submission,
        l.command_index,
        l.command.clone(),
        l.labels.clone(),
    )
}

fn at(queue: &str, submission: u64, index: u32, command: &str, labels: &[&str]) -> Place {
    (
        queue.into(),
        submission,
        index,
        command.into(),
        labels.iter().map(|&l| l.to_owned()).collect(),
    )
}

fn in_flight(inferred: &Inferred) -> Vec<Place> {
    inferred.in_flight.iter().map(place).collect()
}

fn first_cb(inferred: &Inferred, submission: usize) -> &CommandBuffer {
    &inferred.queues[0].submissions[submission].command_buffers[0]
}

/// (index, last_finished, first_unfinished) of every flagged command of a submission's command buffers.
fn flags(inferred: &Inferred) -> Vec<(u64, u32, bool, bool)> {
    inferred
        .queues
        .iter()
        .flat_map(|q| &q.submissions)
        .flat_map(|s| {
            s.command_buffers
                .iter()
                .flat_map(|cb| &cb.commands)
                .filter(|c| c.last_finished || c.first_unfinished)
                .map(move |c| (s.seq, c.index, c.last_finished, c.first_unfinished))
        })
        .collect()
}

// ---- The cases ----

#[test]
fn one_command_buffer_partly_done_on_the_buffer_marker_path() {
    // Every command a unit; units 1..3 started, 1 finished.
    let mut main = log(
        4,
        vec![
            scoped(0, copy(Some(1))),
            scoped(0, dispatch(Some(2))),
            scoped(1, dispatch(Some(3))),
            scoped(0, dispatch(Some(4))),
        ],
    );
    main.scopes = vec![
        scope("frame", None, 0, 4),
        scope("dispatch 2", Some(0), 2, 3),
    ];
    let inferred = one_queue(vec![submission(
        1,
        vec![named("main", primary(0x10, Some((3, 1)), main))],
    )]);
    let cb = first_cb(&inferred, 0);
    assert_eq!(states(cb), [Finished, InFlight, InFlight, NotStarted]);
    assert_eq!(cb.state, InFlight);
    let units = cb.units.expect("units");
    assert_eq!((units.started, units.finished, units.total), (3, 1, 4));
    assert_eq!(
        cb.scopes.iter().map(|s| s.state).collect::<Vec<_>>(),
        [InFlight, InFlight]
    );
    assert_eq!(inferred.queues[0].submissions[0].state, InFlight);
    assert_eq!(
        in_flight(&inferred),
        [
            at("0.0", 1, 1, "vkCmdDispatch", &["frame"]),
            at("0.0", 1, 2, "vkCmdDispatch", &["frame", "dispatch 2"]),
        ]
    );
    assert_eq!(inferred.in_flight[0].command_buffer, "0x10 \"main\"");
    assert_eq!(inferred.in_flight[0].params, [64, 1, 1]);
    assert_eq!(
        inferred.in_flight[0]
            .pipeline
            .as_ref()
            .and_then(|p| p.name.as_deref()),
        Some("sim")
    );
    assert_eq!(
        inferred.last_finished.as_ref().map(place),
        Some(at("0.0", 1, 0, "vkCmdCopyBuffer", &["frame"]))
    );
    assert_eq!(flags(&inferred), [(1, 0, true, false), (1, 1, false, true)]);
}

#[test]
fn on_the_fill_buffer_path_a_render_pass_is_one_unit_its_commands_share() {
    let pass = || {
        log(
            3,
            vec![
                copy(Some(1)),
                begin_pass(Some(2)),
                draw(Some(2)),
                draw(Some(2)),
                end_pass(Some(2)),
                barrier(),
                copy(Some(3)),
            ],
        )
    };
    // (top, bottom), the states, what in_flight names.
    type Row = ((u32, u32), [State; 7], Vec<Place>);
    let table: [Row; 3] = [
        (
            (2, 1),
            [
                Finished, InFlight, InFlight, InFlight, InFlight, NotStarted, NotStarted,
            ],
            // The pass's end is no action: begin and draws only.
            vec![
                at("0.0", 1, 1, "vkCmdBeginRenderPass", &[]),
                at("0.0", 1, 2, "vkCmdDraw", &[]),
                at("0.0", 1, 3, "vkCmdDraw", &[]),
            ],
        ),
        (
            // The pass finished, the copy after the barrier not started: the GPU is at the barrier, which
            // in_flight names as the first unfinished command.
            (2, 2),
            [
                Finished, Finished, Finished, Finished, Finished, InFlight, NotStarted,
            ],
            vec![at("0.0", 1, 5, "vkCmdPipelineBarrier", &[])],
        ),
        (
            (0, 0),
            [NotStarted; 7],
            vec![at("0.0", 1, 0, "vkCmdCopyBuffer", &[])],
        ),
    ];
    for (progress, expected, expected_in_flight) in table {
        let inferred = one_queue(vec![submission(
            1,
            vec![primary(0x10, Some(progress), pass())],
        )]);
        assert_eq!(states(first_cb(&inferred, 0)), expected, "{progress:?}");
        assert_eq!(in_flight(&inferred), expected_in_flight, "{progress:?}");
    }
}

#[test]
fn commands_between_units_take_their_state_from_the_units_around_them() {
    let between = || {
        log(
            3,
            vec![
                barrier(),
                dispatch(Some(1)),
                barrier(),
                command("vkCmdSetEvent", CommandClass::State, None),
                dispatch(Some(2)),
                barrier(),
                dispatch(Some(3)),
                command("vkCmdWriteTimestamp", CommandClass::State, None),
            ],
        )
    };
    let (f, i, n) = (Finished, InFlight, NotStarted);
    let table: [((u32, u32), [State; 8], State); 6] = [
        ((0, 0), [n, n, n, n, n, n, n, n], n),
        // The first barrier is done once unit 1 started.
        ((1, 0), [f, i, n, n, n, n, n, n], i),
        // Unit 1 finished, unit 2 not started: the barrier and event after it are in flight.
        ((1, 1), [f, f, i, i, n, n, n, n], i),
        ((2, 1), [f, f, f, f, i, n, n, n], i),
        // Nothing follows the timestamp: it is in flight only once every unit finished...
        ((3, 2), [f, f, f, f, f, f, i, n], i),
        // ...and then finished, as is the command buffer.
        ((3, 3), [f, f, f, f, f, f, f, f], f),
    ];
    for (progress, expected, cb_state) in table {
        let inferred = one_queue(vec![submission(
            1,
            vec![primary(0x10, Some(progress), between())],
        )]);
        let cb = first_cb(&inferred, 0);
        assert_eq!(states(cb), expected, "{progress:?}");
        assert_eq!(cb.state, cb_state, "{progress:?}");
    }
    // With unit 1 finished and unit 2 not started, no action is in flight: the barrier is named.
    let inferred = one_queue(vec![submission(
        1,
        vec![primary(0x10, Some((1, 1)), between())],
    )]);
    assert_eq!(
        in_flight(&inferred),
        [at("0.0", 1, 2, "vkCmdPipelineBarrier", &[])]
    );
    assert_eq!(
        inferred.last_finished.as_ref().map(place),
        Some(at("0.0", 1, 1, "vkCmdDispatch", &[]))
    );
    // A command buffer seen finished whose submission is pending is shown in flight.
    let inferred = one_queue(vec![submission(
        1,
        vec![primary(0x10, Some((3, 3)), between())],
    )]);
    assert_eq!(inferred.queues[0].submissions[0].state, InFlight);
}

#[test]
fn a_command_buffer_pending_twice_credits_its_slot_to_the_first_run_and_says_so() {
    let twice = || {
        primary(
            0x10,
            Some((1, 0)),
            log(2, vec![dispatch(Some(1)), dispatch(Some(2))]),
        )
    };
    let inferred = one_queue(vec![
        submission(1, vec![twice()]),
        submission(2, vec![twice()]),
    ]);
    let (first, second) = (first_cb(&inferred, 0), first_cb(&inferred, 1));
    assert_eq!(states(first), [InFlight, NotStarted]);
    assert_eq!(states(second), [NotStarted, NotStarted]);
    assert_eq!(second.state, NotStarted);
    let units = second.units.expect("units");
    assert_eq!((units.started, units.finished, units.total), (0, 0, 2));
    for cb in [first, second] {
        assert_eq!(
            cb.note.as_deref(),
            Some(
                "pending in 2 submissions at once (simultaneous use): its markers may show either run's \
                 progress"
            )
        );
    }
    assert_eq!(
        in_flight(&inferred),
        [at("0.0", 1, 0, "vkCmdDispatch", &[])]
    );

    // On two queues there is no order between the runs: each is credited, and both carry the note.
    let inferred = infer(&Snapshot {
        queues: vec![
            queue(0, vec![submission(1, vec![twice()])]),
            queue(1, vec![submission(4, vec![twice()])]),
        ],
    });
    for q in &inferred.queues {
        let cb = &q.submissions[0].command_buffers[0];
        assert_eq!(states(cb), [InFlight, NotStarted]);
        assert!(cb.note.is_some());
    }
    // Without markers there is no slot to credit: the second run is as unknown as the first.
    let unmarked = || primary(0x10, None, log(0, vec![dispatch(None)]));
    let inferred = one_queue(vec![
        submission(1, vec![unmarked()]),
        submission(2, vec![unmarked()]),
    ]);
    for s in 0..2 {
        let cb = first_cb(&inferred, s);
        assert_eq!(
            (states(cb), cb.state),
            (vec![Unknown], Unknown),
            "submission {s}"
        );
        assert!(cb.units.is_none(), "submission {s}");
        assert!(cb.note.is_some(), "submission {s}");
    }
    // A command buffer pending once has no note.
    let inferred = one_queue(vec![submission(1, vec![twice()])]);
    assert_eq!(first_cb(&inferred, 0).note, None);
}

#[test]
fn a_slot_showing_a_complete_earlier_run_is_read_as_not_started() {
    let cb = |handle, progress| {
        primary(
            handle,
            Some(progress),
            log(2, vec![dispatch(Some(1)), dispatch(Some(2))]),
        )
    };
    // The state of each command buffer, across the submissions.
    let cb_states = |inferred: &Inferred| -> Vec<State> {
        inferred.queues[0]
            .submissions
            .iter()
            .flat_map(|s| s.command_buffers.iter().map(|cb| cb.state))
            .collect()
    };
    // Behind an unfinished command buffer of the same submission.
    let inferred = one_queue(vec![submission(
        1,
        vec![cb(0x10, (1, 0)), cb(0x20, (2, 2))],
    )]);
    assert_eq!(cb_states(&inferred), [InFlight, NotStarted]);
    let resubmitted = &inferred.queues[0].submissions[0].command_buffers[1];
    assert_eq!(states(resubmitted), [NotStarted, NotStarted]);
    let units = resubmitted.units.expect("units");
    assert_eq!((units.started, units.finished), (0, 0));
    // In a later submission than the queue's first pending one, even behind finished work.
    let inferred = one_queue(vec![
        submission(1, vec![cb(0x10, (2, 2))]),
        submission(2, vec![cb(0x20, (2, 2))]),
    ]);
    assert_eq!(cb_states(&inferred), [Finished, NotStarted]);
    // Behind finished work in the first submission, a complete slot is this run's.
    let inferred = one_queue(vec![submission(
        1,
        vec![cb(0x10, (2, 2)), cb(0x20, (2, 2))],
    )]);
    assert_eq!(cb_states(&inferred), [Finished, Finished]);
    assert_eq!(inferred.queues[0].submissions[0].state, InFlight);
    assert_eq!(
        inferred.last_finished.as_ref().map(place),
        Some(at("0.0", 1, 1, "vkCmdDispatch", &[]))
    );
    assert!(inferred.in_flight.is_empty());
    // Progress short of complete is the slot's own, in any submission.
    let inferred = one_queue(vec![
        submission(1, vec![cb(0x10, (1, 0))]),
        submission(2, vec![cb(0x20, (2, 1))]),
    ]);
    assert_eq!(states(first_cb(&inferred, 1)), [Finished, InFlight]);
}

#[test]
fn secondaries_with_markers_of_their_own_are_read_from_their_slots() {
    // Buffer markers: the render pass's begin and end are no units; vkCmdExecuteCommands is one, and the
    // secondary has its own slot with a unit per draw.
    let mut main = log(
        1,
        vec![
            scoped(0, begin_pass(None)),
            scoped(0, execute(Some(1), 0, 1)),
            scoped(0, end_pass(None)),
        ],
    );
    main.scopes = vec![scope("frame", None, 0, 3)];
    let mut draws = log(
        3,
        vec![draw(Some(1)), scoped(0, draw(Some(2))), draw(Some(3))],
    );
    draws.scopes = vec![scope("draw 2", None, 1, 2)];
    main.executed = vec![named("draws", secondary(0x20, Some((2, 1)), draws))];
    let inferred = one_queue(vec![submission(1, vec![primary(0x10, Some((1, 0)), main)])]);
    let cb = first_cb(&inferred, 0);
    assert_eq!(states(cb), [Finished, InFlight, NotStarted]);
    let s = &cb.secondaries[0];
    assert_eq!(
        (s.level.as_str(), s.name.as_deref()),
        ("secondary", Some("draws"))
    );
    assert_eq!(states(s), [Finished, InFlight, NotStarted]);
    assert_eq!(s.state, InFlight);
    // The secondary's draw is under the labels of the vkCmdExecuteCommands that ran it.
    assert_eq!(
        in_flight(&inferred),
        [
            at("0.0", 1, 1, "vkCmdExecuteCommands", &["frame"]),
            at("0.0", 1, 1, "vkCmdDraw", &["frame", "draw 2"]),
        ]
    );
    assert_eq!(inferred.in_flight[1].command_buffer, "0x20 \"draws\"");
}

#[test]
fn secondaries_without_markers_take_the_state_of_the_command_that_ran_them() {
    // Fill-buffer path: the pass is unit 1, the copy after it unit 2; the two secondaries continue the
    // pass, where no marker can go, so they have no slot.
    let main = |progress| {
        let mut main = log(
            2,
            vec![
                begin_pass(Some(1)),
                execute(Some(1), 0, 2),
                end_pass(Some(1)),
                copy(Some(2)),
            ],
        );
        main.executed = vec![
            secondary(0x20, None, log(0, vec![draw(None), draw(None)])),
            secondary(0x30, None, log(0, vec![draw(None)])),
        ];
        primary(0x10, Some(progress), main)
    };
    let table: [((u32, u32), [State; 4], State); 3] = [
        ((1, 0), [InFlight, InFlight, InFlight, NotStarted], InFlight),
        ((0, 0), [NotStarted; 4], NotStarted),
        ((1, 1), [Finished, Finished, Finished, NotStarted], Finished),
    ];
    for (progress, expected, inherited) in table {
        let inferred = one_queue(vec![submission(1, vec![main(progress)])]);
        let cb = first_cb(&inferred, 0);
        assert_eq!(states(cb), expected, "{progress:?}");
        for s in &cb.secondaries {
            assert!(s.units.is_none());
            assert!(states(s).iter().all(|&st| st == inherited), "{progress:?}");
            assert_eq!(s.state, inherited, "{progress:?}");
        }
    }
    let inferred = one_queue(vec![submission(1, vec![main((1, 0))])]);
    assert_eq!(
        in_flight(&inferred),
        [
            at("0.0", 1, 0, "vkCmdBeginRenderPass", &[]),
            at("0.0", 1, 1, "vkCmdExecuteCommands", &[]),
            at("0.0", 1, 0, "vkCmdDraw", &[]),
            at("0.0", 1, 1, "vkCmdDraw", &[]),
            at("0.0", 1, 0, "vkCmdDraw", &[]),
        ]
    );
    assert_eq!(
        inferred
            .in_flight
            .iter()
            .map(|l| l.command_buffer.as_str())
            .collect::<Vec<_>>(),
        ["0x10", "0x10", "0x20", "0x20", "0x30"]
    );
}

#[test]
fn a_queue_stuck_on_a_semaphore_shows_not_started_beside_another_queue_in_flight() {
    // Queue 0 waits on a semaphore that never came: its markers show nothing started. Queue 1 is in
    // its second dispatch.
    let stuck = primary(0x10, Some((0, 0)), log(1, vec![dispatch(Some(1))]));
    let running = primary(
        0x20,
        Some((2, 1)),
        log(2, vec![dispatch(Some(1)), dispatch(Some(2))]),
    );
    let inferred = infer(&Snapshot {
        queues: vec![
            queue(0, vec![submission(5, vec![stuck])]),
            queue(1, vec![submission(3, vec![running])]),
        ],
    });
    let (q0, q1) = (&inferred.queues[0], &inferred.queues[1]);
    assert_eq!((q0.family, q0.completed, q1.family), (0, 4, 1));
    assert_eq!(q0.submissions[0].state, NotStarted);
    assert_eq!(states(&q0.submissions[0].command_buffers[0]), [NotStarted]);
    assert_eq!(q1.submissions[0].state, InFlight);
    assert_eq!(
        states(&q1.submissions[0].command_buffers[0]),
        [Finished, InFlight]
    );
    // Only the dispatch really in flight: queue 0's command is marked first unfinished, not listed.
    assert_eq!(
        in_flight(&inferred),
        [at("1.0", 3, 1, "vkCmdDispatch", &[])]
    );
    assert_eq!(
        flags(&inferred),
        [
            (5, 0, false, true),
            (3, 0, true, false),
            (3, 1, false, true)
        ]
    );
    assert_eq!(
        inferred.last_finished.as_ref().map(place),
        Some(at("1.0", 3, 0, "vkCmdDispatch", &[]))
    );
}

#[test]
fn each_queue_marks_one_first_unfinished_command_named_only_when_nothing_is_in_flight() {
    let running = || primary(0x10, Some((1, 0)), log(1, vec![dispatch(Some(1))]));
    let unmarked = || primary(0x20, None, log(0, vec![dispatch(None)]));
    // Queue 0 is in flight; queue 1 (no markers) has two submissions: one first unfinished, in its first.
    let inferred = infer(&Snapshot {
        queues: vec![
            queue(0, vec![submission(1, vec![running()])]),
            queue(
                1,
                vec![
                    submission(2, vec![unmarked()]),
                    submission(3, vec![named("other", unmarked())]),
                ],
            ),
        ],
    });
    assert_eq!(flags(&inferred), [(1, 0, false, true), (2, 0, false, true)]);
    assert_eq!(
        in_flight(&inferred),
        [at("0.0", 1, 0, "vkCmdDispatch", &[])]
    );
    // Nothing in flight on any queue: each queue's first unfinished command, in queue order.
    let inferred = infer(&Snapshot {
        queues: vec![
            queue(0, vec![submission(1, vec![unmarked()])]),
            queue(1, vec![submission(2, vec![unmarked()])]),
        ],
    });
    assert_eq!(
        in_flight(&inferred),
        [
            at("0.0", 1, 0, "vkCmdDispatch", &[]),
            at("1.0", 2, 0, "vkCmdDispatch", &[]),
        ]
    );
}

#[test]
fn without_markers_states_are_unknown_and_in_flight_names_the_first_unfinished_action() {
    // Granularity `submit`: no slot, no units.
    let unmarked = |handle| {
        let mut l = log(
            0,
            vec![
                barrier(),
                scoped(0, dispatch(None)),
                dispatch(None),
                barrier(),
            ],
        );
        l.scopes = vec![scope("frame", None, 1, 2)];
        primary(handle, None, l)
    };
    let mut q = queue(0, vec![submission(7, vec![unmarked(0x10)])]);
    q.last_finished = Some(submission(
        6,
        vec![unmarked(0x20), named("last", unmarked(0x30))],
    ));
    let inferred = infer(&Snapshot { queues: vec![q] });
    let cb = first_cb(&inferred, 0);
    assert_eq!(states(cb), [Unknown; 4]);
    assert_eq!((cb.state, cb.units.is_none()), (Unknown, true));
    assert_eq!(inferred.queues[0].submissions[0].state, Unknown);
    // The barrier before it is not what the GPU is known to be doing: the first action is named.
    assert_eq!(flags(&inferred), [(7, 1, false, true)]);
    assert_eq!(
        in_flight(&inferred),
        [at("0.0", 7, 1, "vkCmdDispatch", &["frame"])]
    );
    // Nothing pending finished anything: the last finished submission's last command buffer gives the
    // context, at its last command with a pipeline.
    let last = inferred.last_finished.as_ref().expect("last finished");
    assert_eq!(place(last), at("0.0", 6, 2, "vkCmdDispatch", &[]));
    assert_eq!(last.command_buffer, "0x30 \"last\"");
}

#[test]
fn in_flight_lists_at_most_the_cap() {
    let many: Vec<RecordedCommand> = (1..=20).map(|u| dispatch(Some(u))).collect();
    let inferred = one_queue(vec![submission(
        1,
        vec![primary(0x10, Some((20, 0)), log(20, many))],
    )]);
    assert_eq!(states(first_cb(&inferred, 0)), [InFlight; 20]);
    assert_eq!(inferred.in_flight.len(), MAX_IN_FLIGHT);
    assert_eq!(
        inferred
            .in_flight
            .iter()
            .map(|l| l.command_index)
            .collect::<Vec<_>>(),
        (0..MAX_IN_FLIGHT as u32).collect::<Vec<_>>()
    );
}

#[test]
fn commands_beyond_the_log_are_counted_and_an_unrecorded_command_buffer_is_unknown() {
    let mut capped = log(2, vec![dispatch(Some(1)), dispatch(Some(2))]);
    capped.unlogged = 7;
    let unrecorded = CommandBufferSnapshot {
        handle: 0x20,
        log: None,
        ..CommandBufferSnapshot::default()
    };
    let inferred = one_queue(vec![submission(
        1,
        vec![primary(0x10, Some((1, 0)), capped), unrecorded],
    )]);
    let cbs = &inferred.queues[0].submissions[0].command_buffers;
    assert_eq!(cbs[0].unlogged_commands, 7);
    assert_eq!(states(&cbs[0]), [InFlight, NotStarted]);
    assert_eq!(
        (cbs[1].state, cbs[1].commands.len(), cbs[1].units.is_none()),
        (Unknown, 0, true)
    );
}

#[test]
fn combining_states() {
    let table: [(&[State], State); 9] = [
        (&[], Unknown),
        (&[Finished, Finished], Finished),
        (&[NotStarted, NotStarted], NotStarted),
        (&[Finished, NotStarted], InFlight),
        (&[Finished, InFlight, Unknown], InFlight),
        (&[Finished, Unknown], Unknown),
        (&[NotStarted, Unknown], Unknown),
        (&[Unknown, Finished, NotStarted], Unknown),
        (&[Unknown], Unknown),
    ];
    for (states, expected) in table {
        assert_eq!(combine(states.iter().copied()), expected, "{states:?}");
    }
}

#[test]
fn a_scope_left_open_ends_with_the_log_and_label_paths_survive_a_bad_parent() {
    let mut l = log(
        2,
        vec![scoped(1, dispatch(Some(1))), scoped(1, dispatch(Some(2)))],
    );
    l.scopes = vec![
        LabelScope {
            end_command: None,
            ..scope("open", None, 0, 0)
        },
        // Its own parent: a malformed log must not loop.
        scope("loop", Some(1), 0, 2),
    ];
    let inferred = one_queue(vec![submission(1, vec![primary(0x10, Some((1, 0)), l)])]);
    let cb = first_cb(&inferred, 0);
    assert_eq!(
        (cb.scopes[0].end_command, cb.scopes[0].state),
        (2, InFlight)
    );
    assert_eq!(
        in_flight(&inferred),
        [at("0.0", 1, 0, "vkCmdDispatch", &["loop"])]
    );
}

#[test]
fn only_the_reports_last_finished_command_is_flagged() {
    let cb = |handle, progress| {
        primary(
            handle,
            Some(progress),
            log(2, vec![dispatch(Some(1)), dispatch(Some(2))]),
        )
    };
    // Submission 1 finished (its queue has not said so yet); submission 2 is in its second dispatch.
    let inferred = one_queue(vec![
        submission(1, vec![cb(0x10, (2, 2))]),
        submission(2, vec![cb(0x20, (2, 1))]),
    ]);
    assert_eq!(
        inferred.last_finished.as_ref().map(place),
        Some(at("0.0", 2, 0, "vkCmdDispatch", &[]))
    );
    assert_eq!(flags(&inferred), [(2, 0, true, false), (2, 1, false, true)]);
}

#[test]
fn a_secondary_behind_unfinished_work_is_not_credited_with_its_previous_run() {
    // Pre-recorded secondaries, executed every frame: each zeroes its slot when it starts, so until then
    // the slot shows the previous frame's complete run.
    let frame = |primary_progress, slots: [(u32, u32); 3]| {
        let mut main = log(
            2,
            vec![execute(Some(1), 0, 2), barrier(), execute(Some(2), 2, 1)],
        );
        main.executed = slots
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                secondary(
                    0x20 + i as u64,
                    Some(p),
                    log(2, vec![draw(Some(1)), draw(Some(2))]),
                )
            })
            .collect();
        one_queue(vec![submission(
            1,
            vec![primary(0x10, Some(primary_progress), main)],
        )])
    };
    let secondary_states = |inferred: &Inferred| -> Vec<State> {
        first_cb(inferred, 0)
            .secondaries
            .iter()
            .map(|s| s.state)
            .collect()
    };
    // The first secondary is in its first draw: the second (same vkCmdExecuteCommands) and the third
    // (under a vkCmdExecuteCommands not started) have not started, whatever their slots say.
    let inferred = frame((1, 0), [(1, 0), (2, 2), (2, 2)]);
    assert_eq!(
        secondary_states(&inferred),
        [InFlight, NotStarted, NotStarted]
    );
    assert_eq!(
        states(&first_cb(&inferred, 0).secondaries[1]),
        [NotStarted, NotStarted]
    );
    // Once the first vkCmdExecuteCommands finished, its secondaries' complete slots are this frame's; the
    // third is still behind a vkCmdExecuteCommands not started.
    let inferred = frame((1, 1), [(2, 2), (2, 2), (2, 2)]);
    assert_eq!(
        secondary_states(&inferred),
        [Finished, Finished, NotStarted]
    );
    // The whole frame done: every slot is this frame's.
    let inferred = frame((2, 2), [(2, 2), (2, 2), (2, 2)]);
    assert_eq!(secondary_states(&inferred), [Finished; 3]);
}

/// Work `VK_BLACKBOX_SKIP` kept from the driver never ran: it is never what is in flight, nor the last
/// finished or first unfinished command, and it is marked skipped.
#[test]
fn skipped_work_is_neither_in_flight_nor_finished() {
    let skipped = RecordedCommand {
        skipped: true,
        ..draw(None)
    };
    // Units: 1 the first dispatch, 2 the one after the skipped draw; the GPU is in unit 2.
    let cb = primary(
        1,
        Some((2, 1)),
        log(2, vec![dispatch(Some(1)), skipped, dispatch(Some(2))]),
    );
    let inferred = one_queue(vec![submission(1, vec![cb])]);
    let cb = first_cb(&inferred, 0);
    assert!(cb.commands[1].skipped);
    assert_eq!(
        in_flight(&inferred),
        [at("0.0", 1, 2, "vkCmdDispatch", &[])]
    );
    assert_eq!(flags(&inferred), [(1, 0, true, false), (1, 2, false, true)]);
}
