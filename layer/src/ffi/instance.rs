//! Hooks dispatched on an instance: creating and destroying it, and creating devices.

use ash::vk;
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use super::loader::{self, LayerDeviceCreateInfo, LayerInstanceCreateInfo};
use super::{contained, entry};
use crate::breadcrumbs::{MarkerPath, Markers};
use crate::capabilities::{Capabilities, DeviceCreatePatch, Wanted};
use crate::config::Breadcrumbs;
use crate::device::Device;
use crate::dispatch::DeviceDispatch;
use crate::instance::{version_string, Instance};
use crate::memory::HostBuffer;
use crate::registry::{self, dispatch_key, INSTANCES};

/// `vkCreateInstance`: takes the next link from the loader's chain info, calls down, and records the instance.
pub(super) unsafe extern "system" fn create_instance(
    create_info: *const vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out_instance: *mut vk::Instance,
) -> vk::Result {
    entry(
        "vkCreateInstance",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            // SAFETY: the loader passes the app's valid create info.
            let Some(info) = (unsafe { create_info.as_ref() }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: a valid pNext chain.
            let chain: *mut LayerInstanceCreateInfo = unsafe {
                loader::find_loader_info(
                    info.p_next,
                    loader::LOADER_INSTANCE_CREATE_INFO,
                    loader::LAYER_LINK_INFO,
                )
            };
            // SAFETY: the loader's link info and its current link are valid during this call.
            let Some(link) = (unsafe { chain.as_mut().and_then(|c| c.u.p_layer_info.as_ref()) })
            else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let next_gipa = link.pfn_next_get_instance_proc_addr;
            // SAFETY: the next layer resolves global commands with a null instance.
            let Some(next_create) =
                (unsafe { next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr()) })
            else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the command named vkCreateInstance has this type.
            let next_create: vk::PFN_vkCreateInstance = unsafe { std::mem::transmute(next_create) };
            // The next layer finds its own link after ours.
            // SAFETY: `chain` is non-null (checked above) and the loader's to modify.
            unsafe { (*chain).u.p_layer_info = link.p_next };

            contained("reading VK_BLACKBOX_* settings", crate::config);

            // The layer asks the driver for Vulkan 1.1/1.2 properties and features (driver name, buffer device
            // address, timeline semaphores), which an instance created for 1.0 does not allow: ask for 1.2 at
            // least. An app written for 1.0 sees no difference.
            let mut patched = *info;
            // SAFETY: the app's optional application info.
            let mut app_info = unsafe { info.p_application_info.as_ref() }
                .copied()
                .unwrap_or_default();
            let raised = app_info.api_version < vk::API_VERSION_1_2;
            if raised {
                app_info.api_version = vk::API_VERSION_1_2;
                patched.p_application_info = &app_info;
            }
            // SAFETY: the app's arguments, with the application info patched.
            let mut result = unsafe { next_create(&patched, allocator, out_instance) };
            if raised && result == vk::Result::ERROR_INCOMPATIBLE_DRIVER {
                // A Vulkan 1.0 loader refuses versions it does not know: create what the app asked for.
                patched.p_application_info = info.p_application_info;
                // SAFETY: the app's own arguments.
                result = unsafe { next_create(&patched, allocator, out_instance) };
            }
            if result != vk::Result::SUCCESS {
                return result;
            }
            // SAFETY: on success the next layer wrote a valid instance.
            let handle = unsafe { *out_instance };
            // SAFETY: the instance was created from `patched`, whose pointers are valid here.
            let state = unsafe { Instance::new(handle, next_gipa, &patched) };
            contained("instance start-up", || {
                debug!(
                    "instance created for \"{}\" (API {})",
                    state.app_name,
                    version_string(state.api_version)
                );
            });
            crate::run_status::note_instance(&state.app_name);
            // SAFETY: a live instance created through the loader.
            INSTANCES.insert(unsafe { dispatch_key(handle) }, Arc::new(state));
            result
        },
    )
}

/// `vkDestroyInstance`: forgets the instance and calls down.
pub(super) unsafe extern "system" fn destroy_instance(
    instance: vk::Instance,
    allocator: *const vk::AllocationCallbacks,
) {
    entry("vkDestroyInstance", (), || {
        // SAFETY: a valid (or null) instance handle from the app.
        let Some(state) = INSTANCES.remove(unsafe { dispatch_key(instance) }) else {
            return;
        };
        contained("destroying the binding messenger", || {
            crate::address_bindings::destroy_messenger(&state)
        });
        if let Some(destroy) = state.next.destroy_instance {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { destroy(instance, allocator) };
        }
    })
}

