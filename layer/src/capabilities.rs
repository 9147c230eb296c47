//! What a device offers Blackbox, decided once at device creation, and the copy of the app's
//! `VkDeviceCreateInfo` that turns on what Blackbox needs.
//!
//! Vendor and driver differences live here as data ([`Capabilities`]); nothing else in the layer asks the
//! driver what it supports.
//!
//! The app's structs are never written. The create info, its extension list and its `pNext` chain are
//! copied ([`crate::chain::ChainCopy`]); a feature struct the app chained (say
//! `VkPhysicalDeviceVulkan12Features`) is set in the copy, because chaining a second struct with the same
//! feature is invalid, and a feature the app's chain does not mention gets a struct of the layer's own in
//! front. The app's Vulkan version is never raised: on a device used below 1.2, buffer device address and
//! timeline semaphores are enabled through `VK_KHR_buffer_device_address` (with `VK_KHR_device_group`
//! below 1.1) and `VK_KHR_timeline_semaphore`, where the device has them.

use ash::vk;
use std::ffi::{c_char, CStr};

use crate::chain::{ChainCopy, Found};
use crate::instance::Instance;

/// What Blackbox can use on one device.
#[derive(Debug, Clone, Default)]
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
    /// `VK_KHR_shader_clock` is enabled with this clock (the device clock where there is one): loop budgets
    /// can have a time budget.
    pub shader_clock: Option<blackbox_engine::ClockScope>,
    /// A memory type that is `HOST_VISIBLE | HOST_COHERENT`, `DEVICE_LOCAL` too where the device has one:
    /// the GPU writes markers often and the CPU reads them after a fault only.
    pub marker_memory_type: Option<u32>,
    /// A memory type that is `HOST_VISIBLE | HOST_COHERENT`, `HOST_CACHED` too where the device has one:
    /// the GPU writes the error buffer only where shaders report, and the CPU reads it at every drain
    /// (uncached reads of device-local memory through the PCIe BAR cost about a microsecond per word).
    pub error_memory_type: Option<u32>,
    /// `VK_EXT_external_memory_host` is enabled (CPU devices, with shader instrumentation): the error buffer
    /// is host memory at a fixed address (see [`crate::memory::HostBuffer::new_at_fixed_address`]).
    pub host_import: bool,
    /// What Blackbox enabled that the app did not ask for: extensions and features, by name.
    pub enabled: Vec<&'static str>,
    /// Every marker write gets a word of its own, also on the buffer-marker path (see
    /// [`crate::breadcrumbs`]): synchronization validation is on below.
    pub distinct_marker_words: bool,
    /// What Blackbox left off, and why, for the start-up line.
    pub left_off: Vec<String>,
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
    /// Below Vulkan 1.2: the KHR extensions that give the two features above.
    buffer_device_address_khr: bool,
    device_group_khr: bool,
    timeline_semaphore_khr: bool,
    buffer_marker: bool,
    checkpoints: bool,
    device_fault: bool,
    address_binding_report: bool,
    external_memory_host: bool,
    /// `VK_KHR_shader_clock`'s clocks.
    device_clock: bool,
    subgroup_clock: bool,
}

const EXT_BUFFER_MARKER: &CStr = c"VK_AMD_buffer_marker";
const EXT_CHECKPOINTS: &CStr = c"VK_NV_device_diagnostic_checkpoints";
const EXT_DEVICE_FAULT: &CStr = c"VK_EXT_device_fault";
const EXT_ADDRESS_BINDING_REPORT: &CStr = c"VK_EXT_device_address_binding_report";
const EXT_BUFFER_DEVICE_ADDRESS: &CStr = c"VK_KHR_buffer_device_address";
const EXT_DEVICE_GROUP: &CStr = c"VK_KHR_device_group";
const EXT_TIMELINE_SEMAPHORE: &CStr = c"VK_KHR_timeline_semaphore";
const EXT_SHADER_CLOCK: &CStr = c"VK_KHR_shader_clock";
const EXT_EXTERNAL_MEMORY_HOST: &CStr = c"VK_EXT_external_memory_host";

