//! State kept per `VkCommandBuffer`: a compact log of what was recorded, inside the app's label hierarchy,
//! and the marker units that tell how far the GPU got through it.
//!
//! A recording accumulates in [`Recording`]; `vkEndCommandBuffer` freezes it into an `Arc<RecordedLog>`
//! that each submission keeps, so a report can describe a submission even after the app re-records the
//! command buffer. The steady state allocates once per recording (the log's vector, sized from the last
//! one), not per command.

use ash::vk;
use blackbox_report::CommandClass;
use once_cell::sync::Lazy;
use parking_lot::{Mutex, RwLock};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use crate::breadcrumbs::{Mark, MarkWords};
use crate::config::Breadcrumbs;
use crate::device::Device;
use crate::fallback::Fallback;

/// "No label scope" / "no unit".
pub const NONE: u32 = u32::MAX;

/// Work that `VK_BLACKBOX_SKIP` never skips: what builds data later work reads from outside the recording's
/// commands (an acceleration structure), so that skipping cannot turn into invalid use.
const NEVER_SKIPPED: &[&str] = &["vkCmdBuildAccelerationStructuresKHR"];

/// Commands logged per recording; beyond it commands are counted, not logged, so a runaway command buffer
/// cannot take the app's memory (markers still cover them).
pub const MAX_LOGGED_COMMANDS: usize = 1 << 16;

/// One recorded command.
#[derive(Debug, Clone, Copy)]
pub struct Command {
    /// The Vulkan command, e.g. `vkCmdDispatch`.
    pub name: &'static str,
    /// What kind of work it does, from the method that logged it.
    pub class: CommandClass,
    /// Its key parameters (counts, offsets, handles), as the command defines them.
    pub params: [u64; 4],
    /// How many of `params` are meaningful.
    pub param_count: u8,
    /// Innermost open label scope, or [`NONE`].
    pub scope: u32,
    /// The marker unit that covers it, or [`NONE`] when no marker tells its progress.
    pub unit: u32,
    /// The pipeline bound for its bind point when it was recorded (graphics for draws, compute for
    /// dispatches, ray tracing for trace rays); null if none or not applicable.
    pub pipeline: vk::Pipeline,
    /// For `vkCmdExecuteCommands`: index of its first entry in [`RecordedLog::executed`].
    pub executed: u32,
    /// Not passed to the driver: `VK_BLACKBOX_SKIP` selected it.
    pub skipped: bool,
}

/// A debug-label scope (`vkCmdBeginDebugUtilsLabelEXT` .. `End`), or an inserted label (no end).
#[derive(Debug, Clone)]
pub struct LabelScope {
    /// The label text.
    pub name: Box<str>,
    /// The enclosing scope, or [`NONE`].
    pub parent: u32,
    /// Index of the first command inside.
    pub first_command: u32,
    /// One past the last command inside (set at the end label; the log's length while still open).
    pub end_command: u32,
    /// An inserted label marks a point, not a scope.
    pub inserted: bool,
}

/// A secondary command buffer run by `vkCmdExecuteCommands`.
#[derive(Clone)]
pub struct Executed {
    /// The secondary.
    pub command_buffer: Arc<CommandBuffer>,
    /// What it held when executed.
    pub log: Option<Arc<RecordedLog>>,
}

/// A finished recording.
pub struct RecordedLog {
    /// Commands in recording order.
    pub commands: Vec<Command>,
    /// Label scopes, by index.
    pub scopes: Vec<LabelScope>,
    /// Secondaries executed, in order.
    pub executed: Vec<Executed>,
    /// The marker words the recording writes, if it marks.
    pub marks: Option<MarkWords>,
    /// Number of marker units (the last unit's number).
    pub units: u32,
    /// Commands recorded beyond [`MAX_LOGGED_COMMANDS`].
    pub unlogged: u32,
}

impl RecordedLog {
    /// `(top, bottom)`: the last unit the GPU started and the last it finished, as far as its markers
    /// tell; `None` when the recording has no markers.
    pub fn progress(&self) -> Option<(u32, u32)> {
        self.marks.as_ref().map(|m| m.progress())
    }
}

/// Calls `f` for a submitted command buffer and every secondary it runs, with the recording each holds.
pub fn for_each_execution(
    cb: &Arc<CommandBuffer>,
    log: Option<&Arc<RecordedLog>>,
    f: &mut impl FnMut(&CommandBuffer, Option<&RecordedLog>),
) {
    f(cb, log.map(|l| &**l));
    for e in log.iter().flat_map(|l| &l.executed) {
        for_each_execution(&e.command_buffer, e.log.as_ref(), f);
    }
}

