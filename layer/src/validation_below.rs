//! The Khronos validation layer below Blackbox, as far as Blackbox can tell, so that it adds no message to
//! what that layer says: whether the layer is there (it reports itself as a tool through
//! `vkGetPhysicalDeviceToolProperties`), and whether synchronization validation and best practices are on
//! (read from where the layer reads them: the app's `VkValidationFeaturesEXT` or
//! `VkLayerSettingsCreateInfoEXT`, its environment variables, `vk_layer_settings.txt`).
//!
//! The same scan of the tools below finds a tracing tool (GFXReconstruct's capture layer), whose captures
//! then hold Blackbox's own work: the device's creation says so in one line ([`ToolsBelow`]).
//!
//! What Blackbox does with it ([`crate::capabilities`], [`crate::breadcrumbs`]): with best practices on, it
//! enables no special-use extension (`VK_AMD_buffer_marker` and `VK_EXT_device_address_binding_report`,
//! which best practices warns about; breadcrumbs then take the fill-buffer path); with synchronization
//! validation on, every marker write gets a word of its own (on NVIDIA's driver a marker write to a new
//! address costs more GPU time, so without it a recording's "started" marks share one word).

use ash::vk;
use std::ffi::{CStr, OsString};

use crate::layer_settings::SettingsFile;
use crate::raw;

/// The validation layer's name in settings.
const LAYER: &CStr = c"VK_LAYER_KHRONOS_validation";
const ENABLE_BEST_PRACTICES: &str = "VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT";
const ENABLE_SYNCHRONIZATION: &str = "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT";

/// What the app and the environment ask of the validation layer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Requested {
    /// Synchronization validation.
    pub synchronization: bool,
    /// Best practices.
    pub best_practices: bool,
}

impl Requested {
    fn add_enables(&mut self, list: &str) {
        for word in list.split([',', ':', ';', ' ', '\t']) {
            self.best_practices |= word == ENABLE_BEST_PRACTICES;
            self.synchronization |= word == ENABLE_SYNCHRONIZATION;
        }
    }

    /// From the environment and the settings file (the parts that need no Vulkan struct).
    pub fn from_environment(
        var: &impl Fn(&str) -> Option<OsString>,
        file: Option<&SettingsFile>,
    ) -> Self {
        let mut r = Requested::default();
        let text = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
        let yes = |v: &str| matches!(v.trim().to_ascii_lowercase().as_str(), "true" | "1" | "on");
        for name in ["VK_LAYER_ENABLES", "VK_KHRONOS_VALIDATION_ENABLES"] {
            if let Some(v) = text(name) {
                r.add_enables(&v);
            }
        }
        r.best_practices |=
            text("VK_KHRONOS_VALIDATION_VALIDATE_BEST_PRACTICES").is_some_and(|v| yes(&v));
        r.synchronization |= text("VK_KHRONOS_VALIDATION_VALIDATE_SYNC").is_some_and(|v| yes(&v));
        if let Some(file) = file {
            if let Some(v) = file.get("khronos_validation.enables") {
                r.add_enables(v);
            }
            r.best_practices |= file
                .get("khronos_validation.validate_best_practices")
                .is_some_and(yes);
            r.synchronization |= file
                .get("khronos_validation.validate_sync")
                .is_some_and(yes);
        }
        r
    }

