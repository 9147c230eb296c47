//! Layer settings as every layer built on the Vulkan-Utility-Libraries' layer settings library reads them
//! (the Khronos validation layer among them): `vk_layer_settings.txt` and the app's
//! `VkLayerSettingsCreateInfoEXT`.
//!
//! `vk_layer_settings.txt` (Vulkan Configurator writes it) is the first of, in this order:
//! `$XDG_DATA_HOME/vulkan/settings.d/vk_layer_settings.txt` (else under `$HOME/.local/share`: Vulkan
//! Configurator's, which by the ecosystem's convention wins over an app's own file), `VK_LAYER_SETTINGS_PATH`
//! if it exists (a folder holding the file, or the file itself, whatever its name), the working directory.
//! Lines are `<layer>.<setting> = <value>`; `#` starts a comment.
//!
//! `VkLayerSettingsCreateInfoEXT` (any number of them in `VkInstanceCreateInfo`'s chain; the first that
//! names a setting decides it) names the layer (`VK_LAYER_blackbox`) and the setting without the layer's
//! prefix (`nan`), with typed values: [`app_settings`] turns those of one layer into text, as the file has.

use ash::vk;
use std::collections::HashMap;
use std::ffi::{c_char, c_void, OsString};
use std::path::{Path, PathBuf};

/// The file's name.
pub const FILE_NAME: &str = "vk_layer_settings.txt";

/// The settings of a `vk_layer_settings.txt`.
#[derive(Debug, Default, Clone)]
pub struct SettingsFile {
    /// Where it was read from.
    pub path: PathBuf,
    entries: HashMap<String, String>,
}

impl SettingsFile {
    /// The file in force for a process with environment `var` and working directory `cwd`, if any (one
    /// that cannot be read counts as none).
    pub fn find(
        var: &impl Fn(&str) -> Option<OsString>,
        cwd: Option<&Path>,
    ) -> Option<SettingsFile> {
        let path = locate(var, cwd, |p| p.is_file(), |p| p.is_dir())?;
        let text = std::fs::read_to_string(&path).ok()?;
        Some(SettingsFile::parse(path, &text))
    }

    /// Parses the text of a file read from `path`.
    pub fn parse(path: PathBuf, text: &str) -> SettingsFile {
        let entries = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or_default())
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .filter(|(k, _)| !k.is_empty())
            .collect();
        SettingsFile { path, entries }
    }

    /// The value of `<layer>.<setting>` (the layer's lower-case identifier, e.g. `khronos_validation`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }
}

/// Where the file is, the first that applies of: Vulkan Configurator's file (if it is a file), the path
/// `VK_LAYER_SETTINGS_PATH` names (if it exists: a folder holding the file, else the file), the working
/// directory's file (if it is a file). `is_file` and `is_dir` ask the file system, so tests can give their own.
fn locate(
    var: &impl Fn(&str) -> Option<OsString>,
    cwd: Option<&Path>,
    is_file: impl Fn(&Path) -> bool,
    is_dir: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let data = set("XDG_DATA_HOME").or_else(|| set("HOME").map(|h| h.join(".local/share")));
    if let Some(file) = data.map(|d| d.join("vulkan/settings.d").join(FILE_NAME)) {
        if is_file(&file) {
            return Some(file);
        }
    }
    if let Some(path) = set("VK_LAYER_SETTINGS_PATH") {
        if is_dir(&path) {
            return Some(path.join(FILE_NAME));
        }
        if is_file(&path) {
            return Some(path);
        }
    }
    cwd.map(|cwd| cwd.join(FILE_NAME)).filter(|f| is_file(f))
}

/// One setting the app gave a layer through `VkLayerSettingsCreateInfoEXT`, its values written as text: as
/// the settings file would have them (comma-separated; booleans `true`/`false`, numbers in decimal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppSetting {
    /// The setting's name, without the layer's prefix (`nan`).
    pub name: String,
    /// Its values as text.
    pub text: String,
}

