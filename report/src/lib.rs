//! Blackbox's crash report: one model, written as versioned JSON for tools and as text for people.
//!
//! The layer fills a [`Report`] when the device is lost, when its watchdog sees a hang, on a fatal signal,
//! on a failing shader assert in `abort` mode, or, with frame capture on, for a bad frame ([`Frame`]); it writes `report.json` ([`Report::to_json`]) and
//! `report.txt` ([`text::render`]) side by side. The CLI reads the JSON back ([`Report::from_json`]) to print
//! and group reports. [`signature`] computes the crash signature that groups reports of one bug.
//! [`progress`] is the heart of a report: from a snapshot of what was recorded and what the markers say,
//! it infers which command had finished, which was in flight and which had not started.
//!
//! Every string in a report may come from the app (labels, names, printf output) or, for a report file
//! read back, from anyone: [`untrusted`] is where such text is escaped for showing, and where the layer cuts
//! what it keeps of an app's strings.
//!
//! The JSON schema is this module's types, serialized by serde with `snake_case` names; `docs/report.md`
//! describes it field by field. [`SCHEMA_VERSION`] changes whenever a field changes meaning or goes away;
//! new optional fields do not change it, and readers ignore fields they do not know.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod progress;
pub mod signature;
pub mod suspects;
pub mod text;
pub mod untrusted;

use serde::{Deserialize, Serialize};

/// The `version` field of reports written by this code. Version 2 added the `frame` kind and field; this
/// code reads version 1 reports too (they are version 2 reports without them).
pub const SCHEMA_VERSION: u32 = 2;
/// The oldest `version` this code reads.
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// Why the report was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A call returned `VK_ERROR_DEVICE_LOST`.
    DeviceLost,
    /// Pending GPU work made no progress for the watchdog's time.
    Hang,
    /// A fatal signal (SIGSEGV, SIGBUS, ...) in the process.
    Signal,
    /// A shader assert failed in `abort` mode.
    Assert,
    /// A presented frame went wrong (a shader error in it, or a one-frame flash): the frame, the frames
    /// around it and its image ([`Frame`]).
    Frame,
}

impl Kind {
    /// `device lost`, `hang`, ...
    pub fn describe(self) -> &'static str {
        match self {
            Kind::DeviceLost => "device lost",
            Kind::Hang => "GPU hang",
            Kind::Signal => "fatal signal",
            Kind::Assert => "shader assert",
            Kind::Frame => "bad frame",
        }
    }
}

/// What a command, scope, command buffer or submission had done when the report was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Known to be finished.
    Finished,
    /// Started and not known to be finished.
    InFlight,
    /// Not started.
    NotStarted,
    /// No marker tells.
    Unknown,
}

impl State {
    /// `finished`, `in flight`, ...
    pub fn describe(self) -> &'static str {
        match self {
            State::Finished => "finished",
            State::InFlight => "in flight",
            State::NotStarted => "not started",
            State::Unknown => "unknown",
        }
    }
}

/// What kind of work a command does, as the layer's recording table classes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommandClass {
    /// GPU work of its own: draws, dispatches, trace rays, copies, clears, blits, resolves, fills and
    /// updates, query-result copies, acceleration-structure builds, `vkCmdExecuteCommands`, and the
    /// beginning of a render pass (its load operations, and on the fill-buffer path the unit that stands
    /// for the whole pass).
    Action,
    /// No work of its own: queries, timestamps, setting or resetting events, subpass changes, the end of a
    /// render pass.
    State,
    /// A synchronization point (pipeline barrier, event wait): no work of its own, and where the layer
    /// writes the "finished" marker owed for the units before it.
    Sync,
    /// Not classed: a command from a report written before commands carried a class.
    #[default]
    Other,
}

