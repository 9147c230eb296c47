//! Submissions in flight, per queue, and the hooks where work is submitted, where finished work is
//! retired, and where `VK_ERROR_DEVICE_LOST` is noticed.
//!
//! Every submission gets a sequence number; where the device has timeline semaphores, the layer appends a
//! signal of its own per-queue timeline semaphore with that number to the submission's last batch (the
//! app's batching is unchanged), so completion can be read at any time, from any thread, without touching
//! the app's fences. Where adding to that batch would change what the validation layer says of it (a
//! signal array passed with a count of 0) or cannot be done (a `pNext` struct the layer does not know), the
//! signal goes in a batch of the layer's own after the app's: a submission's signals cover every command
//! earlier in submission order. Without timeline semaphores, completion is learnt from the app's own waits.

use ash::vk;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::chain::{ChainCopy, Found};
use crate::command_buffer::{CommandBuffer, RecordedLog};
use crate::device::Device;
use crate::fallback::Fallback;
use crate::raw::slice;

/// A command buffer as submitted: its state and the recording it held.
#[derive(Clone)]
pub struct Submitted {
    /// The command buffer.
    pub command_buffer: Arc<CommandBuffer>,
    /// What it held when submitted (`None` if it was never recorded through the layer).
    pub log: Option<Arc<RecordedLog>>,
}

/// One `vkQueueSubmit*` / `vkQueueBindSparse` call.
pub struct Submission {
    /// Its number on its queue, from 1.
    pub seq: u64,
    /// The command that made it.
    pub command: &'static str,
    /// When it was made.
    pub at: Instant,
    /// Wall-clock time, for the report.
    pub at_wall: SystemTime,
    /// Command buffers per batch.
    pub batches: Vec<Vec<Submitted>>,
    /// The app's fence, if any.
    pub fence: vk::Fence,
    /// The frame it belongs to: presents on the device before it, plus one.
    pub frame: u64,
}

impl Submission {
    /// Its command buffers, secondaries too, learn that it is finished.
    fn retire(&self) {
        for s in self.batches.iter().flatten() {
            crate::command_buffer::for_each_execution(
                &s.command_buffer,
                s.log.as_ref(),
                &mut |cb, _| cb.retired(),
            );
        }
    }
}

/// What the tracker knows of a queue's work.
#[derive(Default)]
pub struct Tracker {
    next_seq: u64,
    /// Submissions not known to be finished, oldest first.
    pub pending: VecDeque<Submission>,
    /// The last submission known finished.
    pub completed: u64,
    /// The last finished submission, kept for the report's "last finished" context.
    pub last_finished: Option<Submission>,
    /// The lowest and highest frame of the submissions retired since the shader-error drain last asked
    /// ([`Tracker::take_retired_frames`]): the frames whose work can have written what it reads.
    retired_frames: Option<(u64, u64)>,
}

impl Tracker {
    /// Retires every pending submission up to `seq`; `true` when there was one.
    fn retire_up_to(&mut self, seq: u64) -> bool {
        if seq <= self.completed {
            return false;
        }
        self.completed = seq;
        let mut retired = false;
        while self.pending.front().is_some_and(|s| s.seq <= seq) {
            if let Some(done) = self.pending.pop_front() {
                done.retire();
                let (low, high) = self.retired_frames.unwrap_or((done.frame, done.frame));
                self.retired_frames = Some((low.min(done.frame), high.max(done.frame)));
                self.last_finished = Some(done);
            }
            retired = true;
        }
        retired
    }

    /// The frames of the submissions retired since the last call, and of those still pending, `None` where
    /// there is none.
    pub fn take_retired_frames(&mut self) -> (Option<FrameRange>, Option<FrameRange>) {
        let pending = self
            .pending
            .front()
            .zip(self.pending.back())
            .map(|(first, last)| (first.frame, last.frame));
        (self.retired_frames.take(), pending)
    }
}

/// The lowest and highest frame numbers of some submissions.
pub type FrameRange = (u64, u64);

