//! The loader-layer interface (`vk_layer.h`), which ash does not carry.
//!
//! Only what Blackbox reads is declared: the negotiation struct and the create-info structs through which
//! the loader hands each layer the next link of the chain.

use ash::vk;
use std::ffi::{c_char, c_void};

/// `VkNegotiateLayerStructType::LAYER_NEGOTIATE_INTERFACE_STRUCT`.
pub const LAYER_NEGOTIATE_INTERFACE_STRUCT: u32 = 1;

/// The interface version Blackbox implements: the loader calls it through the pointers it is handed back.
pub const LAYER_INTERFACE_VERSION: u32 = 2;

/// `VkNegotiateLayerInterface`.
#[repr(C)]
pub struct NegotiateLayerInterface {
    pub s_type: u32,
    pub p_next: *mut c_void,
    pub loader_layer_interface_version: u32,
    pub pfn_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    pub pfn_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    pub pfn_get_physical_device_proc_addr: Option<GetPhysicalDeviceProcAddr>,
}

/// `PFN_GetPhysicalDeviceProcAddr`.
pub type GetPhysicalDeviceProcAddr =
    unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction;

/// `VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO`.
pub const LOADER_INSTANCE_CREATE_INFO: vk::StructureType = vk::StructureType::from_raw(47);
/// `VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO`.
pub const LOADER_DEVICE_CREATE_INFO: vk::StructureType = vk::StructureType::from_raw(48);

/// `VkLayerFunction::VK_LAYER_LINK_INFO`: the struct carries the next link of the chain.
pub const LAYER_LINK_INFO: u32 = 0;
/// `VkLayerFunction::VK_LOADER_DATA_CALLBACK`: the struct carries `pfnSet*LoaderData`.
pub const LOADER_DATA_CALLBACK: u32 = 1;

/// `VkLayerInstanceLink`.
#[repr(C)]
pub struct LayerInstanceLink {
    pub p_next: *mut LayerInstanceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_physical_device_proc_addr: Option<GetPhysicalDeviceProcAddr>,
}

/// `VkLayerDeviceLink`.
#[repr(C)]
pub struct LayerDeviceLink {
    pub p_next: *mut LayerDeviceLink,
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    pub pfn_next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
}

/// `PFN_vkSetDeviceLoaderData`: gives a dispatchable object the layer creates itself (a queue, a command
/// buffer) the loader's dispatch pointer.
pub type SetDeviceLoaderData = unsafe extern "system" fn(vk::Device, *mut c_void) -> vk::Result;

/// The union inside `VkLayerInstanceCreateInfo`; its largest member is two pointers.
#[repr(C)]
pub union LayerInstanceCreateInfoU {
    pub p_layer_info: *mut LayerInstanceLink,
    pub pfn_set_instance_loader_data: *const c_void,
    _size: [*const c_void; 2],
}

/// `VkLayerInstanceCreateInfo`.
#[repr(C)]
pub struct LayerInstanceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: u32,
    pub u: LayerInstanceCreateInfoU,
}

/// The union inside `VkLayerDeviceCreateInfo`.
#[repr(C)]
pub union LayerDeviceCreateInfoU {
    pub p_layer_info: *mut LayerDeviceLink,
    pub pfn_set_device_loader_data: Option<SetDeviceLoaderData>,
}

/// `VkLayerDeviceCreateInfo`.
#[repr(C)]
pub struct LayerDeviceCreateInfo {
    pub s_type: vk::StructureType,
    pub p_next: *const c_void,
    pub function: u32,
    pub u: LayerDeviceCreateInfoU,
}

/// Finds the loader's struct of type `s_type` carrying `function` in a create-info `pNext` chain.
///
/// # Safety
/// `p_next` must be a valid Vulkan `pNext` chain.
pub unsafe fn find_loader_info<T>(
    mut p_next: *const c_void,
    s_type: vk::StructureType,
    function: u32,
) -> *mut T {
    while !p_next.is_null() {
        // SAFETY: every struct in a pNext chain starts with sType and pNext (VkBaseInStructure); the loader's
        // structs also have `function` right after them, which we read only once sType says it is one.
        unsafe {
            let base = &*(p_next as *const vk::BaseInStructure);
            if base.s_type == s_type {
                let info = &*(p_next as *const LayerInstanceCreateInfo);
                if info.function == function {
                    return p_next as *mut T;
                }
            }
            p_next = base.p_next as *const c_void;
        }
    }
    std::ptr::null_mut()
}
