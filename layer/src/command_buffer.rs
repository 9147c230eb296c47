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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::config::Breadcrumbs;
use crate::device::Device;

/// "No label scope" / "no unit".
pub const NONE: u32 = u32::MAX;

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
    /// The marker slot the recording writes, if it has one.
    pub slot: Option<u32>,
    /// Number of marker units (the last unit's number).
    pub units: u32,
    /// Commands recorded beyond [`MAX_LOGGED_COMMANDS`].
    pub unlogged: u32,
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
    /// `VK_BLACKBOX_BREADCRUMBS` when the recording began.
    granularity: Breadcrumbs,
    /// Commands inside render passes can be units of their own (buffer markers, `command` granularity).
    units_inside_passes: bool,
    /// Commands beyond [`MAX_LOGGED_COMMANDS`].
    unlogged: u32,
    /// Units started since the last "finished" marker: the next synchronization point writes one.
    unfinished: bool,
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
    /// Its marker slot, for as long as it lives.
    pub slot: Option<u32>,
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

/// Records newly allocated command buffers.
pub fn register(
    device: &Arc<Device>,
    pool: vk::CommandPool,
    secondary: bool,
    handles: &[vk::CommandBuffer],
) {
    use vk::Handle;
    let markers = device.markers.read();
    let mut map = COMMAND_BUFFERS.write();
    for &handle in handles {
        let slot = markers.as_ref().and_then(|m| m.allocate_slot());
        let cb = Arc::new(CommandBuffer {
            handle,
            device: device.clone(),
            pool,
            secondary,
            slot,
            recording: Mutex::new(Recording::default()),
            last: Mutex::new(None),
        });
        if let Some(old) = map.insert(handle.as_raw(), cb) {
            release(&old, markers.as_ref());
        }
    }
}

fn release(cb: &CommandBuffer, markers: Option<&crate::breadcrumbs::Markers>) {
    if let (Some(slot), Some(markers)) = (cb.slot, markers) {
        markers.free_slot(slot);
    }
}

/// Forgets freed command buffers.
pub fn unregister(device: &Device, handles: impl IntoIterator<Item = vk::CommandBuffer>) {
    use vk::Handle;
    let markers = device.markers.read();
    let mut map = COMMAND_BUFFERS.write();
    for handle in handles {
        if let Some(old) = map.remove(&handle.as_raw()) {
            release(&old, markers.as_ref());
        }
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
    pub fn begin(&self, continues_render_pass: bool) {
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
        if let (Some(m), Some(_)) = (markers.as_ref(), self.slot) {
            rec.granularity = m.granularity;
            rec.marking = m.granularity >= Breadcrumbs::Pass && m.can_mark(continues_render_pass);
            rec.units_inside_passes = m.granularity == Breadcrumbs::Command && m.can_mark(true);
        }
    }

    /// After `vkBeginCommandBuffer` succeeded: zero the slot at the start of execution.
    ///
    /// # Safety
    /// The command buffer is recording.
    pub unsafe fn after_begin(&self) {
        let rec = self.recording.lock();
        if !rec.marking {
            return;
        }
        let markers = self.device.markers.read();
        if let (Some(m), Some(slot)) = (markers.as_ref(), self.slot) {
            // SAFETY: recording; outside a render pass unless markers are allowed there (checked at begin).
            unsafe { m.reset(&self.device.next, self.handle, slot) };
        }
    }

    /// `vkEndCommandBuffer`, before the call down: the last units get their "finished" marker, and the
    /// recording is frozen.
    pub fn end(&self) {
        self.finish_units();
        let mut rec = self.recording.lock();
        let rec = std::mem::take(&mut *rec);
        let log = RecordedLog {
            commands: rec.commands,
            scopes: rec.scopes,
            executed: rec.executed,
            slot: if rec.marking { self.slot } else { None },
            units: rec.units,
            unlogged: rec.unlogged,
        };
        *self.last.lock() = Some(Arc::new(log));
    }

    /// `vkResetCommandBuffer` / pool reset: the recording is gone.
    pub fn reset(&self) {
        *self.recording.lock() = Recording::default();
        *self.last.lock() = None;
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
        drop(rec);
        if standalone_unit {
            self.mark(0, unit);
        }
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
        let last = rec.units;
        drop(rec);
        if let (Some(m), Some(slot)) = (markers.as_ref(), self.slot) {
            // SAFETY: recording, and the marker path allows a write in the current render-pass state.
            unsafe { m.write(&self.device.next, self.handle, slot, 1, last) };
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

    /// `vkCmdBindPipeline`.
    pub fn bind_pipeline(&self, point: vk::PipelineBindPoint, pipeline: vk::Pipeline) {
        if let Some(i) = BindPoint::from_vk(point).index() {
            self.recording.lock().pipelines[i] = pipeline;
        }
    }

    /// A render pass begins (classic or dynamic). With markers that cannot go inside it, the pass is one
    /// unit, marked before it begins. The begin is logged as an action: its load operations are work, and
    /// on that path it stands for the whole pass.
    pub fn begin_render_pass(&self, name: &'static str, params: &[u64], call: impl FnOnce()) {
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
        drop(rec);
        if pass_is_unit {
            self.mark(0, unit);
        }
        call();
        self.recording.lock().inside_render_pass = true;
    }

    /// A render pass ends (logged as a state command, like a subpass change). Its "finished" marker waits
    /// for the next synchronization point (see `finish_units`).
    pub fn end_render_pass(&self, name: &'static str, call: impl FnOnce()) {
        let mut rec = self.recording.lock();
        let unit = rec.pass_unit.take().unwrap_or(NONE);
        rec.push(name, CommandClass::State, BindPoint::None, &[], unit);
        rec.inside_render_pass = false;
        drop(rec);
        call();
    }

    /// `vkCmdBeginDebugUtilsLabelEXT` (or an inserted label when `inserted`).
    pub fn label(&self, name: String, inserted: bool) {
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
        }
    }

    /// `vkCmdEndDebugUtilsLabelEXT`. A label begun in an earlier command buffer of the submission closes
    /// nothing here (labels are shown per command buffer).
    pub fn end_label(&self) {
        let mut rec = self.recording.lock();
        let end = rec.commands.len() as u32;
        if let Some(index) = rec.open.pop() {
            rec.scopes[index as usize].end_command = end;
        }
    }

    /// `vkCmdExecuteCommands`: an action whose work is the secondaries'.
    pub fn execute_commands(&self, secondaries: Vec<Executed>, call: impl FnOnce()) {
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

    fn mark(&self, word: u32, unit: u32) {
        let markers = self.device.markers.read();
        if let (Some(m), Some(slot)) = (markers.as_ref(), self.slot) {
            // SAFETY: the command buffer is recording (we are inside one of its commands), and `can_mark`
            // held for the render-pass state when the unit was made.
            unsafe { m.write(&self.device.next, self.handle, slot, word, unit) };
        }
    }
}

impl Recording {
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