/// The settings for `layer` in every `VkLayerSettingsCreateInfoEXT` of an instance create info's chain, in
/// chain order (so the first of a name is the one that counts).
///
/// # Safety
/// `p_next` is a valid `VkInstanceCreateInfo` chain (or null).
pub unsafe fn app_settings(p_next: *const c_void, layer: &str) -> Vec<AppSetting> {
    let mut found = Vec::new();
    let mut p = p_next;
    while !p.is_null() {
        // SAFETY: every struct of a valid chain starts like VkBaseInStructure.
        let base = unsafe { &*(p as *const vk::BaseInStructure) };
        if base.s_type == vk::StructureType::LAYER_SETTINGS_CREATE_INFO_EXT {
            // SAFETY: the struct its sType names.
            let info = unsafe { &*(p as *const vk::LayerSettingsCreateInfoEXT) };
            // SAFETY: `setting_count` settings, as the struct says.
            for s in unsafe { crate::raw::slice(info.p_settings, info.setting_count) } {
                // SAFETY: a setting's names are NUL-terminated strings.
                if unsafe { crate::raw::text(s.p_layer_name) } != layer {
                    continue;
                }
                // SAFETY: as above; the values are `value_count` of the setting's type.
                let (name, text) = unsafe { (crate::raw::text(s.p_setting_name), setting_text(s)) };
                found.push(AppSetting { name, text });
            }
        }
        p = base.p_next as *const c_void;
    }
    found
}