/// A recording in progress.
#[derive(Default)]
pub struct Recording {
    commands: Vec<Command>,
    scopes: Vec<LabelScope>,
    executed: Vec<Executed>,
    open: Vec<u32>,
    units: u32,
    /// The unit of the render pass being recorded, when the pass is one unit.
    pass_unit: Option<u32>,
    inside_render_pass: bool,
    /// Bound pipelines: graphics, compute, ray tracing.
    pipelines: [vk::Pipeline; 3],
    /// Marker writes are possible in this recording.
    marking: bool,
    /// Its marker words, when it marks.
    marks: Option<MarkWords>,
    /// `VK_BLACKBOX_BREADCRUMBS` when the recording began.
    granularity: Breadcrumbs,
    /// Commands inside render passes can be units of their own (buffer markers, `command` granularity).
    units_inside_passes: bool,
    /// Commands beyond [`MAX_LOGGED_COMMANDS`].
    unlogged: u32,
    /// Units started since the last "finished" marker: the next synchronization point writes one.
    unfinished: bool,
    /// Whether each open label scope (as `open`) skips the work inside it (`VK_BLACKBOX_SKIP=label:`).
    open_skips: Vec<bool>,
    /// Open label scopes that skip the work inside them.
    skipping_labels: u32,
    /// Whether the pipeline bound at each bind point is skipped (`pipeline:`, `shader:`).
    pipeline_skipped: [bool; 3],
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
    /// Submissions holding it that are not known to be finished: its marker words are zeroed at a
    /// submission only when none is, so a pending execution's progress is never wiped.
    pending: AtomicU32,
    recording: Mutex<Recording>,
    last: Mutex<Option<Arc<RecordedLog>>>,
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
/// Bumped on every free, so that the per-thread cache never returns a freed command buffer.
static GENERATION: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The command buffer this thread recorded last: apps record one command buffer per thread at a time,
    /// so this spares the shared map on almost every command.
    static LAST_USED: RefCell<Option<(u64, u64, Arc<CommandBuffer>)>> = const { RefCell::new(None) };
}

/// The state of `handle`, if the layer knows it.
pub fn lookup(handle: vk::CommandBuffer) -> Option<Arc<CommandBuffer>> {
    use vk::Handle;
    let raw = handle.as_raw();
    let generation = GENERATION.load(Ordering::Acquire);
    let cached = LAST_USED.try_with(|last| {
        let last = last.borrow();
        match &*last {
            Some((h, g, cb)) if *h == raw && *g == generation => Some(cb.clone()),
            _ => None,
        }
    });
    if let Ok(Some(cb)) = cached {
        return Some(cb);
    }
    let found = COMMAND_BUFFERS.read().get(&raw).cloned()?;
    let _ = LAST_USED.try_with(|last| *last.borrow_mut() = Some((raw, generation, found.clone())));
    Some(found)
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
    let mut map = COMMAND_BUFFERS.write();
    for &handle in handles {
        let cb = Arc::new(CommandBuffer {
            handle,
            device: device.clone(),
            pool,
            secondary,
            id: IDS.fetch_add(1, Ordering::Relaxed),
            pending: AtomicU32::new(0),
            recording: Mutex::new(Recording::default()),
            last: Mutex::new(None),
        });
        map.insert(handle.as_raw(), cb);
    }
}