/// A queue the app retrieved.
pub struct Queue {
    /// The app's handle.
    pub handle: vk::Queue,
    /// Its family.
    pub family: u32,
    /// Its index in the family.
    pub index: u32,
    /// The layer's timeline semaphore for this queue, when the device has them.
    pub timeline: Option<vk::Semaphore>,
    /// Submissions.
    pub tracker: Mutex<Tracker>,
}

impl Queue {
    /// A queue with no submissions yet.
    pub fn new(
        handle: vk::Queue,
        family: u32,
        index: u32,
        timeline: Option<vk::Semaphore>,
    ) -> Self {
        Self {
            handle,
            family,
            index,
            timeline,
            tracker: Mutex::new(Tracker {
                next_seq: 1,
                ..Tracker::default()
            }),
        }
    }

    /// Reserves the next sequence number.
    pub fn next_seq(&self) -> u64 {
        let mut t = self.tracker.lock();
        let seq = t.next_seq;
        t.next_seq += 1;
        seq
    }

    /// Records a submission the driver accepted.
    pub fn push(&self, submission: Submission) {
        self.tracker.lock().pending.push_back(submission);
    }

    /// Marks everything up to `seq` finished; `true` when that retired a submission.
    pub fn complete_up_to(&self, seq: u64) -> bool {
        self.tracker.lock().retire_up_to(seq)
    }

    /// As [`Queue::complete_up_to`], waiting at most `wait` for the tracker's lock (`None` if it could not
    /// be had): for reports, which may be written while another thread holds it.
    pub fn try_complete_up_to(&self, seq: u64, wait: std::time::Duration) -> Option<bool> {
        Some(self.tracker.try_lock_for(wait)?.retire_up_to(seq))
    }

    /// Marks everything submitted so far finished (after a queue or device wait-idle).
    pub fn complete_all(&self) {
        let last = self.tracker.lock().next_seq - 1;
        self.complete_up_to(last);
    }

    /// Marks finished what a signalled app fence covers: its submission and all before it on this queue.
    pub fn complete_fence(&self, fence: vk::Fence) {
        let seq = self
            .tracker
            .lock()
            .pending
            .iter()
            .rev()
            .find(|s| s.fence == fence)
            .map(|s| s.seq);
        if let Some(seq) = seq {
            self.complete_up_to(seq);
        }
    }

    /// Drops every submission (the device is being destroyed).
    pub fn forget_submissions(&self) {
        let mut t = self.tracker.lock();
        t.pending.clear();
        t.last_finished = None;
    }

    /// Whether any submission is not known to be finished.
    pub fn has_pending(&self) -> bool {
        !self.tracker.lock().pending.is_empty()
    }

    /// [`Queue::has_pending`], its lock waited for at most `wait`: `None` when it could not be had.
    pub fn has_pending_within(&self, wait: std::time::Duration) -> Option<bool> {
        Some(!self.tracker.try_lock_for(wait)?.pending.is_empty())
    }
}

impl Device {
    /// After any call that can report a device loss: writes the report once per device.
    pub fn check_lost(self: &Arc<Self>, command: &'static str, result: vk::Result) {
        if result == vk::Result::ERROR_DEVICE_LOST {
            crate::contained("reporting a device loss", || {
                crate::report::device_lost(self, command)
            });
        }
    }

    /// After a wait (or a present) that may have let work finish: retire it, drain shader errors.
    fn after_progress(self: &Arc<Self>, command: &'static str) {
        crate::contained("tracking completed work", || {
            match self.poll_completion() {
                Err(result) => self.check_lost(command, result),
                Ok(true) => crate::report::hang_resumed(self),
                Ok(false) => {}
            }
            crate::shader_errors::drain(self);
        });
    }