    /// Adds what the app's instance create info asks.
    ///
    /// # Safety
    /// `info` is the app's valid create info.
    pub unsafe fn add_app(&mut self, info: &vk::InstanceCreateInfo) {
        // SAFETY: the app's valid chain.
        if let Some(features) =
            unsafe { crate::chain::find::<vk::ValidationFeaturesEXT>(info.p_next) }
        {
            // SAFETY: the struct found, with its array of `enabled_validation_feature_count` enables.
            let enables = unsafe {
                raw::slice(
                    (*features).p_enabled_validation_features,
                    (*features).enabled_validation_feature_count,
                )
            };
            self.best_practices |=
                enables.contains(&vk::ValidationFeatureEnableEXT::BEST_PRACTICES);
            self.synchronization |=
                enables.contains(&vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION);
        }
        // SAFETY: the app's valid chain.
        if let Some(settings) =
            unsafe { crate::chain::find::<vk::LayerSettingsCreateInfoEXT>(info.p_next) }
        {
            // SAFETY: the struct found, with its array of `setting_count` settings.
            let settings = unsafe { raw::slice((*settings).p_settings, (*settings).setting_count) };
            for s in settings {
                // SAFETY: a setting's names are NUL-terminated strings (or null).
                let (layer, name) =
                    unsafe { (raw::text(s.p_layer_name), raw::text(s.p_setting_name)) };
                if layer.as_bytes() != LAYER.to_bytes() || s.p_values.is_null() {
                    continue;
                }
                match (name.as_str(), s.ty) {
                    ("enables", vk::LayerSettingTypeEXT::STRING) => {
                        // SAFETY: `value_count` C strings, as the type says.
                        let values = unsafe {
                            raw::slice(s.p_values as *const *const std::ffi::c_char, s.value_count)
                        };
                        for &v in values {
                            // SAFETY: each a NUL-terminated string.
                            self.add_enables(&unsafe { raw::text(v) });
                        }
                    }
                    (
                        "validate_best_practices" | "validate_sync",
                        vk::LayerSettingTypeEXT::BOOL32,
                    ) => {
                        // SAFETY: `value_count` booleans, as the type says.
                        let on =
                            unsafe { raw::slice(s.p_values as *const vk::Bool32, s.value_count) }
                                .first()
                                .is_some_and(|&b| b == vk::TRUE);
                        if name == "validate_sync" {
                            self.synchronization |= on;
                        } else {
                            self.best_practices |= on;
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The tools below Blackbox on a physical device that change what it does or says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolsBelow {
    /// A validation tool (a layer that validates: the Khronos validation layer).
    pub validation: bool,
    /// The name of a tracing tool (a capture layer: GFXReconstruct's), whose captures then hold
    /// Blackbox's own work too.
    pub tracing: Option<String>,
}

/// The tools below Blackbox on this physical device, as they report themselves.
///
/// # Safety
/// `physical_device` belongs to the instance whose next-layer command `get_tools` is.
pub unsafe fn tools_below(
    get_tools: Option<vk::PFN_vkGetPhysicalDeviceToolProperties>,
    physical_device: vk::PhysicalDevice,
) -> ToolsBelow {
    let mut below = ToolsBelow::default();
    let Some(get) = get_tools else {
        debug!("no vkGetPhysicalDeviceToolProperties below");
        return below;
    };
    let mut count = 0u32;
    // SAFETY: the two-call idiom with valid pointers.
    if unsafe { get(physical_device, &mut count, std::ptr::null_mut()) } != vk::Result::SUCCESS {
        return below;
    }
    let mut tools = vec![vk::PhysicalDeviceToolProperties::default(); count as usize];
    // SAFETY: room for the `count` tools the first call gave.
    let result = unsafe { get(physical_device, &mut count, tools.as_mut_ptr()) };
    if result != vk::Result::SUCCESS && result != vk::Result::INCOMPLETE {
        return below;
    }
    for t in tools.iter().take(count as usize) {
        let name = raw::c_chars(&t.name);
        let name = blackbox_report::untrusted::shown(&name).to_string();
        debug!("tool below: {name} ({:?})", t.purposes);
        below.validation |= t.purposes.contains(vk::ToolPurposeFlags::VALIDATION);
        if t.purposes.contains(vk::ToolPurposeFlags::TRACING) && below.tracing.is_none() {
            below.tracing = Some(name);
        }
    }
    below
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn enables_are_read_from_variables_and_the_settings_file() {
        let none = |_: &str| None;
        assert_eq!(
            Requested::from_environment(&none, None),
            Requested::default()
        );
        let env = |k: &str| {
            (k == "VK_LAYER_ENABLES")
                .then(|| OsString::from("VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT"))
        };
        let r = Requested::from_environment(&env, None);
        assert!(r.best_practices && !r.synchronization);
        let file = SettingsFile::parse(
            PathBuf::from("f"),
            "khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT\n",
        );
        let r = Requested::from_environment(&none, Some(&file));
        assert!(r.synchronization && !r.best_practices);
        let file = SettingsFile::parse(
            PathBuf::from("f"),
            "khronos_validation.validate_best_practices = true\n",
        );
        assert!(Requested::from_environment(&none, Some(&file)).best_practices);
    }

    #[test]
    fn the_apps_validation_features_count() {
        let enables = [vk::ValidationFeatureEnableEXT::SYNCHRONIZATION_VALIDATION];
        let features = vk::ValidationFeaturesEXT::default().enabled_validation_features(&enables);
        let info = vk::InstanceCreateInfo {
            p_next: &features as *const _ as *const std::ffi::c_void,
            ..Default::default()
        };
        let mut r = Requested::default();
        // SAFETY: a valid create info and chain.
        unsafe { r.add_app(&info) };
        assert!(r.synchronization && !r.best_practices);
    }
}
