//! Progress inference: which recorded command had finished, which was in flight and which had not started.
//!
//! The layer copies what it knows into a [`Snapshot`]: per queue, the submissions not known to be finished,
//! each command buffer's recorded log (commands with their class, marker unit, label scope and pipeline;
//! label scopes; the secondaries it executed) and the `(top, bottom)` progress read from its marker slot.
//! [`infer`] turns that into the report's [`Queue`]s, `in_flight` and `last_finished`. Nothing here touches
//! Vulkan, a lock or a clock (ages come in the snapshot), so every rule is tested on hand-built snapshots.
//!
//! The rules (`docs/report.md`, "How states are derived", says them for readers of reports):
//! - a command with a marker unit `u` is finished if `u <= bottom`, in flight if `u <= top`, else not
//!   started; a command between units takes its state from the units around it ([`commands`]);
//! - a slot showing every unit finished is read as an earlier run's, `(0, 0)`, when an earlier command
//!   buffer on the queue is unfinished or the submission is not the queue's first pending one; likewise
//!   for a secondary behind an unfinished sibling or under a `vkCmdExecuteCommands` not started;
//! - a command buffer pending twice on a queue (simultaneous use) shares one slot: its progress is credited
//!   to the earlier submission, and every copy gets a note;
//! - a secondary without markers of its own takes the state of the `vkCmdExecuteCommands` that ran it;
//! - scopes, submissions and command buffers without units combine the states inside them ([`combine`]).

use std::collections::{HashMap, HashSet};

use crate::{
    CommandBuffer, CommandClass, Location, Pipeline, Queue, Scope, State, Submission, Units,
};

/// The most commands [`Inferred::in_flight`] lists.
pub const MAX_IN_FLIGHT: usize = 16;

/// What the layer knew when the report was asked for.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// The queues the app retrieved, in the order they are reported.
    pub queues: Vec<QueueSnapshot>,
}

/// A queue's submissions.
#[derive(Debug, Clone, Default)]
pub struct QueueSnapshot {
    /// Queue family.
    pub family: u32,
    /// Index in the family.
    pub index: u32,
    /// The last submission known finished (0 for none).
    pub completed: u64,
    /// Submissions not known to be finished, oldest first.
    pub pending: Vec<SubmissionSnapshot>,
    /// The last submission known finished, if the layer kept it: the context when nothing pending has
    /// finished anything.
    pub last_finished: Option<SubmissionSnapshot>,
}

/// One submission.
#[derive(Debug, Clone, Default)]
pub struct SubmissionSnapshot {
    /// Its number on the queue, from 1.
    pub seq: u64,
    /// `vkQueueSubmit`, `vkQueueSubmit2` or `vkQueueBindSparse`.
    pub command: String,
    /// How long before the report it was submitted, in milliseconds.
    pub age_ms: u64,
    /// Its command buffers, in submission order across batches.
    pub command_buffers: Vec<CommandBufferSnapshot>,
}

/// A command buffer as submitted (or, inside a [`RecordedLog`], as executed by `vkCmdExecuteCommands`).
#[derive(Debug, Clone, Default)]
pub struct CommandBufferSnapshot {
    /// Its handle.
    pub handle: u64,
    /// Its debug name, if any.
    pub name: Option<String>,
    /// A secondary command buffer.
    pub secondary: bool,
    /// `(top, bottom)` read from the marker slot its log writes: the last unit started and the last
    /// finished. `None` when the recording had no slot or the markers could not be read.
    pub progress: Option<(u32, u32)>,
    /// What it held when submitted; `None` if it was never recorded through the layer.
    pub log: Option<RecordedLog>,
}

/// A finished recording.
#[derive(Debug, Clone, Default)]
pub struct RecordedLog {
    /// Commands in recording order.
    pub commands: Vec<RecordedCommand>,
    /// Label scopes, by index.
    pub scopes: Vec<LabelScope>,
    /// Secondaries executed, in order, with their own logs and slot progress.
    pub executed: Vec<CommandBufferSnapshot>,
    /// Number of marker units (the last unit's number).
    pub units: u32,
    /// Commands recorded beyond the log's limit.
    pub unlogged: u32,
}

