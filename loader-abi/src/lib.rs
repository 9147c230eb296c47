//! The Vulkan loader-layer interface: the part of `vk_layer.h` that ash does not carry.
//!
//! A layer and the loader talk through a few C structs that are not in `vk.xml`, so no binding generated
//! from it (ash included) declares them. They are specified by the Vulkan-Loader's
//! `docs/LoaderLayerInterface.md` ("Layer Version Negotiation", "Layer Dispatch Initialization") and
//! declared in `vk_layer.h`; this crate declares them once, `#[repr(C)]`, for every user in this workspace:
//! the Blackbox layer, the test-only fault layer and `blackbox doctor` (which negotiates with the layer the
//! way the loader does).
//!
//! - Negotiation: the layer's one export, `vkNegotiateLoaderLayerInterfaceVersion`, receives a
//!   [`NegotiateLayerInterface`] ([`LAYER_NEGOTIATE_INTERFACE_STRUCT`]) and answers
//!   [`LAYER_INTERFACE_VERSION`] with its `GetInstanceProcAddr`/`GetDeviceProcAddr`.
//! - The chain: `vkCreateInstance` and `vkCreateDevice` carry, in their `pNext` chains, a
//!   [`LayerInstanceCreateInfo`] / [`LayerDeviceCreateInfo`] ([`LOADER_INSTANCE_CREATE_INFO`],
//!   [`LOADER_DEVICE_CREATE_INFO`]). The one whose `function` is [`LAYER_LINK_INFO`] points at this layer's
//!   [`LayerInstanceLink`] / [`LayerDeviceLink`], the next layer's entry points; the layer advances it to
//!   `p_next` before calling down, so the next layer finds its own link. The device one whose `function` is
//!   [`LOADER_DATA_CALLBACK`] carries [`SetDeviceLoaderData`], for dispatchable objects a layer creates
//!   itself. [`find_loader_info`] walks a `pNext` chain to either.
//!
//! Only interface version 2 is declared: what these users implement.
#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

use ash::vk;
use std::ffi::{c_char, c_void};

/// `VkNegotiateLayerStructType::LAYER_NEGOTIATE_INTERFACE_STRUCT`: the `s_type` of a
/// [`NegotiateLayerInterface`].
pub const LAYER_NEGOTIATE_INTERFACE_STRUCT: u32 = 1;

/// The loader-layer interface version implemented here: the loader calls the layer through the pointers
/// the layer hands back in [`NegotiateLayerInterface`].
pub const LAYER_INTERFACE_VERSION: u32 = 2;

/// `VkNegotiateLayerInterface`: what the loader hands `vkNegotiateLoaderLayerInterfaceVersion`, filled in
/// by the layer.
#[repr(C)]
pub struct NegotiateLayerInterface {
    /// [`LAYER_NEGOTIATE_INTERFACE_STRUCT`].
    pub s_type: u32,
    /// Unused (null).
    pub p_next: *mut c_void,
    /// In: the highest version the loader supports; out: the version the layer implements.
    pub loader_layer_interface_version: u32,
    /// Out: the layer's `vkGetInstanceProcAddr`.
    pub pfn_get_instance_proc_addr: Option<vk::PFN_vkGetInstanceProcAddr>,
    /// Out: the layer's `vkGetDeviceProcAddr`.
    pub pfn_get_device_proc_addr: Option<vk::PFN_vkGetDeviceProcAddr>,
    /// Out: the layer's `vk_layerGetPhysicalDeviceProcAddr`, if it has one.
    pub pfn_get_physical_device_proc_addr: Option<GetPhysicalDeviceProcAddr>,
}

/// `PFN_GetPhysicalDeviceProcAddr`: resolves physical-device commands the loader does not know.
pub type GetPhysicalDeviceProcAddr =
    unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction;

/// `VK_STRUCTURE_TYPE_LOADER_INSTANCE_CREATE_INFO`: the `s_type` of a [`LayerInstanceCreateInfo`].
pub const LOADER_INSTANCE_CREATE_INFO: vk::StructureType = vk::StructureType::from_raw(47);
/// `VK_STRUCTURE_TYPE_LOADER_DEVICE_CREATE_INFO`: the `s_type` of a [`LayerDeviceCreateInfo`].
pub const LOADER_DEVICE_CREATE_INFO: vk::StructureType = vk::StructureType::from_raw(48);

/// `VkLayerFunction::VK_LAYER_LINK_INFO`: the struct carries the next link of the chain.
pub const LAYER_LINK_INFO: u32 = 0;
/// `VkLayerFunction::VK_LOADER_DATA_CALLBACK`: the struct carries `pfnSet*LoaderData`.
pub const LOADER_DATA_CALLBACK: u32 = 1;

