//! `blackbox doctor`: what this machine offers Blackbox (loader, drivers, devices, the layer), one fact a
//! line, and a summary of the problems found.
//!
//! Everything that loads the layer runs in a child process (`blackbox doctor --probe-layer MODE LIB`), so a
//! crashing or hanging layer cannot take doctor down.

use std::ffi::{CStr, OsString};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ash::vk;
use loader_abi::{
    NegotiateLayerInterface, LAYER_INTERFACE_VERSION, LAYER_NEGOTIATE_INTERFACE_STRUCT,
};

use crate::install;
use crate::layer_lib;
use crate::manifest::{self, ManifestKind, DISABLE_ENV, ENABLE_ENV, LAYER_NAME, LIBRARY_FILE};
use crate::run::{self, signal_name, TempDir};

const PROBE_TIMEOUT: Duration = Duration::from_secs(60);

/// Printed as it goes (so a slow step shows where it is), with the problems kept for the summary.
struct Report {
    problems: Vec<String>,
    first_section: bool,
}

impl Report {
    fn section(&mut self, name: &str) {
        if !self.first_section {
            println!();
        }
        self.first_section = false;
        println!("{name}");
    }
    fn fact(&mut self, line: impl AsRef<str>) {
        println!("  {}", line.as_ref());
    }
    fn sub(&mut self, line: impl AsRef<str>) {
        println!("    {}", line.as_ref());
    }
    fn problem(&mut self, summary: impl Into<String>) {
        self.problems.push(summary.into());
    }
}

fn version_string(v: u32) -> String {
    format!(
        "{}.{}.{}",
        vk::api_version_major(v),
        vk::api_version_minor(v),
        vk::api_version_patch(v)
    )
}

fn device_type_name(t: vk::PhysicalDeviceType) -> &'static str {
    match t {
        vk::PhysicalDeviceType::DISCRETE_GPU => "discrete GPU",
        vk::PhysicalDeviceType::INTEGRATED_GPU => "integrated GPU",
        vk::PhysicalDeviceType::VIRTUAL_GPU => "virtual GPU",
        vk::PhysicalDeviceType::CPU => "CPU",
        _ => "other",
    }
}

fn c_field(s: Result<&CStr, std::ffi::FromBytesUntilNulError>) -> String {
    s.map(|c| c.to_string_lossy().into_owned())
        .unwrap_or_else(|_| "?".to_string())
}

/// The file mapped at `addr` in this process, from /proc/self/maps.
fn mapped_file_at(addr: usize) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    for line in maps.lines() {
        let mut parts = line.split_whitespace();
        let range = parts.next()?;
        let (start, end) = range.split_once('-')?;
        let (start, end) = (
            usize::from_str_radix(start, 16).ok()?,
            usize::from_str_radix(end, 16).ok()?,
        );
        if (start..end).contains(&addr) {
            let path = parts.nth(4)?;
            return path.starts_with('/').then(|| PathBuf::from(path));
        }
    }
    None
}

/// Files named `name` mapped in this process.
fn mapped_files_named(name: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = Vec::new();
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return found;
    };
    for line in maps.lines() {
        if let Some(path) = line.split_whitespace().nth(5) {
            let p = PathBuf::from(path);
            if p.file_name().is_some_and(|n| n == name) && !found.contains(&p) {
                found.push(p);
            }
        }
    }
    found
}

