//! Hooks for submission, completion and presentation: where work is tracked, where finished work is
//! retired, and where `VK_ERROR_DEVICE_LOST` is noticed.

use ash::vk;
use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::{contained, entry, Hook};
use crate::command_buffer as cbs;
use crate::device::Device;
use crate::queue::{Queue, Submission, Submitted};
use crate::registry;

/// After any call that can report a device loss: writes the report once per device.
pub(crate) fn check_lost(device: &Arc<Device>, command: &'static str, result: vk::Result) {
    if result == vk::Result::ERROR_DEVICE_LOST {
        contained("reporting a device loss", || {
            crate::report::device_lost(device, command)
        });
    }
}

/// After a call that may have let work finish: retire it, drain shader errors.
fn after_progress(device: &Arc<Device>, command: &'static str) {
    contained("tracking completed work", || {
        if let Err(result) = device.poll_completion() {
            check_lost(device, command, result);
        }
        crate::shader_errors::drain(device);
    });
}

fn snapshot(handles: &[vk::CommandBuffer]) -> Vec<Submitted> {
    handles
        .iter()
        .filter_map(|&h| cbs::lookup(h))
        .map(|cb| Submitted {
            log: cb.last_log(),
            command_buffer: cb,
        })
        .collect()
}

/// The app's command buffers of a batch.
///
/// # Safety
/// `ptr` must point to `count` handles, or be null with `count` 0.
unsafe fn slice<'a, T>(ptr: *const T, count: u32) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: forwarded to the caller.
        unsafe { std::slice::from_raw_parts(ptr, count as usize) }
    }
}

/// Adds the layer's timeline signal to the last batch of a `VkSubmitInfo`/`VkBindSparseInfo` submission.
/// Keeps what it allocated alive and restores the app's structs when dropped.
struct TimelineSignal {
    semaphores: Vec<vk::Semaphore>,
    values: Vec<u64>,
    own_info: Box<vk::TimelineSemaphoreSubmitInfo<'static>>,
    restore: Option<(
        *mut vk::TimelineSemaphoreSubmitInfo<'static>,
        u32,
        *const u64,
    )>,
}

impl TimelineSignal {
    /// Prepares the signal for a batch with these signal semaphores and `pNext`; returns the new signal
    /// list and `pNext` to put in the batch's copy.
    ///
    /// # Safety
    /// The arguments come from a valid batch of the app's; the result must outlive the call down.
    unsafe fn new(
        signals: &[vk::Semaphore],
        p_next: *const c_void,
        timeline: vk::Semaphore,
        seq: u64,
    ) -> Box<Self> {
        let mut this = Box::new(TimelineSignal {
            semaphores: signals.iter().copied().chain([timeline]).collect(),
            values: Vec::new(),
            own_info: Box::default(),
            restore: None,
        });
        // SAFETY: the app's valid chain.
        match unsafe { crate::chain::find::<vk::TimelineSemaphoreSubmitInfo>(p_next) } {
            Some(app) => {
                // The app chained its own values: extend them for the duration of the call.
                // SAFETY: the app's valid struct.
                let (count, values) = unsafe {
                    (
                        (*app).signal_semaphore_value_count,
                        (*app).p_signal_semaphore_values,
                    )
                };
                this.values = (0..signals.len())
                    // SAFETY: the app gives a value per signal semaphore, or none.
                    .map(|i| {
                        if (i as u32) < count && !values.is_null() {
                            unsafe { *values.add(i) }
                        } else {
                            0
                        }
                    })
                    .chain([seq])
                    .collect();
                this.restore = Some((app, count, values));
                // SAFETY: as above; restored in Drop.
                unsafe {
                    (*app).signal_semaphore_value_count = this.values.len() as u32;
                    (*app).p_signal_semaphore_values = this.values.as_ptr();
                }
            }
            None => {
                this.values = signals.iter().map(|_| 0).chain([seq]).collect();
                this.own_info.signal_semaphore_value_count = this.values.len() as u32;
                this.own_info.p_signal_semaphore_values = this.values.as_ptr();
                this.own_info.p_next = p_next;
            }
        }
        this
    }

