//! Building and writing reports from the layer's state.
//!
//! A report is built from what the tracker knows (submissions not known to be finished), what each command
//! buffer recorded, and what the markers say; then written as `report.json` and `report.txt` into a fresh
//! folder `<output>/<app>-<pid>-<n>/`, each through a temporary name and a rename, so a reader never sees a
//! half-written file and no report is ever overwritten.
//!
//! Reports can be written from the watchdog thread or a signal handler while other threads hold the
//! layer's locks, so every lock here is taken with a timeout and skipped (with a note) when it cannot be.

use ash::vk;
use blackbox_report as model;
use blackbox_report::{Kind, State};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::command_buffer::{RecordedLog, NONE};
use crate::device::Device;
use crate::queue::Submitted;

/// How long to wait for a lock while building a report.
const LOCK_WAIT: Duration = Duration::from_millis(200);

/// Writes a device-lost report, once per device.
pub fn device_lost(device: &Arc<Device>, command: &'static str) {
    if !device.mark_lost() {
        return;
    }
    error!(
        "{command} returned VK_ERROR_DEVICE_LOST on {}",
        device.description.name
    );
    crate::shader_errors::drain(device);
    let reason = format!("{command} returned VK_ERROR_DEVICE_LOST");
    write(&build(device, Kind::DeviceLost, reason, None));
}

/// Writes a hang report.
pub fn hang(device: &Arc<Device>, stalled: Duration) {
    let reason = format!(
        "pending GPU work made no progress for {:.1} s (VK_BLACKBOX_WATCHDOG_MS={})",
        stalled.as_secs_f64(),
        crate::config().watchdog_ms.unwrap_or(0)
    );
    error!(
        "GPU hang suspected on {}: {reason}",
        device.description.name
    );
    write(&build(device, Kind::Hang, reason, None));
}

/// Writes a report for a fatal signal, for `device`.
pub fn signal(device: &Arc<Device>, signal: model::Signal) {
    let reason = format!("the process received {}", signal.name);
    // What shaders recorded before the fault (an assert in `crash` mode faults right after its record).
    crate::shader_errors::drain(device);
    write(&build(device, Kind::Signal, reason, Some(signal)));
}

/// A report and the files that go beside it.
pub struct Built {
    /// The report.
    pub report: model::Report,
    /// `VK_EXT_device_fault`'s vendor binary, saved as the report names it.
    pub vendor_binary: Option<Vec<u8>>,
}