/// ICD manifests: the files named by `VK_DRIVER_FILES`/`VK_ICD_FILENAMES` (files or folders), else those in
/// the loader's standard folders; plus `VK_ADD_DRIVER_FILES`.
fn icd_manifests(env: &dyn Fn(&str) -> Option<OsString>) -> (String, Vec<PathBuf>) {
    fn expand(list: &OsString, out: &mut Vec<PathBuf>) {
        for p in std::env::split_paths(list).filter(|p| !p.as_os_str().is_empty()) {
            if p.is_dir() {
                out.extend(json_files_in(&p));
            } else {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    let how;
    if let Some((var, list)) = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"]
        .iter()
        .find_map(|v| env(v).filter(|l| !l.is_empty()).map(|l| (*v, l)))
    {
        how = format!(
            "{var}={} (standard folders not searched)",
            list.to_string_lossy()
        );
        expand(&list, &mut files);
    } else {
        let dirs = manifest::loader_search_dirs(env, "icd.d");
        how = "standard folders (VK_DRIVER_FILES and VK_ICD_FILENAMES not set)".to_string();
        for dir in dirs {
            files.extend(json_files_in(&dir));
        }
    }
    if let Some(add) = env("VK_ADD_DRIVER_FILES").filter(|l| !l.is_empty()) {
        expand(&add, &mut files);
    }
    (how, files)
}

fn json_files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|e| e == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn describe_icd(path: &Path) -> String {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return format!("unreadable ({e})"),
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(j) => j,
        Err(e) => return format!("invalid JSON ({e})"),
    };
    let icd = &json["ICD"];
    let lib = icd["library_path"].as_str().unwrap_or("?");
    let api = icd["api_version"].as_str().unwrap_or("?");
    let presence = if lib.contains('/') {
        let p = Path::new(lib);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            path.parent().unwrap_or(Path::new("/")).join(p)
        };
        if p.exists() {
            ""
        } else {
            ", library missing"
        }
    } else {
        ""
    };
    format!("library {lib}, api {api}{presence}")
}

/// The loader and drivers sections, from doctor's own process; false if there is no loader.
fn loader_and_drivers(r: &mut Report) -> bool {
    r.section("loader");
    // SAFETY: loading the system's Vulkan loader.
    let entry = match unsafe { ash::Entry::load() } {
        Ok(e) => e,
        Err(e) => {
            r.fact(format!("libvulkan.so.1: does not load ({e})"));
            r.problem("no Vulkan loader: libvulkan.so.1 does not load (Debian/Ubuntu: apt install libvulkan1)");
            r.section("drivers");
            let (how, files) = icd_manifests(&|k| std::env::var_os(k));
            r.fact(format!("ICD manifests: {how}"));
            for f in files {
                r.fact(format!(
                    "ICD manifest: {} ({})",
                    f.display(),
                    describe_icd(&f)
                ));
            }
            return false;
        }
    };
    let gipa = entry.static_fn().get_instance_proc_addr as usize;
    match mapped_file_at(gipa) {
        Some(path) => r.fact(format!("libvulkan.so.1: loaded from {}", path.display())),
        None => r.fact("libvulkan.so.1: loaded (path not found in /proc/self/maps)"),
    }
    // SAFETY: a global command of a loaded entry.
    let version = match unsafe { entry.try_enumerate_instance_version() } {
        Ok(Some(v)) => v,
        Ok(None) => vk::API_VERSION_1_0,
        Err(e) => {
            r.fact(format!(
                "instance version: vkEnumerateInstanceVersion failed ({e})"
            ));
            vk::API_VERSION_1_0
        }
    };
    r.fact(format!("instance version: {}", version_string(version)));

    r.section("drivers");
    let (how, files) = icd_manifests(&|k| std::env::var_os(k));
    r.fact(format!("ICD manifests: {how}"));
    if files.is_empty() {
        r.fact("ICD manifest: none found");
    }
    for f in &files {
        r.fact(format!(
            "ICD manifest: {} ({})",
            f.display(),
            describe_icd(f)
        ));
    }

    let api = if version >= vk::API_VERSION_1_3 {
        vk::API_VERSION_1_3
    } else {
        version
    };
    let app = vk::ApplicationInfo::default()
        .application_name(c"blackbox doctor")
        .api_version(api);
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: valid create info; the instance is destroyed below.
    let instance = match unsafe { entry.create_instance(&info, None) } {
        Ok(i) => i,
        Err(e) => {
            r.fact(format!("vkCreateInstance: failed ({e})"));
            r.problem(format!("no device: vkCreateInstance failed ({e})"));
            return true;
        }
    };
    // SAFETY: instance is valid.
    let devices = match unsafe { instance.enumerate_physical_devices() } {
        Ok(d) => d,
        Err(e) => {
            r.fact(format!("vkEnumeratePhysicalDevices: failed ({e})"));
            Vec::new()
        }
    };
    r.fact(format!("devices: {}", devices.len()));
    if devices.is_empty() {
        r.problem(
            "no device: the loader found no Vulkan physical device (check the ICD manifests above)",
        );
    }
    for (i, &pd) in devices.iter().enumerate() {
        // SAFETY: pd comes from this instance.
        unsafe { describe_device(r, &instance, api, i, pd) };
    }
    // SAFETY: nothing created from the instance is alive.
    unsafe { instance.destroy_instance(None) };
    true
}

unsafe fn describe_device(
    r: &mut Report,
    instance: &ash::Instance,
    instance_api: u32,
    index: usize,
    pd: vk::PhysicalDevice,
) {
    let props = instance.get_physical_device_properties(pd);
    let exts: Vec<String> = instance
        .enumerate_device_extension_properties(pd)
        .unwrap_or_default()
        .iter()
        .map(|e| c_field(e.extension_name_as_c_str()))
        .collect();
    let has = |name: &str| exts.iter().any(|e| e == name);
    let api = props.api_version.min(instance_api);
    let core12 = api >= vk::API_VERSION_1_2;
    let props2_ok = instance_api >= vk::API_VERSION_1_1;

    r.fact(format!(
        "device {index}: {}",
        c_field(props.device_name_as_c_str())
    ));
    r.sub(format!("type: {}", device_type_name(props.device_type)));
    r.sub(format!(
        "API version: {}",
        version_string(props.api_version)
    ));
    if props2_ok && (core12 || has("VK_KHR_driver_properties")) {
        let mut driver = vk::PhysicalDeviceDriverProperties::default();
        let mut p2 = vk::PhysicalDeviceProperties2::default().push_next(&mut driver);
        instance.get_physical_device_properties2(pd, &mut p2);
        r.sub(format!(
            "driver: {} ({}), id {:?}, conformance {}.{}.{}.{}",
            c_field(driver.driver_name_as_c_str()),
            c_field(driver.driver_info_as_c_str()),
            driver.driver_id,
            driver.conformance_version.major,
            driver.conformance_version.minor,
            driver.conformance_version.subminor,
            driver.conformance_version.patch
        ));
    } else {
        r.sub(format!(
            "driver: version {:#x} (no VkPhysicalDeviceDriverProperties)",
            props.driver_version
        ));
    }

    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let marker = has("VK_AMD_buffer_marker");
    let checkpoints = has("VK_NV_device_diagnostic_checkpoints");
    let fault = has("VK_EXT_device_fault");
    let binding_report = has("VK_EXT_device_address_binding_report");
    let bda_ext = has("VK_KHR_buffer_device_address");
    let non_semantic = has("VK_KHR_shader_non_semantic_info");
    let bda_feature = if props2_ok && (core12 || bda_ext) {
        let mut bda = vk::PhysicalDeviceBufferDeviceAddressFeatures::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut bda);
        instance.get_physical_device_features2(pd, &mut f2);
        Some(bda.buffer_device_address == vk::TRUE)
    } else {
        None
    };
    r.sub(format!("VK_AMD_buffer_marker: {}", yes_no(marker)));
    r.sub(format!(
        "VK_NV_device_diagnostic_checkpoints: {}",
        yes_no(checkpoints)
    ));
    r.sub(format!("VK_EXT_device_fault: {}", yes_no(fault)));
    r.sub(format!(
        "VK_EXT_device_address_binding_report: {}",
        yes_no(binding_report)
    ));
    r.sub(format!(
        "VK_KHR_buffer_device_address: {}{}",
        yes_no(bda_ext),
        if core12 { " (core in Vulkan 1.2)" } else { "" }
    ));
    r.sub(format!(
        "bufferDeviceAddress feature: {}",
        match bda_feature {
            Some(b) => yes_no(b),
            None => "unknown (needs Vulkan 1.2 or VK_KHR_buffer_device_address)",
        }
    ));
    r.sub(format!(
        "VK_KHR_shader_non_semantic_info: {}",
        yes_no(non_semantic)
    ));

    // What that means for Blackbox.
    r.sub(if marker {
        "breadcrumbs: buffer markers (per command, inside render passes too)"
    } else {
        "breadcrumbs: fill-buffer fallback (per dispatch/copy and around render passes)"
    });
    r.sub(if checkpoints {
        "checkpoints: NV diagnostic checkpoints (queried on a hang or a device loss)"
    } else {
        "checkpoints: none (no VK_NV_device_diagnostic_checkpoints)"
    });
    r.sub(if fault {
        "fault details: vkGetDeviceFaultInfoEXT after a device loss"
    } else {
        "fault details: none from the driver (no VK_EXT_device_fault): reports rest on breadcrumbs"
    });
    r.sub(if binding_report {
        "address bindings: reported by the driver (VK_EXT_device_address_binding_report)"
    } else {
        "address bindings: not reported by the driver"
    });
    r.sub(match bda_feature {
        Some(true) => {
            "shader error checks: available (records written through a buffer device address)"
        }
        _ => "shader error checks: unavailable (no bufferDeviceAddress)",
    });
    r.sub(if non_semantic {
        "debugPrintf shaders: accepted by the driver (NonSemantic instructions allowed)"
    } else {
        "debugPrintf shaders: the driver rejects NonSemantic instructions; Blackbox replaces or strips them so such shaders run"
    });
}

