//! `blackbox install` / `uninstall`: the layer library and its implicit manifest, per user or system-wide.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};

use crate::layer_lib;
use crate::manifest::{self, ManifestKind, ENABLE_ENV, LIBRARY_FILE, MANIFEST_FILE};

/// Where an install puts its two files.
#[derive(Debug, PartialEq, Eq)]
pub struct Target {
    pub system: bool,
    pub library: PathBuf,
    pub manifest: PathBuf,
    /// Folders of ours to remove on uninstall when empty, innermost first.
    pub own_dirs: Vec<PathBuf>,
}

/// Per user: `$XDG_DATA_HOME` (default `~/.local/share`), which the loader searches for implicit layers.
pub fn user_target(env: &dyn Fn(&str) -> Option<OsString>) -> Result<Target> {
    let data = manifest::xdg_home(env, "XDG_DATA_HOME", ".local/share").ok_or_else(|| {
        anyhow!("neither XDG_DATA_HOME nor HOME is set: cannot find the user's data folder")
    })?;
    Ok(target_under(&data.join("blackbox"), &data, false))
}

/// System-wide: `/usr/local/lib/blackbox` and `/usr/local/share/vulkan/implicit_layer.d`.
pub fn system_target() -> Target {
    target_under(
        Path::new("/usr/local/lib/blackbox"),
        Path::new("/usr/local/share"),
        true,
    )
}

fn target_under(blackbox_dir: &Path, data: &Path, system: bool) -> Target {
    let lib_dir = if system {
        blackbox_dir.to_path_buf()
    } else {
        blackbox_dir.join("lib")
    };
    let mut own_dirs = vec![lib_dir.clone()];
    if !system {
        own_dirs.push(blackbox_dir.to_path_buf());
    }
    Target {
        system,
        library: lib_dir.join(LIBRARY_FILE),
        manifest: data
            .join("vulkan")
            .join("implicit_layer.d")
            .join(MANIFEST_FILE),
        own_dirs,
    }
}

pub fn target(system: bool) -> Result<Target> {
    if system {
        Ok(system_target())
    } else {
        user_target(&|k| std::env::var_os(k))
    }
}

/// Adds a hint to permission errors for system installs.
fn io_context<T>(result: io::Result<T>, what: &str, path: &Path, system: bool) -> Result<T> {
    result.map_err(|e| {
        let msg = if e.kind() == io::ErrorKind::PermissionDenied && system {
            format!(
                "cannot {what} {}: {e}: --system needs root (run blackbox with sudo)",
                path.display()
            )
        } else {
            format!("cannot {what} {}: {e}", path.display())
        };
        anyhow!(msg)
    })
}

/// A temporary name beside `path` (same folder, so the rename is atomic). Not `.json`, so the loader never
/// reads a half-written manifest.
fn temp_beside(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Writes `path` by writing a temporary file beside it and renaming it over: a running app keeps the copy
/// it has mapped, and nothing ever sees a partial file.
fn replace_file(
    path: &Path,
    mode: u32,
    system: bool,
    fill: impl FnOnce(&Path) -> io::Result<()>,
) -> Result<()> {
    let tmp = temp_beside(path);
    let result = (|| -> io::Result<()> {
        fill(&tmp)?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    io_context(result, "write", path, system)
}

pub fn install(system: bool, layer: Option<&Path>) -> Result<()> {
    let source = layer_lib::resolve(layer)?;
    let target = target(system)?;
    for dir in [target.library.parent(), target.manifest.parent()]
        .into_iter()
        .flatten()
    {
        io_context(std::fs::create_dir_all(dir), "create", dir, system)?;
    }
    replace_file(&target.library, 0o755, system, |tmp| {
        std::fs::copy(&source, tmp).map(|_| ())
    })?;
    let json = manifest::manifest_json(&target.library, ManifestKind::Implicit);
    replace_file(&target.manifest, 0o644, system, |tmp| {
        std::fs::write(tmp, json.as_bytes())
    })?;

    let mut out = io::stdout().lock();
    let scope = if system {
        "system-wide"
    } else {
        "for this user"
    };
    writeln!(out, "blackbox: installed {scope}")?;
    writeln!(
        out,
        "  layer library: {} (copied from {})",
        target.library.display(),
        source.display()
    )?;
    writeln!(
        out,
        "  implicit layer manifest: {}",
        target.manifest.display()
    )?;
    writeln!(
        out,
        "The layer stays off until enabled; to enable it for one app:"
    )?;
    writeln!(out, "  {ENABLE_ENV}=1 your-app")?;
    Ok(())
}

pub fn uninstall(system: bool) -> Result<()> {
    let target = target(system)?;
    let mut removed = Vec::new();
    for path in [&target.manifest, &target.library] {
        match std::fs::remove_file(path) {
            Ok(()) => removed.push(path.clone()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => io_context(Err(e), "remove", path, system)?,
        }
    }
    // Leftovers of an interrupted install, then our folders if that left them empty.
    if let Some(lib_dir) = target.library.parent() {
        let prefix = format!(".{LIBRARY_FILE}.");
        if let Ok(entries) = std::fs::read_dir(lib_dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(&prefix) && name.ends_with(".tmp") {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
    for dir in &target.own_dirs {
        let _ = std::fs::remove_dir(dir);
    }

    let mut out = io::stdout().lock();
    if removed.is_empty() {
        writeln!(
            out,
            "blackbox: not installed{} (no {}, no {})",
            if system {
                " system-wide"
            } else {
                " for this user"
            },
            target.manifest.display(),
            target.library.display()
        )?;
    } else {
        for path in removed {
            writeln!(out, "blackbox: removed {}", path.display())?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env_of;

    #[test]
    fn user_paths_follow_xdg_data_home() {
        let t = user_target(&env_of(&[("HOME", "/home/u")])).unwrap();
        assert_eq!(
            t.library,
            Path::new("/home/u/.local/share/blackbox/lib/libVkLayer_blackbox.so")
        );
        assert_eq!(
            t.manifest,
            Path::new("/home/u/.local/share/vulkan/implicit_layer.d/VkLayer_blackbox.json")
        );
        assert_eq!(
            t.own_dirs,
            vec![
                PathBuf::from("/home/u/.local/share/blackbox/lib"),
                PathBuf::from("/home/u/.local/share/blackbox")
            ]
        );
        let t = user_target(&env_of(&[("HOME", "/home/u"), ("XDG_DATA_HOME", "/d")])).unwrap();
        assert_eq!(
            t.library,
            Path::new("/d/blackbox/lib/libVkLayer_blackbox.so")
        );
        assert_eq!(
            t.manifest,
            Path::new("/d/vulkan/implicit_layer.d/VkLayer_blackbox.json")
        );
        assert!(user_target(&env_of(&[])).is_err());
    }

    #[test]
    fn system_paths() {
        let t = system_target();
        assert_eq!(
            t.library,
            Path::new("/usr/local/lib/blackbox/libVkLayer_blackbox.so")
        );
        assert_eq!(
            t.manifest,
            Path::new("/usr/local/share/vulkan/implicit_layer.d/VkLayer_blackbox.json")
        );
        assert_eq!(t.own_dirs, vec![PathBuf::from("/usr/local/lib/blackbox")]);
    }

    #[test]
    fn temp_names_are_hidden_and_not_json() {
        let t = temp_beside(Path::new("/a/VkLayer_blackbox.json"));
        let name = t.file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with(".VkLayer_blackbox.json."));
        assert!(name.ends_with(".tmp"));
        assert_eq!(t.parent(), Some(Path::new("/a")));
    }
}