/// `VkLayerInstanceLink`: one layer's view of the next element of the instance chain.
#[repr(C)]
pub struct LayerInstanceLink {
    /// The link of the layer after the next one: what the next layer must find.
    pub p_next: *mut LayerInstanceLink,
    /// The next element's `vkGetInstanceProcAddr`.
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    /// The next element's `vk_layerGetPhysicalDeviceProcAddr`, if it has one.
    pub pfn_next_get_physical_device_proc_addr: Option<GetPhysicalDeviceProcAddr>,
}

/// `VkLayerDeviceLink`: one layer's view of the next element of the device chain.
#[repr(C)]
pub struct LayerDeviceLink {
    /// The link of the layer after the next one: what the next layer must find.
    pub p_next: *mut LayerDeviceLink,
    /// The next element's `vkGetInstanceProcAddr`.
    pub pfn_next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    /// The next element's `vkGetDeviceProcAddr`.
    pub pfn_next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
}

/// `PFN_vkSetDeviceLoaderData`: gives a dispatchable object the layer creates itself (a queue, a command
/// buffer) the loader's dispatch pointer.
pub type SetDeviceLoaderData = unsafe extern "system" fn(vk::Device, *mut c_void) -> vk::Result;

/// The union inside [`LayerInstanceCreateInfo`]. Its largest member in `vk_layer.h` is a pair of function
/// pointers (`layerDevice`), so it is two pointers wide whatever member is used.
#[repr(C)]
pub union LayerInstanceCreateInfoU {
    /// With [`LAYER_LINK_INFO`]: this layer's link.
    pub p_layer_info: *mut LayerInstanceLink,
    /// With [`LOADER_DATA_CALLBACK`]: `PFN_vkSetInstanceLoaderData`.
    pub pfn_set_instance_loader_data: *const c_void,
    _size: [*const c_void; 2],
}

/// `VkLayerInstanceCreateInfo`, found in `VkInstanceCreateInfo::pNext`.
#[repr(C)]
pub struct LayerInstanceCreateInfo {
    /// [`LOADER_INSTANCE_CREATE_INFO`].
    pub s_type: vk::StructureType,
    /// The rest of the chain.
    pub p_next: *const c_void,
    /// `VkLayerFunction`: which member of `u` is set.
    pub function: u32,
    /// The member `function` names.
    pub u: LayerInstanceCreateInfoU,
}

/// The union inside [`LayerDeviceCreateInfo`].
#[repr(C)]
pub union LayerDeviceCreateInfoU {
    /// With [`LAYER_LINK_INFO`]: this layer's link.
    pub p_layer_info: *mut LayerDeviceLink,
    /// With [`LOADER_DATA_CALLBACK`]: `PFN_vkSetDeviceLoaderData`.
    pub pfn_set_device_loader_data: Option<SetDeviceLoaderData>,
    /// The loader's union also holds `layerDevice` (two function pointers, `VK_LOADER_LAYER_CREATE_DEVICE_CALLBACK`):
    /// the struct is copied whole by layers that copy a chain, so its size must be the loader's.
    _size: [*const c_void; 2],
}

/// `VkLayerDeviceCreateInfo`, found in `VkDeviceCreateInfo::pNext`.
#[repr(C)]
pub struct LayerDeviceCreateInfo {
    /// [`LOADER_DEVICE_CREATE_INFO`].
    pub s_type: vk::StructureType,
    /// The rest of the chain.
    pub p_next: *const c_void,
    /// `VkLayerFunction`: which member of `u` is set.
    pub function: u32,
    /// The member `function` names.
    pub u: LayerDeviceCreateInfoU,
}