/// Forgets freed command buffers.
pub fn unregister(device: &Device, handles: impl IntoIterator<Item = vk::CommandBuffer>) {
    use vk::Handle;
    let _ = device;
    let mut map = COMMAND_BUFFERS.write();
    for handle in handles {
        map.remove(&handle.as_raw());
    }
    GENERATION.fetch_add(1, Ordering::AcqRel);
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

    /// `vkBeginCommandBuffer`, before the call down.
    fn start_recording(&self, continues_render_pass: bool) {
        let mut rec = self.recording.lock();
        // Re-recording: the last recording's list is reused when no pending submission holds it any more,
        // so a command buffer recorded every frame allocates (and faults in) no new memory for its log;
        // else the new list is sized like the last one.
        let last = self.last.lock().take();
        let commands = match last.map(Arc::try_unwrap) {
            Some(Ok(log)) => {
                let mut commands = log.commands;
                commands.clear();
                commands
            }
            Some(Err(shared)) => Vec::with_capacity(shared.commands.len().next_power_of_two()),
            None => Vec::with_capacity(64),
        };
        *rec = Recording {
            commands,
            inside_render_pass: continues_render_pass,
            ..Recording::default()
        };
        let markers = self.device.markers.read();
        if let Some(m) = markers.as_ref() {
            rec.granularity = m.granularity;
            rec.marking = m.granularity >= Breadcrumbs::Pass && m.can_mark(continues_render_pass);
            rec.units_inside_passes = m.granularity == Breadcrumbs::Command && m.can_mark(true);
            if rec.marking {
                rec.marks = Some(m.words());
            }
        }
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
        let mut rec = self.recording.lock();
        let rec = std::mem::take(&mut *rec);
        let log = RecordedLog {
            commands: rec.commands,
            scopes: rec.scopes,
            executed: rec.executed,
            marks: rec.marks,
            units: rec.units,
            unlogged: rec.unlogged,
        };
        *self.last.lock() = Some(Arc::new(log));
    }

    /// `vkResetCommandBuffer` / pool reset: the recording is gone.
    fn forget_recording(&self) {
        *self.recording.lock() = Recording::default();
        *self.last.lock() = None;
    }

    /// Records a command that does work (draw, dispatch, trace rays, copy, clear...) around `call`, or, when
    /// `VK_BLACKBOX_SKIP` selects it, logs it as skipped and does not call down.
    pub fn work(&self, name: &'static str, bind: BindPoint, params: &[u64], call: impl FnOnce()) {
        if let Some(file) = &crate::config().suspects {
            self.note_suspects(file, name, bind);
        }
        let skip = &crate::config().skip;
        if !skip.is_empty() && !NEVER_SKIPPED.contains(&name) {
            let mut rec = self.recording.lock();
            let index = rec.commands.len() as u32;
            let innermost = rec
                .open
                .last()
                .and_then(|&i| rec.scopes.get(i as usize))
                .is_some_and(|s| skip.innermost_label(&s.name));
            let skipped = rec.skipping_labels > 0
                || innermost
                || bind.index().is_some_and(|i| rec.pipeline_skipped[i])
                || skip.command(index);
            if skipped {
                rec.push(name, CommandClass::Action, bind, params, NONE);
                if let Some(c) = rec.commands.last_mut() {
                    c.skipped = true;
                }
                drop(rec);
                debug!("VK_BLACKBOX_SKIP: [{index}] {name} of command buffer {:#x} is not passed to the driver", vk::Handle::as_raw(self.handle));
                return;
            }
        }
        self.action(name, bind, params, call)
    }

    /// `VK_BLACKBOX_SUSPECTS`: the work about to be recorded, with its labels and pipeline, for `blackbox
    /// bisect`.
    fn note_suspects(&self, file: &std::path::Path, name: &'static str, bind: BindPoint) {
        let (labels, index, pipeline) = {
            let rec = self.recording.lock();
            let labels: Vec<String> = rec
                .open
                .iter()
                .filter_map(|&i| rec.scopes.get(i as usize))
                .map(|s| s.name.to_string())
                .collect();
            let pipeline = bind.index().map(|i| rec.pipelines[i]);
            (labels, rec.commands.len() as u32, pipeline)
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
                command: format!("[{index}] {name}"),
                index,
                pipeline,
                shaders,
            },
        );
    }

    /// Records an action command (draw, dispatch, copy, clear...) around `call`, with markers as the
    /// granularity and the render-pass state allow.
    pub fn action(&self, name: &'static str, bind: BindPoint, params: &[u64], call: impl FnOnce()) {
        let mut rec = self.recording.lock();
        let standalone_unit = rec.marking
            && if rec.inside_render_pass {
                rec.units_inside_passes
            } else {
                rec.granularity >= Breadcrumbs::Pass
            };
        let unit = if standalone_unit {
            rec.units += 1;
            rec.unfinished = true;
            rec.units
        } else {
            rec.pass_unit.unwrap_or(NONE)
        };
        rec.push(name, CommandClass::Action, bind, params, unit);
        let word = rec.word_for(standalone_unit, Mark::Started(unit));
        drop(rec);
        self.mark(word, Mark::Started(unit));
        call();
    }

    /// Writes the "finished" marker for every unit started so far, if one is owed and can be written here.
    /// It goes where the app synchronizes anyway (before a barrier or event wait, at the end of the command
    /// buffer): a bottom-of-pipe write waits for all earlier work, so one after every command would
    /// serialize the GPU (25x the frame time of 10,000 dispatches on the H200); placed at the app's own
    /// synchronization points it costs nothing more. Units between two such points show as started, not
    /// finished, until the GPU passes the next one.
    pub fn finish_units(&self) {
        let mut rec = self.recording.lock();
        let markers = self.device.markers.read();
        let can = markers
            .as_ref()
            .is_some_and(|m| m.can_mark(rec.inside_render_pass));
        if !(rec.unfinished && rec.marking && can) {
            return;
        }
        rec.unfinished = false;
        let mark = Mark::Finished(rec.units);
        let word = rec.word_for(true, mark);
        drop(rec);
        if let (Some(m), Some(word)) = (markers.as_ref(), word) {
            // SAFETY: recording, and the marker path allows a write in the current render-pass state.
            unsafe { m.write(&self.device.next, self.handle, word, mark, self.id) };
        }
    }

    /// Records a command that does no work of its own (query, timestamp, event set or reset, subpass
    /// change...) after `call`.
    pub fn state(&self, name: &'static str, params: &[u64], call: impl FnOnce()) {
        self.without_work(name, CommandClass::State, params, call);
    }

    /// Records a synchronization command (pipeline barrier, event wait) after `call`, with the "finished"
    /// marker owed for the units before it written first (see `finish_units`).
    pub fn sync(&self, name: &'static str, params: &[u64], call: impl FnOnce()) {
        self.finish_units();
        self.without_work(name, CommandClass::Sync, params, call);
    }

    fn without_work(
        &self,
        name: &'static str,
        class: CommandClass,
        params: &[u64],
        call: impl FnOnce(),
    ) {
        let mut rec = self.recording.lock();
        let unit = rec.pass_unit.unwrap_or(NONE);
        rec.push(name, class, BindPoint::None, params, unit);
        drop(rec);
        call();
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
        let mut rec = self.recording.lock();
        rec.pipelines[i] = pipeline;
        rec.pipeline_skipped[i] = skipped;
    }

    /// A render pass begins (classic or dynamic). With markers that cannot go inside it, the pass is one
    /// unit, marked before it begins. The begin is logged as an action: its load operations are work, and
    /// on that path it stands for the whole pass.
    fn enter_render_pass(&self, name: &'static str, params: &[u64], call: impl FnOnce()) {
        let mut rec = self.recording.lock();
        // Where commands inside can be units, the pass is the scope they share; otherwise it is one unit.
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
        rec.push(name, CommandClass::Action, BindPoint::None, params, unit);
        let word = rec.word_for(pass_is_unit, Mark::Started(unit));
        drop(rec);
        self.mark(word, Mark::Started(unit));
        call();
        self.recording.lock().inside_render_pass = true;
    }

    /// A render pass ends (logged as a state command, like a subpass change). Its "finished" marker waits
    /// for the next synchronization point (see `finish_units`).
    fn leave_render_pass(&self, name: &'static str, call: impl FnOnce()) {
        let mut rec = self.recording.lock();
        let unit = rec.pass_unit.take().unwrap_or(NONE);
        rec.push(name, CommandClass::State, BindPoint::None, &[], unit);
        rec.inside_render_pass = false;
        drop(rec);
        call();
    }

    /// `vkCmdBeginDebugUtilsLabelEXT` (or an inserted label when `inserted`).
    fn open_label(&self, name: String, inserted: bool) {
        let skips = !inserted && crate::config().skip.label(&name);
        let mut rec = self.recording.lock();
        let parent = rec.open.last().copied().unwrap_or(NONE);
        let first = rec.commands.len() as u32;
        rec.scopes.push(LabelScope {
            name: name.into_boxed_str(),
            parent,
            first_command: first,
            end_command: if inserted { first } else { NONE },
            inserted,
        });
        if !inserted {
            let index = rec.scopes.len() as u32 - 1;
            rec.open.push(index);
            rec.open_skips.push(skips);
            rec.skipping_labels += u32::from(skips);
        }
    }

    /// `vkCmdEndDebugUtilsLabelEXT`. A label begun in an earlier command buffer of the submission closes
    /// nothing here (labels are shown per command buffer).
    fn close_label(&self) {
        let mut rec = self.recording.lock();
        let end = rec.commands.len() as u32;
        if let Some(index) = rec.open.pop() {
            rec.scopes[index as usize].end_command = end;
        }
        if rec.open_skips.pop() == Some(true) {
            rec.skipping_labels -= 1;
        }
    }

    /// `vkCmdExecuteCommands`: an action whose work is the secondaries'.
    fn run_secondaries(&self, secondaries: Vec<Executed>, call: impl FnOnce()) {
        let count = secondaries.len() as u64;
        let mut rec = self.recording.lock();
        let first = rec.executed.len() as u32;
        rec.executed.extend(secondaries);
        drop(rec);
        self.action("vkCmdExecuteCommands", BindPoint::None, &[count], call);
        let mut rec = self.recording.lock();
        if let Some(last) = rec.commands.last_mut() {
            last.executed = first;
        }
    }

    /// Records the marker write of a "started" mark, if it got a word.
    fn mark(&self, word: Option<u32>, mark: Mark) {
        let Some(word) = word else { return };
        let markers = self.device.markers.read();
        if let Some(m) = markers.as_ref() {
            // SAFETY: the command buffer is recording (we are inside one of its commands), and `can_mark`
            // held for the render-pass state when the unit was made.
            unsafe { m.write(&self.device.next, self.handle, word, mark, self.id) };
        }
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
        self.enter_render_pass("vkCmdBeginRenderPass", &params, || {
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
        self.enter_render_pass("vkCmdBeginRenderPass2", &params, || {
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
        self.enter_render_pass("vkCmdBeginRendering", &params, || {
            forward!(next, self.handle, info)
        })
    }

    /// `vkCmdEndRenderPass`.
    pub(crate) unsafe fn end_render_pass(&self, next: vk::PFN_vkCmdEndRenderPass) {
        self.leave_render_pass("vkCmdEndRenderPass", || forward!(next, self.handle))
    }

    /// `vkCmdEndRenderPass2`.
    pub(crate) unsafe fn end_render_pass2(
        &self,
        next: vk::PFN_vkCmdEndRenderPass2,
        end: *const vk::SubpassEndInfo,
    ) {
        self.leave_render_pass("vkCmdEndRenderPass2", || forward!(next, self.handle, end))
    }

    /// `vkCmdEndRendering`.
    pub(crate) unsafe fn end_rendering(&self, next: vk::PFN_vkCmdEndRendering) {
        self.leave_render_pass("vkCmdEndRendering", || forward!(next, self.handle))
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
        let executed = list
            .iter()
            .filter_map(|&h| lookup(h))
            .map(|s| Executed {
                log: s.last_log(),
                command_buffer: s,
            })
            .collect();
        self.run_secondaries(executed, || forward!(next, self.handle, count, secondaries))
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
unsafe fn label_text(label: *const vk::DebugUtilsLabelEXT) -> String {
    // SAFETY: null or the app's valid label (the caller's contract), whose name is null or NUL-terminated.
    unsafe {
        label
            .as_ref()
            .map_or_else(String::new, |l| crate::raw::text(l.p_label_name))
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
    /// The word `mark` is written to, when `wanted` and the recording marks (and the pool has one).
    fn word_for(&mut self, wanted: bool, mark: Mark) -> Option<u32> {
        if !wanted {
            return None;
        }
        self.marks.as_mut()?.next(mark)
    }

    fn push(
        &mut self,
        name: &'static str,
        class: CommandClass,
        bind: BindPoint,
        params: &[u64],
        unit: u32,
    ) {
        if self.commands.len() >= MAX_LOGGED_COMMANDS {
            self.unlogged += 1;
            return;
        }
        let mut p = [0u64; 4];
        let n = params.len().min(4);
        p[..n].copy_from_slice(&params[..n]);
        let pipeline = bind
            .index()
            .map_or(vk::Pipeline::null(), |i| self.pipelines[i]);
        self.commands.push(Command {
            name,
            class,
            params: p,
            param_count: n as u8,
            scope: self.open.last().copied().unwrap_or(NONE),
            unit,
            pipeline,
            executed: NONE,
            skipped: false,
        });
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
                "vkCmdDraw",
                CommandClass::Action,
                BindPoint::Graphics,
                &[3, 1, 0, 0],
                NONE,
            );
        }
        assert_eq!(rec.commands.len(), MAX_LOGGED_COMMANDS);
        assert_eq!(rec.unlogged, 5);
        assert_eq!(rec.commands[0].param_count, 4);
    }
}
