//! State kept per `VkCommandBuffer`: the log of what was recorded ([`crate::command_log`]), inside the app's
//! label hierarchy, and the marker units that tell how far the GPU got through it.
//!
//! A recording accumulates in [`Recording`]; `vkEndCommandBuffer` freezes it into an `Arc<RecordedLog>`
//! that each submission keeps, so a report can describe a submission even after the app re-records the
//! command buffer.
//!
//! The per-command path takes no lock and allocates nothing once a command buffer has been recorded once:
//! - the trampoline finds the state through this thread's last command buffer ([`with`]), without
//!   touching a reference count;
//! - the recording is the recording thread's alone: Vulkan requires the app to synchronize all use of a
//!   command buffer (and of its pool) externally, so only one thread at a time is ever inside its
//!   commands. A flag ([`RecordingCell`]) keeps a re-entrant call (a callback of a layer below recording
//!   into the same command buffer) or an app breaking that rule from reaching the log twice at once:
//!   such a command is left unlogged. Reports never read a recording in progress, only frozen logs,
//!   which no one changes;
//! - marker writes go through a copy of the device's marker writer taken when the recording began;
//! - the log's storage is reused: a recording takes the last one's storage when no submission holds it
//!   any more, or the storage a frozen log hands back when its last holder lets it go ([`RecordedLog`]'s
//!   drop), so a command buffer recorded every frame keeps one or two logs' worth of memory.

use ash::vk;
use blackbox_report::CommandClass;
use once_cell::sync::Lazy;
use parking_lot::{Mutex, RwLock};
use std::cell::{Cell, UnsafeCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::breadcrumbs::{Mark, MarkWords, MarkerWriter, StartedWrite};
use crate::command_log::{CommandId, Log};
use crate::config::Breadcrumbs;
use crate::device::Device;
use crate::fallback::Fallback;

pub use crate::command_log::{Command, LabelScope, MAX_LOGGED_COMMANDS, NONE};

/// Work that `VK_BLACKBOX_SKIP` never skips: what builds data later work reads from outside the recording's
/// commands (an acceleration structure), so that skipping cannot turn into invalid use.
const NEVER_SKIPPED: &[CommandId] = &[CommandId::cmd_build_acceleration_structures_khr];

/// A secondary command buffer run by `vkCmdExecuteCommands`.
#[derive(Clone)]
pub struct Executed {
    /// The secondary.
    pub command_buffer: Arc<CommandBuffer>,
    /// What it held when executed.
    pub log: Option<Arc<RecordedLog>>,
}

/// A log's storage between two recordings of a command buffer.
struct Spare {
    log: Log,
    marks: Option<MarkWords>,
}

/// Where a frozen log hands its storage back when its last holder lets it go.
type SpareSlot = Arc<Mutex<Option<Spare>>>;

/// A finished recording.
pub struct RecordedLog {
    /// What was recorded.
    pub log: Log,
    /// The marker words the recording writes, if it marks.
    pub marks: Option<MarkWords>,
    /// Number of marker units (the last unit's number).
    pub units: u32,
    /// The command buffer's spare slot.
    spare: SpareSlot,
}

impl RecordedLog {
    /// `(top, bottom)`: the last unit the GPU started and the last it finished, as far as its markers
    /// tell; `None` when the recording has no markers.
    pub fn progress(&self) -> Option<(u32, u32)> {
        self.marks.as_ref().map(|m| m.progress())
    }

    /// Commands in recording order.
    pub fn commands(&self) -> impl Iterator<Item = Command> + '_ {
        self.log.commands()
    }

    /// Label scopes, by index.
    pub fn scopes(&self) -> impl Iterator<Item = LabelScope<'_>> + '_ {
        self.log.scopes()
    }

    /// Label scope `index`, if there is one.
    pub fn scope(&self, index: u32) -> Option<LabelScope<'_>> {
        self.log.scope(index)
    }

    /// Secondaries executed, in order.
    pub fn executed(&self) -> &[Executed] {
        self.log.executed()
    }

    /// Commands recorded beyond [`MAX_LOGGED_COMMANDS`].
    pub fn unlogged(&self) -> u32 {
        self.log.unlogged()
    }
}

impl Drop for RecordedLog {
    /// The storage goes back to the command buffer for its next recording, unless it already has one.
    fn drop(&mut self) {
        if !self.log.has_storage() {
            return;
        }
        let mut log = std::mem::take(&mut self.log);
        // Cleared first: the secondaries it lets go may hand their own storage back.
        log.clear();
        if let Some(mut slot) = self.spare.try_lock() {
            if slot.is_none() {
                *slot = Some(Spare {
                    log,
                    marks: self.marks.take(),
                });
            }
        }
    }
}

/// Calls `f` for a submitted command buffer and every secondary it runs, with the recording each holds.
pub fn for_each_execution(
    cb: &Arc<CommandBuffer>,
    log: Option<&Arc<RecordedLog>>,
    f: &mut impl FnMut(&CommandBuffer, Option<&RecordedLog>),
) {
    f(cb, log.map(|l| &**l));
    for e in log.iter().flat_map(|l| l.executed()) {
        for_each_execution(&e.command_buffer, e.log.as_ref(), f);
    }
}

/// A recording in progress.
pub struct Recording {
    log: Log,
    /// Indices of the open label scopes, innermost last: changed only by `enter_scope` and `leave_scope`.
    open: Vec<u32>,
    /// The last of `open`, or [`NONE`]: what every command's entry takes, read as one word.
    innermost: u32,
    units: u32,
    /// The unit of the render pass being recorded, when the pass is one unit.
    pass_unit: Option<u32>,
    inside_render_pass: bool,
    /// Whether each action is a marker unit of its own where the recording is now: what `action` asks of
    /// every command, worked out when it can change (`set_inside_render_pass`, the recording's start).
    action_units: bool,
    /// Bound pipelines (graphics, compute, ray tracing) and their indices in the log.
    pipelines: [vk::Pipeline; 3],
    pipeline_indices: [u32; 3],
    /// Marker writes are possible in this recording.
    marking: bool,
    /// Its marker words, when it marks.
    marks: Option<MarkWords>,
    /// How it writes markers, when the device has them.
    writer: Option<MarkerWriter>,
    /// Its "started" marks' one write, where they share a word on the buffer-marker path (the common case
    /// without synchronization validation below): written with no bookkeeping per mark.
    started_write: Option<StartedWrite>,
    /// `VK_BLACKBOX_BREADCRUMBS` when the recording began.
    granularity: Breadcrumbs,
    /// Commands inside render passes can be units of their own (buffer markers, `command` granularity).
    units_inside_passes: bool,
    /// Units started since the last "finished" marker: the next synchronization point writes one.
    unfinished: bool,
    /// Whether each open label scope (as `open`) skips the work inside it (`VK_BLACKBOX_SKIP=label:`).
    open_skips: Vec<bool>,
    /// Open label scopes that skip the work inside them.
    skipping_labels: u32,
    /// Whether the pipeline bound at each bind point is skipped (`pipeline:`, `shader:`).
    pipeline_skipped: [bool; 3],
}