/// One recorded command.
#[derive(Debug, Clone)]
pub struct RecordedCommand {
    /// The Vulkan command, e.g. `vkCmdDispatch`.
    pub name: String,
    /// What kind of work it does.
    pub class: CommandClass,
    /// Its key parameters (for `vkCmdExecuteCommands`, the first is how many secondaries it ran).
    pub params: Vec<u64>,
    /// Innermost open label scope (index into [`RecordedLog::scopes`]).
    pub scope: Option<u32>,
    /// The marker unit that covers it, if a marker tells its progress.
    pub unit: Option<u32>,
    /// The pipeline it used, for draws, dispatches and trace rays.
    pub pipeline: Option<Pipeline>,
    /// For `vkCmdExecuteCommands`: index of its first entry in [`RecordedLog::executed`].
    pub executed: Option<u32>,
    /// Not passed to the driver (`VK_BLACKBOX_SKIP`).
    pub skipped: bool,
}

/// A debug-label scope, or an inserted label.
#[derive(Debug, Clone)]
pub struct LabelScope {
    /// The label text.
    pub name: String,
    /// The enclosing scope.
    pub parent: Option<u32>,
    /// Index of the first command inside.
    pub first_command: u32,
    /// One past the last command inside; `None` while the label was still open at the end of the log.
    pub end_command: Option<u32>,
    /// An inserted label marks a point, not a scope.
    pub inserted: bool,
}

/// What [`infer`] found.
#[derive(Debug, Clone)]
pub struct Inferred {
    /// Per queue, its pending submissions with every command's state.
    pub queues: Vec<Queue>,
    /// The action commands in flight (at most [`MAX_IN_FLIGHT`]), or, when none is known on any queue,
    /// each queue's first command not known to be finished.
    pub in_flight: Vec<Location>,
    /// The last action command known to be finished; when nothing pending finished one, the last command
    /// with a unit or a pipeline of a queue's last finished submission.
    pub last_finished: Option<Location>,
}

/// Infers the state of every pending command from the recorded logs and the markers.
pub fn infer(snapshot: &Snapshot) -> Inferred {
    let mut queues = Vec::with_capacity(snapshot.queues.len());
    let mut in_flight = Vec::new();
    let mut last_finished: Option<Location> = None;
    // Where the last finished command is (queue, submission, command buffer, command), to flag it.
    let mut last_finished_at: Option<(usize, usize, usize, usize)> = None;
    // A command buffer pending in two submissions at once (simultaneous use) shares one marker slot: its
    // progress cannot be told apart between them, and the report says so.
    let mut pending_count: HashMap<u64, u32> = HashMap::new();
    for cb in snapshot
        .queues
        .iter()
        .flat_map(|q| &q.pending)
        .flat_map(|s| &s.command_buffers)
    {
        *pending_count.entry(cb.handle).or_default() += 1;
    }
    for queue in &snapshot.queues {
        let queue_name = format!("{}.{}", queue.family, queue.index);
        let mut submissions = Vec::with_capacity(queue.pending.len());
        // Once something is not finished, later command buffers on this queue have not started, unless their
        // markers show progress of their own (a slot still holding a finished earlier run would lie).
        let mut earlier_unfinished = false;
        // A command buffer pending twice shares one slot: its progress is credited to the earliest run.
        let mut seen: HashSet<u64> = HashSet::new();
        // Each queue has one first unfinished command.
        let mut first_unfinished_marked = false;
        for (i, sub) in queue.pending.iter().enumerate() {
            let mut cbs = Vec::with_capacity(sub.command_buffers.len());
            for submitted in &sub.command_buffers {
                let reading = Reading {
                    credited: seen.insert(submitted.handle),
                    first_submission: i == 0,
                };
                let mut cb = command_buffer(submitted, reading, &mut earlier_unfinished, None);
                if let Some(times) = pending_count.get(&submitted.handle).filter(|&&n| n > 1) {
                    cb.note = Some(format!(
                        "pending in {times} submissions at once (simultaneous use): its markers may show \
                         either run's progress"
                    ));
                }
                cbs.push(cb);
            }
            let state = combine(cbs.iter().map(|c| c.state));
            let mut s = Submission {
                seq: sub.seq,
                command: sub.command.clone(),
                age_ms: sub.age_ms,
                // The queue has not said it is done, whatever the markers say.
                state: if state == State::Finished {
                    State::InFlight
                } else {
                    state
                },
                command_buffers: cbs,
            };
            if let Some((ci, i)) = mark_progress(
                &mut s,
                &queue_name,
                &mut first_unfinished_marked,
                &mut in_flight,
                &mut last_finished,
            ) {
                last_finished_at = Some((queues.len(), submissions.len(), ci, i));
            }
            submissions.push(s);
        }
        if last_finished.is_none() {
            // The last finished submission gives the context when nothing pending has started.
            if let Some(done) = &queue.last_finished {
                if let Some(l) = done.command_buffers.last().and_then(last_command) {
                    last_finished = Some(Location {
                        queue: queue_name.clone(),
                        submission: done.seq,
                        ..l
                    });
                }
            }
        }
        queues.push(Queue {
            family: queue.family,
            index: queue.index,
            completed: queue.completed,
            submissions,
        });
    }
    if let Some((qi, si, ci, i)) = last_finished_at {
        let command = queues
            .get_mut(qi)
            .and_then(|q| q.submissions.get_mut(si))
            .and_then(|s| s.command_buffers.get_mut(ci))
            .and_then(|cb| cb.commands.get_mut(i));
        if let Some(c) = command {
            c.last_finished = true;
        }
    }
    if in_flight.is_empty() {
        // Nothing is known to be running on any queue: name each queue's first unfinished command instead.
        for q in &queues {
            let queue_name = format!("{}.{}", q.family, q.index);
            for s in &q.submissions {
                for cb in &s.command_buffers {
                    if let Some(c) = cb.commands.iter().find(|c| c.first_unfinished) {
                        in_flight.push(location(&queue_name, s.seq, cb, c));
                    }
                }
            }
        }
    }
    Inferred {
        queues,
        in_flight,
        last_finished,
    }
}