/// Finds the loader's struct of type `s_type` carrying `function` in a create info's `pNext` chain; null if
/// there is none. `T` is [`LayerInstanceCreateInfo`] for [`LOADER_INSTANCE_CREATE_INFO`] and
/// [`LayerDeviceCreateInfo`] for [`LOADER_DEVICE_CREATE_INFO`].
///
/// The pointer is mutable because a layer advances the link it finds (the loader owns the struct and
/// expects that).
///
/// # Safety
/// `p_next` must be null or a valid Vulkan `pNext` chain (every element starting with `sType` and `pNext`,
/// the last `pNext` null), and `T` must be the struct `s_type` names.
pub unsafe fn find_loader_info<T>(
    mut p_next: *const c_void,
    s_type: vk::StructureType,
    function: u32,
) -> *mut T {
    while !p_next.is_null() {
        // SAFETY: every element of a valid pNext chain starts with sType and pNext (VkBaseInStructure).
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == s_type {
            // SAFETY: the sType is one of the loader's two, whose structs both have `function` right after
            // sType and pNext: reading it through the instance layout is reading the same field.
            let info = unsafe { &*(p_next as *const LayerInstanceCreateInfo) };
            if info.function == function {
                return p_next as *mut T;
            }
        }
        p_next = base.p_next as *const c_void;
    }
    std::ptr::null_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    unsafe extern "system" fn no_proc(_: vk::Instance, _: *const c_char) -> vk::PFN_vkVoidFunction {
        None
    }

    unsafe extern "system" fn no_device_proc(
        _: vk::Device,
        _: *const c_char,
    ) -> vk::PFN_vkVoidFunction {
        None
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn layouts_match_vk_layer_h() {
        // 64-bit offsets of vk_layer.h's structs, as a C compiler lays them out.
        assert_eq!(offset_of!(NegotiateLayerInterface, p_next), 8);
        assert_eq!(
            offset_of!(NegotiateLayerInterface, loader_layer_interface_version),
            16
        );
        assert_eq!(
            offset_of!(NegotiateLayerInterface, pfn_get_instance_proc_addr),
            24
        );
        assert_eq!(
            offset_of!(NegotiateLayerInterface, pfn_get_physical_device_proc_addr),
            40
        );
        assert_eq!(size_of::<NegotiateLayerInterface>(), 48);
        assert_eq!(offset_of!(LayerInstanceCreateInfo, function), 16);
        assert_eq!(offset_of!(LayerInstanceCreateInfo, u), 24);
        assert_eq!(size_of::<LayerInstanceCreateInfo>(), 40);
        assert_eq!(offset_of!(LayerDeviceCreateInfo, function), 16);
        assert_eq!(offset_of!(LayerDeviceCreateInfo, u), 24);
        assert_eq!(size_of::<LayerDeviceCreateInfo>(), 40);
        assert_eq!(size_of::<LayerInstanceLink>(), 24);
        assert_eq!(size_of::<LayerDeviceLink>(), 24);
    }

    #[test]
    fn finds_the_struct_with_the_right_type_and_function() {
        let mut next_link = LayerDeviceLink {
            p_next: std::ptr::null_mut(),
            pfn_next_get_instance_proc_addr: no_proc,
            pfn_next_get_device_proc_addr: no_device_proc,
        };
        let mut link = LayerDeviceLink {
            p_next: &mut next_link,
            pfn_next_get_instance_proc_addr: no_proc,
            pfn_next_get_device_proc_addr: no_device_proc,
        };
        // An app struct, then the loader's callback struct, then its link struct: the walk must skip the
        // first two.
        let link_info = LayerDeviceCreateInfo {
            s_type: LOADER_DEVICE_CREATE_INFO,
            p_next: std::ptr::null(),
            function: LAYER_LINK_INFO,
            u: LayerDeviceCreateInfoU {
                p_layer_info: &mut link,
            },
        };
        let callback_info = LayerDeviceCreateInfo {
            s_type: LOADER_DEVICE_CREATE_INFO,
            p_next: &link_info as *const _ as *const c_void,
            function: LOADER_DATA_CALLBACK,
            u: LayerDeviceCreateInfoU {
                pfn_set_device_loader_data: None,
            },
        };
        let features = vk::PhysicalDeviceFeatures2 {
            p_next: &callback_info as *const _ as *mut c_void,
            ..Default::default()
        };
        let chain = &features as *const _ as *const c_void;

        // SAFETY: a valid chain of the structs built above.
        let found: *mut LayerDeviceCreateInfo =
            unsafe { find_loader_info(chain, LOADER_DEVICE_CREATE_INFO, LAYER_LINK_INFO) };
        assert_eq!(
            found as *const LayerDeviceCreateInfo,
            &link_info as *const _
        );
        // SAFETY: `found` is `link_info`, alive here, and its union holds the link.
        let found_link = unsafe { (*found).u.p_layer_info };
        assert_eq!(found_link, &mut link as *mut _);

        // SAFETY: as above.
        let found: *mut LayerDeviceCreateInfo =
            unsafe { find_loader_info(chain, LOADER_DEVICE_CREATE_INFO, LOADER_DATA_CALLBACK) };
        assert_eq!(
            found as *const LayerDeviceCreateInfo,
            &callback_info as *const _
        );

        // SAFETY: as above.
        let found: *mut LayerInstanceCreateInfo =
            unsafe { find_loader_info(chain, LOADER_INSTANCE_CREATE_INFO, LAYER_LINK_INFO) };
        assert!(found.is_null(), "no instance struct in a device chain");
        // SAFETY: an empty chain.
        let found: *mut LayerInstanceCreateInfo = unsafe {
            find_loader_info(
                std::ptr::null(),
                LOADER_INSTANCE_CREATE_INFO,
                LAYER_LINK_INFO,
            )
        };
        assert!(found.is_null());
    }
}