    /// The `pNext` the batch's copy gets.
    fn p_next(&self, app_p_next: *const c_void) -> *const c_void {
        if self.restore.is_some() {
            app_p_next
        } else {
            &*self.own_info as *const vk::TimelineSemaphoreSubmitInfo as *const c_void
        }
    }
}

impl Drop for TimelineSignal {
    fn drop(&mut self) {
        if let Some((app, count, values)) = self.restore {
            // SAFETY: the app's struct, still valid inside the hook.
            unsafe {
                (*app).signal_semaphore_value_count = count;
                (*app).p_signal_semaphore_values = values;
            }
        }
    }
}

/// Finds device and queue state for a queue hook.
fn queue_state(queue: vk::Queue) -> Option<(Arc<Device>, Option<Arc<Queue>>)> {
    // SAFETY: a valid queue from the app.
    let device = unsafe { registry::device_of(queue) }?;
    let state = device.queue(queue);
    Some((device, state))
}

/// A batch of a submission command: what the tracker reads from it and adds to it.
trait Batch: Copy {
    /// The app's command buffers in the batch.
    ///
    /// # Safety
    /// The batch must be the app's valid struct.
    unsafe fn command_buffers(&self) -> Vec<vk::CommandBuffer>;

    /// Adds a signal of the layer's `timeline` to `seq` to this copy of the batch. What it returns must
    /// outlive the call down (and restores any app struct it patched when dropped).
    ///
    /// # Safety
    /// As for [`Batch::command_buffers`].
    unsafe fn add_signal(&mut self, timeline: vk::Semaphore, seq: u64) -> Box<dyn std::any::Any>;
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
            ) -> Box<dyn std::any::Any> {
                // SAFETY: forwarded.
                let signals =
                    unsafe { slice(self.p_signal_semaphores, self.signal_semaphore_count) };
                // SAFETY: the batch's valid chain.
                let signal = unsafe { TimelineSignal::new(signals, self.p_next, timeline, seq) };
                self.signal_semaphore_count = signal.semaphores.len() as u32;
                self.p_signal_semaphores = signal.semaphores.as_ptr();
                self.p_next = signal.p_next(self.p_next);
                signal
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
        // SAFETY: forwarded.
        let infos = unsafe { slice(self.p_command_buffer_infos, self.command_buffer_info_count) };
        infos.iter().map(|i| i.command_buffer).collect()
    }

    unsafe fn add_signal(&mut self, timeline: vk::Semaphore, seq: u64) -> Box<dyn std::any::Any> {
        // SAFETY: forwarded.
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
                .stage_mask(vk::PipelineStageFlags2::ALL_COMMANDS),
        );
        self.signal_semaphore_info_count = signals.len() as u32;
        self.p_signal_semaphore_infos = signals.as_ptr();
        // The vector's heap buffer does not move when the box takes it. The structs borrow nothing the
        // call does not outlive (the app's arrays), so their lifetime can be widened for the box.
        // SAFETY: same type but for the lifetime parameter.
        let signals: Vec<vk::SemaphoreSubmitInfo<'static>> =
            unsafe { std::mem::transmute(signals) };
        Box::new(signals)
    }
}