// ---------------------------------------------------------------------------------------------------------
// Probe child

/// `vkNegotiateLoaderLayerInterfaceVersion`, the layer's one export.
type NegotiateFn = unsafe extern "system" fn(*mut NegotiateLayerInterface) -> vk::Result;

/// Line protocol on stdout: `begin STEP`, then `ok STEP DETAIL`, `fail STEP DETAIL` or `info STEP DETAIL`.
fn say(kind: &str, step: &str, detail: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{kind} {step} {}", detail.replace('\n', " "));
    let _ = out.flush();
}

/// The hidden verb: `blackbox doctor --probe-layer dlopen|loader LIB`. Returns the exit code.
pub fn probe(mode: &str, library: &Path) -> i32 {
    let ok = match mode {
        "dlopen" => probe_dlopen(library),
        "loader" => probe_loader(library),
        _ => {
            eprintln!("blackbox: unknown probe {mode}");
            return 2;
        }
    };
    if ok {
        0
    } else {
        1
    }
}

fn probe_dlopen(library: &Path) -> bool {
    say("begin", "dlopen", "");
    // RTLD_NOW: unresolved symbols show up now rather than in the middle of an app.
    // SAFETY: loading the layer runs its initialisers; that is what this child is for.
    let lib = match unsafe {
        libloading::os::unix::Library::open(
            Some(library),
            libloading::os::unix::RTLD_NOW | libloading::os::unix::RTLD_LOCAL,
        )
    } {
        Ok(l) => l,
        Err(e) => {
            say("fail", "dlopen", &e.to_string());
            return false;
        }
    };
    say("ok", "dlopen", "loads (RTLD_NOW)");
    say("begin", "symbol", "");
    // SAFETY: the symbol's type is the loader-layer interface's.
    let negotiate =
        match unsafe { lib.get::<NegotiateFn>(b"vkNegotiateLoaderLayerInterfaceVersion\0") } {
            Ok(f) => f,
            Err(e) => {
                say(
                    "fail",
                    "symbol",
                    &format!("no vkNegotiateLoaderLayerInterfaceVersion ({e})"),
                );
                return false;
            }
        };
    say(
        "ok",
        "symbol",
        "exports vkNegotiateLoaderLayerInterfaceVersion",
    );
    say("begin", "negotiate", "");
    let mut iface = NegotiateLayerInterface {
        s_type: LAYER_NEGOTIATE_INTERFACE_STRUCT,
        p_next: std::ptr::null_mut(),
        loader_layer_interface_version: LAYER_INTERFACE_VERSION,
        pfn_get_instance_proc_addr: None,
        pfn_get_device_proc_addr: None,
        pfn_get_physical_device_proc_addr: None,
    };
    // SAFETY: a valid struct, as the loader would pass it.
    let result = unsafe { negotiate(&mut iface) };
    if result != vk::Result::SUCCESS {
        say("fail", "negotiate", &format!("returned {result:?}"));
        return false;
    }
    if iface.pfn_get_instance_proc_addr.is_none() || iface.pfn_get_device_proc_addr.is_none() {
        say(
            "fail",
            "negotiate",
            "succeeded but left vkGetInstanceProcAddr or vkGetDeviceProcAddr null",
        );
        return false;
    }
    let v = iface.loader_layer_interface_version;
    if v != LAYER_INTERFACE_VERSION {
        say(
            "fail",
            "negotiate",
            &format!("answered interface version {v}, expected {LAYER_INTERFACE_VERSION}"),
        );
        return false;
    }
    say(
        "ok",
        "negotiate",
        &format!("interface version {LAYER_INTERFACE_VERSION}"),
    );
    drop(lib);
    true
}