/// The state of what holds commands, from theirs: any in flight gives in flight; all finished, finished;
/// all not started, not started; else any unknown, unknown; a mix of finished and not started, in flight;
/// nothing inside, unknown.
pub fn combine(states: impl Iterator<Item = State>) -> State {
    let mut any = false;
    let (mut finished, mut not_started, mut unknown) = (true, true, false);
    for s in states {
        any = true;
        finished &= s == State::Finished;
        not_started &= s == State::NotStarted;
        unknown |= s == State::Unknown;
        if s == State::InFlight {
            return State::InFlight;
        }
    }
    match (any, finished, not_started, unknown) {
        (false, ..) => State::Unknown,
        (_, true, ..) => State::Finished,
        (_, _, true, _) => State::NotStarted,
        (_, _, _, true) => State::Unknown,
        _ => State::InFlight,
    }
}

/// How a command buffer's slot is to be read.
#[derive(Clone, Copy)]
struct Reading {
    /// The slot's progress is this run's: false for a command buffer already pending in an earlier
    /// submission on the queue (simultaneous use), whose shared slot is credited to that earlier run.
    credited: bool,
    /// The command buffer is in the queue's first pending submission.
    first_submission: bool,
}

fn handle_text(handle: u64) -> String {
    format!("{handle:#x}")
}

