//! What a device offers Blackbox, decided once at device creation, and the patch of the app's
//! `VkDeviceCreateInfo` that turns on what Blackbox needs.
//!
//! Vendor and driver differences live here as data ([`Capabilities`]); nothing else in the layer asks the
//! driver what it supports.
//!
//! The patch never edits the app's structs for good. Extensions go into a list of the layer's own. A feature
//! struct the app already chained (say `VkPhysicalDeviceVulkan12Features`) is set for the duration of the
//! call down and restored afterwards, because chaining a second struct with the same feature is invalid; a
//! feature the app's chain does not mention gets a struct of the layer's own, prepended to the chain.

use ash::vk;
use std::ffi::{c_char, c_void, CStr};

use crate::chain;
use crate::instance::Instance;

/// What Blackbox can use on one device.
#[derive(Debug, Clone, Copy, Default)]
pub struct Capabilities {
    /// `bufferDeviceAddress` is enabled: shaders can reach the error buffer.
    pub buffer_device_address: bool,
    /// `timelineSemaphore` is enabled: submissions are tracked with a semaphore of the layer's own.
    pub timeline_semaphore: bool,
    /// `VK_AMD_buffer_marker` is enabled: markers anywhere, render passes included.
    pub buffer_marker: bool,
    /// `VK_NV_device_diagnostic_checkpoints` is enabled.
    pub checkpoints: bool,
    /// `VK_EXT_device_fault` is enabled.
    pub device_fault: bool,
    /// `VK_EXT_device_address_binding_report` is enabled.
    pub address_binding_report: bool,
    /// A memory type that is `HOST_VISIBLE | HOST_COHERENT`, `DEVICE_LOCAL` too where the device has one:
    /// the GPU writes markers often and the CPU reads them after a fault only.
    pub marker_memory_type: Option<u32>,
    /// A memory type that is `HOST_VISIBLE | HOST_COHERENT`, `HOST_CACHED` too where the device has one:
    /// the GPU writes the error buffer only where shaders report, and the CPU reads it at every drain
    /// (uncached reads of device-local memory through the PCIe BAR cost about a microsecond per word).
    pub error_memory_type: Option<u32>,
}

/// Features and extensions the device supports, as far as Blackbox cares.
#[derive(Debug, Default, Clone, Copy)]
struct Supported {
    buffer_device_address: bool,
    /// `fragmentStoresAndAtomics` and `vertexPipelineStoresAndAtomics`: instrumented fragment and vertex
    /// pipeline shaders store records.
    fragment_stores: bool,
    vertex_stores: bool,
    timeline_semaphore: bool,
    buffer_marker: bool,
    checkpoints: bool,
    device_fault: bool,
    address_binding_report: bool,
}

const EXT_BUFFER_MARKER: &CStr = c"VK_AMD_buffer_marker";
const EXT_CHECKPOINTS: &CStr = c"VK_NV_device_diagnostic_checkpoints";
const EXT_DEVICE_FAULT: &CStr = c"VK_EXT_device_fault";
const EXT_ADDRESS_BINDING_REPORT: &CStr = c"VK_EXT_device_address_binding_report";