    /// After an app's poll that saw work finished (a semaphore's value, a signalled fence or event, query
    /// results ready), and from the monitor thread: apps that learn of completion by polling (wgpu polls
    /// `vkGetSemaphoreCounterValue`) get their shader errors logged before they read their results, as
    /// with a wait. Cheap when nothing changed: the layer's timelines and one word of the error buffer.
    pub fn after_poll(self: &Arc<Self>, command: &'static str) {
        crate::contained("tracking completed work", || match self.poll_completion() {
            Err(result) => self.check_lost(command, result),
            Ok(retired) => {
                if retired {
                    crate::report::hang_resumed(self);
                }
                if retired || crate::shader_errors::has_unread_records(self) {
                    crate::shader_errors::drain(self);
                }
            }
        });
    }

    /// `vkQueueSubmit`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn queue_submit(
        self: &Arc<Self>,
        queue: vk::Queue,
        count: u32,
        submits: *const vk::SubmitInfo,
        fence: vk::Fence,
    ) -> vk::Result {
        // SAFETY: the app's queue and fence with the app's batches (or their patched copies).
        submit(
            self,
            "vkQueueSubmit",
            queue,
            count,
            submits,
            fence,
            self.next.queue_submit,
            |next, n, b| unsafe { next(queue, n, b, fence) },
        )
    }

    /// `vkQueueSubmit2`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn queue_submit2(
        self: &Arc<Self>,
        queue: vk::Queue,
        count: u32,
        submits: *const vk::SubmitInfo2,
        fence: vk::Fence,
    ) -> vk::Result {
        // SAFETY: as for vkQueueSubmit.
        submit(
            self,
            "vkQueueSubmit2",
            queue,
            count,
            submits,
            fence,
            self.next.queue_submit2,
            |next, n, b| unsafe { next(queue, n, b, fence) },
        )
    }

    /// `vkQueueBindSparse`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn queue_bind_sparse(
        self: &Arc<Self>,
        queue: vk::Queue,
        count: u32,
        infos: *const vk::BindSparseInfo,
        fence: vk::Fence,
    ) -> vk::Result {
        // SAFETY: as for vkQueueSubmit.
        submit(
            self,
            "vkQueueBindSparse",
            queue,
            count,
            infos,
            fence,
            self.next.queue_bind_sparse,
            |next, n, b| unsafe { next(queue, n, b, fence) },
        )
    }

    /// `vkQueuePresentKHR`: a frame ends.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn queue_present(
        self: &Arc<Self>,
        queue: vk::Queue,
        info: *const vk::PresentInfoKHR,
    ) -> vk::Result {
        let Some(next) = self.next.queue_present_khr else {
            return Fallback::fallback();
        };
        let presenting = self.frames.as_ref().and_then(|frames| {
            // SAFETY: the app's valid present info.
            crate::contained("copying the presented image", || unsafe {
                frames.before_present(self, queue, &*info)
            })
            .flatten()
        });
        let result = match &presenting {
            // SAFETY: the app's present, waiting for the layer's copy (which waited for the app's
            // semaphores) instead of the app's semaphores.
            Some(p) => unsafe { next(queue, p.info()) },
            None => forward!(next, queue, info),
        };
        if let Some(frames) = &self.frames {
            crate::contained("ending a frame", || {
                frames.after_present(self, presenting, result)
            });
        }
        self.check_lost("vkQueuePresentKHR", result);
        crate::contained("counting a frame", || crate::shader_errors::end_frame(self));
        self.after_progress("vkQueuePresentKHR");
        result
    }

    /// `vkQueueWaitIdle`: everything submitted to the queue so far is finished.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn queue_wait_idle(self: &Arc<Self>, queue: vk::Queue) -> vk::Result {
        let Some(next) = self.next.queue_wait_idle else {
            return Fallback::fallback();
        };
        let result = forward!(next, queue);
        if result == vk::Result::SUCCESS {
            if let Some(state) = self.queue(queue) {
                crate::contained("retiring a queue's work", || state.complete_all());
            }
        }
        self.check_lost("vkQueueWaitIdle", result);
        self.after_progress("vkQueueWaitIdle");
        result
    }

    /// `vkDeviceWaitIdle`: everything submitted so far is finished.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn device_wait_idle(self: &Arc<Self>, device: vk::Device) -> vk::Result {
        let Some(next) = self.next.device_wait_idle else {
            return Fallback::fallback();
        };
        let result = forward!(next, device);
        if result == vk::Result::SUCCESS {
            crate::contained("retiring the device's work", || {
                self.queues.read().iter().for_each(|q| q.complete_all())
            });
        }
        self.check_lost("vkDeviceWaitIdle", result);
        self.after_progress("vkDeviceWaitIdle");
        result
    }

    /// `vkWaitForFences`: what the signalled fences cover is finished.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn wait_for_fences(
        self: &Arc<Self>,
        device: vk::Device,
        count: u32,
        fences: *const vk::Fence,
        wait_all: vk::Bool32,
        timeout: u64,
    ) -> vk::Result {
        let Some(next) = self.next.wait_for_fences else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, count, fences, wait_all, timeout);
        if result == vk::Result::SUCCESS && (wait_all == vk::TRUE || count == 1) {
            crate::contained("retiring fenced work", || {
                // SAFETY: the app's array of `count` fences.
                for &fence in unsafe { slice(fences, count) } {
                    self.queues
                        .read()
                        .iter()
                        .for_each(|q| q.complete_fence(fence));
                }
            });
        }
        self.check_lost("vkWaitForFences", result);
        self.after_progress("vkWaitForFences");
        result
    }

    /// `vkGetFenceStatus`: a signalled fence is as good as a wait.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn get_fence_status(
        self: &Arc<Self>,
        device: vk::Device,
        fence: vk::Fence,
    ) -> vk::Result {
        let Some(next) = self.next.get_fence_status else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, fence);
        if result == vk::Result::SUCCESS {
            crate::contained("retiring fenced work", || {
                self.queues
                    .read()
                    .iter()
                    .for_each(|q| q.complete_fence(fence))
            });
            self.after_progress("vkGetFenceStatus");
        }
        self.check_lost("vkGetFenceStatus", result);
        result
    }

    /// `vkWaitSemaphores`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn wait_semaphores(
        self: &Arc<Self>,
        device: vk::Device,
        info: *const vk::SemaphoreWaitInfo,
        timeout: u64,
    ) -> vk::Result {
        let Some(next) = self.next.wait_semaphores else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, info, timeout);
        self.check_lost("vkWaitSemaphores", result);
        self.after_progress("vkWaitSemaphores");
        result
    }

    /// `vkGetSemaphoreCounterValue`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn get_semaphore_counter_value(
        self: &Arc<Self>,
        device: vk::Device,
        semaphore: vk::Semaphore,
        value: *mut u64,
    ) -> vk::Result {
        let Some(next) = self.next.get_semaphore_counter_value else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, semaphore, value);
        self.check_lost("vkGetSemaphoreCounterValue", result);
        if result == vk::Result::SUCCESS {
            self.after_poll("vkGetSemaphoreCounterValue");
        }
        result
    }

    /// `vkGetEventStatus`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn get_event_status(
        self: &Arc<Self>,
        device: vk::Device,
        event: vk::Event,
    ) -> vk::Result {
        let Some(next) = self.next.get_event_status else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, event);
        self.check_lost("vkGetEventStatus", result);
        if result == vk::Result::EVENT_SET {
            self.after_poll("vkGetEventStatus");
        }
        result
    }

    /// `vkAcquireNextImageKHR`.
    ///
    /// # Safety
    /// The app's arguments.
    pub(crate) unsafe fn acquire_next_image(
        self: &Arc<Self>,
        device: vk::Device,
        swapchain: vk::SwapchainKHR,
        timeout: u64,
        semaphore: vk::Semaphore,
        fence: vk::Fence,
        index: *mut u32,
    ) -> vk::Result {
        let Some(next) = self.next.acquire_next_image_khr else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, swapchain, timeout, semaphore, fence, index);
        self.check_lost("vkAcquireNextImageKHR", result);
        result
    }

    /// `vkGetQueryPoolResults`.
    ///
    /// # Safety
    /// The app's arguments.
    #[allow(clippy::too_many_arguments)]
    pub(crate) unsafe fn get_query_pool_results(
        self: &Arc<Self>,
        device: vk::Device,
        pool: vk::QueryPool,
        first: u32,
        count: u32,
        size: usize,
        data: *mut c_void,
        stride: vk::DeviceSize,
        flags: vk::QueryResultFlags,
    ) -> vk::Result {
        let Some(next) = self.next.get_query_pool_results else {
            return Fallback::fallback();
        };
        let result = forward!(next, device, pool, first, count, size, data, stride, flags);
        self.check_lost("vkGetQueryPoolResults", result);
        // SUCCESS: every result asked for was available, so the work that wrote them had run.
        if result == vk::Result::SUCCESS {
            self.after_poll("vkGetQueryPoolResults");
        }
        result
    }
}