fn command_buffer(
    submitted: &CommandBufferSnapshot,
    reading: Reading,
    earlier_unfinished: &mut bool,
    inherited: Option<State>,
) -> CommandBuffer {
    let mut out = CommandBuffer {
        handle: handle_text(submitted.handle),
        name: submitted.name.clone(),
        level: if submitted.secondary {
            "secondary"
        } else {
            "primary"
        }
        .to_owned(),
        state: State::Unknown,
        units: None,
        commands: Vec::new(),
        scopes: Vec::new(),
        secondaries: Vec::new(),
        unlogged_commands: 0,
        note: None,
    };
    let Some(log) = &submitted.log else {
        return out;
    };
    out.unlogged_commands = log.unlogged;
    // A run not credited with its shared slot reads as not started; without a reading there is nothing to
    // credit, and it stays unknown like the first run.
    let read = if reading.credited {
        submitted.progress
    } else {
        submitted.progress.map(|_| (0, 0))
    };
    let progress = read.map(|(top, bottom)| {
        let complete = top == log.units && bottom == log.units;
        if complete && (*earlier_unfinished || !reading.first_submission) && log.units > 0 {
            (0, 0) // what the slot shows is an earlier run's
        } else {
            (top, bottom)
        }
    });
    out.units = progress.map(|(top, bottom)| Units {
        started: top,
        finished: bottom,
        total: log.units,
    });
    out.commands = commands(log, progress);
    if let (None, Some(state)) = (progress.filter(|_| log.units > 0), inherited) {
        // A secondary without markers of its own (continuing a render pass on the fill-buffer path) is as
        // far as the vkCmdExecuteCommands that ran it.
        out.commands.iter_mut().for_each(|c| c.state = state);
    }
    let count = out.commands.len() as u32;
    out.scopes = log
        .scopes
        .iter()
        .map(|s| {
            let end = s.end_command.unwrap_or(count);
            let inside = out
                .commands
                .get(s.first_command as usize..end.min(count) as usize)
                .unwrap_or_default();
            Scope {
                name: s.name.clone(),
                parent: s.parent,
                first_command: s.first_command,
                end_command: end,
                inserted: s.inserted,
                state: combine(inside.iter().map(|c| c.state)),
            }
        })
        .collect();
    // A secondary zeroes its slot when it starts, so until then the slot shows its previous run. Like the
    // command buffers of a queue, secondaries are read in order: behind unfinished work (an earlier
    // secondary, or what this command buffer is behind), or under a vkCmdExecuteCommands not started, a
    // complete slot is that previous run's.
    let mut siblings_unfinished = *earlier_unfinished;
    out.secondaries = log
        .executed
        .iter()
        .enumerate()
        .map(|(i, executed)| {
            let i = i as u32;
            let runner = out.commands.iter().find(|c| {
                c.secondaries_from.is_some_and(|first| {
                    i >= first && u64::from(i - first) < c.params.first().copied().unwrap_or(0)
                })
            });
            let runner_state = runner.map(|c| c.state);
            let mut behind = siblings_unfinished || runner_state == Some(State::NotStarted);
            let secondary = command_buffer(executed, reading, &mut behind, runner_state);
            siblings_unfinished |= secondary.state != State::Finished;
            secondary
        })
        .collect();
    out.state = match progress {
        Some((_, bottom)) if log.units > 0 && bottom >= log.units => State::Finished,
        Some((0, _)) if log.units > 0 => State::NotStarted,
        Some(_) if log.units > 0 => State::InFlight,
        _ => combine(out.commands.iter().map(|c| c.state)),
    };
    if out.state != State::Finished {
        *earlier_unfinished = true;
    }
    out
}

/// Each command's state from its unit, or, for a command without one, from the units around it: finished
/// once a later unit started; in flight once the unit before it finished (or it comes first) and the
/// command buffer started, unless no unit follows and all are finished; else not started. Without progress
/// every state is unknown.
fn commands(log: &RecordedLog, progress: Option<(u32, u32)>) -> Vec<crate::Command> {
    let unit_state = |unit: u32| -> State {
        match progress {
            None => State::Unknown,
            Some((_, bottom)) if unit <= bottom => State::Finished,
            Some((top, _)) if unit <= top => State::InFlight,
            Some(_) => State::NotStarted,
        }
    };
    let mut out: Vec<crate::Command> = log
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| crate::Command {
            index: i as u32,
            name: c.name.clone(),
            class: c.class,
            params: c.params.clone(),
            state: c.unit.map_or(State::Unknown, unit_state),
            scope: c.scope,
            pipeline: c.pipeline.clone(),
            secondaries_from: c.executed,
            last_finished: false,
            first_unfinished: false,
            skipped: c.skipped,
        })
        .collect();
    if let Some((top, bottom)) = progress {
        // The nearest unit at or after each command, found in one backward pass.
        let mut later_units = vec![None; log.commands.len()];
        let mut later = None;
        for (i, c) in log.commands.iter().enumerate().rev() {
            later = c.unit.or(later);
            later_units[i] = later;
        }
        let mut earlier: Option<u32> = None;
        for (i, c) in log.commands.iter().enumerate() {
            if c.unit.is_some() {
                earlier = c.unit;
                continue;
            }
            let later = later_units[i];
            out[i].state = if later.is_some_and(|u| u <= top) {
                State::Finished
            } else if earlier.is_none_or(|u| u <= bottom) && top > 0 {
                if later.is_none() && bottom >= log.units {
                    State::Finished
                } else {
                    State::InFlight
                }
            } else {
                State::NotStarted
            };
        }
    }
    out
}

/// The label path of a scope in a log, outermost first.
fn labels(log: &RecordedLog, scope: Option<u32>) -> Vec<String> {
    path(scope, |i| {
        log.scopes
            .get(i as usize)
            .map(|s| (s.name.as_str(), s.parent))
    })
}

/// The label path of a scope in a command buffer of the report, outermost first.
fn label_path(cb: &CommandBuffer, scope: Option<u32>) -> Vec<String> {
    path(scope, |i| {
        cb.scopes
            .get(i as usize)
            .map(|s| (s.name.as_str(), s.parent))
    })
}

