//! Building and writing reports from the layer's state.
//!
//! A report is built from what the tracker knows (submissions not known to be finished), what each command
//! buffer recorded, and what the markers say; then written as `report.json` and `report.txt` into a fresh
//! folder `<output>/<app>-<pid>-<n>/` (mode 700, made with `mkdir`), each (mode 600) through a temporary name
//! and a rename, so a reader never sees a half-written file and no report is ever overwritten.
//!
//! Reports can be written from the watchdog thread or a signal handler while other threads (or the thread
//! the signal interrupted) hold the layer's locks, so every lock taken to build one is waited for at most
//! [`LOCK_WAIT`], and what it guards is left out, with a note in the report, when it cannot be had. (The
//! shader-error drain that `device_lost` and `signal` run first waits for its locks as long at most.)

use ash::vk;
use blackbox_report as model;
use blackbox_report::progress;
use blackbox_report::untrusted;
use blackbox_report::Kind;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::breadcrumbs::Markers;
use crate::command_buffer::{CommandBuffer, RecordedLog, NONE};
use crate::device::Device;
use crate::queue::{Submission, Submitted};
use crate::shaders::{Busy, PipelineRecord};

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
    crate::shader_errors::drain_within(device, Some(LOCK_WAIT));
    let reason = format!("{command} returned VK_ERROR_DEVICE_LOST");
    let mut built = build(device, Kind::DeviceLost, reason, None);
    crate::frames::attach_last_frame(device, &mut built, "device-lost");
    write(&built);
}

/// Writes a hang report: `device`'s pending work has not moved since `stalled_since`, when progress looked
/// like `fingerprint` (the watchdog's hash of it). The report stays open on the device
/// ([`Device::open_hang`]) until that work is seen to move again ([`hang_resumed`]).
pub fn hang(device: &Arc<Device>, stalled_since: Instant, fingerprint: u64) {
    let stalled = stalled_since.elapsed();
    let reason = format!(
        "pending GPU work made no progress for {:.1} s (VK_BLACKBOX_WATCHDOG_MS={})",
        stalled.as_secs_f64(),
        crate::config().watchdog_ms.unwrap_or(0)
    );
    error!(
        "GPU hang suspected on {}: {reason}",
        device.description.name
    );
    // Loop budget records written so far name the loops the GPU is still in (VK_BLACKBOX_LOOPS=report).
    crate::shader_errors::drain_within(device, Some(LOCK_WAIT));
    let mut built = build(device, Kind::Hang, reason, None);
    crate::frames::attach_last_frame(device, &mut built, "hang");
    if let Some(dir) = write(&built) {
        // Its image files are written: only the report itself is written again.
        built.files.clear();
        built.vendor_binary = None;
        *device.open_hang.lock() = Some(OpenHang {
            built,
            dir,
            stalled_since,
            fingerprint,
        });
    }
}

/// A hang report whose work has not been seen to move since it was written.
pub struct OpenHang {
    built: Built,
    dir: PathBuf,
    stalled_since: Instant,
    /// The watchdog's hash of the device's progress when it fired.
    pub fingerprint: u64,
}

/// `device`'s work moved again after its hang report (the watchdog saw its progress change, or the app's
/// wait or poll retired a submission, or the device is being destroyed, its work done): the report is
/// written again saying after how long, and the log says that it was slow work, not a hang. Cheap when no
/// hang report is open (one uncontended lock).
pub fn hang_resumed(device: &Device) {
    let Some(mut open) = device.open_hang.lock().take() else {
        return;
    };
    let after = open.stalled_since.elapsed();
    let unix_ms = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64;
    open.built.report.resumed = Some(model::Resumed {
        after_ms: after.as_millis() as u64,
        time: model::rfc3339(unix_ms),
    });
    let report = &open.built.report;
    let text = model::text::render_in(report, false, Some(&open.dir));
    let written = write_atomic(&open.dir.join("report.json"), report.to_json().as_bytes())
        .and_then(|()| write_atomic(&open.dir.join("report.txt"), text.as_bytes()));
    let said = match written {
        Ok(()) => "says so now".to_owned(),
        Err(e) => format!("could not be written again to say so ({e})"),
    };
    warn!(
        "GPU work on {} moved again {:.1} s after its last progress: slow work, not a hang; {} {said}",
        device.description.name,
        after.as_secs_f64(),
        open.dir.join("report.txt").display()
    );
}