fn snapshot(handles: &[vk::CommandBuffer]) -> Vec<Submitted> {
    handles
        .iter()
        .filter_map(|&h| crate::command_buffer::lookup(h))
        .map(|cb| Submitted {
            log: cb.last_log(),
            command_buffer: cb,
        })
        .collect()
}

/// The layer's timeline signal added to a copy of the last batch of a `VkSubmitInfo`/`VkBindSparseInfo`
/// submission: its signal list, the values, and a copy of the batch's chain where the app's
/// `VkTimelineSemaphoreSubmitInfo` (or one of the layer's own) carries them. Must outlive the call down.
struct TimelineSignal {
    semaphores: Vec<vk::Semaphore>,
    values: Vec<u64>,
    chain: ChainCopy,
}

impl TimelineSignal {
    /// Prepares the signal for a batch with these signal semaphores and `pNext`. `None` when the app's
    /// timeline values lie where the chain copy cannot change them (after a struct the layer does not
    /// know): then this submission is tracked through the app's waits only.
    ///
    /// # Safety
    /// The arguments come from a valid batch of the app's, which outlives the result.
    unsafe fn new(
        signals: &[vk::Semaphore],
        p_next: *const c_void,
        timeline: vk::Semaphore,
        seq: u64,
    ) -> Option<Box<Self>> {
        let mut this = Box::new(TimelineSignal {
            semaphores: signals.iter().copied().chain([timeline]).collect(),
            values: Vec::new(),
            // SAFETY: the app's valid chain.
            chain: unsafe { ChainCopy::new(p_next) },
        });
        let app_values = match this.chain.find::<vk::TimelineSemaphoreSubmitInfo>() {
            Found::Copied(app) => Some((
                app.signal_semaphore_value_count,
                app.p_signal_semaphore_values,
            )),
            Found::Shared(_) => return None,
            Found::Absent => None,
        };
        this.values = match app_values {
            // The app chained its own values: the copy carries them and the layer's.
            Some((count, values)) => (0..signals.len())
                .map(|i| {
                    if (i as u32) < count && !values.is_null() {
                        // SAFETY: the app gives a value per signal semaphore, or none.
                        unsafe { *values.add(i) }
                    } else {
                        0
                    }
                })
                .chain([seq])
                .collect(),
            // Binary semaphores only: their values are ignored.
            None => signals.iter().map(|_| 0).chain([seq]).collect(),
        };
        let count = this.values.len() as u32;
        let values = this.values.as_ptr();
        match this.chain.find::<vk::TimelineSemaphoreSubmitInfo>() {
            Found::Copied(info) => {
                info.signal_semaphore_value_count = count;
                info.p_signal_semaphore_values = values;
            }
            _ => this.chain.prepend(vk::TimelineSemaphoreSubmitInfo {
                signal_semaphore_value_count: count,
                p_signal_semaphore_values: values,
                ..Default::default()
            }),
        }
        Some(this)
    }
}