fn probe_loader(library: &Path) -> bool {
    say("begin", "enumerate", "");
    // SAFETY: loading the system loader.
    let entry = match unsafe { ash::Entry::load() } {
        Ok(e) => e,
        Err(e) => {
            say(
                "fail",
                "enumerate",
                &format!("libvulkan.so.1 does not load ({e})"),
            );
            return false;
        }
    };
    // SAFETY: global command.
    let layers = match unsafe { entry.enumerate_instance_layer_properties() } {
        Ok(l) => l,
        Err(e) => {
            say(
                "fail",
                "enumerate",
                &format!("vkEnumerateInstanceLayerProperties failed ({e})"),
            );
            return false;
        }
    };
    let Some(props) = layers
        .iter()
        .find(|l| c_field(l.layer_name_as_c_str()) == LAYER_NAME)
    else {
        say(
            "fail",
            "enumerate",
            &format!("the loader does not list {LAYER_NAME}"),
        );
        return false;
    };
    say(
        "ok",
        "enumerate",
        &format!(
            "the loader lists {LAYER_NAME} (\"{}\", spec {}, implementation {})",
            c_field(props.description_as_c_str()),
            version_string(props.spec_version),
            props.implementation_version
        ),
    );

    say("begin", "instance", "");
    // SAFETY: global command.
    let version = unsafe { entry.try_enumerate_instance_version() }
        .ok()
        .flatten()
        .unwrap_or(vk::API_VERSION_1_0);
    let api = version.min(vk::API_VERSION_1_3);
    let app = vk::ApplicationInfo::default()
        .application_name(c"blackbox doctor probe")
        .api_version(api);
    // The layer is enabled by the parent through VK_INSTANCE_LAYERS, as `blackbox run --explicit` does:
    // naming it in ppEnabledLayerNames instead makes loader 1.3.239 pick an installed implicit copy of the
    // same name over the explicit manifest.
    let info = vk::InstanceCreateInfo::default().application_info(&app);
    // SAFETY: valid create info.
    let instance = match unsafe { entry.create_instance(&info, None) } {
        Ok(i) => i,
        Err(e) => {
            say(
                "fail",
                "instance",
                &format!("vkCreateInstance with {LAYER_NAME} enabled failed ({e})"),
            );
            return false;
        }
    };
    say(
        "ok",
        "instance",
        &format!("vkCreateInstance with {LAYER_NAME} enabled succeeded"),
    );

    let mut ok = true;
    say("begin", "mapped", "");
    let expected = library
        .canonicalize()
        .unwrap_or_else(|_| library.to_path_buf());
    let mapped = mapped_files_named(LIBRARY_FILE);
    let canon: Vec<PathBuf> = mapped
        .iter()
        .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
        .collect();
    if canon.contains(&expected) && canon.len() == 1 {
        say(
            "ok",
            "mapped",
            &format!("the loader loaded {}", expected.display()),
        );
    } else if canon.is_empty() {
        say(
            "fail",
            "mapped",
            &format!("{LIBRARY_FILE} is not mapped in the process"),
        );
        ok = false;
    } else {
        let list: Vec<String> = mapped.iter().map(|p| p.display().to_string()).collect();
        say(
            "fail",
            "mapped",
            &format!(
                "expected {}, the process has {}",
                expected.display(),
                list.join(", ")
            ),
        );
        ok = false;
    }

    say("begin", "device", "");
    // SAFETY: instance is valid; objects are destroyed in order.
    unsafe {
        match instance.enumerate_physical_devices() {
            Ok(devices) if !devices.is_empty() => {
                let pd = devices[0];
                let props = instance.get_physical_device_properties(pd);
                let name = c_field(props.device_name_as_c_str());
                let priorities = [1.0f32];
                let queue = [vk::DeviceQueueCreateInfo::default()
                    .queue_family_index(0)
                    .queue_priorities(&priorities)];
                let dinfo = vk::DeviceCreateInfo::default().queue_create_infos(&queue);
                match instance.create_device(pd, &dinfo, None) {
                    Ok(device) => {
                        device.destroy_device(None);
                        say(
                            "ok",
                            "device",
                            &format!("vkCreateDevice on {name} succeeded"),
                        );
                    }
                    Err(e) => {
                        say(
                            "fail",
                            "device",
                            &format!("vkCreateDevice on {name} failed ({e})"),
                        );
                        ok = false;
                    }
                }
            }
            Ok(_) => say(
                "info",
                "device",
                "no physical device: vkCreateDevice not tried",
            ),
            Err(e) => {
                say(
                    "fail",
                    "device",
                    &format!("vkEnumeratePhysicalDevices failed ({e})"),
                );
                ok = false;
            }
        }
        say("begin", "teardown", "");
        instance.destroy_instance(None);
    }
    say("ok", "teardown", "vkDestroyInstance returned");
    ok
}

