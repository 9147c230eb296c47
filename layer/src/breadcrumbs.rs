//! GPU breadcrumbs: marker writes recorded around the app's commands, read back to learn how far the GPU got.
//!
//! Each command buffer owns a slot of two words in the device's marker buffer: `top`, the number of the
//! last *unit* of work the GPU started, and `bottom`, the last one it finished. A unit is one command, or a
//! whole render pass where markers cannot go inside it. Units are numbered from 1 in recording order; the
//! slot is zeroed at the start of every recording's execution, so a resubmitted command buffer never shows
//! the previous run's progress.
//!
//! `top` is written before every unit. `bottom` is written only where the app synchronizes anyway (before a
//! barrier or event wait, and at the end of the command buffer), with the number of the last unit started:
//! a "finished" write waits for all earlier work, and one after every unit would serialize the GPU.
//!
//! Two ways to write a marker, chosen once per device:
//! - `VK_AMD_buffer_marker`: top-of-pipe and bottom-of-pipe writes, allowed anywhere, render passes
//!   included, so every command is a unit;
//! - otherwise `vkCmdFillBuffer`, which is not allowed inside a render pass: commands outside passes are
//!   units, and each render pass is one unit (marked started before it begins).

use ash::vk;
use parking_lot::Mutex;

use crate::config::Breadcrumbs;
use crate::dispatch::DeviceDispatch;
use crate::memory::HostBuffer;

/// Words per command-buffer slot: `top`, `bottom`.
pub const SLOT_WORDS: u32 = 2;
/// Slots per device; a command buffer beyond them records without markers (and the report says so).
pub const SLOTS: u32 = 16 * 1024;

/// How markers are written on a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerPath {
    /// `vkCmdWriteBufferMarkerAMD`, anywhere.
    BufferMarker,
    /// `vkCmdFillBuffer`, outside render passes.
    FillBuffer,
}

impl MarkerPath {
    /// How the report names it.
    pub fn describe(self) -> &'static str {
        match self {
            MarkerPath::BufferMarker => "buffer markers (VK_AMD_buffer_marker)",
            MarkerPath::FillBuffer => "fill-buffer writes (vkCmdFillBuffer, outside render passes)",
        }
    }
}

/// The marker buffer of a device and its slot allocator.
pub struct Markers {
    /// The buffer.
    pub buffer: HostBuffer,
    /// How markers are written.
    pub path: MarkerPath,
    /// `VK_BLACKBOX_BREADCRUMBS` in force.
    pub granularity: Breadcrumbs,
    /// NV checkpoints are recorded as well, with the "finished" markers.
    pub checkpoints: bool,
    free: Mutex<Vec<u32>>,
}

impl Markers {
    /// Wraps a marker buffer of [`SLOTS`] slots.
    pub fn new(
        buffer: HostBuffer,
        path: MarkerPath,
        granularity: Breadcrumbs,
        checkpoints: bool,
    ) -> Self {
        let slots = (buffer.words() as u32 / SLOT_WORDS).min(SLOTS);
        Self {
            buffer,
            path,
            granularity,
            checkpoints,
            free: Mutex::new((0..slots).rev().collect()),
        }
    }

    /// The marker buffer's size for [`SLOTS`] slots.
    pub fn buffer_size() -> u64 {
        u64::from(SLOTS * SLOT_WORDS * 4)
    }

    /// A slot for a new command buffer, if any is left.
    pub fn allocate_slot(&self) -> Option<u32> {
        self.free.lock().pop()
    }

    /// Gives a slot back.
    pub fn free_slot(&self, slot: u32) {
        self.free.lock().push(slot);
    }

    /// `(top, bottom)` of a slot: the last unit started and the last finished.
    pub fn progress(&self, slot: u32) -> (u32, u32) {
        let base = (slot * SLOT_WORDS) as usize;
        (self.buffer.read(base), self.buffer.read(base + 1))
    }

    /// Whether a unit boundary can be marked here.
    pub fn can_mark(&self, inside_render_pass: bool) -> bool {
        self.path == MarkerPath::BufferMarker || !inside_render_pass
    }

    /// Records the write of `value` into word `word` (0 top, 1 bottom) of `slot`.
    ///
    /// # Safety
    /// `cb` must be recording on the device `next` belongs to; for the fill path, outside a render pass.
    pub unsafe fn write(
        &self,
        next: &DeviceDispatch,
        cb: vk::CommandBuffer,
        slot: u32,
        word: u32,
        value: u32,
    ) {
        let offset = u64::from((slot * SLOT_WORDS + word) * 4);
        match self.path {
            MarkerPath::BufferMarker => {
                if let Some(write) = next.cmd_write_buffer_marker_amd {
                    let stage = if word == 0 {
                        vk::PipelineStageFlags::TOP_OF_PIPE
                    } else {
                        vk::PipelineStageFlags::BOTTOM_OF_PIPE
                    };
                    // SAFETY: the layer's marker buffer, in bounds, 4-byte aligned.
                    unsafe { write(cb, stage, self.buffer.buffer, offset, value) };
                }
            }
            MarkerPath::FillBuffer => {
                if word == 1 {
                    if let Some(barrier) = next.cmd_pipeline_barrier {
                        // A fill is a transfer that may overtake the unit it follows; this execution
                        // dependency makes `bottom` mean "finished".
                        // SAFETY: outside a render pass; no memory barriers.
                        unsafe {
                            barrier(
                                cb,
                                vk::PipelineStageFlags::ALL_COMMANDS,
                                vk::PipelineStageFlags::TRANSFER,
                                vk::DependencyFlags::empty(),
                                0,
                                std::ptr::null(),
                                0,
                                std::ptr::null(),
                                0,
                                std::ptr::null(),
                            )
                        };
                    }
                }
                if let Some(fill) = next.cmd_fill_buffer {
                    // SAFETY: outside a render pass (the caller's contract); in bounds, 4-byte aligned.
                    unsafe { fill(cb, self.buffer.buffer, offset, 4, value) };
                }
            }
        }
        // NV checkpoints go with the "finished" markers only, at the app's synchronization points: one per
        // unit made a frame of 10,000 dispatches 19x slower on the H200, where the buffer markers alone
        // cost nothing measurable.
        if self.checkpoints && word == 1 {
            if let Some(set) = next.cmd_set_checkpoint_nv {
                // The checkpoint's "pointer" carries slot and unit, decoded after a loss.
                let tag =
                    (u64::from(slot) << 32 | u64::from(value)) as usize as *const std::ffi::c_void;
                // SAFETY: a recording command buffer; the marker is an opaque value.
                unsafe { set(cb, tag) };
            }
        }
    }

    /// Records the zeroing of a slot at the start of a recording.
    ///
    /// # Safety
    /// As for [`Markers::write`].
    pub unsafe fn reset(&self, next: &DeviceDispatch, cb: vk::CommandBuffer, slot: u32) {
        match self.path {
            MarkerPath::BufferMarker => {
                // SAFETY: forwarded.
                unsafe {
                    self.write(next, cb, slot, 0, 0);
                    self.write(next, cb, slot, 1, 0);
                }
            }
            MarkerPath::FillBuffer => {
                if let Some(fill) = next.cmd_fill_buffer {
                    let offset = u64::from(slot * SLOT_WORDS * 4);
                    // SAFETY: outside a render pass; in bounds, 4-byte aligned.
                    unsafe { fill(cb, self.buffer.buffer, offset, u64::from(SLOT_WORDS * 4), 0) };
                }
            }
        }
    }
}