impl Default for Recording {
    fn default() -> Self {
        Self {
            log: Log::default(),
            open: Vec::new(),
            innermost: NONE,
            units: 0,
            pass_unit: None,
            inside_render_pass: false,
            action_units: false,
            pipelines: [vk::Pipeline::null(); 3],
            pipeline_indices: [NONE; 3],
            marking: false,
            marks: None,
            writer: None,
            started_write: None,
            granularity: Breadcrumbs::default(),
            units_inside_passes: false,
            unfinished: false,
            open_skips: Vec::new(),
            skipping_labels: 0,
            pipeline_skipped: [false; 3],
        }
    }
}

/// The recording of a command buffer, reached by one thread at a time (see the module's doc): a flag, set
/// and cleared with plain atomic stores (no read-modify-write, no waiting), turns a re-entrant access away
/// instead of letting it in. It does not arbitrate between threads: an app recording one command buffer
/// on two threads at once breaks Vulkan's external synchronization rule, and the flag's check and set are
/// not one atomic step.
struct RecordingCell {
    busy: AtomicBool,
    recording: UnsafeCell<Recording>,
}

// SAFETY: the recording is only reached through `with`, by the thread the app lets use the command buffer
// (Vulkan's external synchronization), and `busy` keeps overlapping accesses out.
unsafe impl Sync for RecordingCell {}

impl RecordingCell {
    fn new() -> Self {
        Self {
            busy: AtomicBool::new(false),
            recording: UnsafeCell::new(Recording::default()),
        }
    }

    /// Runs `f` on the recording; `None` (and `f` not run) while another access is inside.
    #[inline]
    fn with<R>(&self, f: impl FnOnce(&mut Recording) -> R) -> Option<R> {
        self.enter().map(|mut rec| f(&mut rec))
    }

    /// The recording, until the guard is dropped; `None` while another access is inside. The per-command
    /// path of an action takes it this way rather than through a closure, which the compiler left out of
    /// line (a call and a frame per command).
    #[inline(always)]
    fn enter(&self) -> Option<Entered<'_>> {
        if self.busy.load(Ordering::Acquire) {
            return None;
        }
        self.busy.store(true, Ordering::Relaxed);
        Some(Entered(self))
    }
}

/// A recording entered by [`RecordingCell::enter`]: the only access until it is dropped.
struct Entered<'a>(&'a RecordingCell);

impl Drop for Entered<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Release);
    }
}

impl std::ops::Deref for Entered<'_> {
    type Target = Recording;
    #[inline(always)]
    fn deref(&self) -> &Recording {
        // SAFETY: `busy` was clear and is set while this guard lives: this is the only access (see
        // `RecordingCell`'s doc).
        unsafe { &*self.0.recording.get() }
    }
}

impl std::ops::DerefMut for Entered<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Recording {
        // SAFETY: as in `deref`, and `&mut self` keeps this the only reference made from the guard.
        unsafe { &mut *self.0.recording.get() }
    }
}

/// What a recorded action leaves its trampoline to write once the command has gone down: the unit's
/// "started" mark on the shared buffer-marker path, or nothing. A top-of-pipe write right after the
/// command says what one right before it says (the GPU's front end reached the unit: it issues a command
/// and goes on to the next without waiting for it), and it costs less there: on the H200 a marker between
/// a render pass and the dispatch after it kept the two from overlapping, 0.04 of record-bench's frame for
/// 288 dispatches (no layer, the app writing the markers itself, 2026-12-02). The fill path and distinct
/// words write before the command, as [`Recording::mark`] does.
#[must_use]
pub struct AfterCall(u32);

impl AfterCall {
    /// Nothing to write.
    pub const NONE: AfterCall = AfterCall(0);

    /// Records the mark in `cb`'s recording, if there is one. (Units are numbered from 1; the mark is
    /// carried as its unit alone, so that a command with none, most of them, carries nothing across the
    /// driver's call.)
    #[inline(always)]
    pub fn write(self, cb: &CommandBuffer) {
        if self.0 == 0 {
            return;
        }
        if let Some(rec) = cb.recording.enter() {
            self.write_in(&rec, cb);
        }
    }

    /// [`AfterCall::write`] where `rec`, `cb`'s recording, is already entered.
    #[inline(always)]
    fn write_in(self, rec: &Recording, cb: &CommandBuffer) {
        if self.0 == 0 {
            return;
        }
        if let Some(started) = rec.started_write {
            // SAFETY: `cb` is recording (the mark was made by one of its commands, which has just gone
            // down); buffer markers go anywhere in a recording.
            unsafe { started.write(cb.handle, self.0) };
        }
    }
}

/// A command buffer the layer knows.
pub struct CommandBuffer {
    /// The app's handle.
    pub handle: vk::CommandBuffer,
    /// Its device.
    pub device: Arc<Device>,
    /// Its pool.
    pub pool: vk::CommandPool,
    /// Secondary (`VK_COMMAND_BUFFER_LEVEL_SECONDARY`).
    pub secondary: bool,
    /// A number of its own, which NV checkpoints carry.
    pub id: u32,
    /// `VK_BLACKBOX_SKIP` or `VK_BLACKBOX_SUSPECTS` is set: work commands take the path that checks them.
    screened: bool,
    /// Submissions holding it that are not known to be finished: its marker words are zeroed at a
    /// submission only when none is, so a pending execution's progress is never wiped.
    pending: AtomicU32,
    recording: RecordingCell,
    last: Mutex<Option<Arc<RecordedLog>>>,
    /// A log's storage for the next recording, handed back by a frozen log no one holds any more.
    spare: SpareSlot,
}

