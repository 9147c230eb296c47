//! State kept per `VkDevice`.

use ash::vk;
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::breadcrumbs::Markers;
use crate::capabilities::Capabilities;
use crate::dispatch::DeviceDispatch;
use crate::ffi::loader::SetDeviceLoaderData;
use crate::ffi::RecordedDispatch;
use crate::instance::{DeviceDescription, Instance};
use crate::queue::Queue;

/// A device the layer sits in.
pub struct Device {
    /// The app's handle.
    pub handle: vk::Device,
    /// The physical device it was created on.
    pub physical_device: vk::PhysicalDevice,
    /// Its instance.
    pub instance: Arc<Instance>,
    /// The next layer's `vkGetDeviceProcAddr`.
    pub next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
    /// The next layer's commands Blackbox calls itself.
    pub next: DeviceDispatch,
    /// The next layer's recorded commands, which Blackbox logs.
    pub recorded: RecordedDispatch,
    /// Gives dispatchable objects the layer creates itself the loader's dispatch pointer.
    pub set_loader_data: Option<SetDeviceLoaderData>,
    /// Name, driver and version, for the log and the reports.
    pub description: DeviceDescription,
    /// What Blackbox enabled and can use on this device.
    pub capabilities: Capabilities,
    /// The queues the app has retrieved.
    pub queues: RwLock<Vec<Arc<Queue>>>,
    /// The marker buffer, when breadcrumbs are on and it could be made; taken at `vkDestroyDevice`.
    pub markers: RwLock<Option<Markers>>,
    /// The error buffer shaders write, when instrumentation is on and the device allows it.
    pub error_buffer: RwLock<Option<crate::shader_errors::ErrorBuffer>>,
    /// A device-lost report was written: one per device.
    pub lost: AtomicBool,
    /// False once `vkDestroyDevice` began. The watchdog holds the read lock while it calls into the driver
    /// for this device, so destruction waits for it and it never touches a destroyed device.
    pub alive: RwLock<bool>,
    /// The app's shader modules and pipelines.
    pub shaders: crate::shaders::Registry,
    /// Debug names the app gave objects of this device, by handle.
    pub names: Mutex<std::collections::HashMap<u64, String>>,
    /// Held (shared) by every submission from just before it goes down the chain until it is tracked as
    /// pending, and (exclusive) by the error buffer's reset: "nothing pending" then stays true until the
    /// reset is done, so no shader can count into the buffer while it is zeroed.
    pub submit_gate: RwLock<()>,
}

impl Device {
    /// The queue behind `handle`, made known on first sight (with its timeline semaphore).
    pub fn note_queue(&self, handle: vk::Queue, family: u32, index: u32) -> Arc<Queue> {
        if let Some(q) = self.queue(handle) {
            return q;
        }
        let timeline = if self.capabilities.timeline_semaphore {
            self.create_timeline()
        } else {
            None
        };
        let mut queues = self.queues.write();
        if let Some(q) = queues.iter().find(|q| q.handle == handle) {
            // Another thread got there first.
            if let (Some(s), Some(destroy)) = (timeline, self.next.destroy_semaphore) {
                // SAFETY: our own unused semaphore.
                unsafe { destroy(self.handle, s, std::ptr::null()) };
            }
            return q.clone();
        }
        let queue = Arc::new(Queue::new(handle, family, index, timeline));
        queues.push(queue.clone());
        queue
    }

    /// The known queue behind `handle`.
    pub fn queue(&self, handle: vk::Queue) -> Option<Arc<Queue>> {
        self.queues
            .read()
            .iter()
            .find(|q| q.handle == handle)
            .cloned()
    }

