//! Layer manifests: the two templates in `manifest/`, copies of them pointing at an absolute library path,
//! and the places the Vulkan loader looks for implicit layer manifests.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The layer's name, as the loader and `VK_INSTANCE_LAYERS` know it.
pub const LAYER_NAME: &str = "VK_LAYER_blackbox";
/// The library's file name, beside the `blackbox` executable and in installs.
pub const LIBRARY_FILE: &str = "libVkLayer_blackbox.so";
/// The file name of an installed (implicit) manifest.
pub const MANIFEST_FILE: &str = "VkLayer_blackbox.json";
/// Set to 1 to enable the implicit layer (its manifest's `enable_environment`).
pub const ENABLE_ENV: &str = "VK_BLACKBOX_ENABLE";
/// Set to 1 to disable the implicit layer (its manifest's `disable_environment`).
pub const DISABLE_ENV: &str = "VK_BLACKBOX_DISABLE";

const EXPLICIT_TEMPLATE: &str = include_str!("../../manifest/VkLayer_blackbox.json");
const IMPLICIT_TEMPLATE: &str = include_str!("../../manifest/VkLayer_blackbox_implicit.json");

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ManifestKind {
    /// Found through `VK_LAYER_PATH`/`VK_ADD_LAYER_PATH`, enabled by `VK_INSTANCE_LAYERS` or the app.
    Explicit,
    /// Found in `implicit_layer.d`, enabled by `VK_BLACKBOX_ENABLE=1`.
    Implicit,
}

/// The manifest of `kind` with `library_path` set to `library` (made absolute against the current
/// directory if it is relative), pretty-printed, ending with a newline.
pub fn manifest_json(library: &Path, kind: ManifestKind) -> String {
    let template = match kind {
        ManifestKind::Explicit => EXPLICIT_TEMPLATE,
        ManifestKind::Implicit => IMPLICIT_TEMPLATE,
    };
    let mut json: serde_json::Value =
        serde_json::from_str(template).expect("embedded manifest template is valid JSON");
    let absolute = std::path::absolute(library).unwrap_or_else(|_| library.to_path_buf());
    // The loader reads the manifest as UTF-8; a non-UTF-8 path cannot be written into it faithfully.
    json["layer"]["library_path"] =
        serde_json::Value::String(absolute.to_string_lossy().into_owned());
    let mut text = serde_json::to_string_pretty(&json).expect("a JSON value serialises");
    text.push('\n');
    text
}

/// What a manifest on disk says about a Blackbox layer.
#[derive(Debug, PartialEq, Eq)]
pub struct ManifestInfo {
    /// `library_path` as written in the file.
    pub library_path: String,
    /// Where the loader will look for it: relative paths with a '/' are taken relative to the manifest's
    /// directory; a bare file name is left to the dynamic linker's search (None).
    pub resolved: Option<PathBuf>,
}

/// Reads a manifest's text and, if it declares `VK_LAYER_blackbox` (as `layer` or in `layers`), returns its
/// library path. `Ok(None)`: valid JSON for some other layer.
pub fn blackbox_layer_in(text: &str, manifest_path: &Path) -> Result<Option<ManifestInfo>, String> {
    let json: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?;
    let mut layers: Vec<&serde_json::Value> = Vec::new();
    if let Some(layer) = json.get("layer") {
        layers.push(layer);
    }
    if let Some(list) = json.get("layers").and_then(|l| l.as_array()) {
        layers.extend(list.iter());
    }
    for layer in layers {
        if layer.get("name").and_then(|n| n.as_str()) != Some(LAYER_NAME) {
            continue;
        }
        let Some(library_path) = layer.get("library_path").and_then(|p| p.as_str()) else {
            return Err("no library_path".to_string());
        };
        let resolved = if library_path.contains('/') {
            let p = Path::new(library_path);
            Some(if p.is_absolute() {
                p.to_path_buf()
            } else {
                manifest_path.parent().unwrap_or(Path::new("/")).join(p)
            })
        } else {
            None
        };
        return Ok(Some(ManifestInfo {
            library_path: library_path.to_string(),
            resolved,
        }));
    }
    Ok(None)
}

