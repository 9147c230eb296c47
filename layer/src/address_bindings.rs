//! Where device memory was bound, from `VK_EXT_device_address_binding_report`, to name the resource at or
//! near a faulting address. (Recording the bindings needs a debug-utils messenger of the layer's own, made
//! only where the app enabled `VK_EXT_debug_utils` and the device has the extension.)

use crate::device::Device;

/// The resource bound at or nearest below `address`, if bindings were recorded.
pub fn near(_device: &Device, _address: u64) -> Option<String> {
    None
}
