//! State kept per `VkInstance`.

use ash::vk;
use blackbox_report::untrusted;
use std::ffi::CStr;
use std::sync::Arc;

use crate::dispatch::InstanceDispatch;
use crate::registry::{dispatch_key, INSTANCES};

/// An instance the layer sits in.
pub struct Instance {
    /// The app's handle.
    pub handle: vk::Instance,
    /// The next layer's `vkGetInstanceProcAddr`, which resolves every command Blackbox does not intercept.
    pub next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    /// The next layer's commands Blackbox calls itself.
    pub next: InstanceDispatch,
    /// `VkApplicationInfo::pApplicationName`, else the process name.
    pub app_name: String,
    /// The API version the app created the instance for (never changed by the layer): the layer calls only
    /// what it allows.
    pub api_version: u32,
    /// `VK_EXT_debug_utils` is enabled on the instance (by the app).
    pub debug_utils: bool,
    /// `vkGetPhysicalDeviceFeatures2` and `Properties2` can be called: Vulkan 1.1, or
    /// `VK_KHR_get_physical_device_properties2` enabled (by the app or, for a 1.0 app, by the layer).
    pub physical_device_properties2: bool,
    /// Device groups exist on the instance (1.1, or `VK_KHR_device_group_creation`), which
    /// `VK_KHR_buffer_device_address` needs below 1.1.
    pub device_groups: bool,
    /// What the app and the environment ask of a validation layer below (whether one is there is asked
    /// per physical device).
    pub validation_requested: crate::validation_below::Requested,
    /// The layer's own messenger for address-binding reports, when one was made.
    pub binding_messenger: parking_lot::Mutex<Option<vk::DebugUtilsMessengerEXT>>,
}

/// What the start-up line and the reports say about a device.
pub struct DeviceDescription {
    /// `VkPhysicalDeviceProperties::deviceName`.
    pub name: String,
    /// The driver's name and version, e.g. `Mesa 22.3.6 (llvmpipe)`, or the decoded `driverVersion`.
    pub driver: String,
    /// The device's Vulkan version.
    pub api_version: u32,
    /// `deviceType` is CPU (llvmpipe): NaN records wait until each invocation ends there (the engine's
    /// [`blackbox_engine::Options::records_at_end`]), which keeps compile and run time low.
    pub cpu: bool,
}

/// Instance extensions a Vulkan 1.0 app's instance needs for Blackbox to enable buffer device address and
/// timeline semaphores through their KHR device extensions: feature queries
/// (`VK_KHR_get_physical_device_properties2`) and device groups (`VK_KHR_device_group_creation`, which
/// `VK_KHR_buffer_device_address`'s dependency `VK_KHR_device_group` needs). Both are core in 1.1.
const INSTANCE_EXTENSIONS_BELOW_1_1: [&CStr; 2] = [
    c"VK_KHR_get_physical_device_properties2",
    c"VK_KHR_device_group_creation",
];