/// A batch of a submission command: what the tracker reads from it and adds to it.
trait Batch: Copy + Default {
    /// The app's command buffers in the batch.
    ///
    /// # Safety
    /// The batch must be the app's valid struct.
    unsafe fn command_buffers(&self) -> Vec<vk::CommandBuffer>;

    /// Adds a signal of the layer's `timeline` to `seq` to this copy of the batch. What it returns (the
    /// copies it made) must outlive the call down; `None` when it could not add the signal, the batch
    /// then untouched.
    ///
    /// # Safety
    /// As for [`Batch::command_buffers`].
    unsafe fn add_signal(
        &mut self,
        timeline: vk::Semaphore,
        seq: u64,
    ) -> Option<Box<dyn std::any::Any>>;

    /// Whether the batch passes a signal array with a count of 0. Best practices reports that
    /// (`UNASSIGNED-BestPractices-SemaphoreCount`), and libplacebo and FFmpeg do it: adding the layer's
    /// signal to such a batch would hide the report.
    fn signal_array_without_count(&self) -> bool;

    /// A batch of the layer's own, no commands and no waits, that signals `timeline` to `seq`, and what
    /// must outlive the call down with it: the signal added to an empty batch.
    fn signal_only(timeline: vk::Semaphore, seq: u64) -> Option<(Self, Box<dyn std::any::Any>)> {
        let mut batch = Self::default();
        // SAFETY: an empty batch: no arrays, no chain.
        let keep = unsafe { batch.add_signal(timeline, seq) }?;
        Some((batch, keep))
    }
}