    fn create_timeline(&self) -> Option<vk::Semaphore> {
        let create = self.next.create_semaphore?;
        let mut kind =
            vk::SemaphoreTypeCreateInfo::default().semaphore_type(vk::SemaphoreType::TIMELINE);
        let info = vk::SemaphoreCreateInfo::default().push_next(&mut kind);
        let mut semaphore = vk::Semaphore::null();
        // SAFETY: a live device with timelineSemaphore enabled; valid create info.
        let result = unsafe { create(self.handle, &info, std::ptr::null(), &mut semaphore) };
        if result != vk::Result::SUCCESS {
            warn!("cannot create a timeline semaphore for submission tracking ({result:?}); completion is learnt from the app's waits");
            return None;
        }
        Some(semaphore)
    }

    /// Reads every queue's timeline and retires finished submissions. Safe from any thread.
    pub fn poll_completion(&self) -> Result<(), vk::Result> {
        let Some(get) = self.next.get_semaphore_counter_value else {
            return Ok(());
        };
        let queues = self.queues.read().clone();
        for queue in queues {
            let Some(timeline) = queue.timeline else {
                continue;
            };
            let mut value = 0u64;
            // SAFETY: our own live semaphore; the query needs no external synchronization.
            let result = unsafe { get(self.handle, timeline, &mut value) };
            if result != vk::Result::SUCCESS {
                return Err(result);
            }
            queue.complete_up_to(value);
        }
        Ok(())
    }

    /// As [`Device::poll_completion`], with every lock waited for at most `wait`: for reports, which can be
    /// built while another thread holds one, or in a signal handler that interrupted its holder. False when
    /// some queue could not be polled for its lock.
    pub fn try_poll_completion(&self, wait: Duration) -> Result<bool, vk::Result> {
        let Some(get) = self.next.get_semaphore_counter_value else {
            return Ok(true);
        };
        let Some(queues) = self.queues.try_read_for(wait).map(|q| q.clone()) else {
            return Ok(false);
        };
        let mut all = true;
        for queue in queues {
            let Some(timeline) = queue.timeline else {
                continue;
            };
            let mut value = 0u64;
            // SAFETY: our own live semaphore; the query needs no external synchronization.
            let result = unsafe { get(self.handle, timeline, &mut value) };
            if result != vk::Result::SUCCESS {
                return Err(result);
            }
            // Queue::complete_up_to's rule, under a lock taken with a timeout.
            let Some(mut tracker) = queue.tracker.try_lock_for(wait) else {
                all = false;
                continue;
            };
            if value > tracker.completed {
                tracker.completed = value;
                while tracker.pending.front().is_some_and(|s| s.seq <= value) {
                    tracker.last_finished = tracker.pending.pop_front();
                }
            }
        }
        Ok(all)
    }

    /// Whether any queue has work not known to be finished.
    pub fn has_pending(&self) -> bool {
        self.queues.read().iter().any(|q| q.has_pending())
    }

    /// The debug name of an object, if the app gave one.
    pub fn name_of(&self, handle: u64) -> Option<String> {
        self.names.lock().get(&handle).cloned()
    }

    /// Frees what the layer created on this device.
    ///
    /// # Safety
    /// The device must be idle or lost, about to be destroyed.
    pub unsafe fn destroy_own_objects(&self) {
        if let Some(destroy) = self.next.destroy_semaphore {
            for q in self.queues.read().iter() {
                if let Some(s) = q.timeline {
                    // SAFETY: our own semaphore, no longer used by pending work.
                    unsafe { destroy(self.handle, s, std::ptr::null()) };
                }
            }
        }
        if let Some(mut eb) = self.error_buffer.write().take() {
            // SAFETY: no pending work (the caller's contract).
            unsafe { eb.destroy(self) };
        }
        if let Some(mut markers) = self.markers.write().take() {
            // SAFETY: no pending work (the caller's contract).
            unsafe { markers.buffer.destroy(self.handle, &self.next) };
        }
    }

    /// Marks the device lost; true the first time, so one report is written per device.
    pub fn mark_lost(&self) -> bool {
        !self.lost.swap(true, Ordering::AcqRel)
    }
}
