//! Finding the layer library: the one built beside this `blackbox` executable, the one a package installed
//! beside it (`/usr/bin/blackbox`, `/usr/lib/x86_64-linux-gnu/libVkLayer_blackbox.so`), or `--layer PATH`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::manifest::LIBRARY_FILE;

/// Where the package puts the library, relative to the folder of `blackbox` (`/usr/bin`).
const PACKAGED: &str = "../lib/x86_64-linux-gnu";

/// Where the library of this `blackbox` is: built from the same checkout and profile, beside the executable
/// (`target/debug/blackbox` next to `target/debug/libVkLayer_blackbox.so`), else where the Debian package
/// installs it (`/usr/lib/x86_64-linux-gnu` for `/usr/bin/blackbox`); the first when neither exists.
pub fn default_path() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the blackbox executable's path")?;
    let dir = exe
        .parent()
        .context("the blackbox executable has no parent directory")?;
    let beside = dir.join(LIBRARY_FILE);
    let packaged = dir.join(PACKAGED).join(LIBRARY_FILE);
    Ok(if !beside.is_file() && packaged.is_file() {
        packaged
    } else {
        beside
    })
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
