//! `vk_layer_settings.txt`, the file through which Vulkan layers are configured (Vulkan Configurator writes
//! it), found where the loader and the Khronos layers look for it: `VK_LAYER_SETTINGS_PATH` (the file, or
//! a folder holding it), else the working directory, else `$XDG_DATA_HOME/vulkan/settings.d` (Vulkan
//! Configurator's override), else `$HOME/.local/share/vulkan/settings.d`.
//!
//! Lines are `<layer>.<setting> = <value>`; `#` starts a comment.

use std::collections::HashMap;
use std::ffi::OsString;
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
        let candidates = candidates(var, cwd);
        candidates.into_iter().find_map(|path| {
            let text = std::fs::read_to_string(&path).ok()?;
            Some(SettingsFile::parse(path, &text))
        })
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

/// Where the file may be, in the order it is looked for.
fn candidates(var: &impl Fn(&str) -> Option<OsString>, cwd: Option<&Path>) -> Vec<PathBuf> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = set("VK_LAYER_SETTINGS_PATH") {
        // The variable names the file itself, or the folder it is in; nothing else is looked at then.
        return vec![if path.extension().is_some_and(|e| e == "txt") {
            path
        } else {
            path.join(FILE_NAME)
        }];
    }
    let mut found = Vec::new();
    if let Some(cwd) = cwd {
        found.push(cwd.join(FILE_NAME));
    }
    let data = set("XDG_DATA_HOME").or_else(|| set("HOME").map(|h| h.join(".local/share")));
    if let Some(data) = data {
        found.push(data.join("vulkan/settings.d").join(FILE_NAME));
    }
    found
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
    fn the_variable_names_a_file_or_a_folder_and_wins() {
        let e = [
            ("VK_LAYER_SETTINGS_PATH", "/s/vk_layer_settings.txt"),
            ("HOME", "/h"),
        ];
        assert_eq!(
            candidates(&env(&e), Some(Path::new("/cwd"))),
            [PathBuf::from("/s/vk_layer_settings.txt")]
        );
        let e = [("VK_LAYER_SETTINGS_PATH", "/s")];
        assert_eq!(
            candidates(&env(&e), None),
            [PathBuf::from("/s/vk_layer_settings.txt")]
        );
        let e = [("HOME", "/h")];
        assert_eq!(
            candidates(&env(&e), Some(Path::new("/cwd"))),
            [
                PathBuf::from("/cwd/vk_layer_settings.txt"),
                PathBuf::from("/h/.local/share/vulkan/settings.d/vk_layer_settings.txt")
            ]
        );
    }
}