/// A crash report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`] of the writer.
    pub version: u32,
    /// Why it was written.
    pub kind: Kind,
    /// One line saying why, e.g. `vkWaitForFences returned VK_ERROR_DEVICE_LOST`.
    pub reason: String,
    /// When, as RFC 3339 UTC (`2026-11-30T05:12:33.123Z`).
    pub time: String,
    /// When, as milliseconds since the Unix epoch.
    pub unix_ms: u64,
    /// The application.
    pub app: App,
    /// The device.
    pub device: Device,
    /// Blackbox's version and settings.
    pub blackbox: Blackbox,
    /// How progress was tracked on this device.
    pub progress: Progress,
    /// Caveats about the report itself, e.g. layer state it could not read because a lock was held.
    #[serde(default)]
    pub notes: Vec<String>,
    /// Per queue, the submissions not known to be finished.
    pub queues: Vec<Queue>,
    /// The commands in flight (or, when none is known on any queue, each queue's first not finished), with
    /// their pipelines.
    pub in_flight: Vec<Location>,
    /// The last command known to be finished.
    pub last_finished: Option<Location>,
    /// Shader errors reported so far (asserts, NaN/Inf, printf).
    pub shader_errors: Vec<ShaderError>,
    /// What `VK_EXT_device_fault` said, where the device has it.
    pub device_fault: Option<DeviceFault>,
    /// NV diagnostic checkpoints per queue, where the device has them.
    pub checkpoints: Vec<Checkpoint>,
    /// For `signal` reports: the signal.
    pub signal: Option<Signal>,
    /// With frame capture on (`VK_BLACKBOX_FRAMES`, `VK_BLACKBOX_FLASH`): the frame the report is about
    /// (for `frame` reports, the bad one; for device losses and hangs, the last presented), the frames
    /// around it and its image. Absent otherwise, and in version 1 reports.
    #[serde(default)]
    pub frame: Option<Frame>,
    /// For `hang` reports: the work the watchdog saw stopped moved again after the report was written, and
    /// the layer rewrote the report to say so (slow work rather than a hang, as far as the layer saw).
    /// Absent (null) otherwise: a hang that never moved again, every other kind, and reports of layers
    /// before it.
    #[serde(default)]
    pub resumed: Option<Resumed>,
    /// The crash signature ([`signature`]).
    pub signature: String,
    /// What the signature hashes, for people checking why two reports differ.
    pub signature_text: String,
}

/// The application.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct App {
    /// `VkApplicationInfo::pApplicationName` or the process name.
    pub name: String,
    /// Process id.
    pub pid: u32,
    /// The executable's path.
    pub executable: String,
}

/// The device.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Device {
    /// `deviceName`.
    pub name: String,
    /// Driver name and version.
    pub driver: String,
    /// Vulkan version, e.g. `1.3.230`.
    pub api_version: String,
}

/// Blackbox itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Blackbox {
    /// Its version.
    pub version: String,
    /// The `VK_BLACKBOX_*` settings in force, as `name=value`.
    pub settings: Vec<String>,
}

/// How progress was tracked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Progress {
    /// `VK_BLACKBOX_BREADCRUMBS`.
    pub granularity: String,
    /// How markers were written, e.g. `fill-buffer writes (...)`, or `none`.
    pub markers: String,
    /// What the markers can tell, in words (e.g. which commands are covered).
    pub coverage: String,
    /// Whether completion was read from the layer's timeline semaphores.
    pub timeline_semaphores: bool,
}

/// A queue and its unfinished work.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Queue {
    /// Queue family.
    pub family: u32,
    /// Index in the family.
    pub index: u32,
    /// The last submission known finished (0 for none).
    pub completed: u64,
    /// Submissions not known to be finished, oldest first.
    pub submissions: Vec<Submission>,
}

/// One submission.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Submission {
    /// Its number on the queue, from 1.
    pub seq: u64,
    /// `vkQueueSubmit`, `vkQueueSubmit2` or `vkQueueBindSparse`.
    pub command: String,
    /// How long before the report it was submitted, in milliseconds.
    pub age_ms: u64,
    /// Its state.
    pub state: State,
    /// Its command buffers, in submission order across batches.
    pub command_buffers: Vec<CommandBuffer>,
}

/// A command buffer as submitted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandBuffer {
    /// The handle, as hex.
    pub handle: String,
    /// The debug name, if any.
    pub name: Option<String>,
    /// `primary` or `secondary`.
    pub level: String,
    /// Its state.
    pub state: State,
    /// Marker units started and finished, out of how many (absent without markers).
    pub units: Option<Units>,
    /// Its commands.
    pub commands: Vec<Command>,
    /// Its label scopes.
    pub scopes: Vec<Scope>,
    /// Secondaries run by its `vkCmdExecuteCommands`, in order.
    pub secondaries: Vec<CommandBuffer>,
    /// Commands recorded beyond the log's limit (counted, not listed).
    #[serde(default)]
    pub unlogged_commands: u32,
    /// A caveat about its progress, e.g. when it is pending twice at once (simultaneous use).
    #[serde(default)]
    pub note: Option<String>,
}