/// Which pipeline a command uses.
#[derive(Clone, Copy)]
pub enum BindPoint {
    /// Draws.
    Graphics,
    /// Dispatches.
    Compute,
    /// Trace rays.
    RayTracing,
    /// Copies, clears, barriers...
    None,
}

impl BindPoint {
    fn index(self) -> Option<usize> {
        match self {
            BindPoint::Graphics => Some(0),
            BindPoint::Compute => Some(1),
            BindPoint::RayTracing => Some(2),
            BindPoint::None => None,
        }
    }

    /// From a Vulkan bind point.
    pub fn from_vk(point: vk::PipelineBindPoint) -> Self {
        match point {
            vk::PipelineBindPoint::GRAPHICS => BindPoint::Graphics,
            vk::PipelineBindPoint::COMPUTE => BindPoint::Compute,
            vk::PipelineBindPoint::RAY_TRACING_KHR => BindPoint::RayTracing,
            _ => BindPoint::None,
        }
    }
}

/// Command buffers by handle. Freed handles can be reused by the driver, so entries are replaced on
/// allocation and removed on free.
static COMMAND_BUFFERS: Lazy<RwLock<HashMap<u64, Arc<CommandBuffer>>>> =
    Lazy::new(Default::default);
/// Bumped whenever the map lets go of a command buffer (a free, or a handle the driver handed out again),
/// before the state is dropped: a per-thread cache entry of an older generation is never used.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A thread's last command buffer: plain data, so the thread-local needs no destructor, no registration
/// check and no borrow flag on the per-command path. `state` does not own the command buffer; it is used
/// only while `generation` is the current one (the map still holds it then) and for `handle` (which the
/// app, by Vulkan's rule of external synchronization, cannot free during one of its own commands).
#[derive(Clone, Copy)]
struct Cached {
    handle: u64,
    generation: u64,
    state: *const CommandBuffer,
}

thread_local! {
    /// The command buffer this thread recorded last: apps record one command buffer per thread at a time,
    /// so this spares the shared map on almost every command.
    static LAST_USED: Cell<Cached> = const {
        Cell::new(Cached { handle: 0, generation: u64::MAX, state: std::ptr::null() })
    };
}

/// Runs `f` with the state of `handle`, if the layer knows it: the per-command lookup, through this
/// thread's cache of its last command buffer (the map and its lock only on a miss). No reference count
/// changes. `f` is called from one place, so that it is inlined into the trampoline: a second call site
/// made the compiler keep it out of line, a call and a frame more per command.
#[inline]
pub fn with<R>(handle: vk::CommandBuffer, f: impl FnOnce(&CommandBuffer) -> R) -> Option<R> {
    use vk::Handle;
    let raw = handle.as_raw();
    let generation = GENERATION.load(Ordering::Acquire);
    let cached = LAST_USED.try_with(Cell::get).ok();
    let state = match cached {
        Some(c) if c.handle == raw && c.generation == generation => c.state,
        _ => lookup_and_cache(raw, generation)?,
    };
    // SAFETY: `state` is the map's entry for `raw` at `generation`, still current, so the map still holds
    // it; and the app cannot free `handle` while it calls a command on it (see `Cached`).
    Some(f(unsafe { &*state }))
}

/// The state of `handle`, if the layer knows it, as a reference of its own.
pub fn lookup(handle: vk::CommandBuffer) -> Option<Arc<CommandBuffer>> {
    use vk::Handle;
    COMMAND_BUFFERS.read().get(&handle.as_raw()).cloned()
}

/// The map's entry for `raw`, which becomes this thread's cached one.
#[cold]
#[inline(never)]
fn lookup_and_cache(raw: u64, generation: u64) -> Option<*const CommandBuffer> {
    let state = Arc::as_ptr(COMMAND_BUFFERS.read().get(&raw)?);
    let _ = LAST_USED.try_with(|last| {
        last.set(Cached {
            handle: raw,
            generation,
            state,
        })
    });
    Some(state)
}

/// The handle of the command buffer with this [`CommandBuffer::id`], if the layer still knows it (for
/// reports: it looks at every command buffer).
pub fn handle_of(id: u32) -> Option<vk::CommandBuffer> {
    let map = COMMAND_BUFFERS.try_read_for(std::time::Duration::from_millis(200))?;
    map.values().find(|cb| cb.id == id).map(|cb| cb.handle)
}

/// Records newly allocated command buffers.
pub fn register(
    device: &Arc<Device>,
    pool: vk::CommandPool,
    secondary: bool,
    handles: &[vk::CommandBuffer],
) {
    use vk::Handle;
    static IDS: AtomicU32 = AtomicU32::new(1);
    let config = crate::config();
    let screened = !config.skip.is_empty() || config.suspects.is_some();
    let mut map = COMMAND_BUFFERS.write();
    for &handle in handles {
        let cb = Arc::new(CommandBuffer {
            handle,
            device: device.clone(),
            pool,
            secondary,
            id: IDS.fetch_add(1, Ordering::Relaxed),
            screened,
            pending: AtomicU32::new(0),
            recording: RecordingCell::new(),
            last: Mutex::new(None),
            spare: Arc::new(Mutex::new(None)),
        });
        if let Some(replaced) = map.insert(handle.as_raw(), cb) {
            // A handle the driver handed out again before the layer saw it freed: no cache may use the
            // old state once it is dropped.
            GENERATION.fetch_add(1, Ordering::AcqRel);
            drop(replaced);
        }
    }
}

/// Forgets freed command buffers.
pub fn unregister(device: &Device, handles: impl IntoIterator<Item = vk::CommandBuffer>) {
    use vk::Handle;
    let _ = device;
    let mut map = COMMAND_BUFFERS.write();
    let removed: Vec<Arc<CommandBuffer>> = handles
        .into_iter()
        .filter_map(|handle| map.remove(&handle.as_raw()))
        .collect();
    // Before the states are dropped: no cache uses them after this (see `Cached`).
    GENERATION.fetch_add(1, Ordering::AcqRel);
    drop(map);
    drop(removed);
}