/// `vkCreateDevice`: takes the next link, calls down, records the device and logs the start-up line.
pub(super) unsafe extern "system" fn create_device(
    physical_device: vk::PhysicalDevice,
    create_info: *const vk::DeviceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out_device: *mut vk::Device,
) -> vk::Result {
    entry(
        "vkCreateDevice",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            // SAFETY: a physical device of a live instance, passed by the app.
            let Some(instance) = (unsafe { registry::instance_of(physical_device) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the loader passes the app's valid create info.
            let Some(info) = (unsafe { create_info.as_ref() }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: a valid pNext chain.
            let chain: *mut LayerDeviceCreateInfo = unsafe {
                loader::find_loader_info(
                    info.p_next,
                    loader::LOADER_DEVICE_CREATE_INFO,
                    loader::LAYER_LINK_INFO,
                )
            };
            // SAFETY: as for the link; the loader-data struct, when present, carries the callback.
            let set_loader_data = unsafe {
                let data: *mut LayerDeviceCreateInfo = loader::find_loader_info(
                    info.p_next,
                    loader::LOADER_DEVICE_CREATE_INFO,
                    loader::LOADER_DATA_CALLBACK,
                );
                data.as_ref().and_then(|d| d.u.pfn_set_device_loader_data)
            };
            // SAFETY: the loader's link info and its current link are valid during this call.
            let Some(link) = (unsafe { chain.as_mut().and_then(|c| c.u.p_layer_info.as_ref()) })
            else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let next_gipa = link.pfn_next_get_instance_proc_addr;
            let next_gdpa = link.pfn_next_get_device_proc_addr;
            // SAFETY: the next layer resolves instance commands for its live instance.
            let Some(next_create) =
                (unsafe { next_gipa(instance.handle, c"vkCreateDevice".as_ptr()) })
            else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the command named vkCreateDevice has this type.
            let next_create: vk::PFN_vkCreateDevice = unsafe { std::mem::transmute(next_create) };
            // SAFETY: `chain` is non-null (checked above) and the loader's to modify.
            unsafe { (*chain).u.p_layer_info = link.p_next };

            // SAFETY: the physical device belongs to `instance`.
            let description = unsafe { instance.describe(physical_device) };
            let config = crate::config();
            let wanted = Wanted {
                buffer_device_address: config.instruments_shaders(),
                diagnostics: true,
                markers: config.breadcrumbs != crate::config::Breadcrumbs::Off,
            };
            let api_version = description.api_version.min(instance.api_version);
            // SAFETY: the app's create info for this physical device; the patch is dropped before returning.
            let patch = contained("enabling what Blackbox needs", || unsafe {
                DeviceCreatePatch::new(&instance, physical_device, api_version, info, wanted)
            });
            let patched_info = patch
                .as_ref()
                .map_or(create_info, |p| &p.create_info as *const _);
            // SAFETY: the app's arguments, with the create info patched.
            let mut result =
                unsafe { next_create(physical_device, patched_info, allocator, out_device) };
            let mut capabilities = patch.as_ref().map(|p| p.capabilities).unwrap_or_default();
            drop(patch);
            if result != vk::Result::SUCCESS && patched_info != create_info {
                warn!("vkCreateDevice failed with what Blackbox enables ({result:?}); creating the app's device as asked, with breadcrumbs and shader instrumentation off");
                // SAFETY: the app's own arguments.
                result =
                    unsafe { next_create(physical_device, create_info, allocator, out_device) };
                capabilities = Capabilities::default();
            }
            if result != vk::Result::SUCCESS {
                return result;
            }
            // SAFETY: on success the next layer wrote a valid device.
            let handle = unsafe { *out_device };
            // SAFETY: the next layer resolves device commands for its live device.
            let next = DeviceDispatch::load(|name| unsafe { next_gdpa(handle, name.as_ptr()) });
            // SAFETY: as above.
            let recorded =
                super::RecordedDispatch::load(|name| unsafe { next_gdpa(handle, name.as_ptr()) });
            let device = Arc::new(Device {
                handle,
                physical_device,
                instance,
                next_get_device_proc_addr: next_gdpa,
                next,
                recorded,
                set_loader_data,
                description,
                capabilities,
                queues: RwLock::new(Vec::new()),
                markers: RwLock::new(None),
                error_buffer: RwLock::new(None),
                lost: AtomicBool::new(false),
                alive: RwLock::new(true),
                names: Mutex::new(HashMap::new()),
                submit_gate: RwLock::new(()),
                shaders: Default::default(),
            });
            contained("creating the marker buffer", || create_markers(&device));
            contained("creating the error buffer", || create_error_buffer(&device));
            if device.capabilities.address_binding_report {
                contained("recording address bindings", || {
                    crate::address_bindings::ensure_messenger(&device.instance)
                });
            }
            // SAFETY: a live device created through the loader.
            registry::DEVICES.insert(unsafe { dispatch_key(handle) }, device.clone());
            contained("device start-up", || {
                crate::watchdog::start();
                crate::signals::install();
                log_start_up(&device)
            });
            result
        },
    )
}

/// Creates the device's marker buffer when breadcrumbs are on.
fn create_markers(device: &Device) {
    let config = crate::config();
    if config.breadcrumbs == Breadcrumbs::Off {
        return;
    }
    let Some(memory_type) = device.capabilities.marker_memory_type else {
        warn!(
            "no host-visible coherent memory on {}: breadcrumbs are off",
            device.description.name
        );
        return;
    };
    let path = if device.capabilities.buffer_marker {
        MarkerPath::BufferMarker
    } else {
        MarkerPath::FillBuffer
    };
    // SAFETY: a live device and its dispatch table; the memory type is host-visible and coherent.
    let buffer = unsafe {
        HostBuffer::new(
            device.handle,
            &device.next,
            Markers::buffer_size(),
            vk::BufferUsageFlags::TRANSFER_DST,
            memory_type,
            false,
        )
    };
    match buffer {
        Ok(buffer) => {
            *device.markers.write() = Some(Markers::new(
                buffer,
                path,
                config.breadcrumbs,
                device.capabilities.checkpoints,
            ));
        }
        Err(e) => warn!(
            "cannot create the marker buffer ({e}): breadcrumbs are off on {}",
            device.description.name
        ),
    }
}

/// Creates the device's error buffer when shader instrumentation is on and the device can reach it.
fn create_error_buffer(device: &Device) {
    if !crate::config().instruments_shaders() {
        return;
    }
    if !device.capabilities.buffer_device_address {
        warn!(
            "{} does not support bufferDeviceAddress (Vulkan 1.2): shader instrumentation (asserts, printf, NaN \
             checks) is off on this device",
            device.description.name
        );
        return;
    }
    match crate::shader_errors::ErrorBuffer::new(device) {
        Ok(eb) => *device.error_buffer.write() = Some(eb),
        Err(e) => warn!(
            "cannot create the error buffer ({e}): shader instrumentation is off on {}",
            device.description.name
        ),
    }
}

/// The one line that says the layer is active, on what, and with which settings.
fn log_start_up(device: &Device) {
    let config = crate::config();
    info!(
        "Blackbox {} active in \"{}\" on {} (Vulkan {}, {}); {}; reports: {}",
        env!("CARGO_PKG_VERSION"),
        device.instance.app_name,
        device.description.name,
        version_string(device.description.api_version),
        device.description.driver.trim(),
        features(device, config),
        config.output_dir.display()
    );
}

/// The features in force on a device, for the start-up line.
fn features(device: &Device, config: &crate::config::Config) -> String {
    let mut on = Vec::new();
    match device.markers.read().as_ref() {
        Some(m) => on.push(format!(
            "breadcrumbs {} ({})",
            format!("{:?}", m.granularity).to_lowercase(),
            if m.path == MarkerPath::BufferMarker {
                "buffer markers"
            } else {
                "fill-buffer"
            }
        )),
        None => on.push("breadcrumbs off".to_owned()),
    }
    match config.watchdog_ms {
        Some(ms) => on.push(format!("watchdog {ms} ms")),
        None => on.push("watchdog off".to_owned()),
    }
    if device.error_buffer.read().is_some() {
        let mut checks = Vec::new();
        if config.assert != crate::config::AssertMode::Off {
            checks.push(format!(
                "asserts {}",
                format!("{:?}", config.assert).to_lowercase()
            ));
        }
        if config.printf {
            checks.push("printf".to_owned());
        }
        if config.nan != crate::config::NanMode::Off {
            checks.push(format!(
                "NaN {}",
                format!("{:?}", config.nan).to_lowercase()
            ));
        }
        on.push(format!("shaders: {}", checks.join(", ")));
    } else {
        on.push("shader instrumentation off".to_owned());
    }
    if device.capabilities.device_fault {
        on.push("device fault info".to_owned());
    }
    format!("features: {}", on.join(", "))
}