/// Marker progress of a command buffer.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct Units {
    /// The last unit started.
    pub started: u32,
    /// The last unit finished.
    pub finished: u32,
    /// Units recorded.
    pub total: u32,
}

/// A recorded command.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Command {
    /// Index in its command buffer.
    pub index: u32,
    /// The Vulkan command.
    pub name: String,
    /// What kind of work it does (absent in older reports: [`CommandClass::Other`]).
    #[serde(default)]
    pub class: CommandClass,
    /// Its key parameters.
    pub params: Vec<u64>,
    /// Its state.
    pub state: State,
    /// The innermost label scope (index into the command buffer's scopes), if any.
    pub scope: Option<u32>,
    /// The pipeline it used, for draws, dispatches and trace rays.
    pub pipeline: Option<Pipeline>,
    /// For `vkCmdExecuteCommands`: index of its first secondary in the command buffer's `secondaries`.
    pub secondaries_from: Option<u32>,
    /// The last finished command of the whole report.
    #[serde(default)]
    pub last_finished: bool,
    /// The first unfinished command of its queue.
    #[serde(default)]
    pub first_unfinished: bool,
    /// Not passed to the driver: `VK_BLACKBOX_SKIP` selected it (absent in older reports: false).
    #[serde(default)]
    pub skipped: bool,
}

/// A debug-label scope.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scope {
    /// The label.
    pub name: String,
    /// The enclosing scope, if any.
    pub parent: Option<u32>,
    /// Its first command's index.
    pub first_command: u32,
    /// One past its last command's index.
    pub end_command: u32,
    /// An inserted label (a point, not a scope).
    pub inserted: bool,
    /// Its state, from its commands.
    pub state: State,
}

/// A pipeline and its shaders.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pipeline {
    /// The handle, as hex.
    pub handle: String,
    /// The debug name, if any.
    pub name: Option<String>,
    /// Its shaders.
    pub shaders: Vec<Shader>,
}

/// A shader module as Blackbox saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Shader {
    /// The shader id (content hash of the app's SPIR-V, 16 hex digits).
    pub id: String,
    /// Entry points with their stages, e.g. `main (compute)`.
    pub entry_points: Vec<String>,
    /// Source files the module names.
    pub sources: Vec<String>,
    /// The debug name the app gave the module, if any.
    pub name: Option<String>,
}

/// Where in the submitted work something is.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Location {
    /// Queue family and index, e.g. `0.0`.
    pub queue: String,
    /// Submission number on the queue.
    pub submission: u64,
    /// Command buffer handle (and name).
    pub command_buffer: String,
    /// The command's index in it.
    pub command_index: u32,
    /// The command.
    pub command: String,
    /// Its parameters.
    pub params: Vec<u64>,
    /// The label path, outermost first.
    pub labels: Vec<String>,
    /// The pipeline, if any.
    pub pipeline: Option<Pipeline>,
}

/// A shader error seen before the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShaderError {
    /// `assert`, `nan`, `inf`, `printf`, `loop` (a loop past its budget), `integer` (integer undefined
    /// behaviour) or `index` (an index out of range).
    pub kind: String,
    /// The message as logged.
    pub message: String,
    /// Shader id.
    pub shader: String,
    /// `file:line:column`, if known.
    pub location: Option<String>,
    /// How many invocations reported it.
    pub count: u64,
}

/// `VK_EXT_device_fault` data.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceFault {
    /// The driver's description.
    pub description: String,
    /// Faulting addresses.
    pub addresses: Vec<FaultAddress>,
    /// Vendor codes.
    pub vendor_infos: Vec<String>,
    /// The vendor binary dump's file name beside the report, if one was saved.
    pub vendor_binary: Option<String>,
    /// Why nothing more could be read, if so.
    pub note: Option<String>,
}

/// One faulting address.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultAddress {
    /// The address type (`read invalid`, `write invalid`, `instruction pointer`, ...).
    pub kind: String,
    /// The address, as hex.
    pub address: String,
    /// Its precision, in bytes.
    pub precision: u64,
    /// The resource at or near it, from address-binding reports, if known.
    pub resource: Option<String>,
}