/// What a probe child said and how it ended.
struct ProbeOutcome {
    /// (kind, step, detail) for every ok/fail/info line.
    steps: Vec<(String, String, String)>,
    /// The step begun last without an answer, if any.
    unfinished: Option<String>,
    status: Option<ExitStatus>,
    timed_out: bool,
    stderr: String,
}

impl ProbeOutcome {
    fn failed(&self) -> bool {
        self.timed_out
            || self.unfinished.is_some()
            || !matches!(self.status, Some(s) if s.success())
            || self.steps.iter().any(|(k, _, _)| k == "fail")
    }

    /// How the child ended, if not by exiting normally.
    fn ending(&self) -> Option<String> {
        let step = self
            .unfinished
            .as_deref()
            .map(|s| format!(" during step '{s}'"))
            .unwrap_or_default();
        if self.timed_out {
            return Some(format!(
                "timed out after {} s{step} (killed)",
                PROBE_TIMEOUT.as_secs()
            ));
        }
        match self.status {
            Some(s) if s.signal().is_some() => {
                let sig = s.signal().unwrap();
                Some(format!(
                    "crashed{step}: killed by signal {sig} ({})",
                    signal_name(sig)
                ))
            }
            Some(s) if self.unfinished.is_some() => Some(format!("exited{step} with {s}")),
            None => Some("could not be waited for".to_string()),
            _ => None,
        }
    }
}