/// Forgets every command buffer of `pool` (or of the device, for `None`).
pub fn unregister_pool(device: &Device, pool: Option<vk::CommandPool>) {
    let handles: Vec<vk::CommandBuffer> = COMMAND_BUFFERS
        .read()
        .values()
        .filter(|cb| {
            std::ptr::eq(Arc::as_ptr(&cb.device), device) && pool.is_none_or(|p| cb.pool == p)
        })
        .map(|cb| cb.handle)
        .collect();
    unregister(device, handles);
}

/// Every command buffer of a pool, for `vkResetCommandPool`.
pub fn of_pool(pool: vk::CommandPool) -> Vec<Arc<CommandBuffer>> {
    COMMAND_BUFFERS
        .read()
        .values()
        .filter(|cb| cb.pool == pool)
        .cloned()
        .collect()
}

impl CommandBuffer {
    /// The last finished recording.
    pub fn last_log(&self) -> Option<Arc<RecordedLog>> {
        self.last.lock().clone()
    }

    /// Storage for a new recording: the last recording's when no submission holds it any more, else what a
    /// frozen log handed back, else new storage sized like the last recording.
    fn storage_for_recording(&self) -> Spare {
        let last = self.last.lock().take();
        let sized_like = match last.map(Arc::try_unwrap) {
            Some(Ok(mut log)) => {
                let mut storage = std::mem::take(&mut log.log);
                storage.clear();
                return Spare {
                    log: storage,
                    marks: log.marks.take(),
                };
            }
            Some(Err(shared)) => Some(shared),
            None => None,
        };
        if let Some(spare) = self.spare.lock().take() {
            return spare;
        }
        Spare {
            log: sized_like.map_or_else(Log::default, |l| Log::sized_like(&l.log)),
            marks: None,
        }
    }

    /// `vkBeginCommandBuffer`, before the call down.
    fn start_recording(&self, continues_render_pass: bool) {
        let storage = self.recording.with(|rec| {
            rec.restart();
            // A recording begun again without an end (or a reset) keeps its own storage.
            (std::mem::take(&mut rec.log), rec.marks.take())
        });
        let Some((log, marks)) = storage else { return };
        let Spare { mut log, marks } = if log.has_storage() {
            Spare { log, marks }
        } else {
            self.storage_for_recording()
        };
        log.clear();
        let markers = self.device.markers.read();
        self.recording.with(|rec| {
            rec.log = log;
            if let Some(m) = markers.as_ref() {
                rec.granularity = m.granularity;
                rec.marking =
                    m.granularity >= Breadcrumbs::Pass && m.can_mark(continues_render_pass);
                rec.units_inside_passes = m.granularity == Breadcrumbs::Command && m.can_mark(true);
                let writer = m.writer(&self.device.next);
                rec.writer = Some(writer);
                if rec.marking {
                    let mut words = m.words(marks);
                    rec.started_write = words
                        .shared_started_word()
                        .and_then(|word| writer.started(word));
                    rec.marks = Some(words);
                }
            }
            rec.set_inside_render_pass(continues_render_pass);
        });
    }

    /// A submission that holds `log` (this command buffer's recording) goes down: its marker words are
    /// zeroed first unless an earlier execution is still pending.
    pub fn submitted(&self, log: Option<&RecordedLog>) {
        if self.pending.fetch_add(1, Ordering::AcqRel) == 0 {
            if let Some(marks) = log.and_then(|l| l.marks.as_ref()) {
                marks.zero();
            }
        }
    }

