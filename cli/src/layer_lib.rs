//! Finding the layer library: the one built beside this `blackbox` executable, or `--layer PATH`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::manifest::LIBRARY_FILE;

/// Where the library built from the same checkout and profile would be: beside the executable
/// (`target/debug/blackbox` next to `target/debug/libVkLayer_blackbox.so`).
pub fn default_path() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the blackbox executable's path")?;
    let dir = exe
        .parent()
        .context("the blackbox executable has no parent directory")?;
    Ok(dir.join(LIBRARY_FILE))
}

/// The candidate path before checking it: `--layer PATH` (a directory means the library inside it) or
/// the default.
pub fn candidate(layer: Option<&Path>) -> Result<PathBuf> {
    match layer {
        Some(p) if p.is_dir() => Ok(p.join(LIBRARY_FILE)),
        Some(p) => Ok(p.to_path_buf()),
        None => default_path(),
    }
}

/// The layer library to use, as an absolute path with symbolic links resolved; an error that says how to
/// get one if it is not there.
pub fn resolve(layer: Option<&Path>) -> Result<PathBuf> {
    let path = candidate(layer)?;
    if !path.is_file() {
        bail!(
            "layer library not found at {}: build it with `cargo build -p blackbox-layer` (same profile as blackbox), or pass --layer",
            path.display()
        );
    }
    path.canonicalize()
        .with_context(|| format!("cannot resolve {}", path.display()))
}
