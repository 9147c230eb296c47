//! State kept per `VkDevice`.

use ash::vk;
use parking_lot::{Mutex, RwLock};
use std::sync::Arc;

use crate::breadcrumbs::Markers;
use crate::capabilities::Capabilities;
use crate::dispatch::DeviceDispatch;
use crate::ffi::loader::SetDeviceLoaderData;
use crate::ffi::RecordedDispatch;
use crate::instance::{DeviceDescription, Instance};

/// A queue the app got from the device.
#[derive(Debug, Clone, Copy)]
pub struct QueueInfo {
    /// The queue.
    pub handle: vk::Queue,
    /// Its family.
    pub family: u32,
    /// Its index in the family.
    pub index: u32,
}

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
    pub queues: Mutex<Vec<QueueInfo>>,
    /// The marker buffer, when breadcrumbs are on and it could be made; taken at `vkDestroyDevice`.
    pub markers: RwLock<Option<Markers>>,
}

impl Device {
    /// Records a queue the app retrieved (the same queue may be retrieved many times).
    pub fn note_queue(&self, handle: vk::Queue, family: u32, index: u32) {
        let mut queues = self.queues.lock();
        if !queues.iter().any(|q| q.handle == handle) {
            queues.push(QueueInfo { handle, family, index });
        }
    }
}