/// `VkSubmitInfo` and `VkBindSparseInfo` carry their signal semaphores the same way, with timeline values
/// in a chained `VkTimelineSemaphoreSubmitInfo`.
macro_rules! batch_with_signal_semaphores {
    ($ty:ty, |$b:ident| $command_buffers:expr) => {
        impl Batch for $ty {
            unsafe fn command_buffers(&self) -> Vec<vk::CommandBuffer> {
                let $b = self;
                $command_buffers
            }

            unsafe fn add_signal(
                &mut self,
                timeline: vk::Semaphore,
                seq: u64,
            ) -> Option<Box<dyn std::any::Any>> {
                // SAFETY: a copy of the app's valid batch: its array of `signal_semaphore_count` semaphores.
                let signals =
                    unsafe { slice(self.p_signal_semaphores, self.signal_semaphore_count) };
                // SAFETY: the batch's valid chain.
                let signal = unsafe { TimelineSignal::new(signals, self.p_next, timeline, seq) }?;
                self.signal_semaphore_count = signal.semaphores.len() as u32;
                self.p_signal_semaphores = signal.semaphores.as_ptr();
                self.p_next = signal.chain.head();
                Some(signal)
            }

            fn signal_array_without_count(&self) -> bool {
                self.signal_semaphore_count == 0 && !self.p_signal_semaphores.is_null()
            }
        }
    };
}

// SAFETY (command buffers): the app's array of `command_buffer_count` handles.
batch_with_signal_semaphores!(vk::SubmitInfo<'_>, |b| unsafe {
    slice(b.p_command_buffers, b.command_buffer_count)
}
.to_vec());
batch_with_signal_semaphores!(vk::BindSparseInfo<'_>, |_b| Vec::new());

impl Batch for vk::SubmitInfo2<'_> {
    unsafe fn command_buffers(&self) -> Vec<vk::CommandBuffer> {
        // SAFETY: the app's valid batch: its array of `command_buffer_info_count` infos.
        let infos = unsafe { slice(self.p_command_buffer_infos, self.command_buffer_info_count) };
        infos.iter().map(|i| i.command_buffer).collect()
    }

    unsafe fn add_signal(
        &mut self,
        timeline: vk::Semaphore,
        seq: u64,
    ) -> Option<Box<dyn std::any::Any>> {
        // SAFETY: a copy of the app's valid batch: its array of `signal_semaphore_info_count` infos.
        let mut signals = unsafe {
            slice(
                self.p_signal_semaphore_infos,
                self.signal_semaphore_info_count,
            )
        }
        .to_vec();
        signals.push(
            vk::SemaphoreSubmitInfo::default()
                .semaphore(timeline)
                .value(seq)
                // In a signal's first scope BOTTOM_OF_PIPE means every stage (the spec's equivalence), without
                // the ALL_COMMANDS that best practices warns about.
                .stage_mask(vk::PipelineStageFlags2::BOTTOM_OF_PIPE),
        );
        self.signal_semaphore_info_count = signals.len() as u32;
        self.p_signal_semaphore_infos = signals.as_ptr();
        // The vector's heap buffer does not move when the box takes it. The structs borrow nothing the
        // call does not outlive (the app's arrays), so their lifetime can be widened for the box.
        // SAFETY: same type but for the lifetime parameter.
        let signals: Vec<vk::SemaphoreSubmitInfo<'static>> =
            unsafe { std::mem::transmute(signals) };
        Some(Box::new(signals))
    }

    fn signal_array_without_count(&self) -> bool {
        self.signal_semaphore_info_count == 0 && !self.p_signal_semaphore_infos.is_null()
    }
}