fn run_probe(mode: &str, library: &Path, env: &run::EnvPlan) -> Result<ProbeOutcome> {
    let exe = std::env::current_exe().context("cannot find the blackbox executable to re-run")?;
    let mut cmd = Command::new(exe);
    cmd.args(["doctor", "--probe-layer", mode])
        .arg(library)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    env.apply(&mut cmd);
    let mut child = cmd.spawn().context("cannot start the probe process")?;
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(|l| l.ok())
            .collect::<Vec<String>>()
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if start.elapsed() > PROBE_TIMEOUT => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let lines = out_thread.join().unwrap_or_default();
    let stderr = err_thread.join().unwrap_or_default();
    let mut steps = Vec::new();
    let mut unfinished = None;
    for line in lines {
        let mut parts = line.splitn(3, ' ');
        let kind = parts.next().unwrap_or("").to_string();
        let step = parts.next().unwrap_or("").to_string();
        let detail = parts.next().unwrap_or("").to_string();
        if kind == "begin" {
            unfinished = Some(step);
        } else if matches!(kind.as_str(), "ok" | "fail" | "info") {
            if unfinished.as_deref() == Some(step.as_str()) {
                unfinished = None;
            }
            steps.push((kind, step, detail));
        }
    }
    Ok(ProbeOutcome {
        steps,
        unfinished,
        status,
        timed_out,
        stderr,
    })
}

/// Prints a probe's steps under `label`; returns whether it passed.
fn report_probe(r: &mut Report, label: &str, outcome: &ProbeOutcome) -> bool {
    for (kind, _step, detail) in &outcome.steps {
        let mark = match kind.as_str() {
            "ok" => "ok",
            "fail" => "FAILED",
            _ => "note",
        };
        r.fact(format!("{label}: {mark}: {detail}"));
    }
    if let Some(ending) = outcome.ending() {
        r.fact(format!("{label}: FAILED: the probe process {ending}"));
    }
    let failed = outcome.failed();
    if failed {
        // The loader's warning about the VK_INSTANCE_LAYERS we set is noise here; repeats are shown once.
        let mut lines: Vec<&str> = outcome
            .stderr
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.contains("env var 'VK_INSTANCE_LAYERS' defined"))
            .collect();
        lines.dedup();
        if !lines.is_empty() {
            let skip = lines.len().saturating_sub(20);
            r.fact(format!(
                "{label}: the probe's stderr{}:",
                if skip > 0 { " (last 20 lines)" } else { "" }
            ));
            for l in &lines[skip..] {
                r.sub(l);
            }
        }
    }
    !failed
}