    /// A submission that held it is known finished (or will never run).
    pub fn retired(&self) {
        let _ = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// `vkEndCommandBuffer`, before the call down: the last units get their "finished" marker, and the
    /// recording is frozen.
    fn finish_recording(&self) {
        self.finish_units();
        let frozen = self.recording.with(|rec| {
            let units = rec.units;
            rec.restart();
            RecordedLog {
                log: std::mem::take(&mut rec.log),
                marks: rec.marks.take(),
                units,
                spare: self.spare.clone(),
            }
        });
        if let Some(frozen) = frozen {
            *self.last.lock() = Some(Arc::new(frozen));
        }
    }

    /// `vkResetCommandBuffer` / pool reset: the recording is gone; its storage stays for the next one.
    fn forget_recording(&self) {
        let log = self.recording.with(|rec| {
            rec.restart();
            std::mem::take(&mut rec.log)
        });
        // Cleared outside the recording (the secondaries it lets go may hand their own storage back), then
        // put back for the next recording.
        if let Some(mut log) = log {
            log.clear();
            self.recording.with(|rec| rec.log = log);
        }
        let last = self.last.lock().take();
        // The last recording's storage too, when no submission holds it (else its drop hands it back).
        if let Some(Ok(mut log)) = last.map(Arc::try_unwrap) {
            let mut storage = std::mem::take(&mut log.log);
            storage.clear();
            let mut spare = self.spare.lock();
            if spare.is_none() {
                *spare = Some(Spare {
                    log: storage,
                    marks: log.marks.take(),
                });
            }
        }
    }

    /// Logs a command that does work (draw, dispatch, trace rays, copy, clear...), with its marker, and
    /// makes `call` (the call down) in between, as the marker path needs it (see [`AfterCall`]). `None`
    /// when `VK_BLACKBOX_SKIP` selects the command: it is logged as skipped, and `call` is not made.
    ///
    /// The parameters come by value: only the screened path, out of line, takes a copy's address, so on
    /// the common path they stay in registers.
    #[inline]
    pub fn work<const N: usize, R>(
        &self,
        command: CommandId,
        bind: BindPoint,
        params: [u64; N],
        call: impl FnOnce() -> R,
    ) -> Option<R> {
        if self.screened {
            let copy = params;
            let after = self.screened_work(command, bind, &copy)?;
            let result = call();
            after.write(self);
            return Some(result);
        }
        // The recording stays entered across the call down, so the "started" mark after it takes no
        // second entry. (A command recorded into this command buffer from below, during the call, would
        // find it busy and go down unlogged, as it would during any of the layer's own writes.)
        Some(match self.recording.enter() {
            Some(mut rec) => {
                let after = rec.action(self, command, bind, &params);
                let result = call();
                after.write_in(&rec, self);
                result
            }
            None => call(),
        })
    }

    /// `work` when `VK_BLACKBOX_SKIP` or `VK_BLACKBOX_SUSPECTS` is set.
    #[inline(never)]
    fn screened_work(
        &self,
        command: CommandId,
        bind: BindPoint,
        params: &[u64],
    ) -> Option<AfterCall> {
        if let Some(file) = &crate::config().suspects {
            self.note_suspects(file, command, bind);
        }
        let skip = &crate::config().skip;
        if !skip.is_empty() && !NEVER_SKIPPED.contains(&command) {
            let skipped = self.recording.with(|rec| {
                let index = rec.log.len();
                let innermost = rec
                    .open
                    .last()
                    .is_some_and(|&i| skip.innermost_label(&rec.log.scope_name(i)));
                // Asked first, always: a selector is counted wherever it matches (`Skip::unmatched`).
                let by_command = skip.command(index);
                let skipped = rec.skipping_labels > 0
                    || innermost
                    || bind.index().is_some_and(|i| rec.pipeline_skipped[i])
                    || by_command;
                if skipped {
                    rec.push(command, CommandClass::Action, bind, params, NONE, true);
                }
                skipped.then_some(index)
            });
            if let Some(Some(index)) = skipped {
                debug!(
                    "VK_BLACKBOX_SKIP: [{index}] {} of command buffer {:#x} is not passed to the driver",
                    command.name(),
                    vk::Handle::as_raw(self.handle)
                );
                return None;
            }
        }
        Some(self.action(command, bind, params))
    }

    /// `VK_BLACKBOX_SUSPECTS`: the work about to be recorded, with its labels and pipeline, for `blackbox
    /// bisect`.
    fn note_suspects(&self, file: &std::path::Path, command: CommandId, bind: BindPoint) {
        let Some((labels, index, pipeline)) = self.recording.with(|rec| {
            let labels: Vec<String> = rec
                .open
                .iter()
                .map(|&i| rec.log.scope_name(i).into_owned())
                .collect();
            let pipeline = bind.index().map(|i| rec.pipelines[i]);
            (labels, rec.log.len(), pipeline)
        }) else {
            return;
        };
        let record = pipeline
            .filter(|p| *p != vk::Pipeline::null())
            .and_then(|p| Some((p, self.device.shaders.pipeline(p)?)));
        let (pipeline, shaders) = match &record {
            None => (None, Vec::new()),
            Some((handle, record)) => {
                let named = self.device.name_of(vk::Handle::as_raw(*handle));
                let described = record.describe();
                let shown = named
                    .as_ref()
                    .map_or_else(|| described.clone(), |n| format!("\"{n}\""));
                let shaders = record
                    .stages
                    .iter()
                    .map(|s| (s.shader.id.clone(), s.shader.sources().to_vec()))
                    .collect();
                (Some((named.unwrap_or(described), shown)), shaders)
            }
        };
        crate::suspects::note(
            file,
            crate::suspects::Work {
                labels: labels.iter().map(String::as_str).collect(),
                command: format!("[{index}] {}", command.name()),
                index,
                pipeline,
                shaders,
            },
        );
    }

    /// Logs an action command (draw, dispatch, copy, clear...), with its "started" marker as the
    /// granularity and the render-pass state allow; the caller calls down, then writes what this returns.
    #[inline(always)]
    pub fn action(&self, command: CommandId, bind: BindPoint, params: &[u64]) -> AfterCall {
        match self.recording.enter() {
            Some(mut rec) => rec.action(self, command, bind, params),
            None => AfterCall::NONE,
        }
    }

    /// Writes the "finished" marker for every unit started so far, if one is owed and can be written here.
    /// It goes where the app synchronizes anyway (before a barrier or event wait, at the end of the command
    /// buffer): a bottom-of-pipe write waits for all earlier work, so one after every command would
    /// serialize the GPU (25x the frame time of 10,000 dispatches on the H200); placed at the app's own
    /// synchronization points it costs nothing more. Units between two such points show as started, not
    /// finished, until the GPU passes the next one.
    pub fn finish_units(&self) {
        self.recording.with(|rec| {
            let can = rec
                .writer
                .is_some_and(|w| w.can_mark(rec.inside_render_pass));
            if !(rec.unfinished && rec.marking && can) {
                return;
            }
            rec.unfinished = false;
            // SAFETY: recording, and the marker path allows a write in the current render-pass state.
            unsafe { rec.mark(self, Mark::Finished(rec.units)) };
        });
    }

    /// Logs a command that does no work of its own (query, timestamp, event set or reset, subpass
    /// change...); the caller calls down after.
    #[inline]
    pub fn state(&self, command: CommandId, params: &[u64]) {
        self.without_work(command, CommandClass::State, params);
    }

    /// Logs a synchronization command (pipeline barrier, event wait), with the "finished" marker owed for
    /// the units before it written first (see `finish_units`); the caller calls down after.
    pub fn sync(&self, command: CommandId, params: &[u64]) {
        self.finish_units();
        self.without_work(command, CommandClass::Sync, params);
    }

    #[inline]
    fn without_work(&self, command: CommandId, class: CommandClass, params: &[u64]) {
        self.recording.with(|rec| {
            let unit = rec.pass_unit.unwrap_or(NONE);
            rec.push(command, class, BindPoint::None, params, unit, false);
        });
    }

    /// `vkCmdBindPipeline`: the pipeline later commands use, and whether `VK_BLACKBOX_SKIP` skips their work.
    fn note_pipeline(&self, point: vk::PipelineBindPoint, pipeline: vk::Pipeline) {
        let Some(i) = BindPoint::from_vk(point).index() else {
            return;
        };
        let skip = &crate::config().skip;
        let skipped = skip.by_pipeline() && {
            let name = self.device.name_of(vk::Handle::as_raw(pipeline));
            let record = self.device.shaders.pipeline(pipeline);
            let stages = record.as_ref().map_or(&[][..], |r| &r.stages[..]);
            let names: Vec<Vec<String>> = stages
                .iter()
                .map(|s| {
                    let mut names = s.shader.sources().to_vec();
                    names.push(s.entry.clone());
                    names
                })
                .collect();
            let described = record.as_ref().map(|r| r.describe()).unwrap_or_default();
            skip.pipeline(
                name.as_deref(),
                &described,
                stages
                    .iter()
                    .zip(&names)
                    .map(|(s, n)| (s.shader.id.as_str(), &n[..])),
            )
        };
        self.recording.with(|rec| {
            if rec.pipelines[i] != pipeline || rec.pipeline_indices[i] == NONE {
                rec.pipelines[i] = pipeline;
                rec.pipeline_indices[i] = rec.log.pipeline_index(pipeline);
            }
            rec.pipeline_skipped[i] = skipped;
        });
    }

    /// A render pass begins (classic or dynamic). With markers that cannot go inside it, the pass is one
    /// unit, marked before it begins. The begin is logged as an action: its load operations are work, and
    /// on that path it stands for the whole pass.
    fn enter_render_pass(&self, command: CommandId, params: &[u64], call: impl FnOnce()) {
        self.recording.with(|rec| {
            // Where commands inside can be units, the pass is the scope they share; otherwise it is one
            // unit.
            let pass_is_unit =
                rec.marking && rec.granularity >= Breadcrumbs::Pass && !rec.units_inside_passes;
            let unit = if pass_is_unit {
                rec.units += 1;
                rec.unfinished = true;
                rec.pass_unit = Some(rec.units);
                rec.units
            } else {
                NONE
            };
            rec.push(
                command,
                CommandClass::Action,
                BindPoint::None,
                params,
                unit,
                false,
            );
            if pass_is_unit {
                // SAFETY: recording, outside a render pass (it begins after this).
                unsafe { rec.mark(self, Mark::Started(unit)) };
            }
        });
        call();
        self.recording.with(|rec| rec.set_inside_render_pass(true));
    }

    /// A render pass ends (logged as a state command, like a subpass change). Its "finished" marker waits
    /// for the next synchronization point (see `finish_units`).
    fn leave_render_pass(&self, command: CommandId, call: impl FnOnce()) {
        self.recording.with(|rec| {
            let unit = rec.pass_unit.take().unwrap_or(NONE);
            rec.push(
                command,
                CommandClass::State,
                BindPoint::None,
                &[],
                unit,
                false,
            );
            rec.set_inside_render_pass(false);
        });
        call();
    }

    /// `vkCmdBeginDebugUtilsLabelEXT` (or an inserted label when `inserted`).
    fn open_label(&self, text: &[u8], inserted: bool) {
        self.recording.with(|rec| {
            let index = rec.log.open_scope(text, rec.innermost, inserted);
            if !inserted {
                let skip = &crate::config().skip;
                let skips = !skip.is_empty() && skip.label(&rec.log.scope_name(index));
                rec.enter_scope(index);
                rec.open_skips.push(skips);
                rec.skipping_labels += u32::from(skips);
            }
        });
    }

    /// `vkCmdEndDebugUtilsLabelEXT`. A label begun in an earlier command buffer of the submission closes
    /// nothing here (labels are shown per command buffer).
    fn close_label(&self) {
        self.recording.with(|rec| {
            if let Some(index) = rec.leave_scope() {
                rec.log.close_scope(index);
            }
            if rec.open_skips.pop() == Some(true) {
                rec.skipping_labels -= 1;
            }
        });
    }

    /// `vkCmdExecuteCommands`: an action whose work is the secondaries' (`count` of them, as the app
    /// passed them; those the layer knows are kept with what each holds).
    fn run_secondaries(
        &self,
        count: u64,
        secondaries: impl Iterator<Item = Executed>,
        call: impl FnOnce(),
    ) {
        self.recording.with(|rec| rec.log.add_executed(secondaries));
        let after = self.action(CommandId::cmd_execute_commands, BindPoint::None, &[count]);
        call();
        after.write(self);
    }
}

/// The hooks of recording: each keeps the log (and markers) around the call down to `next`.
///
/// # Safety (every method)
/// The app's arguments, valid as the command's rules require; `next` is the next layer's command.
impl CommandBuffer {
    /// `vkBeginCommandBuffer`: a new recording.
    pub(crate) unsafe fn begin(
        &self,
        next: vk::PFN_vkBeginCommandBuffer,
        info: *const vk::CommandBufferBeginInfo,
    ) -> vk::Result {
        crate::contained("starting a recording", || {
            // SAFETY: the app's valid begin info.
            let flags = unsafe { (*info).flags };
            let continues =
                self.secondary && flags.contains(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE);
            self.start_recording(continues);
        });
        forward!(next, self.handle, info)
    }