/// Asks the driver what `physical_device` supports, in ways the instance's and the device's API version
/// (`api_version`, the lower of the two) allow.
///
/// # Safety
/// `physical_device` must belong to `instance`.
unsafe fn query_supported(
    instance: &Instance,
    physical_device: vk::PhysicalDevice,
    api_version: u32,
) -> Supported {
    let mut supported = Supported::default();
    // SAFETY: forwarded to the caller.
    let extensions = unsafe { device_extensions(instance, physical_device) };
    let has = |name: &CStr| extensions.iter().any(|e| e.as_c_str() == name);
    supported.buffer_marker = has(EXT_BUFFER_MARKER);
    supported.checkpoints = has(EXT_CHECKPOINTS);
    supported.external_memory_host = has(EXT_EXTERNAL_MEMORY_HOST);
    let fault_ext = has(EXT_DEVICE_FAULT);
    let binding_ext = has(EXT_ADDRESS_BINDING_REPORT);
    let clock_ext = has(EXT_SHADER_CLOCK);
    let core12 = api_version >= vk::API_VERSION_1_2;
    // VK_KHR_buffer_device_address needs VK_KHR_device_group below 1.1 (and that, device groups on the
    // instance).
    let device_group =
        api_version >= vk::API_VERSION_1_1 || (has(EXT_DEVICE_GROUP) && instance.device_groups);
    supported.device_group_khr = api_version < vk::API_VERSION_1_1 && device_group;
    let bda_ext = !core12 && has(EXT_BUFFER_DEVICE_ADDRESS) && device_group;
    let timeline_ext = !core12 && has(EXT_TIMELINE_SEMAPHORE);

    let Some(get_features2) = instance
        .next
        .get_physical_device_features2
        .filter(|_| instance.physical_device_properties2)
    else {
        // Without feature queries (a 1.0 instance that could not get VK_KHR_get_physical_device_properties2)
        // nothing beyond 1.0 can be enabled: breadcrumbs only, tracked from the app's own waits.
        return supported;
    };
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut bda = vk::PhysicalDeviceBufferDeviceAddressFeatures::default();
    let mut timeline = vk::PhysicalDeviceTimelineSemaphoreFeatures::default();
    let mut fault = vk::PhysicalDeviceFaultFeaturesEXT::default();
    let mut binding = vk::PhysicalDeviceAddressBindingReportFeaturesEXT::default();
    let mut clock = vk::PhysicalDeviceShaderClockFeaturesKHR::default();
    let mut features2 = vk::PhysicalDeviceFeatures2::default();
    if core12 {
        features2 = features2.push_next(&mut v12);
    }
    if bda_ext {
        features2 = features2.push_next(&mut bda);
    }
    if timeline_ext {
        features2 = features2.push_next(&mut timeline);
    }
    if fault_ext {
        features2 = features2.push_next(&mut fault);
    }
    if binding_ext {
        features2 = features2.push_next(&mut binding);
    }
    if clock_ext {
        features2 = features2.push_next(&mut clock);
    }
    // SAFETY: a valid chain of output structs for what the device and the version have.
    unsafe { get_features2(physical_device, &mut features2) };
    let core = features2.features;
    supported.fragment_stores = core.fragment_stores_and_atomics == vk::TRUE;
    supported.vertex_stores = core.vertex_pipeline_stores_and_atomics == vk::TRUE;
    if core12 {
        supported.buffer_device_address = v12.buffer_device_address == vk::TRUE;
        supported.timeline_semaphore = v12.timeline_semaphore == vk::TRUE;
    } else {
        supported.buffer_device_address = bda_ext && bda.buffer_device_address == vk::TRUE;
        supported.buffer_device_address_khr = supported.buffer_device_address;
        supported.timeline_semaphore = timeline_ext && timeline.timeline_semaphore == vk::TRUE;
        supported.timeline_semaphore_khr = supported.timeline_semaphore;
    }
    supported.device_fault = fault_ext && fault.device_fault == vk::TRUE;
    supported.address_binding_report = binding_ext && binding.report_address_binding == vk::TRUE;
    supported.device_clock = clock_ext && clock.shader_device_clock == vk::TRUE;
    supported.subgroup_clock = clock_ext && clock.shader_subgroup_clock == vk::TRUE;
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

/// The first `HOST_VISIBLE | HOST_COHERENT` memory type, preferring one that also has `preferred`; the
/// choice is logged at debug level for `purpose` (marker words are written by the GPU at every marker, so
/// their memory type shows in the GPU time of breadcrumbs).
///
/// # Safety
/// `physical_device` must belong to `instance`.
unsafe fn host_memory_type(
    instance: &Instance,
    physical_device: vk::PhysicalDevice,
    preferred: vk::MemoryPropertyFlags,
    purpose: &str,
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
    let chosen = find(preferred).or_else(|| find(vk::MemoryPropertyFlags::empty()));
    if let Some(i) = chosen {
        let t = types[i as usize];
        debug!(
            "{purpose}: memory type {i} ({:?}, heap {})",
            t.property_flags, t.heap_index
        );
    }
    chosen
}

/// The app's `VkDeviceCreateInfo`, copied with what Blackbox needs enabled. It owns every struct it
/// changed or added, and must outlive the call down.
pub struct DeviceCreatePatch {
    /// The create info to pass down.
    pub create_info: vk::DeviceCreateInfo<'static>,
    /// What will be enabled if the call succeeds.
    pub capabilities: Capabilities,
    _extensions: Vec<*const c_char>,
    _chain: ChainCopy,
    _core: Box<vk::PhysicalDeviceFeatures>,
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
    /// With `markers`, when NV checkpoints are enabled (`VK_BLACKBOX_CHECKPOINTS`): by default only where
    /// buffer markers are missing.
    pub checkpoints: crate::config::Checkpoints,
    /// `VK_KHR_shader_clock`, for the loop time budget (`VK_BLACKBOX_LOOP_MS`).
    pub shader_clock: bool,
    /// `VK_EXT_external_memory_host`, with `buffer_device_address`, on a CPU device: there a buffer's device
    /// address is its host pointer, which changes from run to run, and the address is baked into every
    /// instrumented module, so each run's modules differ and miss the driver's shader cache (llvmpipe's
    /// LLVM compile takes minutes on some real shaders). Host memory at a fixed address keeps them the same.
    pub fixed_address: bool,
    /// Special-use extensions may be enabled (`VK_AMD_buffer_marker`, `VK_EXT_device_address_binding_report`):
    /// not when the validation layer below runs best practices, which warns about each.
    pub special_use: bool,
}

/// Turns a feature on in the chain copy: in the app's struct of type `T` if it chained one (its copy), else
/// in a struct of the layer's own put in front. `false` when the app's struct lies in the part of the chain
/// the copy cannot change (after a struct the layer does not know) and the feature is off there.
fn enable<T: vk::TaggedStructure + Default + Copy>(
    chain: &mut ChainCopy,
    feature: impl Fn(&mut T) -> &mut vk::Bool32,
) -> bool {
    match chain.find::<T>() {
        Found::Copied(s) => {
            *feature(s) = vk::TRUE;
            true
        }
        Found::Shared(s) => {
            let mut copy = *s;
            let on = *feature(&mut copy) == vk::TRUE;
            if !on {
                warn!("a feature Blackbox needs cannot be enabled without changing the app's own structs: left off");
            }
            on
        }
        Found::Absent => {
            let mut own = T::default();
            *feature(&mut own) = vk::TRUE;
            chain.prepend(own);
            true
        }
    }
}

impl DeviceCreatePatch {
    /// Builds the copy.
    ///
    /// # Safety
    /// `app` must be the app's valid create info for a device on `physical_device`, which belongs to
    /// `instance`, used at `device_api_version` (the lower of the instance's and the device's); the
    /// patch must live until the call down returns.
    pub unsafe fn new(
        instance: &Instance,
        physical_device: vk::PhysicalDevice,
        device_api_version: u32,
        app: &vk::DeviceCreateInfo,
        wanted: Wanted,
    ) -> Self {
        // SAFETY: forwarded to the caller.
        let supported = unsafe { query_supported(instance, physical_device, device_api_version) };
        // SAFETY: the physical device belongs to `instance` (the caller's contract).
        let (marker_memory_type, error_memory_type) = unsafe {
            (
                host_memory_type(
                    instance,
                    physical_device,
                    vk::MemoryPropertyFlags::DEVICE_LOCAL,
                    "marker buffer",
                ),
                host_memory_type(
                    instance,
                    physical_device,
                    vk::MemoryPropertyFlags::HOST_CACHED,
                    "error buffer",
                ),
            )
        };
        let mut caps = Capabilities {
            marker_memory_type,
            error_memory_type,
            ..Default::default()
        };
        // SAFETY: the app's array of NUL-terminated names.
        let app_extensions = unsafe {
            crate::raw::names(app.pp_enabled_extension_names, app.enabled_extension_count)
        };
        let mut extensions: Vec<*const c_char> =
            app_extensions.iter().map(|e| e.as_ptr()).collect();
        let mut add_extension = |name: &'static CStr, enabled: &mut Vec<&'static str>| {
            if !app_extensions.contains(&name) {
                extensions.push(name.as_ptr());
                enabled.push(name.to_str().unwrap_or_default());
            }
        };
        let special_use_off = |caps: &mut Capabilities, ext: &CStr| {
            caps.left_off.push(format!(
                "{} (a special-use extension, which the validation layer's best practices below would report)",
                ext.to_string_lossy()
            ))
        };
        if wanted.markers && supported.buffer_marker {
            if wanted.special_use {
                add_extension(EXT_BUFFER_MARKER, &mut caps.enabled);
                caps.buffer_marker = true;
            } else {
                special_use_off(&mut caps, EXT_BUFFER_MARKER);
            }
        }
        let checkpoints = match wanted.checkpoints {
            crate::config::Checkpoints::Auto => !caps.buffer_marker,
            crate::config::Checkpoints::On => true,
            crate::config::Checkpoints::Off => false,
        };
        if wanted.markers && supported.checkpoints && !checkpoints {
            caps.left_off.push(format!(
                "{} ({})",
                EXT_CHECKPOINTS.to_string_lossy(),
                if wanted.checkpoints == crate::config::Checkpoints::Off {
                    "VK_BLACKBOX_CHECKPOINTS=off"
                } else {
                    "buffer markers tell progress; VK_BLACKBOX_CHECKPOINTS=on adds them"
                }
            ));
        }
        if wanted.markers && supported.checkpoints && checkpoints {
            add_extension(EXT_CHECKPOINTS, &mut caps.enabled);
            caps.checkpoints = true;
        }
        if wanted.markers
            && !supported.checkpoints
            && wanted.checkpoints == crate::config::Checkpoints::On
        {
            caps.left_off.push(format!(
                "{} (VK_BLACKBOX_CHECKPOINTS=on, but the device does not have it)",
                EXT_CHECKPOINTS.to_string_lossy()
            ));
        }
        if wanted.diagnostics && supported.device_fault {
            add_extension(EXT_DEVICE_FAULT, &mut caps.enabled);
            caps.device_fault = true;
        }
        if wanted.diagnostics && supported.address_binding_report && instance.debug_utils {
            if wanted.special_use {
                add_extension(EXT_ADDRESS_BINDING_REPORT, &mut caps.enabled);
                caps.address_binding_report = true;
            } else {
                special_use_off(&mut caps, EXT_ADDRESS_BINDING_REPORT);
            }
        }
        caps.buffer_device_address =
            wanted.buffer_device_address && supported.buffer_device_address;
        caps.timeline_semaphore = wanted.diagnostics && supported.timeline_semaphore;
        if caps.buffer_device_address && supported.buffer_device_address_khr {
            if supported.device_group_khr {
                add_extension(EXT_DEVICE_GROUP, &mut caps.enabled);
            }
            add_extension(EXT_BUFFER_DEVICE_ADDRESS, &mut caps.enabled);
        }
        if caps.timeline_semaphore && supported.timeline_semaphore_khr {
            add_extension(EXT_TIMELINE_SEMAPHORE, &mut caps.enabled);
        }
        // The device clock counts the same on every core; a subgroup clock only within one.
        let clock = if !(wanted.shader_clock && caps.buffer_device_address) {
            None
        } else if supported.device_clock {
            Some(blackbox_engine::ClockScope::Device)
        } else if supported.subgroup_clock {
            Some(blackbox_engine::ClockScope::Subgroup)
        } else {
            caps.left_off.push(
                "the loop time budget (VK_BLACKBOX_LOOP_MS): the device has no VK_KHR_shader_clock"
                    .to_owned(),
            );
            None
        };
        if clock.is_some() {
            add_extension(EXT_SHADER_CLOCK, &mut caps.enabled);
        }
        // It needs VK_KHR_external_memory (core in 1.1; below, an instance extension too): not below 1.1.
        if wanted.fixed_address
            && caps.buffer_device_address
            && supported.external_memory_host
            && device_api_version >= vk::API_VERSION_1_1
        {
            add_extension(EXT_EXTERNAL_MEMORY_HOST, &mut caps.enabled);
            caps.host_import = true;
        }

        // Features, in a copy of the app's chain.
        // SAFETY: the app's valid chain, which outlives the patch.
        let mut chain = unsafe { ChainCopy::new(app.p_next) };
        let core12 = device_api_version >= vk::API_VERSION_1_2;
        let has_v12 = !matches!(
            chain.find::<vk::PhysicalDeviceVulkan12Features>(),
            Found::Absent
        );
        if caps.buffer_device_address {
            caps.buffer_device_address = if core12 && has_v12 {
                enable(&mut chain, |f: &mut vk::PhysicalDeviceVulkan12Features| {
                    &mut f.buffer_device_address
                })
            } else {
                enable(
                    &mut chain,
                    |f: &mut vk::PhysicalDeviceBufferDeviceAddressFeatures| {
                        &mut f.buffer_device_address
                    },
                )
            };
            caps.enabled.push("bufferDeviceAddress");
        }
        if caps.timeline_semaphore {
            caps.timeline_semaphore = if core12 && has_v12 {
                enable(&mut chain, |f: &mut vk::PhysicalDeviceVulkan12Features| {
                    &mut f.timeline_semaphore
                })
            } else {
                enable(
                    &mut chain,
                    |f: &mut vk::PhysicalDeviceTimelineSemaphoreFeatures| &mut f.timeline_semaphore,
                )
            };
            caps.enabled.push("timelineSemaphore");
        }
        if caps.device_fault {
            caps.device_fault = enable(&mut chain, |f: &mut vk::PhysicalDeviceFaultFeaturesEXT| {
                &mut f.device_fault
            });
        }
        if let Some(scope) = clock {
            let on = enable(
                &mut chain,
                |f: &mut vk::PhysicalDeviceShaderClockFeaturesKHR| match scope {
                    blackbox_engine::ClockScope::Device => &mut f.shader_device_clock,
                    blackbox_engine::ClockScope::Subgroup => &mut f.shader_subgroup_clock,
                },
            );
            if on {
                caps.shader_clock = Some(scope);
                caps.enabled.push(match scope {
                    blackbox_engine::ClockScope::Device => "shaderDeviceClock",
                    blackbox_engine::ClockScope::Subgroup => "shaderSubgroupClock",
                });
            }
        }
        if caps.address_binding_report {
            caps.address_binding_report = enable(
                &mut chain,
                |f: &mut vk::PhysicalDeviceAddressBindingReportFeaturesEXT| {
                    &mut f.report_address_binding
                },
            );
        }
        // Instrumented fragment and vertex-pipeline shaders store records: their store features must be on,
        // in the app's VkPhysicalDeviceFeatures2 (its copy) or in a copy of its pEnabledFeatures.
        let mut core = Box::new(
            // SAFETY: the app's optional features struct.
            unsafe { app.p_enabled_features.as_ref() }
                .copied()
                .unwrap_or_default(),
        );
        let mut p_enabled_features = app.p_enabled_features;
        if caps.buffer_device_address {
            let stores = |f: &mut vk::PhysicalDeviceFeatures| {
                if supported.fragment_stores {
                    f.fragment_stores_and_atomics = vk::TRUE;
                }
                if supported.vertex_stores {
                    f.vertex_pipeline_stores_and_atomics = vk::TRUE;
                }
            };
            match chain.find::<vk::PhysicalDeviceFeatures2>() {
                Found::Copied(f2) => stores(&mut f2.features),
                Found::Shared(_) => {
                    warn!("the store features instrumented fragment and vertex shaders need cannot be enabled without changing the app's own structs: left as the app set them")
                }
                Found::Absent => {
                    stores(&mut core);
                    p_enabled_features = &*core;
                }
            }
        }
        let mut create_info = *app;
        create_info.p_next = chain.head();
        create_info.enabled_extension_count = extensions.len() as u32;
        create_info.pp_enabled_extension_names = crate::raw::array_ptr(&extensions);
        create_info.p_enabled_features = p_enabled_features;
        DeviceCreatePatch {
            // SAFETY: the copy points into the app's arrays and the patch's own boxes and vectors, which
            // outlive the call down (the caller's contract): the lifetime is the patch's.
            create_info: unsafe {
                std::mem::transmute::<vk::DeviceCreateInfo<'_>, vk::DeviceCreateInfo<'static>>(
                    create_info,
                )
            },
            capabilities: caps,
            _extensions: extensions,
            _chain: chain,
            _core: core,
        }
    }
}