/// Builds a report of `device`'s state.
pub fn build(
    device: &Arc<Device>,
    kind: Kind,
    reason: String,
    signal: Option<model::Signal>,
) -> Built {
    let _ = device.poll_completion();
    let now = Instant::now();
    let wall = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let unix_ms = wall.as_millis() as u64;
    let config = crate::config();
    let markers = device.markers.try_read_for(LOCK_WAIT);
    let progress_of = |slot: Option<u32>| -> Option<(u32, u32)> {
        let m = markers.as_ref()?.as_ref()?;
        slot.map(|s| m.progress(s))
    };
    let (marker_text, coverage) = match markers.as_ref().and_then(|m| m.as_ref()) {
        Some(m) => (
            m.path.describe().to_owned(),
            match (m.path, m.granularity) {
                (_, crate::config::Breadcrumbs::Submit) => "per submission only".to_owned(),
                (crate::breadcrumbs::MarkerPath::BufferMarker, crate::config::Breadcrumbs::Command) => {
                    "every command, inside render passes too".to_owned()
                }
                (_, _) => "each dispatch, copy and clear outside render passes; each render pass as a whole".to_owned(),
            },
        ),
        None => ("none".to_owned(), "no markers: progress is known per submission at best".to_owned()),
    };

    let mut queues = Vec::new();
    let mut in_flight = Vec::new();
    let mut last_finished: Option<model::Location> = None;
    let queue_list = device
        .queues
        .try_read_for(LOCK_WAIT)
        .map(|q| q.clone())
        .unwrap_or_default();
    // A command buffer pending in two submissions at once (simultaneous use) shares one marker slot: its
    // progress cannot be told apart between them, and the report says so.
    let mut pending_count: std::collections::HashMap<u64, u32> = Default::default();
    for queue in &queue_list {
        if let Some(tracker) = queue.tracker.try_lock_for(LOCK_WAIT) {
            for s in tracker
                .pending
                .iter()
                .flat_map(|sub| sub.batches.iter().flatten())
            {
                *pending_count
                    .entry(vk::Handle::as_raw(s.command_buffer.handle))
                    .or_default() += 1;
            }
        }
    }
    for queue in &queue_list {
        let Some(tracker) = queue.tracker.try_lock_for(LOCK_WAIT) else {
            continue;
        };
        let queue_name = format!("{}.{}", queue.family, queue.index);
        let mut submissions = Vec::new();
        // Once something is not finished, later command buffers on this queue have not started, unless their
        // markers show progress of their own (a slot still holding a finished earlier run would lie).
        let mut earlier_unfinished = false;
        // A command buffer pending twice shares one slot: its progress is credited to the earliest run.
        let mut seen: std::collections::HashSet<u64> = Default::default();
        for (i, sub) in tracker.pending.iter().enumerate() {
            let mut cbs = Vec::new();
            for submitted in sub.batches.iter().flatten() {
                let handle = vk::Handle::as_raw(submitted.command_buffer.handle);
                let mut cb = if seen.insert(handle) {
                    command_buffer(
                        device,
                        submitted,
                        &progress_of,
                        &mut earlier_unfinished,
                        i == 0,
                        None,
                    )
                } else {
                    let not_started = |_: Option<u32>| Some((0, 0));
                    command_buffer(
                        device,
                        submitted,
                        &not_started,
                        &mut earlier_unfinished,
                        i == 0,
                        None,
                    )
                };
                let times = pending_count
                    .get(&vk::Handle::as_raw(submitted.command_buffer.handle))
                    .copied();
                if times.is_some_and(|n| n > 1) {
                    cb.note = Some(format!(
                        "pending in {} submissions at once (simultaneous use): its markers may show either run's \
                         progress",
                        times.unwrap_or(0)
                    ));
                }
                cbs.push(cb);
            }
            let state = combine(cbs.iter().map(|c| c.state));
            let mut s = model::Submission {
                seq: sub.seq,
                command: sub.command.to_owned(),
                age_ms: now.duration_since(sub.at).as_millis() as u64,
                state: if state == State::Finished {
                    State::InFlight
                } else {
                    state
                },
                command_buffers: cbs,
            };
            mark_progress(&mut s, &queue_name, &mut in_flight, &mut last_finished);
            submissions.push(s);
        }
        if last_finished.is_none() {
            // The last finished submission gives the context when nothing pending has started.
            if let Some(done) = &tracker.last_finished {
                if let Some(l) = done
                    .batches
                    .iter()
                    .flatten()
                    .last()
                    .and_then(|s| last_command(device, s))
                {
                    last_finished = Some(model::Location {
                        queue: queue_name.clone(),
                        submission: done.seq,
                        ..l
                    });
                }
            }
        }
        queues.push(model::Queue {
            family: queue.family,
            index: queue.index,
            completed: tracker.completed,
            submissions,
        });
    }

    let lower = |v: &dyn std::fmt::Debug| format!("{v:?}").to_lowercase();
    let settings = vec![
        format!("VK_BLACKBOX_BREADCRUMBS={}", lower(&config.breadcrumbs)),
        format!(
            "VK_BLACKBOX_WATCHDOG_MS={}",
            config.watchdog_ms.unwrap_or(0)
        ),
        format!("VK_BLACKBOX_ASSERT={}", lower(&config.assert)),
        format!("VK_BLACKBOX_NAN={}", lower(&config.nan)),
        format!(
            "VK_BLACKBOX_PRINTF={}",
            if config.printf { "on" } else { "off" }
        ),
    ];
    let (device_fault, vendor_binary) = crate::fault::read(device, kind);
    let mut report = model::Report {
        version: model::SCHEMA_VERSION,
        kind,
        reason,
        time: model::rfc3339(unix_ms),
        unix_ms,
        app: model::App {
            name: device.instance.app_name.clone(),
            pid: std::process::id(),
            executable: std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        },
        device: model::Device {
            name: device.description.name.clone(),
            driver: device.description.driver.trim().to_owned(),
            api_version: crate::instance::version_string(device.description.api_version),
        },
        blackbox: model::Blackbox {
            version: env!("CARGO_PKG_VERSION").to_owned(),
            settings,
        },
        progress: model::Progress {
            granularity: format!("{:?}", config.breadcrumbs).to_lowercase(),
            markers: marker_text,
            coverage,
            timeline_semaphores: device.capabilities.timeline_semaphore,
        },
        queues,
        in_flight,
        last_finished,
        shader_errors: crate::shader_errors::reported(device),
        device_fault,
        checkpoints: crate::fault::checkpoints(device),
        signal,
        signature: String::new(),
        signature_text: String::new(),
    };
    let (text, hash) = model::signature::compute(&report);
    report.signature = hash;
    report.signature_text = text;
    Built {
        report,
        vendor_binary,
    }
}

