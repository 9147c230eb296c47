//! Hooks dispatched on a device.

use ash::vk;

use super::entry;
use crate::registry::{self, dispatch_key, DEVICES};

/// `vkDestroyDevice`: forgets the device and calls down.
pub(super) unsafe extern "system" fn destroy_device(
    device: vk::Device,
    allocator: *const vk::AllocationCallbacks,
) {
    entry("vkDestroyDevice", (), || {
        // SAFETY: a valid (or null) device handle from the app.
        let Some(state) = DEVICES.remove(unsafe { dispatch_key(device) }) else {
            return;
        };
        // Waits for a watchdog check in progress on this device, and keeps it from starting another.
        *state.alive.write() = false;
        super::contained("freeing the layer's objects", || {
            // The app's work is finished (its contract); a driver's queue thread may still be retiring the
            // last batch, which signals the layer's semaphores. Idle first, then free.
            if let Some(wait) = state.next.device_wait_idle {
                // SAFETY: a live device about to be destroyed. A lost device answers with an error: nothing
                // to wait for then.
                let _ = unsafe { wait(device) };
            }
            crate::command_buffer::unregister_pool(&state, None);
            // SAFETY: the app must have finished all work on the device before destroying it.
            unsafe { state.destroy_own_objects() };
        });
        if let Some(destroy) = state.next.destroy_device {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { destroy(device, allocator) };
        }
        super::contained("stopping the watchdog", || {
            crate::watchdog::stop_if_unused();
            crate::signals::uninstall_if_unused();
        });
    })
}

/// `vkGetDeviceQueue`: calls down and notes the queue.
pub(super) unsafe extern "system" fn get_device_queue(
    device: vk::Device,
    family: u32,
    index: u32,
    out_queue: *mut vk::Queue,
) {
    entry("vkGetDeviceQueue", (), || {
        // SAFETY: a live device from the app.
        let Some(state) = (unsafe { registry::device_of(device) }) else {
            return;
        };
        let Some(get) = state.next.get_device_queue else {
            return;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        unsafe { get(device, family, index, out_queue) };
        // SAFETY: the driver wrote a queue handle (or null for invalid arguments).
        let queue = unsafe { *out_queue };
        if queue != vk::Queue::null() {
            state.note_queue(queue, family, index);
        }
    })
}

/// `vkGetDeviceQueue2`: calls down and notes the queue.
pub(super) unsafe extern "system" fn get_device_queue2(
    device: vk::Device,
    queue_info: *const vk::DeviceQueueInfo2,
    out_queue: *mut vk::Queue,
) {
    entry("vkGetDeviceQueue2", (), || {
        // SAFETY: a live device from the app.
        let Some(state) = (unsafe { registry::device_of(device) }) else {
            return;
        };
        let Some(get) = state.next.get_device_queue2 else {
            return;
        };
        // SAFETY: the app's arguments, forwarded as they came.
        unsafe { get(device, queue_info, out_queue) };
        // SAFETY: the app's valid queue info; the driver wrote a queue handle (or null).
        let (queue, info) = unsafe { (*out_queue, &*queue_info) };
        if queue != vk::Queue::null() {
            state.note_queue(queue, info.queue_family_index, info.queue_index);
        }
    })
}