/// An NV diagnostic checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Queue family and index.
    pub queue: String,
    /// Pipeline stage.
    pub stage: String,
    /// The command buffer slot and unit it marks.
    pub marker: String,
}

/// How a hang ended: its work moved again.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Resumed {
    /// Milliseconds from the last progress the watchdog saw before the report to the first the layer saw
    /// after it: at most this long, since progress is seen when the app waits or polls, or at the
    /// watchdog's next look (every 100 ms).
    pub after_ms: u64,
    /// When the layer saw it, as RFC 3339 UTC.
    pub time: String,
}

/// A fatal signal.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Signal {
    /// Its number.
    pub number: i32,
    /// `SIGSEGV`, ...
    pub name: String,
    /// The faulting address, for SIGSEGV/SIGBUS.
    pub address: Option<String>,
    /// The thread that got it.
    pub thread: String,
}

/// A presented frame, as frame capture saw it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Frame {
    /// Its number: the frame ended by the device's N-th `vkQueuePresentKHR`, from 1.
    pub number: u64,
    /// Why it is reported: `shader-error` (a NaN, Inf or assert drained from its work), `flash` (a region's
    /// luminance jumped for this frame alone), `device-lost` or `hang` (the last frame presented).
    pub trigger: String,
    /// How sure the frame number is, when it is not exact: shader errors are drained after the work
    /// completes, and when work of several frames finished or ran between two drains the earliest of them
    /// is named (`frames 56-57 were in flight: the earliest is named`).
    pub attribution: Option<String>,
    /// The swapchain whose image is shown.
    pub swapchain: Option<Swapchain>,
    /// The frames kept around it, oldest first (`VK_BLACKBOX_FRAMES` of them at most), itself included.
    pub frames: Vec<FrameSummary>,
    /// The shader errors drained in it, with the pixels they came from.
    pub errors: Vec<FrameError>,
    /// For `flash` reports: where and how much the luminance jumped.
    pub flash: Option<Flash>,
    /// Images saved beside the report: the frame's own first, then (for a flash) the frames before and
    /// after it.
    pub images: Vec<FrameImage>,
    /// The draws of the frame whose pipeline has a shader that reported (for `shader-error` reports).
    pub draws: Vec<Location>,
    /// Caveats: an image that could not be kept or converted, draws no longer known.
    pub notes: Vec<String>,
}

/// The swapchain a frame was presented to.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Swapchain {
    /// The handle, as hex.
    pub handle: String,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
    /// The image format, e.g. `B8G8R8A8_UNORM`.
    pub format: String,
}

/// What one frame held.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameSummary {
    /// Its number.
    pub number: u64,
    /// Submissions made during it (before its present).
    pub submissions: u32,
    /// Command buffers they held (primaries).
    pub command_buffers: u32,
    /// Commands recorded in them (secondaries included).
    pub commands: u32,
    /// Draws among them.
    pub draws: u32,
    /// Dispatches among them.
    pub dispatches: u32,
    /// The outermost debug labels of its command buffers, in order of first appearance (at most 8).
    pub labels: Vec<String>,
    /// Shader errors (invocations) drained and attributed to it.
    pub shader_errors: u64,
    /// With flash detection: the largest change of a region's mean luminance (0 to 1) since the frame
    /// before, signed.
    pub luminance_jump: Option<f32>,
}

/// A shader error of a frame.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameError {
    /// As [`ShaderError::kind`]: `nan`, `inf`, `assert`, ...
    pub kind: String,
    /// The message as logged.
    pub message: String,
    /// Shader id.
    pub shader: String,
    /// `file:line:column`, if known.
    pub location: Option<String>,
    /// Invocations that reported it in this frame.
    pub count: u64,
    /// For fragment shaders: the pixels (x, y) of the records kept (at most 8 per drain), as
    /// `gl_FragCoord` gives them.
    pub pixels: Vec<[u32; 2]>,
}

/// A one-frame flash.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Flash {
    /// The region that jumped, in pixels: `[x0, y0, x1, y1]`, x1 and y1 exclusive (whole cells of the
    /// detection grid).
    pub region: [u32; 4],
    /// The region's mean luminance (0 to 1) in the frame before, this frame and the frame after.
    pub luminance: [f32; 3],
    /// The jump that counts as a flash.
    pub threshold: f32,
    /// The detection grid's cells, columns x rows.
    pub grid: [u32; 2],
}

