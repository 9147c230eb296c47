//! The loader's protocol for creating and destroying instances and devices: find the next link of the
//! chain in the create info, advance it for the next layer, and hand the rest to [`crate::instance`] and
//! [`crate::device`], which decide what Blackbox does with the new object.

use ash::vk;

use super::{loader, trampoline};
use crate::device::{self, NextLink};
use crate::instance;
use crate::registry::{self, dispatch_key, DEVICES, INSTANCES};

/// `vkCreateInstance`: takes the next link from the loader's chain info, then creates the instance.
pub(crate) unsafe extern "system" fn create_instance(
    create_info: *const vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out_instance: *mut vk::Instance,
) -> vk::Result {
    trampoline("vkCreateInstance", || {
        // SAFETY: the loader passes the app's valid create info.
        let info = unsafe { create_info.as_ref() }?;
        // SAFETY: a valid pNext chain.
        let chain: *mut loader::LayerInstanceCreateInfo = unsafe {
            loader::find_loader_info(
                info.p_next,
                loader::LOADER_INSTANCE_CREATE_INFO,
                loader::LAYER_LINK_INFO,
            )
        };
        // SAFETY: the loader's link info and its current link are valid during this call.
        let link = unsafe { chain.as_mut()?.u.p_layer_info.as_ref() }?;
        let next_gipa = link.pfn_next_get_instance_proc_addr;
        // SAFETY: the next layer resolves global commands with a null instance.
        let next_create = unsafe { next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) }?;
        // SAFETY: the command named vkCreateInstance has this type.
        let next_create: vk::PFN_vkCreateInstance = unsafe { std::mem::transmute(next_create) };
        // The next layer finds its own link after ours (the loader's protocol: its struct, advanced in place).
        // SAFETY: `chain` is non-null (checked above) and the loader's to modify.
        unsafe { (*chain).u.p_layer_info = link.p_next };
        // SAFETY: the app's arguments and the next layer's commands.
        Some(unsafe { instance::create(next_gipa, next_create, info, allocator, out_instance) })
    })
}

/// `vkDestroyInstance`: forgets the instance, then destroys it.
pub(crate) unsafe extern "system" fn destroy_instance(
    instance: vk::Instance,
    allocator: *const vk::AllocationCallbacks,
) {
    trampoline("vkDestroyInstance", || {
        // SAFETY: a valid (or null) instance handle from the app.
        let state = INSTANCES.remove(unsafe { dispatch_key(instance) })?;
        // SAFETY: the app's arguments.
        unsafe { state.destroy(instance, allocator) };
        Some(())
    })
}

/// `vkCreateDevice`: takes the next link and the loader-data callback from the loader's chain info, then
/// creates the device.
pub(crate) unsafe extern "system" fn create_device(
    physical_device: vk::PhysicalDevice,
    create_info: *const vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out_device: *mut vk::Device,
) -> vk::Result {
    trampoline("vkCreateDevice", || {
        // SAFETY: a physical device of a live instance, passed by the app.
        let instance = unsafe { registry::instance_of(physical_device) }?;
        // SAFETY: the loader passes the app's valid create info.
        let info = unsafe { create_info.as_ref() }?;
        // SAFETY: a valid pNext chain.
        let chain: *mut loader::LayerDeviceCreateInfo = unsafe {
            loader::find_loader_info(
                info.p_next,
                loader::LOADER_DEVICE_CREATE_INFO,
                loader::LAYER_LINK_INFO,
            )
        };
        // SAFETY: the loader-data struct, when present, is the loader's valid struct carrying the callback.
        let set_loader_data = unsafe {
            let data: *mut loader::LayerDeviceCreateInfo = loader::find_loader_info(
                info.p_next,
                loader::LOADER_DEVICE_CREATE_INFO,
                loader::LOADER_DATA_CALLBACK,
            );
            data.as_ref().and_then(|d| d.u.pfn_set_device_loader_data)
        };
        // SAFETY: the loader's link info and its current link are valid during this call.
        let link = unsafe { chain.as_mut()?.u.p_layer_info.as_ref() }?;
        let next = NextLink {
            get_instance_proc_addr: link.pfn_next_get_instance_proc_addr,
            get_device_proc_addr: link.pfn_next_get_device_proc_addr,
            set_loader_data,
        };
        // SAFETY: the next layer resolves instance commands for its live instance.
        let next_create =
            unsafe { (next.get_instance_proc_addr)(instance.handle, c"vkCreateDevice".as_ptr()) }?;
        // SAFETY: the command named vkCreateDevice has this type.
        let next_create: vk::PFN_vkCreateDevice = unsafe { std::mem::transmute(next_create) };
        // SAFETY: `chain` is non-null (checked above) and the loader's to modify.
        unsafe { (*chain).u.p_layer_info = link.p_next };
        // SAFETY: the app's arguments and the next layer's commands.
        Some(unsafe {
            device::create(
                &instance,
                physical_device,
                info,
                allocator,
                out_device,
                next_create,
                next,
            )
        })
    })
}

/// `vkDestroyDevice`: forgets the device, then destroys it.
pub(crate) unsafe extern "system" fn destroy_device(
    device: vk::Device,
    allocator: *const vk::AllocationCallbacks,
) {
    trampoline("vkDestroyDevice", || {
        // SAFETY: a valid (or null) device handle from the app.
        let state = DEVICES.remove(unsafe { dispatch_key(device) })?;
        // SAFETY: the app's arguments; the app has finished all work on the device (its contract).
        unsafe { state.destroy(device, allocator) };
        Some(())
    })
}