/// `vkCreateInstance`, once the loader's chain is advanced: creates the instance through `next_create` and
/// records it.
///
/// # Safety
/// The app's arguments, valid as `vkCreateInstance` requires; `next_gipa` and `next_create` are the next
/// layer's.
pub unsafe fn create(
    next_gipa: vk::PFN_vkGetInstanceProcAddr,
    next_create: vk::PFN_vkCreateInstance,
    info: &vk::InstanceCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out_instance: *mut vk::Instance,
) -> vk::Result {
    crate::contained("reading Blackbox's settings", || {
        // SAFETY: the app's valid create info chain.
        let app =
            unsafe { crate::layer_settings::app_settings(info.p_next, crate::config::LAYER_NAME) };
        crate::init_config(&app);
    });

    // The app's Vulkan version stays as it asked. Below 1.1 the layer needs two instance extensions to reach
    // buffer device address and timeline semaphores through their KHR extensions on the device (feature
    // queries and device groups): they go into a copy of the extension list, and if the implementation
    // refuses them the instance is created as the app asked.
    let api_version = app_api_version(info);
    // SAFETY: the app's array of NUL-terminated names.
    let app_extensions: Vec<&CStr> = unsafe {
        crate::raw::names(
            info.pp_enabled_extension_names,
            info.enabled_extension_count,
        )
    };
    let mut extensions: Vec<*const std::ffi::c_char> =
        app_extensions.iter().map(|e| e.as_ptr()).collect();
    if api_version < vk::API_VERSION_1_1 {
        for needed in INSTANCE_EXTENSIONS_BELOW_1_1 {
            if !app_extensions.contains(&needed) {
                extensions.push(needed.as_ptr());
            }
        }
    }
    let mut own = *info;
    own.enabled_extension_count = extensions.len() as u32;
    own.pp_enabled_extension_names = crate::raw::array_ptr(&extensions);
    let added = extensions.len() > app_extensions.len();
    if added {
        debug!("a Vulkan 1.0 instance: Blackbox adds VK_KHR_get_physical_device_properties2 and VK_KHR_device_group_creation where the app did not enable them");
    }
    // SAFETY: the app's arguments, with the extension list copied and extended.
    let mut result = unsafe { next_create(&own, allocator, out_instance) };
    if added && result == vk::Result::ERROR_EXTENSION_NOT_PRESENT {
        debug!("the instance extensions Blackbox adds for a Vulkan 1.0 app are missing: creating the app's instance as asked");
        own = *info;
        // SAFETY: the app's own arguments.
        result = unsafe { next_create(&own, allocator, out_instance) };
    }
    if result != vk::Result::SUCCESS {
        return result;
    }
    // SAFETY: on success the next layer wrote a valid instance.
    let handle = unsafe { *out_instance };
    crate::contained("recording an instance", || {
        // SAFETY: the instance was created from `own`, whose pointers are valid here.
        let state = unsafe { Instance::new(handle, next_gipa, &own) };
        debug!(
            "instance created for \"{}\" (API {})",
            untrusted::shown(&state.app_name),
            version_string(state.api_version)
        );
        crate::run_status::note_instance(&state.app_name);
        // SAFETY: a live instance created through the loader.
        INSTANCES.insert(unsafe { dispatch_key(handle) }, Arc::new(state));
    });
    result
}

impl Instance {
    /// `vkDestroyInstance`, once the instance is forgotten.
    ///
    /// # Safety
    /// The app's arguments, valid as `vkDestroyInstance` requires.
    pub(crate) unsafe fn destroy(
        &self,
        instance: vk::Instance,
        allocator: *const vk::AllocationCallbacks,
    ) {
        crate::contained("destroying the binding messenger", || {
            crate::address_bindings::destroy_messenger(self)
        });
        if let Some(destroy) = self.next.destroy_instance {
            forward!(destroy, instance, allocator);
        }
    }

    /// Builds the state from the app's create info and the next layer's `vkGetInstanceProcAddr`.
    ///
    /// # Safety
    /// `create_info` must be the valid create info the instance was created from.
    pub(crate) unsafe fn new(
        handle: vk::Instance,
        next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
        create_info: &vk::InstanceCreateInfo,
    ) -> Self {
        // SAFETY: the loader resolves instance commands of a live instance.
        let api_version = app_api_version(create_info);
        let next = InstanceDispatch::load(api_version, |name| unsafe {
            next_get_instance_proc_addr(handle, name.as_ptr())
        });
        // SAFETY: the app's create info is valid (forwarded to the caller).
        let app_info = unsafe { create_info.p_application_info.as_ref() };
        let app_name = app_info
            .filter(|info| !info.p_application_name.is_null())
            // SAFETY: a non-null pApplicationName is a NUL-terminated string.
            .map(|info| unsafe { crate::raw::text(info.p_application_name) })
            .filter(|name| !name.is_empty())
            .unwrap_or_else(process_name);
        // SAFETY: the app's array of NUL-terminated extension names.
        let extensions = unsafe {
            crate::raw::names(
                create_info.pp_enabled_extension_names,
                create_info.enabled_extension_count,
            )
        };
        let debug_utils = extensions.contains(&c"VK_EXT_debug_utils");
        let env = |name: &str| std::env::var_os(name);
        let settings = crate::layer_settings::SettingsFile::find(
            &env,
            std::env::current_dir().ok().as_deref(),
        );
        let mut validation_requested =
            crate::validation_below::Requested::from_environment(&env, settings.as_ref());
        // SAFETY: the app's valid create info (forwarded to the caller).
        unsafe { validation_requested.add_app(create_info) };
        let physical_device_properties2 = api_version >= vk::API_VERSION_1_1
            || extensions.contains(&c"VK_KHR_get_physical_device_properties2");
        let device_groups = api_version >= vk::API_VERSION_1_1
            || extensions.contains(&c"VK_KHR_device_group_creation");
        Self {
            handle,
            next_get_instance_proc_addr,
            next,
            app_name,
            api_version,
            debug_utils,
            physical_device_properties2,
            device_groups,
            validation_requested,
            binding_messenger: parking_lot::Mutex::new(None),
        }
    }

