//! Per-object state, found from any dispatchable handle by its dispatch key.
//!
//! The loader stores its dispatch-table pointer in the first word of every dispatchable handle, and gives a
//! physical device its instance's table and a queue or command buffer its device's table. That word, the
//! dispatch key, therefore leads from any handle to the state of the instance or device that owns it.
//! Lookups take a read lock that is never held while calling down the chain.

use ash::vk;
use once_cell::sync::Lazy;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::Arc;

use crate::device::Device;
use crate::instance::Instance;

/// The dispatch key of a dispatchable handle.
///
/// # Safety
/// `handle` must be a valid dispatchable Vulkan handle created through the loader.
pub unsafe fn dispatch_key<H: vk::Handle>(handle: H) -> usize {
    let raw = handle.as_raw() as usize;
    if raw == 0 {
        return 0; // never a key: lookups of a null handle find nothing
    }
    // SAFETY: a dispatchable handle points to an object whose first word is the loader's dispatch pointer.
    unsafe { *(raw as *const usize) }
}

/// Objects of one kind by dispatch key.
pub struct Registry<T> {
    objects: RwLock<HashMap<usize, Arc<T>>>,
}

impl<T> Registry<T> {
    fn new() -> Self {
        Self {
            objects: RwLock::new(HashMap::new()),
        }
    }

    /// The object behind `key`, if Blackbox knows it.
    pub fn get(&self, key: usize) -> Option<Arc<T>> {
        self.objects.read().get(&key).cloned()
    }

    /// Records `object` under `key`, replacing what a destroyed object may have left there.
    pub fn insert(&self, key: usize, object: Arc<T>) {
        self.objects.write().insert(key, object);
    }

    /// Forgets the object behind `key` and hands it back.
    pub fn remove(&self, key: usize) -> Option<Arc<T>> {
        self.objects.write().remove(&key)
    }

    /// How many objects are known.
    pub fn len(&self) -> usize {
        self.objects.read().len()
    }

    /// Whether none is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every object, without blocking longer than `wait` (for the watchdog and signal handlers).
    pub fn all(&self, wait: std::time::Duration) -> Vec<Arc<T>> {
        self.objects
            .try_read_for(wait)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default()
    }
}

/// Instances, also reached from their physical devices.
pub static INSTANCES: Lazy<Registry<Instance>> = Lazy::new(Registry::new);
/// Devices, also reached from their queues and command buffers.
pub static DEVICES: Lazy<Registry<Device>> = Lazy::new(Registry::new);

/// The instance that owns `handle` (an instance or a physical device).
///
/// # Safety
/// As for [`dispatch_key`].
pub unsafe fn instance_of<H: vk::Handle>(handle: H) -> Option<Arc<Instance>> {
    // SAFETY: forwarded to the caller.
    INSTANCES.get(unsafe { dispatch_key(handle) })
}

/// The device that owns `handle` (a device, queue or command buffer).
///
/// # Safety
/// As for [`dispatch_key`].
pub unsafe fn device_of<H: vk::Handle>(handle: H) -> Option<Arc<Device>> {
    // SAFETY: forwarded to the caller.
    DEVICES.get(unsafe { dispatch_key(handle) })
}