    /// `vkEndCommandBuffer`: the recording is frozen for the submissions that will hold it.
    pub(crate) unsafe fn end(&self, next: vk::PFN_vkEndCommandBuffer) -> vk::Result {
        crate::contained("finishing a recording", || self.finish_recording());
        forward!(next, self.handle)
    }

    /// `vkResetCommandBuffer`.
    pub(crate) unsafe fn reset(
        &self,
        next: vk::PFN_vkResetCommandBuffer,
        flags: vk::CommandBufferResetFlags,
    ) -> vk::Result {
        crate::contained("resetting a recording", || self.forget_recording());
        forward!(next, self.handle, flags)
    }

    /// `vkCmdBindPipeline`.
    pub(crate) unsafe fn bind_pipeline(
        &self,
        next: vk::PFN_vkCmdBindPipeline,
        point: vk::PipelineBindPoint,
        pipeline: vk::Pipeline,
    ) {
        self.note_pipeline(point, pipeline);
        forward!(next, self.handle, point, pipeline)
    }

    /// `vkCmdBeginRenderPass`.
    pub(crate) unsafe fn begin_render_pass(
        &self,
        next: vk::PFN_vkCmdBeginRenderPass,
        info: *const vk::RenderPassBeginInfo,
        contents: vk::SubpassContents,
    ) {
        // SAFETY: the app's valid begin info.
        let params = unsafe { render_pass_params(info) };
        self.enter_render_pass(CommandId::cmd_begin_render_pass, &params, || {
            forward!(next, self.handle, info, contents)
        })
    }

    /// `vkCmdBeginRenderPass2`.
    pub(crate) unsafe fn begin_render_pass2(
        &self,
        next: vk::PFN_vkCmdBeginRenderPass2,
        info: *const vk::RenderPassBeginInfo,
        subpass: *const vk::SubpassBeginInfo,
    ) {
        // SAFETY: the app's valid begin info.
        let params = unsafe { render_pass_params(info) };
        self.enter_render_pass(CommandId::cmd_begin_render_pass2, &params, || {
            forward!(next, self.handle, info, subpass)
        })
    }