/// Writes a report for a fatal signal, for `device`.
pub fn signal(device: &Arc<Device>, signal: model::Signal) {
    let reason = format!("the process received {}", signal.name);
    // What shaders recorded before the fault (an assert in `crash` mode faults right after its record).
    crate::shader_errors::drain_within(device, Some(LOCK_WAIT));
    write(&build(device, Kind::Signal, reason, Some(signal)));
}

/// A report and the files that go beside it.
pub struct Built {
    /// The report.
    pub report: model::Report,
    /// `VK_EXT_device_fault`'s vendor binary, saved as the report names it.
    pub vendor_binary: Option<Vec<u8>>,
    /// Other files beside the report, by file name (a frame's images, as its `frame` section names them).
    pub files: Vec<(String, Vec<u8>)>,
}

/// Builds a report of `device`'s state: a snapshot of what the layer knows, the progress inferred from it
/// ([`progress::infer`]), and the rest of the report around it.
pub fn build(
    device: &Arc<Device>,
    kind: Kind,
    reason: String,
    signal: Option<model::Signal>,
) -> Built {
    let mut notes = Vec::new();
    if let Ok(false) = device.try_poll_completion(LOCK_WAIT) {
        notes.push(
            "completion could not be polled on every queue (a lock was held): finished work may be shown \
             pending"
                .to_owned(),
        );
    }
    let now = Instant::now();
    let wall = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let unix_ms = wall.as_millis() as u64;
    let config = crate::config();
    let markers = device.markers.try_read_for(LOCK_WAIT);
    if markers.is_none() {
        notes.push(
            "the marker buffer could not be read (a lock was held): progress is known per submission at best"
                .to_owned(),
        );
    }
    let markers = markers.as_ref().and_then(|m| m.as_ref());
    let (marker_text, coverage) = match markers {
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
    let mut snapshotter = Snapshotter {
        device,
        markers,
        now,
        pipelines: HashMap::new(),
        names_busy: false,
        registry_busy: false,
        notes: &mut notes,
    };
    let snapshot = snapshotter.snapshot();
    let progress::Inferred {
        queues,
        in_flight,
        last_finished,
    } = progress::infer(&snapshot);

    let settings = vec![
        format!("VK_BLACKBOX_BREADCRUMBS={}", config.breadcrumbs),
        format!(
            "VK_BLACKBOX_WATCHDOG_MS={}",
            config.watchdog_ms.unwrap_or(0)
        ),
        format!("VK_BLACKBOX_ASSERT={}", config.assert),
        format!("VK_BLACKBOX_NAN={}", config.nan),
        format!("VK_BLACKBOX_NAN_RECORDS={}", config.nan_records),
        format!("VK_BLACKBOX_LOOPS={}", config.loops),
        format!(
            "VK_BLACKBOX_INT={}",
            crate::config::Switch(config.int_checks)
        ),
        format!(
            "VK_BLACKBOX_PRINTF={}",
            crate::config::Switch(config.printf)
        ),
    ];
    let shader_errors = crate::shader_errors::reported(device, LOCK_WAIT).unwrap_or_else(|| {
        notes.push("shader errors could not be read (a lock was held)".to_owned());
        Vec::new()
    });
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
            granularity: config.breadcrumbs.to_string(),
            markers: marker_text,
            coverage,
            timeline_semaphores: device.capabilities.timeline_semaphore,
        },
        notes,
        queues,
        in_flight,
        last_finished,
        shader_errors,
        device_fault,
        checkpoints: crate::fault::checkpoints(device),
        signal,
        frame: None,
        resumed: None,
        signature: String::new(),
        signature_text: String::new(),
    };
    let (text, hash) = model::signature::compute(&report);
    report.signature = hash;
    report.signature_text = text;
    Built {
        report,
        vendor_binary,
        files: Vec::new(),
    }
}

/// Computes the report's signature again, after a part it hashes (the frame) was added.
pub fn sign(report: &mut model::Report) {
    let (text, hash) = model::signature::compute(report);
    report.signature = hash;
    report.signature_text = text;
}