/// Asks the driver what `physical_device` supports, in ways the instance's API version allows.
///
/// # Safety
/// `physical_device` must belong to `instance`.
unsafe fn query_supported(
    instance: &Instance,
    physical_device: vk::PhysicalDevice,
    api_version: u32,
) -> Supported {
    let mut supported = Supported::default();
    let extensions = unsafe { device_extensions(instance, physical_device) };
    let has = |name: &CStr| extensions.iter().any(|e| e.as_c_str() == name);
    supported.buffer_marker = has(EXT_BUFFER_MARKER);
    supported.checkpoints = has(EXT_CHECKPOINTS);
    let fault_ext = has(EXT_DEVICE_FAULT);
    let binding_ext = has(EXT_ADDRESS_BINDING_REPORT);

    let Some(get_features2) = instance.next.get_physical_device_features2 else {
        return supported;
    };
    if instance.api_version < vk::API_VERSION_1_1 || api_version < vk::API_VERSION_1_2 {
        // The 1.2 feature structs cannot be asked about; without them Blackbox keeps to breadcrumbs.
        return supported;
    }
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut fault = vk::PhysicalDeviceFaultFeaturesEXT::default();
    let mut binding = vk::PhysicalDeviceAddressBindingReportFeaturesEXT::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut v12);
    if fault_ext {
        features2 = features2.push_next(&mut fault);
    }
    if binding_ext {
        features2 = features2.push_next(&mut binding);
    }
    // SAFETY: a valid chain of output structs for extensions the device has.
    unsafe { get_features2(physical_device, &mut features2) };
    let core = features2.features;
    supported.fragment_stores = core.fragment_stores_and_atomics == vk::TRUE;
    supported.vertex_stores = core.vertex_pipeline_stores_and_atomics == vk::TRUE;
    supported.buffer_device_address = v12.buffer_device_address == vk::TRUE;
    supported.timeline_semaphore = v12.timeline_semaphore == vk::TRUE;
    supported.device_fault = fault_ext && fault.device_fault == vk::TRUE;
    supported.address_binding_report = binding_ext && binding.report_address_binding == vk::TRUE;
    supported
}

/// The device's extension names.
///
/// # Safety
/// `physical_device` must belong to `instance`.
unsafe fn device_extensions(
    instance: &Instance,
    physical_device: vk::PhysicalDevice,
) -> Vec<std::ffi::CString> {
    let Some(enumerate) = instance.next.enumerate_device_extension_properties else {
        return Vec::new();
    };
    let mut count = 0u32;
    // SAFETY: the two-call idiom with valid pointers.
    unsafe {
        if enumerate(
            physical_device,
            std::ptr::null(),
            &mut count,
            std::ptr::null_mut(),
        ) != vk::Result::SUCCESS
        {
            return Vec::new();
        }
        let mut props = vec![vk::ExtensionProperties::default(); count as usize];
        let result = enumerate(
            physical_device,
            std::ptr::null(),
            &mut count,
            props.as_mut_ptr(),
        );
        if result != vk::Result::SUCCESS && result != vk::Result::INCOMPLETE {
            return Vec::new();
        }
        props.truncate(count as usize);
        props
            .iter()
            .map(|p| CStr::from_ptr(p.extension_name.as_ptr()).to_owned())
            .collect()
    }
}

/// The first `HOST_VISIBLE | HOST_COHERENT` memory type, preferring one that also has `preferred`.
///
/// # Safety
/// `physical_device` must belong to `instance`.
unsafe fn host_memory_type(
    instance: &Instance,
    physical_device: vk::PhysicalDevice,
    preferred: vk::MemoryPropertyFlags,
) -> Option<u32> {
    let get = instance.next.get_physical_device_memory_properties?;
    let mut props = vk::PhysicalDeviceMemoryProperties::default();
    // SAFETY: valid output struct.
    unsafe { get(physical_device, &mut props) };
    let types = &props.memory_types[..props.memory_type_count as usize];
    let wanted = vk::MemoryPropertyFlags::HOST_VISIBLE | vk::MemoryPropertyFlags::HOST_COHERENT;
    let find = |extra: vk::MemoryPropertyFlags| {
        types
            .iter()
            .position(|t| t.property_flags.contains(wanted | extra))
            .map(|i| i as u32)
    };
    find(preferred).or_else(|| find(vk::MemoryPropertyFlags::empty()))
}

/// The app's `VkDeviceCreateInfo`, patched for Blackbox. Restores the app's structs when dropped.
pub struct DeviceCreatePatch {
    /// The create info to pass down.
    pub create_info: vk::DeviceCreateInfo<'static>,
    /// What will be enabled if the call succeeds.
    pub capabilities: Capabilities,
    extensions: Vec<*const c_char>,
    own: Box<OwnFeatures>,
    restore: Vec<(*mut vk::Bool32, vk::Bool32)>,
}

/// Feature structs of the layer's own, prepended to the app's chain where the app did not chain one.
#[derive(Default)]
struct OwnFeatures {
    bda: vk::PhysicalDeviceBufferDeviceAddressFeatures<'static>,
    timeline: vk::PhysicalDeviceTimelineSemaphoreFeatures<'static>,
    fault: vk::PhysicalDeviceFaultFeaturesEXT<'static>,
    binding: vk::PhysicalDeviceAddressBindingReportFeaturesEXT<'static>,
    core: vk::PhysicalDeviceFeatures,
}

