//! Dispatch tables: the next layer's commands that Blackbox calls itself.
//!
//! Commands Blackbox does not intercept never pass through these tables: `vkGet*ProcAddr` hands the app the
//! next layer's pointer directly. Every entry is an `Option` because a command the driver lacks must stay
//! absent (ash's own loaders fill gaps with stubs that panic).

use ash::vk;
use std::ffi::CStr;

/// Declares a table of optional commands and its loader.
macro_rules! dispatch_table {
    ($(#[$meta:meta])* pub struct $name:ident { $($field:ident: $pfn:ident = $cname:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        pub struct $name {
            $(pub $field: Option<vk::$pfn>,)*
        }

        impl $name {
            /// Resolves every command through `load` (the next layer's `vkGet*ProcAddr`).
            pub fn load(mut load: impl FnMut(&CStr) -> vk::PFN_vkVoidFunction) -> Self {
                Self {
                    $($field: load($cname).map(|f| {
                        // SAFETY: the loader returns the command named `$cname`, whose type is `$pfn`.
                        unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::$pfn>(f) }
                    }),)*
                }
            }
        }
    };
}

dispatch_table! {
    /// Instance-level commands of the next layer.
    pub struct InstanceDispatch {
        destroy_instance: PFN_vkDestroyInstance = c"vkDestroyInstance",
        get_physical_device_properties: PFN_vkGetPhysicalDeviceProperties = c"vkGetPhysicalDeviceProperties",
        get_physical_device_properties2: PFN_vkGetPhysicalDeviceProperties2 = c"vkGetPhysicalDeviceProperties2",
        get_physical_device_memory_properties: PFN_vkGetPhysicalDeviceMemoryProperties =
            c"vkGetPhysicalDeviceMemoryProperties",
        enumerate_device_extension_properties: PFN_vkEnumerateDeviceExtensionProperties =
            c"vkEnumerateDeviceExtensionProperties",
    }
}

dispatch_table! {
    /// Device-level commands of the next layer.
    pub struct DeviceDispatch {
        destroy_device: PFN_vkDestroyDevice = c"vkDestroyDevice",
        get_device_queue: PFN_vkGetDeviceQueue = c"vkGetDeviceQueue",
        get_device_queue2: PFN_vkGetDeviceQueue2 = c"vkGetDeviceQueue2",
    }
}