/// The shared body of the submission hooks: snapshots the command buffers, adds the layer's timeline
/// signal to the last batch, calls down with `call`, records the submission, and notices a device loss.
/// A submission with no batch is passed as it is (adding a batch would change the app's batching).
fn submit<B: Batch, F: Copy>(
    command: &'static str,
    queue: vk::Queue,
    count: u32,
    batches: *const B,
    fence: vk::Fence,
    pick: fn(&crate::dispatch::DeviceDispatch) -> Option<F>,
    call: impl Fn(F, u32, *const B) -> vk::Result,
) -> vk::Result {
    let Some((device, state)) = queue_state(queue) else {
        return vk::Result::ERROR_UNKNOWN;
    };
    let Some(next) = pick(&device.next) else {
        return vk::Result::ERROR_UNKNOWN;
    };
    // SAFETY: the app's array of `count` batches.
    let app = unsafe { slice(batches, count) };
    let gate = device.submit_gate.read();
    let prepared = contained("tracking a submission", || {
        let state = state.as_ref()?;
        // SAFETY: the app's valid batches.
        let snap: Vec<Vec<Submitted>> = app
            .iter()
            .map(|b| snapshot(&unsafe { b.command_buffers() }))
            .collect();
        let seq = state.next_seq();
        let mut copies = app.to_vec();
        let keep = match (state.timeline, copies.last_mut()) {
            // SAFETY: a copy of the app's valid batch.
            (Some(timeline), Some(last)) => Some(unsafe { last.add_signal(timeline, seq) }),
            _ => None,
        };
        Some((seq, snap, copies, keep))
    })
    .flatten();
    let result = match &prepared {
        // The app's batches, the last one with the layer's signal added.
        Some((_, _, copies, Some(_))) => call(next, copies.len() as u32, copies.as_ptr()),
        _ => call(next, count, batches),
    };
    if let (Some((seq, snap, _, keep)), Some(state)) = (prepared, &state) {
        drop(keep);
        if result == vk::Result::SUCCESS {
            contained("tracking a submission", || {
                state.push(Submission {
                    seq,
                    command,
                    at: Instant::now(),
                    at_wall: SystemTime::now(),
                    batches: snap,
                    fence,
                })
            });
        }
    }
    drop(gate);
    check_lost(&device, command, result);
    result
}

pub(super) unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo,
    fence: vk::Fence,
) -> vk::Result {
    entry("vkQueueSubmit", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: the app's queue and fence with the app's batches (or their patched copies).
        submit(
            "vkQueueSubmit",
            queue,
            count,
            submits,
            fence,
            |d| d.queue_submit,
            |next, n, b| unsafe { next(queue, n, b, fence) },
        )
    })
}

pub(super) unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2,
    fence: vk::Fence,
) -> vk::Result {
    entry("vkQueueSubmit2", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: as for vkQueueSubmit.
        submit(
            "vkQueueSubmit2",
            queue,
            count,
            submits,
            fence,
            |d| d.queue_submit2,
            |next, n, b| unsafe { next(queue, n, b, fence) },
        )
    })
}

pub(super) unsafe extern "system" fn queue_bind_sparse(
    queue: vk::Queue,
    count: u32,
    infos: *const vk::BindSparseInfo,
    fence: vk::Fence,
) -> vk::Result {
    entry("vkQueueBindSparse", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: as for vkQueueSubmit.
        submit(
            "vkQueueBindSparse",
            queue,
            count,
            infos,
            fence,
            |d| d.queue_bind_sparse,
            |next, n, b| unsafe { next(queue, n, b, fence) },
        )
    })
}

pub(super) unsafe extern "system" fn queue_present_khr(
    queue: vk::Queue,
    info: *const vk::PresentInfoKHR,
) -> vk::Result {
    entry("vkQueuePresentKHR", vk::Result::ERROR_UNKNOWN, || {
        let Some((device, _)) = queue_state(queue) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = device.next.queue_present_khr else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(queue, info) };
        check_lost(&device, "vkQueuePresentKHR", result);
        contained("counting a frame", || {
            crate::shader_errors::end_frame(&device)
        });
        after_progress(&device, "vkQueuePresentKHR");
        result
    })
}

pub(super) unsafe extern "system" fn queue_wait_idle(queue: vk::Queue) -> vk::Result {
    entry("vkQueueWaitIdle", vk::Result::ERROR_UNKNOWN, || {
        let Some((device, state)) = queue_state(queue) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = device.next.queue_wait_idle else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(queue) };
        if result == vk::Result::SUCCESS {
            if let Some(state) = state {
                contained("retiring a queue's work", || state.complete_all());
            }
        }
        check_lost(&device, "vkQueueWaitIdle", result);
        after_progress(&device, "vkQueueWaitIdle");
        result
    })
}

