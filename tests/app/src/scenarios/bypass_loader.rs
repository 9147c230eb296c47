//! `bypass-loader`: creates a Vulkan instance without the Vulkan loader, as ncnn's pip wheel does: the
//! driver library named by the `VK_DRIVER_FILES` (or `VK_ICD_FILENAMES`) manifest is opened directly and
//! driven through its `vk_icdGetInstanceProcAddr`. No layer sees any of it, Blackbox included; that is what
//! the scenario is for (`blackbox run` must say so).
//!
//! It runs alone, before the run loop loads the loader, and prints `scenario bypass-loader checksum X`,
//! X the FNV-1a of the first physical device's name.

use std::ffi::{c_char, OsString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use ash::vk;

use crate::context::{Fnv1a, VkResultExt};

/// The scenario's name on the command line.
pub const NAME: &str = "bypass-loader";

/// `vk_icdNegotiateLoaderICDInterfaceVersion`.
type NegotiateIcdInterface = unsafe extern "system" fn(*mut u32) -> vk::Result;

/// The highest loader-ICD interface version this caller speaks (the loader's own, 1.3.239, speaks 6;
/// nothing here depends on more than 2: direct calls with the ICD's own handles).
const ICD_INTERFACE_VERSION: u32 = 5;

/// The driver manifest to use: the first one of `VK_DRIVER_FILES`, else of `VK_ICD_FILENAMES`.
fn driver_manifest() -> Result<PathBuf> {
    let list = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .find_map(|var| std::env::var_os(var).filter(|v| !v.is_empty()))
        .context(
            "bypass-loader needs VK_DRIVER_FILES (or VK_ICD_FILENAMES) naming a driver manifest",
        )?;
    let list = list.to_string_lossy().into_owned();
    let first = list
        .split(':')
        .find(|s| !s.is_empty())
        .context("empty driver list")?;
    Ok(PathBuf::from(first))
}

/// The library a driver manifest names: absolute, relative to the manifest, or a bare name for dlopen.
fn driver_library(manifest: &Path) -> Result<OsString> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", manifest.display()))?;
    let Some(library) = json["ICD"]["library_path"].as_str() else {
        bail!("{} has no ICD.library_path", manifest.display());
    };
    let path = Path::new(library);
    Ok(if path.is_relative() && library.contains('/') {
        manifest
            .parent()
            .unwrap_or(Path::new("."))
            .join(path)
            .into_os_string()
    } else {
        path.as_os_str().to_owned()
    })
}

pub fn run() -> Result<()> {
    let manifest = driver_manifest()?;
    let library = driver_library(&manifest)?;
    // SAFETY: loading a Vulkan driver runs its initialisers; the scenario exists to do what such apps do.
    let driver = unsafe { libloading::Library::new(&library) }
        .with_context(|| format!("cannot load {}", library.to_string_lossy()))?;
    // SAFETY: the loader-ICD interface's symbol, with its type.
    let negotiate = unsafe {
        driver.get::<NegotiateIcdInterface>(b"vk_icdNegotiateLoaderICDInterfaceVersion\0")
    };
    if let Ok(negotiate) = negotiate {
        let mut version = ICD_INTERFACE_VERSION;
        // SAFETY: a valid pointer to the version we speak, as the loader passes it.
        unsafe { negotiate(&mut version) }
            .result()
            .vk_context("vk_icdNegotiateLoaderICDInterfaceVersion")?;
    }
    // SAFETY: the loader-ICD interface's symbol, with vkGetInstanceProcAddr's type.
    let get_instance_proc_addr = *unsafe {
        driver.get::<unsafe extern "system" fn(vk::Instance, *const c_char) -> vk::PFN_vkVoidFunction>(
            b"vk_icdGetInstanceProcAddr\0",
        )
    }
    .with_context(|| format!("{} exports no vk_icdGetInstanceProcAddr", library.to_string_lossy()))?;
    // SAFETY: the driver's own GetInstanceProcAddr resolves its global and instance commands.
    let entry = unsafe {
        ash::Entry::from_static_fn(ash::StaticFn {
            get_instance_proc_addr,
        })
    };

    let app_info = vk::ApplicationInfo::default()
        .application_name(c"bb-testapp")
        .api_version(vk::API_VERSION_1_1);
    let info = vk::InstanceCreateInfo::default().application_info(&app_info);
    // SAFETY (from here on): plain Vulkan calls on the driver's own handles, with infos that outlive them.
    let instance = unsafe { entry.create_instance(&info, None) }.vk_context("vkCreateInstance")?;
    let devices = unsafe { instance.enumerate_physical_devices() };
    let name = match devices.as_deref() {
        Ok([first, ..]) => {
            let props = unsafe { instance.get_physical_device_properties(*first) };
            Ok(props
                .device_name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default())
        }
        Ok([]) => Err(anyhow::anyhow!("the driver lists no physical device")),
        Err(e) => Err(anyhow::anyhow!("vkEnumeratePhysicalDevices: {e:?}")),
    };
    unsafe { instance.destroy_instance(None) };
    let name = name?;
    eprintln!(
        "bb-testapp: device 0: {name} (driver {} loaded directly, without the Vulkan loader)",
        library.to_string_lossy()
    );
    println!(
        "scenario {NAME} checksum {:016x}",
        Fnv1a::new().update(name.as_bytes()).finish()
    );
    // Drivers may keep threads that outlive their instance: the library stays loaded until the process
    // exits, as it would in an app.
    std::mem::forget(driver);
    Ok(())
}