    /// Name, driver and version of `physical_device`, asked in the ways the app's API version allows (the
    /// validation layer below Blackbox would flag anything else).
    ///
    /// # Safety
    /// `physical_device` must belong to this instance.
    pub(crate) unsafe fn describe(&self, physical_device: vk::PhysicalDevice) -> DeviceDescription {
        let mut props = vk::PhysicalDeviceProperties::default();
        if let Some(get) = self.next.get_physical_device_properties {
            // SAFETY: valid physical device, valid output struct.
            unsafe { get(physical_device, &mut props) };
        }
        let name = crate::raw::c_chars(&props.device_name);
        let mut driver = None;
        // VkPhysicalDeviceDriverProperties is core in 1.2 (of the instance's and the device's versions).
        let can_ask_driver =
            self.api_version >= vk::API_VERSION_1_2 && props.api_version >= vk::API_VERSION_1_2;
        if let (true, Some(get2)) = (can_ask_driver, self.next.get_physical_device_properties2) {
            let mut driver_props = vk::PhysicalDeviceDriverProperties::default();
            let mut props2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver_props);
            // SAFETY: core 1.1 command on a 1.2 device, with a chain of valid structs.
            unsafe { get2(physical_device, &mut props2) };
            driver = Some(format!(
                "{} {}",
                crate::raw::c_chars(&driver_props.driver_name),
                crate::raw::c_chars(&driver_props.driver_info)
            ));
        }
        let driver =
            driver.unwrap_or_else(|| decode_driver_version(props.vendor_id, props.driver_version));
        DeviceDescription {
            name,
            driver,
            api_version: props.api_version,
            cpu: props.device_type == vk::PhysicalDeviceType::CPU,
        }
    }
}

/// The API version an instance is created for (`VkApplicationInfo::apiVersion`, 1.0 when absent).
fn app_api_version(create_info: &vk::InstanceCreateInfo) -> u32 {
    // SAFETY: the app's valid create info.
    unsafe { create_info.p_application_info.as_ref() }
        .map_or(0, |info| info.api_version)
        .max(vk::API_VERSION_1_0)
}

/// The process name, for apps that give no application name.
fn process_name() -> String {
    std::fs::read_to_string("/proc/self/comm")
        .map(|s| s.trim().to_owned())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// `driverVersion` as its vendor encodes it (NVIDIA packs 10.8.8.6 bits; most others use `VK_MAKE_VERSION`).
pub fn decode_driver_version(vendor_id: u32, v: u32) -> String {
    const NVIDIA: u32 = 0x10de;
    if vendor_id == NVIDIA {
        format!(
            "driver {}.{}.{}.{}",
            v >> 22,
            (v >> 14) & 0xff,
            (v >> 6) & 0xff,
            v & 0x3f
        )
    } else {
        format!(
            "driver {}.{}.{}",
            vk::api_version_major(v),
            vk::api_version_minor(v),
            vk::api_version_patch(v)
        )
    }
}

/// `1.3.239`.
pub fn version_string(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_versions() {
        // NVIDIA 580.95.5.0 as the H200's driver reports it.
        let nv = (580 << 22) | (95 << 14) | (5 << 6);
        assert_eq!(decode_driver_version(0x10de, nv), "driver 580.95.5.0");
        assert_eq!(
            decode_driver_version(0x10005, vk::make_api_version(0, 22, 3, 6)),
            "driver 22.3.6"
        );
    }
}