/// What Blackbox would like enabled.
#[derive(Debug, Clone, Copy)]
pub struct Wanted {
    /// For shader instrumentation.
    pub buffer_device_address: bool,
    /// For crash reports: device fault data, address bindings, the timeline semaphore that tracks
    /// submissions.
    pub diagnostics: bool,
    /// For breadcrumbs: `VK_AMD_buffer_marker` and NV checkpoints. Not enabled with breadcrumbs off: with
    /// `VK_NV_device_diagnostic_checkpoints` enabled, NVIDIA's driver 580 holds about 50 KiB more host
    /// memory per command buffer, used or not.
    pub markers: bool,
}

impl DeviceCreatePatch {
    /// Builds the patch. The app's feature structs are modified until the patch is dropped.
    ///
    /// # Safety
    /// `app` must be the app's valid create info for a device on `physical_device`, which belongs to
    /// `instance`; the patch must be dropped after the call down and before returning to the app.
    pub unsafe fn new(
        instance: &Instance,
        physical_device: vk::PhysicalDevice,
        device_api_version: u32,
        app: &vk::DeviceCreateInfo,
        wanted: Wanted,
    ) -> Self {
        // SAFETY: forwarded to the caller.
        let supported = unsafe { query_supported(instance, physical_device, device_api_version) };
        // SAFETY: as above.
        let (marker_memory_type, error_memory_type) = unsafe {
            (
                host_memory_type(
                    instance,
                    physical_device,
                    vk::MemoryPropertyFlags::DEVICE_LOCAL,
                ),
                host_memory_type(
                    instance,
                    physical_device,
                    vk::MemoryPropertyFlags::HOST_CACHED,
                ),
            )
        };
        let mut patch = DeviceCreatePatch {
            // SAFETY: the app's struct, copied; its pointers stay valid for the call.
            create_info: unsafe {
                std::mem::transmute::<vk::DeviceCreateInfo<'_>, vk::DeviceCreateInfo<'static>>(*app)
            },
            capabilities: Capabilities {
                marker_memory_type,
                error_memory_type,
                ..Default::default()
            },
            extensions: Vec::new(),
            own: Box::default(),
            restore: Vec::new(),
        };
        let app_extensions: Vec<&CStr> = (0..app.enabled_extension_count as usize)
            // SAFETY: the app's array of NUL-terminated names.
            .map(|i| unsafe { CStr::from_ptr(*app.pp_enabled_extension_names.add(i)) })
            .collect();
        patch.extensions = app_extensions.iter().map(|e| e.as_ptr()).collect();
        let mut add_extension = |name: &'static CStr| {
            if !app_extensions.contains(&name) {
                patch.extensions.push(name.as_ptr());
            }
        };
        let caps = &mut patch.capabilities;
        if wanted.markers && supported.buffer_marker {
            add_extension(EXT_BUFFER_MARKER);
            caps.buffer_marker = true;
        }
        if wanted.markers && supported.checkpoints {
            add_extension(EXT_CHECKPOINTS);
            caps.checkpoints = true;
        }
        if wanted.diagnostics && supported.device_fault {
            add_extension(EXT_DEVICE_FAULT);
            caps.device_fault = true;
        }
        if wanted.diagnostics && supported.address_binding_report && instance.debug_utils {
            add_extension(EXT_ADDRESS_BINDING_REPORT);
            caps.address_binding_report = true;
        }
        caps.buffer_device_address =
            wanted.buffer_device_address && supported.buffer_device_address;
        caps.timeline_semaphore = wanted.diagnostics && supported.timeline_semaphore;
        let caps = *caps;