/// Follows `scope`'s parents through `get` (a scope's name and parent). A parent was opened before its
/// child, so has a lower index: a chain that does not go down is malformed and ends there (no loop).
fn path<'a>(
    mut scope: Option<u32>,
    get: impl Fn(u32) -> Option<(&'a str, Option<u32>)>,
) -> Vec<String> {
    let mut path = Vec::new();
    while let Some((index, (name, parent))) = scope.and_then(|i| Some((i, get(i)?))) {
        path.push(name.to_owned());
        scope = parent.filter(|&p| p < index);
    }
    path.reverse();
    path
}

/// The last command with a unit or a pipeline of a finished submission's command buffer, as a location
/// (queue and submission left for the caller).
fn last_command(cb: &CommandBufferSnapshot) -> Option<Location> {
    let log = cb.log.as_ref()?;
    let (index, c) = log
        .commands
        .iter()
        .enumerate()
        .rev()
        .find(|(_, c)| c.unit.is_some() || c.pipeline.is_some())?;
    let name = cb
        .name
        .as_deref()
        .map(|n| format!(" \"{n}\""))
        .unwrap_or_default();
    Some(Location {
        queue: String::new(),
        submission: 0,
        command_buffer: format!("{}{name}", handle_text(cb.handle)),
        command_index: index as u32,
        command: c.name.clone(),
        params: c.params.clone(),
        labels: labels(log, c.scope),
        pipeline: c.pipeline.clone(),
    })
}

/// Marks the first unfinished command, unless `first_unfinished_marked` says its queue has one; collects
/// the actions in flight; makes the submission's last finished action, if any, the report's, and gives
/// back where it is (command buffer, command) for the caller to flag.
fn mark_progress(
    sub: &mut Submission,
    queue: &str,
    first_unfinished_marked: &mut bool,
    in_flight: &mut Vec<Location>,
    last_finished: &mut Option<Location>,
) -> Option<(usize, usize)> {
    let mut last: Option<(usize, usize)> = None;
    for (ci, cb) in sub.command_buffers.iter_mut().enumerate() {
        for (i, c) in cb.commands.iter_mut().enumerate() {
            let notable = c.is_action();
            match c.state {
                State::Finished if notable => last = Some((ci, i)),
                State::InFlight | State::NotStarted | State::Unknown
                    if !*first_unfinished_marked && (c.state != State::Unknown || notable) =>
                {
                    c.first_unfinished = true;
                    *first_unfinished_marked = true;
                }
                _ => {}
            }
        }
    }
    let seq = sub.seq;
    let locate = |cb: &CommandBuffer, c: &crate::Command| location(queue, seq, cb, c);
    for cb in &sub.command_buffers {
        collect(cb, &[], &locate, in_flight);
    }
    if let Some((ci, i)) = last {
        let cb = &sub.command_buffers[ci];
        *last_finished = Some(locate(cb, &cb.commands[i]));
    }
    last
}

/// Where `c` of `cb` is.
fn location(queue: &str, submission: u64, cb: &CommandBuffer, c: &crate::Command) -> Location {
    let name = cb
        .name
        .as_deref()
        .map(|n| format!(" \"{n}\""))
        .unwrap_or_default();
    Location {
        queue: queue.to_owned(),
        submission,
        command_buffer: format!("{}{name}", cb.handle),
        command_index: c.index,
        command: c.name.clone(),
        params: c.params.clone(),
        labels: label_path(cb, c.scope),
        pipeline: c.pipeline.clone(),
    }
}

/// Collects the actions in flight, secondaries' included (under the labels of the command that ran them).
fn collect(
    cb: &CommandBuffer,
    prefix: &[String],
    locate: &dyn Fn(&CommandBuffer, &crate::Command) -> Location,
    in_flight: &mut Vec<Location>,
) {
    for c in &cb.commands {
        if c.state == State::InFlight && c.is_action() && in_flight.len() < MAX_IN_FLIGHT {
            let mut l = locate(cb, c);
            l.labels.splice(0..0, prefix.iter().cloned());
            in_flight.push(l);
        }
        if let Some(first) = c.secondaries_from {
            let mut labels = prefix.to_vec();
            labels.extend(label_path(cb, c.scope));
            let count = c.params.first().copied().unwrap_or(0) as usize;
            for s in cb.secondaries.iter().skip(first as usize).take(count) {
                collect(s, &labels, locate, in_flight);
            }
        }
    }
}