fn first_failure(outcome: &ProbeOutcome) -> String {
    if let Some((_, _, d)) = outcome.steps.iter().find(|(k, _, _)| k == "fail") {
        return d.clone();
    }
    outcome
        .ending()
        .map(|e| format!("the probe process {e}"))
        .unwrap_or_else(|| "unknown failure".to_string())
}

fn env_fact(r: &mut Report, saved: &[(String, Option<OsString>)], var: &str, always: bool) {
    let value = saved
        .iter()
        .find(|(k, _)| k == var)
        .and_then(|(_, v)| v.clone());
    match value {
        Some(v) => r.fact(format!("{var}: set to \"{}\"", v.to_string_lossy())),
        None if always => r.fact(format!("{var}: not set")),
        None => {}
    }
}

pub fn doctor(layer: Option<&Path>) -> Result<i32> {
    const ENV_VARS: [&str; 8] = [
        ENABLE_ENV,
        DISABLE_ENV,
        "VK_INSTANCE_LAYERS",
        "VK_LOADER_LAYERS_ENABLE",
        "VK_LOADER_LAYERS_DISABLE",
        "VK_LAYER_PATH",
        "VK_ADD_LAYER_PATH",
        "VK_LOADER_DEBUG",
    ];
    let saved: Vec<(String, Option<OsString>)> = ENV_VARS
        .iter()
        .map(|v| (v.to_string(), std::env::var_os(v)))
        .collect();
    // Doctor's own instance must not load an installed Blackbox layer: a broken layer would take doctor
    // down. (Single-threaded here, before anything reads the environment.)
    std::env::remove_var(ENABLE_ENV);
    if let Some(layers) = std::env::var_os("VK_INSTANCE_LAYERS") {
        let kept: Vec<String> = layers
            .to_string_lossy()
            .split(':')
            .filter(|l| !l.is_empty() && *l != LAYER_NAME)
            .map(str::to_string)
            .collect();
        std::env::set_var("VK_INSTANCE_LAYERS", kept.join(":"));
    }

    let mut r = Report {
        problems: Vec::new(),
        first_section: true,
    };
    let loader_ok = loader_and_drivers(&mut r);

    r.section("layer");
    let library = layer_lib::candidate(layer)?;
    let library = std::path::absolute(&library).unwrap_or(library);
    let mut library_ok = false;
    if library.is_file() {
        r.fact(format!("library: {} (exists)", library.display()));
        let outcome = run_probe("dlopen", &library, &run::EnvPlan::default())?;
        library_ok = report_probe(&mut r, "dlopen test", &outcome);
        if !library_ok {
            r.problem(format!(
                "layer library does not load: {}: {}",
                library.display(),
                first_failure(&outcome)
            ));
        }
    } else {
        r.fact(format!("library: {} (missing)", library.display()));
        r.problem(format!(
            "layer library missing: {}: build it with `cargo build -p blackbox-layer` (same profile as blackbox), or pass --layer",
            library.display()
        ));
    }

    // Installed manifests: the two places `blackbox install` writes, then any other Blackbox manifest in the
    // loader's implicit search path.
    let env = |k: &str| saved_or_env(&saved, k);
    let user = install::user_target(&env).ok();
    let system = install::system_target();
    let found = manifest::find_implicit_blackbox_manifests(&env);
    let installed_any = !found.is_empty();
    // Slots in display order: the user install, the system install, then any other manifest found.
    let mut slots: Vec<(String, Option<&manifest::FoundManifest>)> = Vec::new();
    match &user {
        Some(t) => slots.push(("user".into(), found.iter().find(|(p, _)| *p == t.manifest))),
        None => r.fact("installed (user): unknown (neither XDG_DATA_HOME nor HOME is set)"),
    }
    slots.push((
        "system".into(),
        found.iter().find(|(p, _)| *p == system.manifest),
    ));
    for entry in &found {
        let ours =
            user.as_ref().is_some_and(|t| t.manifest == entry.0) || system.manifest == entry.0;
        if !ours {
            slots.push(("other".into(), Some(entry)));
        }
    }
    for (label, entry) in slots {
        let Some((path, info)) = entry else {
            let target = if label == "user" {
                user.as_ref().unwrap()
            } else {
                &system
            };
            r.fact(format!(
                "installed ({label}): no ({} absent)",
                target.manifest.display()
            ));
            continue;
        };
        let fix = match label.as_str() {
            "user" => "run `blackbox install` again, or `blackbox uninstall`".to_string(),
            "system" => "run `blackbox install --system` again, or `blackbox uninstall --system`"
                .to_string(),
            _ => format!("fix or remove {}", path.display()),
        };
        match info {
            Ok(info) => match &info.resolved {
                Some(lib) if lib.is_file() => r.fact(format!(
                    "installed ({label}): {} -> {} (library present)",
                    path.display(),
                    lib.display()
                )),
                Some(lib) => {
                    r.fact(format!(
                        "installed ({label}): {} -> {} (library MISSING)",
                        path.display(),
                        lib.display()
                    ));
                    r.problem(format!(
                        "installed manifest {} points to a missing library {}: {fix}",
                        path.display(),
                        lib.display(),
                    ));
                }
                None => r.fact(format!(
                    "installed ({label}): {} -> {} (a bare name, left to the dynamic linker's search path)",
                    path.display(),
                    info.library_path
                )),
            },
            Err(e) => r.fact(format!(
                "installed ({label}): {} (unreadable: {e}; {fix})",
                path.display()
            )),
        }
    }
    if found.len() > 1 {
        r.fact(format!(
            "several installed manifests name {LAYER_NAME}: with {ENABLE_ENV}=1, loader 1.3.239 loads the last one found, {}",
            found.last().unwrap().0.display()
        ));
    }

    env_fact(&mut r, &saved, ENABLE_ENV, true);
    env_fact(&mut r, &saved, DISABLE_ENV, true);
    env_fact(&mut r, &saved, "VK_INSTANCE_LAYERS", true);
    for var in &ENV_VARS[3..] {
        env_fact(&mut r, &saved, var, false);
    }
    let enabled_here = saved_or_env(&saved, ENABLE_ENV).is_some_and(|v| v == "1")
        && saved_or_env(&saved, DISABLE_ENV).is_none_or(|v| v != "1");
    if installed_any {
        r.fact(if enabled_here {
            "installed layer: active for Vulkan apps started from this environment (VK_BLACKBOX_ENABLE=1)"
        } else {
            "installed layer: off here; enable it per app with VK_BLACKBOX_ENABLE=1 your-app"
        });
    }

    // The load test: a child with a controlled environment and a temporary explicit manifest.
    if !loader_ok {
        r.fact("load test: skipped (no Vulkan loader)");
    } else if !library.is_file() {
        r.fact("load test: skipped (no layer library)");
    } else if !library_ok {
        r.fact("load test: skipped (the layer library does not load)");
    } else {
        let tmp = TempDir::new("blackbox-doctor")?;
        run::write_temp_manifest(tmp.path(), &library, ManifestKind::Explicit)?;
        let mut plan = run::EnvPlan::default();
        plan.set.push((
            "VK_ADD_LAYER_PATH".into(),
            run::manifest_dir(tmp.path(), ManifestKind::Explicit).into_os_string(),
        ));
        plan.set
            .push(("VK_INSTANCE_LAYERS".into(), LAYER_NAME.into()));
        plan.set
            .push(("VK_LOADER_DEBUG".into(), "error,warn".into()));
        for var in [
            ENABLE_ENV,
            DISABLE_ENV,
            "VK_LOADER_LAYERS_ENABLE",
            "VK_LOADER_LAYERS_DISABLE",
        ] {
            plan.remove.push(var.into());
        }
        let outcome = run_probe("loader", &library, &plan)?;
        drop(tmp);
        if !report_probe(&mut r, "load test", &outcome) {
            r.problem(format!("load test failed: {}", first_failure(&outcome)));
        }
    }
    if !installed_any {
        r.fact("usage: not installed (that is fine): run an app under the layer with `blackbox run -- your-app`,");
        r.fact("       or install it with `blackbox install`, then start apps with VK_BLACKBOX_ENABLE=1 your-app");
    }

    println!();
    if r.problems.is_empty() {
        println!("doctor: ok");
        Ok(0)
    } else {
        println!("doctor: {} problem(s)", r.problems.len());
        for p in &r.problems {
            println!("  - {p}");
        }
        Ok(1)
    }
}

/// A variable as it was when doctor started (for the ones doctor changes for itself), else as it is.
fn saved_or_env(saved: &[(String, Option<OsString>)], key: &str) -> Option<OsString> {
    match saved.iter().find(|(k, _)| k == key) {
        Some((_, v)) => v.clone(),
        None => std::env::var_os(key),
    }
}