    /// `vkCmdBeginRendering`.
    pub(crate) unsafe fn begin_rendering(
        &self,
        next: vk::PFN_vkCmdBeginRendering,
        info: *const vk::RenderingInfo,
    ) {
        // SAFETY: the app's valid rendering info.
        let i = unsafe { &*info };
        let params = [
            u64::from(i.render_area.extent.width),
            u64::from(i.render_area.extent.height),
            u64::from(i.color_attachment_count),
        ];
        self.enter_render_pass(CommandId::cmd_begin_rendering, &params, || {
            forward!(next, self.handle, info)
        })
    }

    /// `vkCmdEndRenderPass`.
    pub(crate) unsafe fn end_render_pass(&self, next: vk::PFN_vkCmdEndRenderPass) {
        self.leave_render_pass(CommandId::cmd_end_render_pass, || {
            forward!(next, self.handle)
        })
    }

    /// `vkCmdEndRenderPass2`.
    pub(crate) unsafe fn end_render_pass2(
        &self,
        next: vk::PFN_vkCmdEndRenderPass2,
        end: *const vk::SubpassEndInfo,
    ) {
        self.leave_render_pass(CommandId::cmd_end_render_pass2, || {
            forward!(next, self.handle, end)
        })
    }

    /// `vkCmdEndRendering`.
    pub(crate) unsafe fn end_rendering(&self, next: vk::PFN_vkCmdEndRendering) {
        self.leave_render_pass(CommandId::cmd_end_rendering, || forward!(next, self.handle))
    }

    /// `vkCmdBeginDebugUtilsLabelEXT`.
    pub(crate) unsafe fn begin_label(
        &self,
        next: vk::PFN_vkCmdBeginDebugUtilsLabelEXT,
        label: *const vk::DebugUtilsLabelEXT,
    ) {
        // SAFETY: the app's valid label.
        self.open_label(unsafe { label_text(label) }, false);
        forward!(next, self.handle, label)
    }

    /// `vkCmdInsertDebugUtilsLabelEXT`.
    pub(crate) unsafe fn insert_label(
        &self,
        next: vk::PFN_vkCmdInsertDebugUtilsLabelEXT,
        label: *const vk::DebugUtilsLabelEXT,
    ) {
        // SAFETY: the app's valid label.
        self.open_label(unsafe { label_text(label) }, true);
        forward!(next, self.handle, label)
    }

    /// `vkCmdEndDebugUtilsLabelEXT`.
    pub(crate) unsafe fn end_label(&self, next: vk::PFN_vkCmdEndDebugUtilsLabelEXT) {
        self.close_label();
        forward!(next, self.handle)
    }

    /// `vkCmdExecuteCommands`: an action whose work is the secondaries'.
    pub(crate) unsafe fn execute_commands(
        &self,
        next: vk::PFN_vkCmdExecuteCommands,
        count: u32,
        secondaries: *const vk::CommandBuffer,
    ) {
        let list = if secondaries.is_null() {
            &[][..]
        } else {
            // SAFETY: the app's array of `count` handles.
            unsafe { std::slice::from_raw_parts(secondaries, count as usize) }
        };
        let executed = list.iter().filter_map(|&h| lookup(h)).map(|s| Executed {
            log: s.last_log(),
            command_buffer: s,
        });
        self.run_secondaries(u64::from(count), executed, || {
            forward!(next, self.handle, count, secondaries)
        })
    }
}

/// `(render pass, framebuffer)` of a begin info, as the log keeps them.
///
/// # Safety
/// `info` is the app's valid begin info.
unsafe fn render_pass_params(info: *const vk::RenderPassBeginInfo) -> [u64; 2] {
    // SAFETY: forwarded to the caller.
    let info = unsafe { &*info };
    [
        vk::Handle::as_raw(info.render_pass),
        vk::Handle::as_raw(info.framebuffer),
    ]
}

/// The text of a debug label.
///
/// # Safety
/// `label` is the app's valid label struct with a NUL-terminated name (or null).
unsafe fn label_text<'a>(label: *const vk::DebugUtilsLabelEXT) -> &'a [u8] {
    // SAFETY: null or the app's valid label (the caller's contract), whose name is null or NUL-terminated
    // and outlives the command.
    unsafe {
        match label.as_ref() {
            Some(l) if !l.p_label_name.is_null() => {
                std::ffi::CStr::from_ptr(l.p_label_name).to_bytes()
            }
            _ => &[],
        }
    }
}

/// The hooks of command pools and buffers' lifetime.
///
/// # Safety (every method)
/// The app's arguments, valid as the command's rules require.
impl Device {
    /// `vkAllocateCommandBuffers`: calls down and makes the new command buffers known.
    pub(crate) unsafe fn allocate_command_buffers(
        self: &Arc<Self>,
        device: vk::Device,
        info: *const vk::CommandBufferAllocateInfo,
        out: *mut vk::CommandBuffer,
    ) -> vk::Result {
        let Some(next) = self.next.allocate_command_buffers else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, info, out);
        if result == vk::Result::SUCCESS {
            crate::contained("tracking command buffers", || {
                // SAFETY: the app's valid allocate info; `out` holds that many handles now.
                let (info, handles) = unsafe {
                    (
                        &*info,
                        std::slice::from_raw_parts(out, (*info).command_buffer_count as usize),
                    )
                };
                register(
                    self,
                    info.command_pool,
                    info.level == vk::CommandBufferLevel::SECONDARY,
                    handles,
                );
            });
        }
        result
    }

    /// `vkFreeCommandBuffers`: forgets them, then calls down.
    pub(crate) unsafe fn free_command_buffers(
        self: &Arc<Self>,
        device: vk::Device,
        pool: vk::CommandPool,
        count: u32,
        handles: *const vk::CommandBuffer,
    ) {
        if !handles.is_null() {
            // SAFETY: the app's array of `count` handles.
            let list = unsafe { std::slice::from_raw_parts(handles, count as usize) };
            crate::contained("forgetting command buffers", || {
                unregister(self, list.iter().copied())
            });
        }
        if let Some(next) = self.next.free_command_buffers {
            forward!(next, device, pool, count, handles);
        }
    }