pub(super) unsafe extern "system" fn device_wait_idle(device: vk::Device) -> vk::Result {
    entry("vkDeviceWaitIdle", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.device_wait_idle else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device) };
        if result == vk::Result::SUCCESS {
            contained("retiring the device's work", || {
                dev.queues.read().iter().for_each(|q| q.complete_all())
            });
        }
        check_lost(&dev, "vkDeviceWaitIdle", result);
        after_progress(&dev, "vkDeviceWaitIdle");
        result
    })
}

pub(super) unsafe extern "system" fn wait_for_fences(
    device: vk::Device,
    count: u32,
    fences: *const vk::Fence,
    wait_all: vk::Bool32,
    timeout: u64,
) -> vk::Result {
    entry("vkWaitForFences", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.wait_for_fences else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, count, fences, wait_all, timeout) };
        if result == vk::Result::SUCCESS && (wait_all == vk::TRUE || count == 1) {
            contained("retiring fenced work", || {
                // SAFETY: the app's array of `count` fences.
                for &fence in unsafe { slice(fences, count) } {
                    dev.queues
                        .read()
                        .iter()
                        .for_each(|q| q.complete_fence(fence));
                }
            });
        }
        check_lost(&dev, "vkWaitForFences", result);
        after_progress(&dev, "vkWaitForFences");
        result
    })
}

pub(super) unsafe extern "system" fn get_fence_status(
    device: vk::Device,
    fence: vk::Fence,
) -> vk::Result {
    entry("vkGetFenceStatus", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.get_fence_status else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, fence) };
        if result == vk::Result::SUCCESS {
            contained("retiring fenced work", || {
                dev.queues
                    .read()
                    .iter()
                    .for_each(|q| q.complete_fence(fence))
            });
            after_progress(&dev, "vkGetFenceStatus");
        }
        check_lost(&dev, "vkGetFenceStatus", result);
        result
    })
}

pub(super) unsafe extern "system" fn wait_semaphores(
    device: vk::Device,
    info: *const vk::SemaphoreWaitInfo,
    timeout: u64,
) -> vk::Result {
    entry("vkWaitSemaphores", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.wait_semaphores else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, info, timeout) };
        check_lost(&dev, "vkWaitSemaphores", result);
        after_progress(&dev, "vkWaitSemaphores");
        result
    })
}

pub(super) unsafe extern "system" fn get_semaphore_counter_value(
    device: vk::Device,
    semaphore: vk::Semaphore,
    value: *mut u64,
) -> vk::Result {
    entry(
        "vkGetSemaphoreCounterValue",
        vk::Result::ERROR_UNKNOWN,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_UNKNOWN;
            };
            let Some(next) = dev.next.get_semaphore_counter_value else {
                return vk::Result::ERROR_UNKNOWN;
            };
            // SAFETY: the app's arguments, forwarded as they came.
            let result = unsafe { next(device, semaphore, value) };
            check_lost(&dev, "vkGetSemaphoreCounterValue", result);
            result
        },
    )
}

pub(super) unsafe extern "system" fn acquire_next_image_khr(
    device: vk::Device,
    swapchain: vk::SwapchainKHR,
    timeout: u64,
    semaphore: vk::Semaphore,
    fence: vk::Fence,
    index: *mut u32,
) -> vk::Result {
    entry("vkAcquireNextImageKHR", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.acquire_next_image_khr else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, swapchain, timeout, semaphore, fence, index) };
        check_lost(&dev, "vkAcquireNextImageKHR", result);
        result
    })
}