/// The shared body of the submission hooks: snapshots the command buffers, adds the layer's timeline
/// signal to the last batch, calls down with `call`, records the submission, and notices a device loss.
/// A submission with no batch is passed as it is (adding a batch would change the app's batching).
#[allow(clippy::too_many_arguments)]
fn submit<B: Batch, F: Copy>(
    device: &Arc<Device>,
    command: &'static str,
    queue: vk::Queue,
    count: u32,
    batches: *const B,
    fence: vk::Fence,
    next: Option<F>,
    call: impl Fn(F, u32, *const B) -> vk::Result,
) -> vk::Result {
    let Some(next) = next else {
        return Fallback::fallback();
    };
    let state = device.queue(queue);
    // SAFETY: the app's array of `count` batches.
    let app = unsafe { slice(batches, count) };
    let gate = device.submit_gate.read();
    let prepared = crate::contained("tracking a submission", || {
        let state = state.as_ref()?;
        // SAFETY: the app's valid batches.
        let snap: Vec<Vec<Submitted>> = app
            .iter()
            .map(|b| snapshot(&unsafe { b.command_buffers() }))
            .collect();
        let seq = state.next_seq();
        let mut copies = app.to_vec();
        let keep = match (state.timeline, copies.last_mut()) {
            (Some(timeline), Some(last)) => {
                let added = if last.signal_array_without_count() {
                    None
                } else {
                    // SAFETY: a copy of the app's valid batch.
                    unsafe { last.add_signal(timeline, seq) }
                };
                added.or_else(|| {
                    // The app's batches go down as they are, and the layer's after them.
                    let (own, keep) = B::signal_only(timeline, seq)?;
                    copies.push(own);
                    Some(keep)
                })
            }
            _ => None,
        };
        Some((seq, snap, copies, keep))
    })
    .flatten();
    if let Some((_, snap, _, _)) = &prepared {
        // Zeroed by the host before the submission makes host writes visible: each execution starts
        // from clean marker words.
        crate::contained("clearing marker words", || {
            for s in snap.iter().flatten() {
                crate::command_buffer::for_each_execution(
                    &s.command_buffer,
                    s.log.as_ref(),
                    &mut |cb, log| cb.submitted(log),
                );
            }
        });
    }
    let result = match &prepared {
        // The app's batches, the last one with the layer's signal added.
        Some((_, _, copies, Some(_))) => call(next, copies.len() as u32, copies.as_ptr()),
        _ => call(next, count, batches),
    };
    if let (Some((seq, snap, _, keep)), Some(state)) = (prepared, &state) {
        drop(keep);
        let frame = device.frames.as_ref().map_or(0, |f| f.current());
        if result == vk::Result::SUCCESS {
            if let Some(frames) = &device.frames {
                crate::contained("noting a frame's submission", || {
                    frames.note_submission(state, seq, &snap)
                });
            }
        }
        let submission = Submission {
            seq,
            command,
            at: Instant::now(),
            at_wall: SystemTime::now(),
            batches: snap,
            fence,
            frame,
        };
        if result == vk::Result::SUCCESS {
            crate::contained("tracking a submission", || state.push(submission));
        } else {
            // Refused: nothing of it will run.
            submission.retire();
        }
    }
    drop(gate);
    device.check_lost(command, result);
    result
}