    /// `vkDestroyCommandPool`: forgets its command buffers, then calls down.
    pub(crate) unsafe fn destroy_command_pool(
        self: &Arc<Self>,
        device: vk::Device,
        pool: vk::CommandPool,
        allocator: *const vk::AllocationCallbacks,
    ) {
        if pool != vk::CommandPool::null() {
            crate::contained("forgetting a command pool", || {
                unregister_pool(self, Some(pool))
            });
        }
        if let Some(next) = self.next.destroy_command_pool {
            forward!(next, device, pool, allocator);
        }
    }

    /// `vkResetCommandPool`: its command buffers' recordings are gone.
    pub(crate) unsafe fn reset_command_pool(
        self: &Arc<Self>,
        device: vk::Device,
        pool: vk::CommandPool,
        flags: vk::CommandPoolResetFlags,
    ) -> vk::Result {
        let Some(next) = self.next.reset_command_pool else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, pool, flags);
        if result == vk::Result::SUCCESS {
            crate::contained("resetting a command pool", || {
                of_pool(pool).iter().for_each(|cb| cb.forget_recording())
            });
        }
        result
    }
}

impl Recording {
    /// No recording in progress: every field as new, but the log, the marker words and the lists of open
    /// scopes keep their storage (the log is not cleared here; callers take it or clear it).
    fn restart(&mut self) {
        let log = std::mem::take(&mut self.log);
        let marks = self.marks.take();
        let mut open = std::mem::take(&mut self.open);
        let mut open_skips = std::mem::take(&mut self.open_skips);
        open.clear();
        open_skips.clear();
        *self = Recording {
            log,
            marks,
            open,
            open_skips,
            ..Recording::default()
        };
    }

    /// `CommandBuffer::action` on the recording: the entry, and the unit's "started" marker where it is
    /// one. Always inlined, for the reason `RecordingCell::with` is.
    #[inline(always)]
    fn action(
        &mut self,
        cb: &CommandBuffer,
        command: CommandId,
        bind: BindPoint,
        params: &[u64],
    ) -> AfterCall {
        let standalone_unit = self.action_units;
        let unit = if standalone_unit {
            self.units += 1;
            self.unfinished = true;
            self.units
        } else {
            self.pass_unit.unwrap_or(NONE)
        };
        self.push(command, CommandClass::Action, bind, params, unit, false);
        if !standalone_unit {
            return AfterCall::NONE;
        }
        match self.started_write {
            // Written after the command: see `AfterCall`.
            Some(_) => AfterCall(unit),
            None => {
                // SAFETY: recording, and the unit was made only where the render-pass state allows a
                // marker.
                unsafe { self.mark(cb, Mark::Started(unit)) };
                AfterCall::NONE
            }
        }
    }

    /// Appends a command to the log, in the innermost open label scope, with the pipeline bound at `bind`.
    #[inline(always)]
    fn push(
        &mut self,
        command: CommandId,
        class: CommandClass,
        bind: BindPoint,
        params: &[u64],
        unit: u32,
        skipped: bool,
    ) {
        let pipeline = bind.index().map_or(NONE, |i| self.pipeline_indices[i]);
        self.log.push(
            command,
            class,
            params,
            self.innermost,
            unit,
            pipeline,
            skipped,
        );
    }

    /// Enters or leaves a render pass, and works out `action_units` for where the recording now is.
    fn set_inside_render_pass(&mut self, inside: bool) {
        self.inside_render_pass = inside;
        self.action_units = self.marking
            && if inside {
                self.units_inside_passes
            } else {
                self.granularity >= Breadcrumbs::Pass
            };
    }

    /// Opens label scope `index` inside the innermost one.
    fn enter_scope(&mut self, index: u32) {
        self.open.push(index);
        self.innermost = index;
    }

    /// Closes the innermost label scope, if one is open; its index.
    fn leave_scope(&mut self) -> Option<u32> {
        let index = self.open.pop();
        self.innermost = self.open.last().copied().unwrap_or(NONE);
        index
    }

    /// Records the marker write of `mark` into the next word of the recording, if it has one. (A layer
    /// below would find the recording busy if it recorded into this command buffer from inside the write:
    /// its command would go unlogged, nothing worse.)
    ///
    /// # Safety
    /// `cb` is this recording's command buffer, recording, in a render-pass state where the marker path
    /// allows a write.
    #[inline(always)]
    unsafe fn mark(&mut self, cb: &CommandBuffer, mark: Mark) {
        let (Some(writer), Some(marks)) = (self.writer, self.marks.as_mut()) else {
            return;
        };
        if let Some(word) = marks.next(mark) {
            // SAFETY: forwarded to the caller.
            unsafe { writer.write(cb.handle, word, mark, cb.id) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_bounded_and_counts_what_it_leaves_out() {
        let mut rec = Recording::default();
        for _ in 0..MAX_LOGGED_COMMANDS + 5 {
            rec.push(
                CommandId::cmd_draw,
                CommandClass::Action,
                BindPoint::Graphics,
                &[3, 1, 0, 0],
                NONE,
                false,
            );
        }
        assert_eq!(rec.log.len() as usize, MAX_LOGGED_COMMANDS);
        assert_eq!(rec.log.unlogged(), 5);
        let first = rec.log.commands().next().unwrap();
        assert_eq!((first.name, first.param_count), ("vkCmdDraw", 4));
        assert_eq!(first.pipeline, vk::Pipeline::null());
    }

    #[test]
    fn commands_take_the_innermost_scope_and_the_bound_pipeline() {
        let mut rec = Recording::default();
        let pipeline: vk::Pipeline = vk::Handle::from_raw(0x77);
        rec.pipelines[1] = pipeline;
        rec.pipeline_indices[1] = rec.log.pipeline_index(pipeline);
        let outer = rec.log.open_scope(b"outer", NONE, false);
        rec.enter_scope(outer);
        rec.push(
            CommandId::cmd_dispatch,
            CommandClass::Action,
            BindPoint::Compute,
            &[1, 1, 1],
            1,
            false,
        );
        rec.push(
            CommandId::cmd_draw,
            CommandClass::Action,
            BindPoint::Graphics,
            &[3, 1, 0, 0],
            2,
            true,
        );
        let all: Vec<Command> = rec.log.commands().collect();
        assert_eq!(
            (all[0].scope, all[0].unit, all[0].pipeline),
            (outer, 1, pipeline)
        );
        assert_eq!(
            all[1].pipeline,
            vk::Pipeline::null(),
            "no graphics pipeline bound"
        );
        assert!(all[1].skipped && !all[0].skipped);
    }
}