/// A setting's values as comma-separated text.
///
/// # Safety
/// `s.p_values` holds `s.value_count` values of type `s.ty` (or is null).
unsafe fn setting_text(s: &vk::LayerSettingEXT) -> String {
    /// The values as `T`, each written by `write`.
    ///
    /// # Safety
    /// As [`setting_text`], with `T` the type's.
    unsafe fn each<T: Copy>(s: &vk::LayerSettingEXT, write: impl Fn(T) -> String) -> Vec<String> {
        // SAFETY: the caller's contract.
        unsafe { crate::raw::slice(s.p_values as *const T, s.value_count) }
            .iter()
            .map(|&v| write(v))
            .collect()
    }
    type Ty = vk::LayerSettingTypeEXT;
    // SAFETY: each arm reads the values as the type the setting declares.
    let values = unsafe {
        match s.ty {
            Ty::BOOL32 => each(s, |b: vk::Bool32| (b != vk::FALSE).to_string()),
            Ty::INT32 => each(s, |v: i32| v.to_string()),
            Ty::INT64 => each(s, |v: i64| v.to_string()),
            Ty::UINT32 => each(s, |v: u32| v.to_string()),
            Ty::UINT64 => each(s, |v: u64| v.to_string()),
            Ty::FLOAT32 => each(s, |v: f32| v.to_string()),
            Ty::FLOAT64 => each(s, |v: f64| v.to_string()),
            // SAFETY: a string setting's values are NUL-terminated strings.
            Ty::STRING => each(s, |v: *const c_char| crate::raw::text(v)),
            other => vec![format!("<values of unknown type {}>", other.as_raw())],
        }
    };
    values.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn lines_comments_and_spaces() {
        let f = SettingsFile::parse(
            PathBuf::from("x"),
            "# a comment\nkhronos_validation.enables = A,B # why\n  blackbox.nan=ops\nnot a setting\n",
        );
        assert_eq!(f.get("khronos_validation.enables"), Some("A,B"));
        assert_eq!(f.get("blackbox.nan"), Some("ops"));
        assert_eq!(f.get("not a setting"), None);
    }

    #[test]
    fn vulkan_configurators_file_then_the_variable_then_the_working_directory() {
        let files = [
            "/h/.local/share/vulkan/settings.d/vk_layer_settings.txt",
            "/x/vk_layer_settings.txt",
            "/s/any-name.txt",
            "/cwd/vk_layer_settings.txt",
        ];
        let dirs = ["/s", "/x"];
        let find = |e: &[(&str, &str)], present: &[&str]| {
            locate(
                &env(e),
                Some(Path::new("/cwd")),
                |p| present.iter().any(|f| Path::new(f) == p),
                |p| dirs.iter().any(|d| Path::new(d) == p),
            )
        };
        // Vulkan Configurator's file wins over the variable and the working directory.
        assert_eq!(
            find(&[("HOME", "/h"), ("VK_LAYER_SETTINGS_PATH", "/x")], &files),
            Some(PathBuf::from(files[0]))
        );
        // The variable: a folder holding the file, or the file by any name.
        assert_eq!(
            find(
                &[("HOME", "/h"), ("VK_LAYER_SETTINGS_PATH", "/x")],
                &files[1..]
            ),
            Some(PathBuf::from("/x/vk_layer_settings.txt"))
        );
        assert_eq!(
            find(
                &[("VK_LAYER_SETTINGS_PATH", "/s/any-name.txt")],
                &files[1..]
            ),
            Some(PathBuf::from("/s/any-name.txt"))
        );
        // A path that does not exist falls through to the working directory.
        assert_eq!(
            find(&[("VK_LAYER_SETTINGS_PATH", "/nowhere")], &files[3..]),
            Some(PathBuf::from("/cwd/vk_layer_settings.txt"))
        );
        assert_eq!(find(&[("XDG_DATA_HOME", "/d")], &[]), None);
    }

    /// A setting of `count` values at `values` (ash's `values()` counts bytes, not values).
    fn setting<'a, T>(
        layer: &'a std::ffi::CStr,
        name: &'a std::ffi::CStr,
        ty: vk::LayerSettingTypeEXT,
        values: &'a [T],
    ) -> vk::LayerSettingEXT<'a> {
        vk::LayerSettingEXT {
            p_layer_name: layer.as_ptr(),
            p_setting_name: name.as_ptr(),
            ty,
            value_count: values.len() as u32,
            p_values: values.as_ptr().cast(),
            ..Default::default()
        }
    }

    #[test]
    fn app_settings_of_every_type_and_struct_in_chain_order() {
        type Ty = vk::LayerSettingTypeEXT;
        let bb = c"VK_LAYER_blackbox";
        let on = [vk::TRUE];
        let words = [c"label:shadow".as_ptr(), c"command:3".as_ptr()];
        let first = [
            setting(bb, c"printf", Ty::BOOL32, &on),
            setting(c"VK_LAYER_KHRONOS_validation", c"printf", Ty::BOOL32, &on),
            setting(bb, c"skip", Ty::STRING, &words),
        ];
        let ms = [250u32];
        let level = [c"ops".as_ptr()];
        let limit = [-3i64];
        let second = [
            setting(bb, c"loop_ms", Ty::UINT32, &ms),
            setting(bb, c"nan", Ty::STRING, &level),
            setting(bb, c"loop_limit", Ty::INT64, &limit),
        ];
        let b = vk::LayerSettingsCreateInfoEXT::default().settings(&second);
        let a = vk::LayerSettingsCreateInfoEXT {
            p_next: &b as *const _ as *const c_void,
            ..vk::LayerSettingsCreateInfoEXT::default().settings(&first)
        };
        // SAFETY: a valid chain of two structs.
        let found = unsafe { app_settings(&a as *const _ as *const c_void, "VK_LAYER_blackbox") };
        let pairs: Vec<(&str, &str)> = found.iter().map(|s| (&*s.name, &*s.text)).collect();
        assert_eq!(
            pairs,
            [
                ("printf", "true"),
                ("skip", "label:shadow,command:3"),
                ("loop_ms", "250"),
                ("nan", "ops"),
                ("loop_limit", "-3")
            ]
        );
    }
}