        // Features: set the app's own struct where it chained one, else prepend one of ours.
        let mut prepend: Vec<*mut vk::BaseOutStructure> = Vec::new();
        // SAFETY: the app's chain is valid; the pointers found stay valid for the call.
        unsafe {
            let v12 = chain::find::<vk::PhysicalDeviceVulkan12Features>(app.p_next);
            if caps.buffer_device_address {
                match (
                    v12,
                    chain::find::<vk::PhysicalDeviceBufferDeviceAddressFeatures>(app.p_next),
                ) {
                    (Some(v12), _) => patch.set(&mut (*v12).buffer_device_address),
                    (None, Some(bda)) => patch.set(&mut (*bda).buffer_device_address),
                    (None, None) => {
                        patch.own.bda.buffer_device_address = vk::TRUE;
                        prepend.push(&mut patch.own.bda as *mut _ as *mut vk::BaseOutStructure);
                    }
                }
            }
            if caps.timeline_semaphore {
                match (
                    v12,
                    chain::find::<vk::PhysicalDeviceTimelineSemaphoreFeatures>(app.p_next),
                ) {
                    (Some(v12), _) => patch.set(&mut (*v12).timeline_semaphore),
                    (None, Some(t)) => patch.set(&mut (*t).timeline_semaphore),
                    (None, None) => {
                        patch.own.timeline.timeline_semaphore = vk::TRUE;
                        prepend
                            .push(&mut patch.own.timeline as *mut _ as *mut vk::BaseOutStructure);
                    }
                }
            }
            if caps.device_fault {
                match chain::find::<vk::PhysicalDeviceFaultFeaturesEXT>(app.p_next) {
                    Some(f) => patch.set(&mut (*f).device_fault),
                    None => {
                        patch.own.fault.device_fault = vk::TRUE;
                        prepend.push(&mut patch.own.fault as *mut _ as *mut vk::BaseOutStructure);
                    }
                }
            }
            if caps.address_binding_report {
                match chain::find::<vk::PhysicalDeviceAddressBindingReportFeaturesEXT>(app.p_next) {
                    Some(f) => patch.set(&mut (*f).report_address_binding),
                    None => {
                        patch.own.binding.report_address_binding = vk::TRUE;
                        prepend.push(&mut patch.own.binding as *mut _ as *mut vk::BaseOutStructure);
                    }
                }
            }
        }
        // Instrumented fragment and vertex-pipeline shaders store records: their store features must be on.
        if caps.buffer_device_address {
            // SAFETY: the app's valid chain and optional feature struct.
            unsafe {
                match chain::find::<vk::PhysicalDeviceFeatures2>(app.p_next) {
                    Some(f2) => {
                        if supported.fragment_stores {
                            patch.set(&mut (*f2).features.fragment_stores_and_atomics);
                        }
                        if supported.vertex_stores {
                            patch.set(&mut (*f2).features.vertex_pipeline_stores_and_atomics);
                        }
                    }
                    None => {
                        patch.own.core =
                            app.p_enabled_features.as_ref().copied().unwrap_or_default();
                        if supported.fragment_stores {
                            patch.own.core.fragment_stores_and_atomics = vk::TRUE;
                        }
                        if supported.vertex_stores {
                            patch.own.core.vertex_pipeline_stores_and_atomics = vk::TRUE;
                        }
                        patch.create_info.p_enabled_features = &patch.own.core;
                    }
                }
            }
        }
        let mut next = app.p_next as *mut c_void;
        for s in prepend.into_iter().rev() {
            // SAFETY: our own boxed structs, which outlive the call.
            unsafe { (*s).p_next = next as *mut vk::BaseOutStructure };
            next = s as *mut c_void;
        }
        patch.create_info.p_next = next;
        patch.create_info.enabled_extension_count = patch.extensions.len() as u32;
        patch.create_info.pp_enabled_extension_names = patch.extensions.as_ptr();
        patch
    }

    /// Sets a feature in one of the app's structs, remembering its value for [`Drop`].
    fn set(&mut self, feature: *mut vk::Bool32) {
        // SAFETY: a field of a struct in the app's chain, valid for the call.
        unsafe {
            self.restore.push((feature, *feature));
            *feature = vk::TRUE;
        }
    }
}

impl Drop for DeviceCreatePatch {
    fn drop(&mut self) {
        for &(feature, value) in self.restore.iter().rev() {
            // SAFETY: as in `set`; the app's struct is still valid (the patch lives within the hook).
            unsafe { *feature = value };
        }
    }
}