/// A submission copied out of its queue's tracker, so the lock is not held while it is described.
struct Copied {
    seq: u64,
    command: &'static str,
    at: Instant,
    command_buffers: Vec<Submitted>,
}

impl Copied {
    fn of(s: &Submission) -> Self {
        Copied {
            seq: s.seq,
            command: s.command,
            at: s.at,
            command_buffers: s.batches.iter().flatten().cloned().collect(),
        }
    }
}

/// Copies what progress inference needs out of the layer's state, every lock waited for at most
/// [`LOCK_WAIT`]. A lock that could not be had once is not waited for again: a stuck lock costs one wait,
/// not one per object named.
struct Snapshotter<'a> {
    device: &'a Device,
    /// The marker buffer, read under the caller's lock.
    markers: Option<&'a Markers>,
    /// When the report was asked for, for the submissions' ages.
    now: Instant,
    /// Pipelines already described, by handle.
    pipelines: HashMap<u64, model::Pipeline>,
    /// The debug names' lock could not be had.
    names_busy: bool,
    /// The shader registry's lock could not be had.
    registry_busy: bool,
    /// The report's notes, for what could not be read.
    notes: &'a mut Vec<String>,
}

impl Snapshotter<'_> {
    fn snapshot(&mut self) -> progress::Snapshot {
        let Some(queue_list) = self
            .device
            .queues
            .try_read_for(LOCK_WAIT)
            .map(|q| q.clone())
        else {
            self.notes.push(
                "the queues could not be read (a lock was held): no submission is shown".to_owned(),
            );
            return progress::Snapshot::default();
        };
        let mut queues = Vec::with_capacity(queue_list.len());
        for queue in &queue_list {
            let Some(tracker) = queue.tracker.try_lock_for(LOCK_WAIT) else {
                self.notes.push(format!(
                    "queue {}.{}: its submissions could not be read (a lock was held)",
                    queue.family, queue.index
                ));
                continue;
            };
            let completed = tracker.completed;
            let pending: Vec<Copied> = tracker.pending.iter().map(Copied::of).collect();
            let last_finished = tracker.last_finished.as_ref().map(Copied::of);
            drop(tracker);
            queues.push(progress::QueueSnapshot {
                family: queue.family,
                index: queue.index,
                completed,
                pending: pending.iter().map(|s| self.submission(s)).collect(),
                last_finished: last_finished.as_ref().map(|s| self.submission(s)),
            });
        }
        progress::Snapshot { queues }
    }

    fn submission(&mut self, s: &Copied) -> progress::SubmissionSnapshot {
        progress::SubmissionSnapshot {
            seq: s.seq,
            command: s.command.to_owned(),
            age_ms: self.now.duration_since(s.at).as_millis() as u64,
            command_buffers: s
                .command_buffers
                .iter()
                .map(|cb| self.command_buffer(&cb.command_buffer, cb.log.as_deref()))
                .collect(),
        }
    }

    fn command_buffer(
        &mut self,
        cb: &CommandBuffer,
        log: Option<&RecordedLog>,
    ) -> progress::CommandBufferSnapshot {
        let handle = vk::Handle::as_raw(cb.handle);
        progress::CommandBufferSnapshot {
            handle,
            name: self.name_of(handle),
            secondary: cb.secondary,
            // Markers are read only while the device's markers exist (a report after vkDestroyDevice has none).
            progress: log
                .filter(|_| self.markers.is_some())
                .and_then(|l| l.progress()),
            log: log.map(|l| self.log(l)),
        }
    }

    fn log(&mut self, log: &RecordedLog) -> progress::RecordedLog {
        let known = |v: u32| (v != NONE).then_some(v);
        progress::RecordedLog {
            commands: log
                .commands()
                .map(|c| progress::RecordedCommand {
                    name: c.name.to_owned(),
                    class: c.class,
                    params: c
                        .params
                        .iter()
                        .take(c.param_count.into())
                        .copied()
                        .collect(),
                    scope: known(c.scope),
                    unit: known(c.unit),
                    pipeline: (c.pipeline != vk::Pipeline::null())
                        .then(|| self.pipeline(c.pipeline)),
                    executed: known(c.executed),
                    skipped: c.skipped,
                })
                .collect(),
            scopes: log
                .scopes()
                .map(|s| progress::LabelScope {
                    name: s.name.to_string(),
                    parent: known(s.parent),
                    first_command: s.first_command,
                    end_command: known(s.end_command),
                    inserted: s.inserted,
                })
                .collect(),
            executed: log
                .executed()
                .iter()
                .map(|e| self.command_buffer(&e.command_buffer, e.log.as_deref()))
                .collect(),
            units: log.units,
            unlogged: log.unlogged(),
        }
    }

    /// The pipeline's name and shaders.
    fn pipeline(&mut self, handle: vk::Pipeline) -> model::Pipeline {
        let raw = vk::Handle::as_raw(handle);
        if let Some(p) = self.pipelines.get(&raw) {
            return p.clone();
        }
        let shaders = self
            .record_of(handle)
            .map(|p| {
                p.stages
                    .iter()
                    // Entry point and source names are the app's (from its SPIR-V): kept as the layer keeps
                    // every app string, at most untrusted::KEEP_BYTES each.
                    .map(|s| model::Shader {
                        id: s.shader.id.clone(),
                        entry_points: vec![untrusted::keep(format!("{} ({})", s.entry, s.stage))],
                        sources: s
                            .shader
                            .sources()
                            .iter()
                            .map(|source| untrusted::keep(source.clone()))
                            .collect(),
                        name: None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let pipeline = model::Pipeline {
            handle: format!("{raw:#x}"),
            name: self.name_of(raw),
            shaders,
        };
        self.pipelines.insert(raw, pipeline.clone());
        pipeline
    }

    /// The debug name of an object, if the app gave one and the names could be read.
    fn name_of(&mut self, handle: u64) -> Option<String> {
        if self.names_busy {
            return None;
        }
        let Some(names) = self.device.names.try_lock_for(LOCK_WAIT) else {
            self.names_busy = true;
            self.notes.push(
                "debug names could not be read (a lock was held): objects are shown by handle"
                    .to_owned(),
            );
            return None;
        };
        names.get(&handle).cloned()
    }

    /// What the shader registry knows of a pipeline, if it could be read.
    fn record_of(&mut self, handle: vk::Pipeline) -> Option<Arc<PipelineRecord>> {
        if self.registry_busy {
            return None;
        }
        match self.device.shaders.try_pipeline(handle, LOCK_WAIT) {
            Ok(record) => record,
            Err(Busy) => {
                self.registry_busy = true;
                self.notes.push(
                    "the shader registry could not be read (a lock was held): pipelines are shown without \
                     their shaders"
                        .to_owned(),
                );
                None
            }
        }
    }
}

/// Writes the report's files into a new folder and logs where; on failure, logs the text instead.
pub fn write(built: &Built) -> Option<PathBuf> {
    let report = &built.report;
    let config = crate::config();
    match write_files(&config.output_dir, built) {
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
                "cannot write the report into {} ({e}); here is its text:\n{}",
                config.output_dir.display(),
                model::text::render(report, false)
            );
            None
        }
    }
}

static REPORTS: AtomicU32 = AtomicU32::new(0);

fn write_files(output: &Path, built: &Built) -> std::io::Result<PathBuf> {
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
    // Made at start-up; made again (private) if it went away since.
    crate::output::create_dir_all(output)?;
    let dir = loop {
        let n = REPORTS.fetch_add(1, Ordering::Relaxed) + 1;
        let dir = output.join(format!("{app}-{}-{n}", report.app.pid));
        match crate::output::create_dir(&dir) {
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
        for (name, bytes) in &built.files {
            write_atomic(&dir.join(name), bytes)?;
        }
        write_atomic(&dir.join("report.json"), report.to_json().as_bytes())?;
        // The text names the files beside it by their paths.
        let text = model::text::render_in(report, false, Some(&dir));
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

/// Writes through a temporary name, syncs, renames: readers see the whole file or none ([`crate::output::write_atomic`]:
/// mode 600, never through a link).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    crate::output::write_atomic(path, bytes)
}