/// `$HOME`, from the environment.
fn home(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from)
}

/// An XDG base directory variable: its value if set to an absolute path, else `$HOME/<fallback>`.
pub fn xdg_home(
    env: &dyn Fn(&str) -> Option<OsString>,
    var: &str,
    fallback: &str,
) -> Option<PathBuf> {
    match env(var).map(PathBuf::from) {
        Some(p) if p.is_absolute() => Some(p),
        _ => home(env).map(|h| h.join(fallback)),
    }
}

/// An XDG search-path variable split on ':' (empty and relative entries dropped), or `default`.
pub fn xdg_dirs(env: &dyn Fn(&str) -> Option<OsString>, var: &str, default: &str) -> Vec<PathBuf> {
    let value = env(var).filter(|v| !v.is_empty());
    let value = value.unwrap_or_else(|| OsString::from(default));
    std::env::split_paths(&value)
        .filter(|p| p.is_absolute())
        .collect()
}

pub const DEFAULT_XDG_DATA_DIRS: &str = "/usr/local/share:/usr/share";
pub const DEFAULT_XDG_CONFIG_DIRS: &str = "/etc/xdg";

/// The directories the Linux loader searches for `vulkan/<sub>` (`implicit_layer.d`, `icd.d`, ...), in the
/// loader's order: `$XDG_CONFIG_HOME`, `$XDG_CONFIG_DIRS`, `/etc`, `$XDG_DATA_HOME`, `$XDG_DATA_DIRS`.
pub fn loader_search_dirs(env: &dyn Fn(&str) -> Option<OsString>, sub: &str) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    roots.extend(xdg_home(env, "XDG_CONFIG_HOME", ".config"));
    roots.extend(xdg_dirs(env, "XDG_CONFIG_DIRS", DEFAULT_XDG_CONFIG_DIRS));
    roots.push(PathBuf::from("/etc"));
    roots.extend(xdg_home(env, "XDG_DATA_HOME", ".local/share"));
    roots.extend(xdg_dirs(env, "XDG_DATA_DIRS", DEFAULT_XDG_DATA_DIRS));
    let mut dirs: Vec<PathBuf> = Vec::new();
    for root in roots {
        let dir = root.join("vulkan").join(sub);
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// A manifest file and what it says (or why it could not be read).
pub type FoundManifest = (PathBuf, Result<ManifestInfo, String>);

/// Blackbox manifests in the loader's implicit layer search path, in search order.
pub fn find_implicit_blackbox_manifests(
    env: &dyn Fn(&str) -> Option<OsString>,
) -> Vec<FoundManifest> {
    let mut found = Vec::new();
    for dir in loader_search_dirs(env, "implicit_layer.d") {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        for file in files {
            let is_ours_by_name = file.file_name().is_some_and(|n| n == MANIFEST_FILE);
            match std::fs::read_to_string(&file) {
                Ok(text) => match blackbox_layer_in(&text, &file) {
                    Ok(Some(info)) => found.push((file, Ok(info))),
                    Ok(None) => {}
                    Err(e) if is_ours_by_name => found.push((file, Err(e))),
                    Err(_) => {}
                },
                Err(e) if is_ours_by_name => found.push((file, Err(e.to_string()))),
                Err(_) => {}
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env_of;

    #[test]
    fn templates_are_what_the_loader_needs() {
        for (text, implicit) in [(EXPLICIT_TEMPLATE, false), (IMPLICIT_TEMPLATE, true)] {
            let json: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(json["file_format_version"], "1.2.0");
            let layer = &json["layer"];
            assert_eq!(layer["name"], LAYER_NAME);
            assert_eq!(layer["type"], "GLOBAL");
            assert_eq!(layer["library_path"], "./libVkLayer_blackbox.so");
            assert_eq!(layer["api_version"], "1.3.239");
            assert_eq!(layer["implementation_version"], "1");
            assert_eq!(
                layer["description"],
                "Blackbox: reports GPU crashes, hangs and shader errors"
            );
            assert!(layer.get("functions").is_none());
            if implicit {
                assert_eq!(layer["enable_environment"][ENABLE_ENV], "1");
                assert_eq!(layer["disable_environment"][DISABLE_ENV], "1");
            } else {
                assert!(layer.get("enable_environment").is_none());
                assert!(layer.get("disable_environment").is_none());
            }
        }
    }

    #[test]
    fn manifest_json_sets_absolute_path_and_keeps_env_keys() {
        let text = manifest_json(
            Path::new("/opt/bb/libVkLayer_blackbox.so"),
            ManifestKind::Implicit,
        );
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            json["layer"]["library_path"],
            "/opt/bb/libVkLayer_blackbox.so"
        );
        assert_eq!(json["layer"]["enable_environment"][ENABLE_ENV], "1");
        assert_eq!(json["layer"]["disable_environment"][DISABLE_ENV], "1");
        assert_eq!(json["layer"]["name"], LAYER_NAME);
        assert!(text.ends_with("}\n"));

        let text = manifest_json(Path::new("rel/lib.so"), ManifestKind::Explicit);
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        let path = json["layer"]["library_path"].as_str().unwrap();
        assert!(Path::new(path).is_absolute(), "{path}");
        assert!(path.ends_with("/rel/lib.so"), "{path}");
        assert!(json["layer"].get("enable_environment").is_none());
    }

    #[test]
    fn reads_library_path_back() {
        let text = manifest_json(Path::new("/x/lib.so"), ManifestKind::Implicit);
        let info = blackbox_layer_in(&text, Path::new("/m/a.json"))
            .unwrap()
            .unwrap();
        assert_eq!(info.resolved.as_deref(), Some(Path::new("/x/lib.so")));
        let info = blackbox_layer_in(IMPLICIT_TEMPLATE, Path::new("/m/a.json"))
            .unwrap()
            .unwrap();
        assert_eq!(
            info.resolved.as_deref(),
            Some(Path::new("/m/./libVkLayer_blackbox.so"))
        );
        let other = r#"{"file_format_version":"1.0.0","layer":{"name":"VK_LAYER_other","library_path":"x.so"}}"#;
        assert_eq!(blackbox_layer_in(other, Path::new("/m/a.json")), Ok(None));
        let bare =
            r#"{"layers":[{"name":"VK_LAYER_blackbox","library_path":"libVkLayer_blackbox.so"}]}"#;
        let info = blackbox_layer_in(bare, Path::new("/m/a.json"))
            .unwrap()
            .unwrap();
        assert_eq!(info.resolved, None);
        assert!(blackbox_layer_in("{", Path::new("/m/a.json")).is_err());
    }

    #[test]
    fn loader_search_dirs_follow_xdg() {
        let env = env_of(&[("HOME", "/home/u")]);
        let dirs = loader_search_dirs(&env, "implicit_layer.d");
        let expect: Vec<PathBuf> = [
            "/home/u/.config",
            "/etc/xdg",
            "/etc",
            "/home/u/.local/share",
            "/usr/local/share",
            "/usr/share",
        ]
        .iter()
        .map(|r| Path::new(r).join("vulkan/implicit_layer.d"))
        .collect();
        assert_eq!(dirs, expect);

        let env = env_of(&[
            ("HOME", "/home/u"),
            ("XDG_DATA_HOME", "/data"),
            ("XDG_DATA_DIRS", "/a::relative:/b"),
            ("XDG_CONFIG_HOME", "not-absolute"),
        ]);
        let dirs = loader_search_dirs(&env, "icd.d");
        let expect: Vec<PathBuf> = ["/home/u/.config", "/etc/xdg", "/etc", "/data", "/a", "/b"]
            .iter()
            .map(|r| Path::new(r).join("vulkan/icd.d"))
            .collect();
        assert_eq!(dirs, expect);
    }
}