/// The state of every command after combining: all finished, any in flight, ...
fn combine(states: impl Iterator<Item = State>) -> State {
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

fn handle_text(handle: u64) -> String {
    format!("{handle:#x}")
}

fn command_buffer(
    device: &Device,
    submitted: &Submitted,
    progress_of: &dyn Fn(Option<u32>) -> Option<(u32, u32)>,
    earlier_unfinished: &mut bool,
    first_submission: bool,
    inherited: Option<State>,
) -> model::CommandBuffer {
    let cb = &submitted.command_buffer;
    let handle = vk::Handle::as_raw(cb.handle);
    let mut out = model::CommandBuffer {
        handle: handle_text(handle),
        name: device.name_of(handle),
        level: if cb.secondary { "secondary" } else { "primary" }.to_owned(),
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
    let progress = progress_of(log.slot).map(|(top, bottom)| {
        let complete = top == log.units && bottom == log.units;
        if complete && (*earlier_unfinished || !first_submission) && log.units > 0 {
            (0, 0) // what the slot shows is an earlier run's
        } else {
            (top, bottom)
        }
    });
    out.units = progress.map(|(top, bottom)| model::Units {
        started: top,
        finished: bottom,
        total: log.units,
    });
    out.commands = commands(device, log, progress);
    if let (None, Some(state)) = (progress.filter(|_| log.units > 0), inherited) {
        // A secondary without markers of its own (continuing a render pass on the fill-buffer path) is as
        // far as the vkCmdExecuteCommands that ran it.
        out.commands.iter_mut().for_each(|c| c.state = state);
    }
    out.scopes = log
        .scopes
        .iter()
        .map(|s| {
            let end = if s.end_command == NONE {
                log.commands.len() as u32
            } else {
                s.end_command
            };
            let inside = out
                .commands
                .iter()
                .filter(|c| c.index >= s.first_command && c.index < end)
                .map(|c| c.state);
            model::Scope {
                name: s.name.to_string(),
                parent: (s.parent != NONE).then_some(s.parent),
                first_command: s.first_command,
                end_command: end,
                inserted: s.inserted,
                state: combine(inside),
            }
        })
        .collect();
    out.secondaries = log
        .executed
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let sub = Submitted {
                command_buffer: e.command_buffer.clone(),
                log: e.log.clone(),
            };
            let i = i as u32;
            let runner = out.commands.iter().find(|c| {
                c.secondaries_from.is_some_and(|first| {
                    i >= first && u64::from(i - first) < c.params.first().copied().unwrap_or(0)
                })
            });
            let mut unfinished = false;
            command_buffer(
                device,
                &sub,
                progress_of,
                &mut unfinished,
                first_submission,
                runner.map(|c| c.state),
            )
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

/// Each command's state from its unit (or, for commands without one, from the units around it).
fn commands(
    device: &Device,
    log: &RecordedLog,
    progress: Option<(u32, u32)>,
) -> Vec<model::Command> {
    let unit_state = |unit: u32| -> State {
        match progress {
            None => State::Unknown,
            Some((_, bottom)) if unit <= bottom => State::Finished,
            Some((top, _)) if unit <= top => State::InFlight,
            Some(_) => State::NotStarted,
        }
    };
    let mut out: Vec<model::Command> = log
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| model::Command {
            index: i as u32,
            name: c.name.to_owned(),
            class: c.class,
            params: c.params[..c.param_count as usize].to_vec(),
            state: if c.unit == NONE {
                State::Unknown
            } else {
                unit_state(c.unit)
            },
            scope: (c.scope != NONE).then_some(c.scope),
            pipeline: (c.pipeline != vk::Pipeline::null()).then(|| pipeline(device, c.pipeline)),
            secondaries_from: (c.executed != NONE).then_some(c.executed),
            last_finished: false,
            first_unfinished: false,
        })
        .collect();
    if let Some((top, bottom)) = progress {
        // A command between units is finished once a later unit started, in flight once the unit before it
        // finished (or it comes first), else not started.
        let units: Vec<u32> = log.commands.iter().map(|c| c.unit).collect();
        for i in 0..out.len() {
            if units[i] != NONE {
                continue;
            }
            let later = units[i..].iter().find(|&&u| u != NONE).copied();
            let earlier = units[..i].iter().rev().find(|&&u| u != NONE).copied();
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

/// The pipeline's name and shaders.
fn pipeline(device: &Device, handle: vk::Pipeline) -> model::Pipeline {
    let raw = vk::Handle::as_raw(handle);
    let shaders = device
        .shaders
        .pipeline(handle)
        .map(|p| {
            p.stages
                .iter()
                .map(|s| model::Shader {
                    id: s.shader.id.clone(),
                    entry_points: vec![format!("{} ({})", s.entry, s.stage)],
                    sources: s.shader.sources().to_vec(),
                    name: None,
                })
                .collect()
        })
        .unwrap_or_default();
    model::Pipeline {
        handle: handle_text(raw),
        name: device.name_of(raw),
        shaders,
    }
}

/// The label path of a scope, outermost first.
fn labels(log: &RecordedLog, mut scope: u32) -> Vec<String> {
    let mut path = Vec::new();
    while scope != NONE && (scope as usize) < log.scopes.len() {
        let s = &log.scopes[scope as usize];
        path.push(s.name.to_string());
        scope = s.parent;
    }
    path.reverse();
    path
}

/// The last command of a finished submission's command buffer, as a location.
fn last_command(device: &Device, s: &Submitted) -> Option<model::Location> {
    let log = s.log.as_ref()?;
    let c = log
        .commands
        .iter()
        .enumerate()
        .rev()
        .find(|(_, c)| c.unit != NONE || c.pipeline != vk::Pipeline::null())?;
    let cmd = model::Command {
        index: c.0 as u32,
        name: c.1.name.to_owned(),
        class: c.1.class,
        params: c.1.params[..c.1.param_count as usize].to_vec(),
        state: State::Finished,
        scope: (c.1.scope != NONE).then_some(c.1.scope),
        pipeline: (c.1.pipeline != vk::Pipeline::null()).then(|| pipeline(device, c.1.pipeline)),
        secondaries_from: None,
        last_finished: true,
        first_unfinished: false,
    };
    let handle = vk::Handle::as_raw(s.command_buffer.handle);
    let name = device
        .name_of(handle)
        .map(|n| format!(" \"{n}\""))
        .unwrap_or_default();
    Some(model::Location {
        queue: String::new(),
        submission: 0,
        command_buffer: format!("{}{name}", handle_text(handle)),
        command_index: cmd.index,
        command: cmd.name,
        params: cmd.params,
        labels: cmd.scope.map(|sc| labels(log, sc)).unwrap_or_default(),
        pipeline: cmd.pipeline,
    })
}

/// Marks the last finished and first unfinished commands, and collects what is in flight.
fn mark_progress(
    sub: &mut model::Submission,
    queue: &str,
    in_flight: &mut Vec<model::Location>,
    last_finished: &mut Option<model::Location>,
) {
    const MAX_IN_FLIGHT: usize = 16;
    let mut first_unfinished_seen = in_flight.iter().any(|l| l.queue == queue);
    let mut last: Option<(usize, usize)> = None;
    for (ci, cb) in sub.command_buffers.iter_mut().enumerate() {
        for (i, c) in cb.commands.iter_mut().enumerate() {
            let notable = c.is_action();
            match c.state {
                State::Finished if notable => last = Some((ci, i)),
                State::InFlight | State::NotStarted | State::Unknown
                    if !first_unfinished_seen && (c.state != State::Unknown || notable) =>
                {
                    c.first_unfinished = true;
                    first_unfinished_seen = true;
                }
                _ => {}
            }
        }
    }
    let locate = |cb: &model::CommandBuffer, c: &model::Command| {
        let labels = label_path(cb, c.scope);
        let name = cb
            .name
            .as_deref()
            .map(|n| format!(" \"{n}\""))
            .unwrap_or_default();
        model::Location {
            queue: queue.to_owned(),
            submission: sub.seq,
            command_buffer: format!("{}{name}", cb.handle),
            command_index: c.index,
            command: c.name.clone(),
            params: c.params.clone(),
            labels,
            pipeline: c.pipeline.clone(),
        }
    };
    // Actions in flight, secondaries' included (under the labels of the command that ran them).
    fn collect(
        cb: &model::CommandBuffer,
        prefix: &[String],
        locate: &dyn Fn(&model::CommandBuffer, &model::Command) -> model::Location,
        in_flight: &mut Vec<model::Location>,
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
    for cb in &sub.command_buffers {
        collect(cb, &[], &locate, in_flight);
    }
    if let Some((ci, i)) = last {
        let cb = &mut sub.command_buffers[ci];
        cb.commands[i].last_finished = true;
        *last_finished = Some(locate(cb, &cb.commands[i]));
    }
    if in_flight.is_empty() {
        // Nothing is known to be running: name the first unfinished command instead.
        for cb in &sub.command_buffers {
            if let Some(c) = cb.commands.iter().find(|c| c.first_unfinished) {
                in_flight.push(locate(cb, c));
            }
        }
    }
}

fn label_path(cb: &model::CommandBuffer, mut scope: Option<u32>) -> Vec<String> {
    let mut path = Vec::new();
    while let Some(s) = scope.and_then(|s| cb.scopes.get(s as usize)) {
        path.push(s.name.clone());
        scope = s.parent;
    }
    path.reverse();
    path
}

/// Writes the report's two files into a new folder and logs where; on failure, logs the text instead.
pub fn write(built: &Built) -> Option<PathBuf> {
    let report = &built.report;
    let text = model::text::render(report, false);
    let config = crate::config();
    match write_files(&config.output_dir, built, &text) {
        Ok(dir) => {
            error!(
                "{} report written to {}",
                report.kind.describe(),
                dir.join("report.txt").display()
            );
            Some(dir)
        }
        Err(e) => {
            error!(
                "cannot write the report into {} ({e}); here is its text:\n{text}",
                config.output_dir.display()
            );
            None
        }
    }
}

static REPORTS: AtomicU32 = AtomicU32::new(0);

fn write_files(output: &Path, built: &Built, text: &str) -> std::io::Result<PathBuf> {
    let report = &built.report;
    let app: String = report
        .app
        .name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::fs::create_dir_all(output)?;
    let dir = loop {
        let n = REPORTS.fetch_add(1, Ordering::Relaxed) + 1;
        let dir = output.join(format!("{app}-{}-{n}", report.app.pid));
        match std::fs::create_dir(&dir) {
            Ok(()) => break dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    };
    let written = (|| {
        if let (Some(bytes), Some(name)) = (
            &built.vendor_binary,
            report
                .device_fault
                .as_ref()
                .and_then(|f| f.vendor_binary.as_ref()),
        ) {
            write_atomic(&dir.join(name), bytes)?;
        }
        write_atomic(&dir.join("report.json"), report.to_json().as_bytes())?;
        write_atomic(&dir.join("report.txt"), text.as_bytes())
    })();
    match written {
        Ok(()) => Ok(dir),
        Err(e) => {
            // A report is whole or absent: the folder is this report's own, made above.
            let _ = std::fs::remove_dir_all(&dir);
            Err(e)
        }
    }
}

/// Writes through a temporary name, syncs, renames: readers see the whole file or none. A failed write
/// leaves no temporary file behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