pub(super) unsafe extern "system" fn get_query_pool_results(
    device: vk::Device,
    pool: vk::QueryPool,
    first: u32,
    count: u32,
    size: usize,
    data: *mut c_void,
    stride: vk::DeviceSize,
    flags: vk::QueryResultFlags,
) -> vk::Result {
    entry("vkGetQueryPoolResults", vk::Result::ERROR_UNKNOWN, || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return vk::Result::ERROR_UNKNOWN;
        };
        let Some(next) = dev.next.get_query_pool_results else {
            return vk::Result::ERROR_UNKNOWN;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        let result = unsafe { next(device, pool, first, count, size, data, stride, flags) };
        check_lost(&dev, "vkGetQueryPoolResults", result);
        result
    })
}

pub(super) unsafe extern "system" fn set_debug_utils_object_name_ext(
    device: vk::Device,
    info: *const vk::DebugUtilsObjectNameInfoEXT,
) -> vk::Result {
    entry(
        "vkSetDebugUtilsObjectNameEXT",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let Some(next) = dev.next.set_debug_utils_object_name_ext else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            contained("noting an object name", || {
                // SAFETY: the app's valid name info.
                let info = unsafe { &*info };
                let mut names = dev.names.lock();
                if info.p_object_name.is_null() {
                    names.remove(&info.object_handle);
                } else {
                    // SAFETY: a NUL-terminated name.
                    let name = unsafe { std::ffi::CStr::from_ptr(info.p_object_name) }
                        .to_string_lossy()
                        .into_owned();
                    names.insert(info.object_handle, name);
                }
            });
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(device, info) }
        },
    )
}

/// The hooks of this file.
pub(super) const HOOKS: &[Hook] = &[
    hook!(Device, c"vkQueueSubmit", queue_submit as PFN_vkQueueSubmit),
    hook!(
        Device,
        c"vkQueueSubmit2",
        queue_submit2 as PFN_vkQueueSubmit2
    ),
    hook!(
        Device,
        c"vkQueueSubmit2KHR",
        queue_submit2 as PFN_vkQueueSubmit2
    ),
    hook!(
        Device,
        c"vkQueueBindSparse",
        queue_bind_sparse as PFN_vkQueueBindSparse
    ),
    hook!(
        Device,
        c"vkQueuePresentKHR",
        queue_present_khr as PFN_vkQueuePresentKHR
    ),
    hook!(
        Device,
        c"vkQueueWaitIdle",
        queue_wait_idle as PFN_vkQueueWaitIdle
    ),
    hook!(
        Device,
        c"vkDeviceWaitIdle",
        device_wait_idle as PFN_vkDeviceWaitIdle
    ),
    hook!(
        Device,
        c"vkWaitForFences",
        wait_for_fences as PFN_vkWaitForFences
    ),
    hook!(
        Device,
        c"vkGetFenceStatus",
        get_fence_status as PFN_vkGetFenceStatus
    ),
    hook!(
        Device,
        c"vkWaitSemaphores",
        wait_semaphores as PFN_vkWaitSemaphores
    ),
    hook!(
        Device,
        c"vkWaitSemaphoresKHR",
        wait_semaphores as PFN_vkWaitSemaphores
    ),
    hook!(
        Device,
        c"vkGetSemaphoreCounterValue",
        get_semaphore_counter_value as PFN_vkGetSemaphoreCounterValue
    ),
    hook!(
        Device,
        c"vkGetSemaphoreCounterValueKHR",
        get_semaphore_counter_value as PFN_vkGetSemaphoreCounterValue
    ),
    hook!(
        Device,
        c"vkAcquireNextImageKHR",
        acquire_next_image_khr as PFN_vkAcquireNextImageKHR
    ),
    hook!(
        Device,
        c"vkGetQueryPoolResults",
        get_query_pool_results as PFN_vkGetQueryPoolResults
    ),
    hook!(
        Device,
        c"vkSetDebugUtilsObjectNameEXT",
        set_debug_utils_object_name_ext as PFN_vkSetDebugUtilsObjectNameEXT
    ),
];