/// An image file beside the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FrameImage {
    /// The frame it shows.
    pub frame: u64,
    /// `frame` (the reported one), `before` or `after`.
    pub role: String,
    /// Its file name beside `report.json` (`frame-57.png`).
    pub file: String,
    /// The pixels marked on it (a magenta ring around each, the pixel itself untouched).
    pub marked_pixels: Vec<[u32; 2]>,
    /// The region outlined on it (a magenta rectangle just outside), `[x0, y0, x1, y1]`.
    pub marked_region: Option<[u32; 4]>,
}

impl Command {
    /// Whether the command does GPU work of its own (draws, dispatches, copies, clears, render passes...),
    /// as opposed to barriers, queries, events and subpass changes: its class is [`CommandClass::Action`].
    pub fn is_action(&self) -> bool {
        self.class == CommandClass::Action && !self.skipped
    }
}

impl Report {
    /// The JSON text (pretty, with every character a terminal would act on written as a `\u` escape:
    /// [`untrusted::to_json_pretty`]).
    pub fn to_json(&self) -> String {
        untrusted::to_json_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Reads a report back; fails on malformed JSON or an unknown schema version.
    pub fn from_json(text: &str) -> Result<Report, ReadError> {
        Report::from_json_bytes(text.as_bytes())
    }

    /// Reads a report back from the bytes of a file, which may hold anything: malformed or invalid UTF-8
    /// JSON, wrong types, nesting deeper than serde_json's limit (128), a schema version this code does not
    /// know. Each is an error, never a panic; the caller bounds the size.
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Report, ReadError> {
        let known =
            |v: u64| (u64::from(OLDEST_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION)).contains(&v);
        // One pass for a good report; the version is looked at alone only to say why one does not parse.
        match serde_json::from_slice::<Report>(bytes) {
            Ok(report) if known(u64::from(report.version)) => Ok(report),
            Ok(report) => Err(ReadError::Version(report.version.into())),
            Err(e) => {
                #[derive(Deserialize)]
                struct Versioned {
                    version: Option<serde_json::Value>,
                }
                match serde_json::from_slice::<Versioned>(bytes).map(|v| v.version) {
                    Ok(Some(serde_json::Value::Number(n)))
                        if n.as_u64().is_some_and(|v| !known(v)) =>
                    {
                        Err(ReadError::Version(n.as_u64().unwrap_or_default()))
                    }
                    Ok(None) => Err(ReadError::Json(
                        "no `version` field: not a Blackbox report".into(),
                    )),
                    _ => Err(ReadError::Json(e.to_string())),
                }
            }
        }
    }
}

/// Why a report could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// Not JSON, or not a report.
    Json(String),
    /// A schema version this code does not know.
    Version(u64),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Json(e) => write!(f, "not a Blackbox report: {e}"),
            ReadError::Version(v) => {
                write!(f, "report schema version {v} is not supported (this blackbox reads versions {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION})")
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// RFC 3339 UTC time from milliseconds since the epoch (civil-from-days, no time zone database needed).
pub fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_796_015_553_123), "2026-11-30T05:12:33.123Z");
    }

    #[test]
    fn a_command_without_a_class_loads_as_other_and_classes_are_kebab_case() {
        let older = r#"{"index": 0, "name": "vkCmdDispatch", "params": [64, 1, 1], "state": "in-flight",
            "scope": null, "pipeline": null, "secondaries_from": null}"#;
        let command: Command = serde_json::from_str(older).expect("a command of an older report");
        assert_eq!(command.class, CommandClass::Other);
        assert!(!command.is_action());
        let written = serde_json::to_value(Command {
            class: CommandClass::Sync,
            ..command
        })
        .expect("serializable");
        assert_eq!(written["class"], "sync");
    }

    #[test]
    fn unknown_versions_and_garbage_are_refused() {
        assert!(matches!(Report::from_json("{"), Err(ReadError::Json(_))));
        assert!(matches!(
            Report::from_json("{\"version\": 99}"),
            Err(ReadError::Version(99))
        ));
        assert!(matches!(
            Report::from_json("{\"kind\": \"hang\"}"),
            Err(ReadError::Json(_))
        ));
    }
}
