//! `VK_LAYER_BLACKBOX_fault`: a test-only Vulkan layer, placed below Blackbox, that injects the faults a test
//! cannot get from a healthy driver. Configured by environment variables, read once:
//!
//! - `BB_FAULT_LOST_AFTER_MS=N`: `vkWaitForFences` and `vkWaitSemaphores` wait at most N ms down the chain;
//!   if that wait times out although the app allowed longer, the layer returns `VK_ERROR_DEVICE_LOST` and
//!   the device is "lost": from then on every wait, submit, present, `vkGetFenceStatus` and
//!   `vkGetSemaphoreCounterValue` on it returns `VK_ERROR_DEVICE_LOST` without calling down. The GPU work
//!   itself keeps running underneath.
//! - `BB_FAULT_LOST_IDLE=1`: `vkQueueWaitIdle` and `vkDeviceWaitIdle` are covered too: the layer submits an
//!   empty batch with a fence of its own to each queue and waits N ms for those fences.
//! - `BB_FAULT_OOM=<command>[:<n>]`: the n-th call (default 1st) of `vkAllocateMemory` or `vkCreateBuffer`
//!   returns `VK_ERROR_OUT_OF_DEVICE_MEMORY` without calling down.
//! - `BB_FAULT_NO_BDA=1`: the device looks like one without buffer device address: the feature reads as
//!   false in `vkGetPhysicalDeviceFeatures2`, `VK_KHR/EXT_buffer_device_address` are not listed, and a
//!   `vkCreateDevice` that asks for either fails as a driver would (`VK_ERROR_FEATURE_NOT_PRESENT`,
//!   `VK_ERROR_EXTENSION_NOT_PRESENT`).
//! - `BB_FAULT_LOG_SWAPCHAINS=1`: no fault: each `vkCreateSwapchainKHR` logs the image usage that reaches
//!   the driver (`[fault-layer] vkCreateSwapchainKHR: imageUsage COLOR_ATTACHMENT`), so a test sees what
//!   the layers above changed.
//!
//! - `BB_FAULT_FAKE_BUFFER_MARKER=1`: a device without `VK_AMD_buffer_marker` lists it, and its
//!   `vkCmdWriteBufferMarkerAMD` records nothing: Blackbox above takes the buffer-marker path of the GPUs
//!   that have it, so that its cost there can be profiled on lavapipe (`scripts/bench-callgrind.sh`); the
//!   markers are never written, so progress reads as nothing started.
//! - `BB_FAULT_LOG_MARKERS=1` (with the fake buffer marker): each faked marker write and each
//!   `vkCmdDispatch` is logged as it is recorded (`[fault-layer] vkCmdWriteBufferMarkerAMD TOP_OF_PIPE 3`,
//!   `[fault-layer] vkCmdDispatch`), so a test sees where the layer above puts its markers.
//! - `BB_FAULT_LOG_SUBMITS=1`: no fault: each batch of a `vkQueueSubmit` whose `pWaitSemaphores` is set
//!   with a `waitSemaphoreCount` of 0 is logged (`[fault-layer] vkQueueSubmit: pSubmits[0].pWaitSemaphores
//!   set, waitSemaphoreCount 0`). Placed *above* Blackbox, it counts what the app submits in that shape,
//!   which best practices warns about once per batch: a test compares the two counts exactly where the
//!   app's own number of submits varies from run to run.
//!
//! Each injected fault is logged on stderr: `[fault-layer] injected VK_ERROR_DEVICE_LOST in vkWaitForFences
//! after 300 ms`.
//!
//! Destroying objects whose work still runs is invalid (and crashes lavapipe), so after an injected loss the
//! first call that destroys or frees something on the device (`vkDestroyDevice` included) first waits for
//! the device to go idle, down the chain, once.
//!
//! Loader interface 2: `vkNegotiateLoaderLayerInterfaceVersion` is the only export; the hooks are handed out
//! by the layer's GetInstanceProcAddr/GetDeviceProcAddr. Objects are keyed by their dispatch key (the first
//! pointer-sized word of the handle: a device and its queues share it). Every entry point catches panics.

// The library is named like every Vulkan layer: VkLayer_<name>.
#![allow(non_snake_case)]

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use ash::vk;

// ---- the loader-layer interface (vk_layer.h): blackbox-loader-abi ----

use loader_abi::{
    find_loader_info, LayerDeviceCreateInfo, LayerInstanceCreateInfo, NegotiateLayerInterface,
    LAYER_INTERFACE_VERSION, LAYER_LINK_INFO, LOADER_DEVICE_CREATE_INFO,
    LOADER_INSTANCE_CREATE_INFO,
};

unsafe fn dispatch_key<H: vk::Handle>(handle: H) -> usize {
    let raw = handle.as_raw() as usize as *const usize;
    if raw.is_null() {
        0
    } else {
        *raw
    }
}

// ---- configuration ----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum OomCommand {
    AllocateMemory,
    CreateBuffer,
}

struct Config {
    lost_after: Option<Duration>,
    lost_idle: bool,
    oom: Option<(OomCommand, u32)>,
    no_bda: bool,
    fake_buffer_marker: bool,
    log_markers: bool,
    log_swapchains: bool,
    log_submits: bool,
}

fn config() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let var = |name| std::env::var(name).ok().filter(|v: &String| !v.is_empty());
        let lost_after = var("BB_FAULT_LOST_AFTER_MS").and_then(|v| match v.parse::<u64>() {
            Ok(ms) => Some(Duration::from_millis(ms)),
            Err(_) => {
                log(format_args!("ignoring BB_FAULT_LOST_AFTER_MS={v}: not a number of milliseconds"));
                None
            }
        });
        let oom = var("BB_FAULT_OOM").and_then(|v| {
            let (command, n) = v.split_once(':').unwrap_or((&v, "1"));
            let command = match command {
                "vkAllocateMemory" => Some(OomCommand::AllocateMemory),
                "vkCreateBuffer" => Some(OomCommand::CreateBuffer),
                _ => None,
            };
            match (command, n.parse::<u32>()) {
                (Some(command), Ok(n)) if n >= 1 => Some((command, n)),
                _ => {
                    log(format_args!(
                        "ignoring BB_FAULT_OOM={v}: expected vkAllocateMemory or vkCreateBuffer, optionally :N (N >= 1)"
                    ));
                    None
                }
            }
        });
        Config {
            lost_after,
            lost_idle: var("BB_FAULT_LOST_IDLE").as_deref() == Some("1"),
            oom,
            no_bda: var("BB_FAULT_NO_BDA").as_deref() == Some("1"),
            fake_buffer_marker: var("BB_FAULT_FAKE_BUFFER_MARKER").as_deref() == Some("1"),
            log_markers: var("BB_FAULT_LOG_MARKERS").as_deref() == Some("1"),
            log_swapchains: var("BB_FAULT_LOG_SWAPCHAINS").as_deref() == Some("1"),
            log_submits: var("BB_FAULT_LOG_SUBMITS").as_deref() == Some("1"),
        }
    })
}

fn log(message: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr(), "[fault-layer] {message}");
}

// ---- state ----

type VoidFunction = unsafe extern "system" fn();
type DestroyFunction = unsafe extern "system" fn(vk::Device, u64, *const c_void);

struct Instance {
    handle: vk::Instance,
    next_get_instance_proc_addr: vk::PFN_vkGetInstanceProcAddr,
    /// Resolved at creation: later, the loader's terminator answers with the top of the chain.
    next_destroy_instance: Option<vk::PFN_vkDestroyInstance>,
    /// The next layer's physical-device commands this layer hooks, resolved at creation too.
    next_physical: HashMap<&'static CStr, VoidFunction>,
}

struct Device {
    handle: vk::Device,
    next_get_device_proc_addr: vk::PFN_vkGetDeviceProcAddr,
    /// The next layer's function for every hooked command it has, and for vkCreateFence.
    next: HashMap<&'static CStr, VoidFunction>,
    /// The command whose wait was turned into the loss, once the device is lost.
    lost_in: Mutex<Option<&'static str>>,
    /// The device went idle (down the chain) after the loss: objects may be destroyed.
    drained: AtomicBool,
    queues: Mutex<Vec<vk::Queue>>,
    /// Fences of idle waits that timed out, destroyed once the device is drained.
    orphan_fences: Mutex<Vec<vk::Fence>>,
}

impl Device {
    /// The next layer's `command`, as type `F` (the command's own PFN type).
    fn next<F: Copy>(&self, command: &'static CStr) -> Option<F> {
        assert_eq!(
            std::mem::size_of::<F>(),
            std::mem::size_of::<VoidFunction>()
        );
        // SAFETY: stored under its own name, and `F` is that command's pointer type.
        self.next
            .get(command)
            .map(|f| unsafe { std::mem::transmute_copy::<VoidFunction, F>(f) })
    }

    fn is_lost(&self) -> bool {
        self.lost_in.lock().unwrap().is_some()
    }

    /// Marks the device lost by `command`'s wait and logs it.
    fn lose(&self, command: &'static str, waited: Duration) -> vk::Result {
        self.lost_in.lock().unwrap().get_or_insert(command);
        log(format_args!(
            "injected VK_ERROR_DEVICE_LOST in {command} after {} ms",
            waited.as_millis()
        ));
        vk::Result::ERROR_DEVICE_LOST
    }

    /// What every wait and submit on a lost device returns.
    fn still_lost(&self, command: &str) -> vk::Result {
        let first = self.lost_in.lock().unwrap().unwrap_or("?");
        log(format_args!(
            "injected VK_ERROR_DEVICE_LOST in {command} (device lost since {first})"
        ));
        vk::Result::ERROR_DEVICE_LOST
    }

    fn remember_queue(&self, queue: vk::Queue) {
        let mut queues = self.queues.lock().unwrap();
        if queue != vk::Queue::null() && !queues.contains(&queue) {
            queues.push(queue);
        }
    }

    /// After a loss, waits once (down the chain) for the work still running, so that it can be destroyed.
    unsafe fn drain(&self, device: vk::Device) {
        if !self.is_lost() || self.drained.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(wait_idle) = self.next::<vk::PFN_vkDeviceWaitIdle>(c"vkDeviceWaitIdle") {
            let result = wait_idle(device);
            log(format_args!(
                "the device is lost: waited for its work before destroying objects ({result:?})"
            ));
        }
        if let Some(destroy) = self.next::<vk::PFN_vkDestroyFence>(c"vkDestroyFence") {
            for fence in self.orphan_fences.lock().unwrap().drain(..) {
                destroy(device, fence, std::ptr::null());
            }
        }
    }
}

static INSTANCES: Mutex<Option<HashMap<usize, Arc<Instance>>>> = Mutex::new(None);
static DEVICES: Mutex<Option<HashMap<usize, Arc<Device>>>> = Mutex::new(None);

fn lookup<T>(map: &Mutex<Option<HashMap<usize, Arc<T>>>>, key: usize) -> Option<Arc<T>> {
    map.lock().unwrap().as_ref()?.get(&key).cloned()
}

unsafe fn device_of<H: vk::Handle>(handle: H) -> Option<Arc<Device>> {
    lookup(&DEVICES, dispatch_key(handle))
}

/// Runs an entry point's body; a panic is logged and `fallback` returned.
fn guarded<R>(command: &str, fallback: R, body: impl FnOnce() -> Option<R>) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Some(result)) => result,
        Ok(None) => fallback,
        Err(_) => {
            log(format_args!("{command}: internal error (panic)"));
            fallback
        }
    }
}

// ---- loader entry points ----

/// # Safety
/// Called by the loader with a valid `VkNegotiateLayerInterface`.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(
    negotiate: *mut NegotiateLayerInterface,
) -> vk::Result {
    guarded(
        "vkNegotiateLoaderLayerInterfaceVersion",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let negotiate = negotiate.as_mut()?;
            if negotiate.loader_layer_interface_version < LAYER_INTERFACE_VERSION {
                return None;
            }
            negotiate.loader_layer_interface_version = LAYER_INTERFACE_VERSION;
            negotiate.pfn_get_instance_proc_addr = Some(get_instance_proc_addr);
            negotiate.pfn_get_device_proc_addr = Some(get_device_proc_addr);
            negotiate.pfn_get_physical_device_proc_addr = None;
            Some(vk::Result::SUCCESS)
        },
    )
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Global,
    Instance,
    Device,
}

/// `(scope, name, hook)` for every intercepted command; `name => function as PFN type`.
macro_rules! hook_table {
    ($($scope:ident $name:literal => $function:ident as $pfn:ty,)*) => {
        vec![$(
            // SAFETY: the hook has the command's own type; it is handed out under the command's name.
            (Scope::$scope, $name, unsafe { std::mem::transmute::<$pfn, VoidFunction>($function) }),
        )*]
    };
}

fn hooks() -> &'static [(Scope, &'static CStr, VoidFunction)] {
    static HOOKS: OnceLock<Vec<(Scope, &'static CStr, VoidFunction)>> = OnceLock::new();
    HOOKS.get_or_init(|| {
        let mut hooks = hook_table! {
            Global c"vkGetInstanceProcAddr" => get_instance_proc_addr as vk::PFN_vkGetInstanceProcAddr,
            Global c"vkCreateInstance" => create_instance as vk::PFN_vkCreateInstance,
            Instance c"vkDestroyInstance" => destroy_instance as vk::PFN_vkDestroyInstance,
            Instance c"vkCreateDevice" => create_device as vk::PFN_vkCreateDevice,
            Instance c"vkGetPhysicalDeviceFeatures2" => get_features2 as vk::PFN_vkGetPhysicalDeviceFeatures2,
            Instance c"vkGetPhysicalDeviceFeatures2KHR" => get_features2_khr as vk::PFN_vkGetPhysicalDeviceFeatures2,
            Instance c"vkEnumerateDeviceExtensionProperties" => enumerate_device_extensions as vk::PFN_vkEnumerateDeviceExtensionProperties,
            Device c"vkGetDeviceProcAddr" => get_device_proc_addr as vk::PFN_vkGetDeviceProcAddr,
            Device c"vkDestroyDevice" => destroy_device as vk::PFN_vkDestroyDevice,
            Device c"vkGetDeviceQueue" => get_device_queue as vk::PFN_vkGetDeviceQueue,
            Device c"vkGetDeviceQueue2" => get_device_queue2 as vk::PFN_vkGetDeviceQueue2,
            Device c"vkWaitForFences" => wait_for_fences as vk::PFN_vkWaitForFences,
            Device c"vkWaitSemaphores" => wait_semaphores as vk::PFN_vkWaitSemaphores,
            Device c"vkWaitSemaphoresKHR" => wait_semaphores_khr as vk::PFN_vkWaitSemaphores,
            Device c"vkQueueWaitIdle" => queue_wait_idle as vk::PFN_vkQueueWaitIdle,
            Device c"vkDeviceWaitIdle" => device_wait_idle as vk::PFN_vkDeviceWaitIdle,
            Device c"vkQueueSubmit" => queue_submit as vk::PFN_vkQueueSubmit,
            Device c"vkQueueSubmit2" => queue_submit2 as vk::PFN_vkQueueSubmit2,
            Device c"vkQueueSubmit2KHR" => queue_submit2_khr as vk::PFN_vkQueueSubmit2,
            Device c"vkQueuePresentKHR" => queue_present as vk::PFN_vkQueuePresentKHR,
            Device c"vkCreateSwapchainKHR" => create_swapchain as vk::PFN_vkCreateSwapchainKHR,
            Device c"vkGetFenceStatus" => get_fence_status as vk::PFN_vkGetFenceStatus,
            Device c"vkGetSemaphoreCounterValue" => get_counter as vk::PFN_vkGetSemaphoreCounterValue,
            Device c"vkGetSemaphoreCounterValueKHR" => get_counter_khr as vk::PFN_vkGetSemaphoreCounterValue,
            Device c"vkAllocateMemory" => allocate_memory as vk::PFN_vkAllocateMemory,
            Device c"vkCreateBuffer" => create_buffer as vk::PFN_vkCreateBuffer,
            Device c"vkFreeCommandBuffers" => free_command_buffers as vk::PFN_vkFreeCommandBuffers,
            Device c"vkFreeDescriptorSets" => free_descriptor_sets as vk::PFN_vkFreeDescriptorSets,
            Device c"vkCmdDispatch" => cmd_dispatch as vk::PFN_vkCmdDispatch,
        };
        for &(name, function) in DESTROY_HOOKS {
            // SAFETY: as in `hook_table!`.
            let function = unsafe { std::mem::transmute::<DestroyFunction, VoidFunction>(function) };
            hooks.push((Scope::Device, name, function));
        }
        hooks
    })
}

fn find_hook(name: &CStr) -> Option<(Scope, VoidFunction)> {
    hooks()
        .iter()
        .find(|(_, n, _)| *n == name)
        .map(|&(scope, _, f)| (scope, f))
}

unsafe extern "system" fn get_instance_proc_addr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    guarded("vkGetInstanceProcAddr", None, || {
        let name = CStr::from_ptr(name.as_ref()?);
        let hook = find_hook(name);
        if let Some((Scope::Global, function)) = hook {
            return Some(Some(function));
        }
        let state = lookup(&INSTANCES, dispatch_key(instance))?;
        let next = (state.next_get_instance_proc_addr)(instance, name.as_ptr());
        // A hook only where the chain below has the command, so that absent commands stay absent.
        Some(match hook {
            Some((_, function)) if next.is_some() => Some(function),
            _ => next,
        })
    })
}

unsafe extern "system" fn get_device_proc_addr(
    device: vk::Device,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    guarded("vkGetDeviceProcAddr", None, || {
        let name = CStr::from_ptr(name.as_ref()?);
        let state = device_of(device)?;
        let next = (state.next_get_device_proc_addr)(device, name.as_ptr());
        if next.is_none() && name == BUFFER_MARKER_COMMAND && config().fake_buffer_marker {
            // SAFETY: the command's own type, handed out under its name.
            let fake = unsafe {
                std::mem::transmute::<vk::PFN_vkCmdWriteBufferMarkerAMD, VoidFunction>(
                    write_no_buffer_marker,
                )
            };
            return Some(Some(fake));
        }
        // vkCmdDispatch is only watched to log it: otherwise it goes straight down.
        if name == c"vkCmdDispatch" && !config().log_markers {
            return Some(next);
        }
        Some(match find_hook(name) {
            Some((Scope::Device, function)) if next.is_some() => Some(function),
            _ => next,
        })
    })
}

unsafe extern "system" fn create_instance(
    info: *const vk::InstanceCreateInfo<'_>,
    allocator: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Instance,
) -> vk::Result {
    guarded(
        "vkCreateInstance",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let chain: *mut LayerInstanceCreateInfo = find_loader_info(
                info.as_ref()?.p_next,
                LOADER_INSTANCE_CREATE_INFO,
                LAYER_LINK_INFO,
            );
            let link = chain.as_ref()?.u.p_layer_info.as_ref()?;
            let next_gipa = link.pfn_next_get_instance_proc_addr;
            let next_create = next_gipa(vk::Instance::null(), c"vkCreateInstance".as_ptr())?;
            let next_create =
                std::mem::transmute::<VoidFunction, vk::PFN_vkCreateInstance>(next_create);
            (*chain).u.p_layer_info = link.p_next;
            config();
            let result = next_create(info, allocator, out);
            if result == vk::Result::SUCCESS {
                let destroy = next_gipa(*out, c"vkDestroyInstance".as_ptr());
                let next_physical = PHYSICAL_DEVICE_HOOKS
                    .iter()
                    .filter_map(|&name| Some((name, next_gipa(*out, name.as_ptr())?)))
                    .collect();
                let state = Instance {
                    handle: *out,
                    next_get_instance_proc_addr: next_gipa,
                    next_physical,
                    next_destroy_instance: destroy
                        .map(|f| std::mem::transmute::<VoidFunction, vk::PFN_vkDestroyInstance>(f)),
                };
                let mut instances = INSTANCES.lock().unwrap();
                let instances = instances.get_or_insert_with(HashMap::new);
                instances.insert(dispatch_key(*out), Arc::new(state));
            }
            Some(result)
        },
    )
}

unsafe extern "system" fn destroy_instance(
    instance: vk::Instance,
    allocator: *const vk::AllocationCallbacks<'_>,
) {
    guarded("vkDestroyInstance", (), || {
        let state = INSTANCES
            .lock()
            .unwrap()
            .as_mut()?
            .remove(&dispatch_key(instance))?;
        state.next_destroy_instance?(instance, allocator);
        Some(())
    })
}

unsafe extern "system" fn create_device(
    physical_device: vk::PhysicalDevice,
    info: *const vk::DeviceCreateInfo<'_>,
    allocator: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Device,
) -> vk::Result {
    guarded(
        "vkCreateDevice",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let instance = lookup(&INSTANCES, dispatch_key(physical_device))?;
            let chain: *mut LayerDeviceCreateInfo = find_loader_info(
                info.as_ref()?.p_next,
                LOADER_DEVICE_CREATE_INFO,
                LAYER_LINK_INFO,
            );
            let link = chain.as_ref()?.u.p_layer_info.as_ref()?;
            let (next_gipa, next_gdpa) = (
                link.pfn_next_get_instance_proc_addr,
                link.pfn_next_get_device_proc_addr,
            );
            let next_create = next_gipa(instance.handle, c"vkCreateDevice".as_ptr())?;
            let next_create =
                std::mem::transmute::<VoidFunction, vk::PFN_vkCreateDevice>(next_create);
            (*chain).u.p_layer_info = link.p_next;
            if config().no_bda {
                if let Some(refused) = asks_for_bda(&*info) {
                    log(format_args!("refused vkCreateDevice: it asks for {refused:?}, hidden by BB_FAULT_NO_BDA"));
                    return Some(refused);
                }
            }
            // The faked extension is not the driver's: it is left out of the list the driver gets.
            let mut stripped = *info;
            let kept: Vec<*const c_char>;
            if config().fake_buffer_marker && !(*info).pp_enabled_extension_names.is_null() {
                kept = std::slice::from_raw_parts(
                    (*info).pp_enabled_extension_names,
                    (*info).enabled_extension_count as usize,
                )
                .iter()
                .copied()
                .filter(|&n| {
                    CStr::from_ptr(n) != BUFFER_MARKER_EXTENSION || driver_has_buffer_marker()
                })
                .collect();
                stripped.enabled_extension_count = kept.len() as u32;
                stripped.pp_enabled_extension_names = kept.as_ptr();
            }
            let result = next_create(physical_device, &stripped, allocator, out);
            if result != vk::Result::SUCCESS {
                return Some(result);
            }
            let device = *out;
            let mut next = HashMap::new();
            let hooked = hooks().iter().filter(|h| h.0 == Scope::Device).map(|h| h.1);
            for name in hooked.chain([c"vkCreateFence"]) {
                if let Some(function) = next_gdpa(device, name.as_ptr()) {
                    next.insert(name, function);
                }
            }
            let state = Device {
                handle: device,
                next_get_device_proc_addr: next_gdpa,
                next,
                lost_in: Mutex::new(None),
                drained: AtomicBool::new(false),
                queues: Mutex::new(Vec::new()),
                orphan_fences: Mutex::new(Vec::new()),
            };
            let mut devices = DEVICES.lock().unwrap();
            let devices = devices.get_or_insert_with(HashMap::new);
            devices.insert(dispatch_key(device), Arc::new(state));
            Some(result)
        },
    )
}

unsafe extern "system" fn destroy_device(
    device: vk::Device,
    allocator: *const vk::AllocationCallbacks<'_>,
) {
    guarded("vkDestroyDevice", (), || {
        let state = DEVICES
            .lock()
            .unwrap()
            .as_mut()?
            .remove(&dispatch_key(device))?;
        state.drain(device);
        state.next::<vk::PFN_vkDestroyDevice>(c"vkDestroyDevice")?(device, allocator);
        Some(())
    })
}

/// `BB_FAULT_LOG_SWAPCHAINS=1`: the usage the swapchain gets, logged; the call goes down unchanged.
unsafe extern "system" fn create_swapchain(
    device: vk::Device,
    info: *const vk::SwapchainCreateInfoKHR<'_>,
    allocator: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::SwapchainKHR,
) -> vk::Result {
    guarded(
        "vkCreateSwapchainKHR",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let state = device_of(device)?;
            if config().log_swapchains {
                // SAFETY: the caller's valid create info.
                let usage = unsafe { (*info).image_usage };
                log(format_args!("vkCreateSwapchainKHR: imageUsage {usage:?}"));
            }
            let next = state.next::<vk::PFN_vkCreateSwapchainKHR>(c"vkCreateSwapchainKHR")?;
            // SAFETY: the caller's arguments, unchanged.
            Some(unsafe { next(device, info, allocator, out) })
        },
    )
}

unsafe extern "system" fn get_device_queue(
    device: vk::Device,
    family: u32,
    index: u32,
    out: *mut vk::Queue,
) {
    guarded("vkGetDeviceQueue", (), || {
        let state = device_of(device)?;
        state.next::<vk::PFN_vkGetDeviceQueue>(c"vkGetDeviceQueue")?(device, family, index, out);
        state.remember_queue(*out);
        Some(())
    })
}

unsafe extern "system" fn get_device_queue2(
    device: vk::Device,
    info: *const vk::DeviceQueueInfo2<'_>,
    out: *mut vk::Queue,
) {
    guarded("vkGetDeviceQueue2", (), || {
        let state = device_of(device)?;
        state.next::<vk::PFN_vkGetDeviceQueue2>(c"vkGetDeviceQueue2")?(device, info, out);
        state.remember_queue(*out);
        Some(())
    })
}

// ---- waits: where losses are injected ----

/// The wait limit when it is shorter than the app's timeout: then a timeout is turned into a loss.
fn injected_limit(timeout_ns: u64) -> Option<(Duration, u64)> {
    let limit = config().lost_after?;
    let limit_ns = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
    (timeout_ns > limit_ns).then_some((limit, limit_ns))
}

/// Waits with a timeout (the last parameter): on a lost device they fail at once; otherwise they wait at
/// most the injected limit, and a timeout the app did not ask for loses the device.
macro_rules! lose_on_timeout {
    ($($function:ident = $name:literal as $pfn:ident($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*);)*) => {$(
        unsafe extern "system" fn $function($first: $first_ty, $($arg: $ty,)* timeout: u64) -> vk::Result {
            let name = $name.to_str().unwrap_or("?");
            guarded(name, vk::Result::ERROR_UNKNOWN, || {
                let state = device_of($first)?;
                if state.is_lost() {
                    return Some(state.still_lost(name));
                }
                let next = state.next::<vk::$pfn>($name)?;
                Some(match injected_limit(timeout) {
                    None => next($first, $($arg,)* timeout),
                    Some((limit, limit_ns)) => match next($first, $($arg,)* limit_ns) {
                        vk::Result::TIMEOUT => state.lose(name, limit),
                        result => result,
                    },
                })
            })
        }
    )*};
}

lose_on_timeout! {
    wait_for_fences = c"vkWaitForFences" as PFN_vkWaitForFences(device: vk::Device, count: u32, fences: *const vk::Fence, wait_all: vk::Bool32);
    wait_semaphores = c"vkWaitSemaphores" as PFN_vkWaitSemaphores(device: vk::Device, info: *const vk::SemaphoreWaitInfo<'_>);
    wait_semaphores_khr = c"vkWaitSemaphoresKHR" as PFN_vkWaitSemaphores(device: vk::Device, info: *const vk::SemaphoreWaitInfo<'_>);
}

/// An idle wait with `BB_FAULT_LOST_IDLE=1`: an empty batch with a fence of the layer's own on each queue,
/// those fences waited for up to the limit. `None`: not injected, call the real idle wait instead.
unsafe fn idle_wait(
    state: &Device,
    queues: &[vk::Queue],
    command: &'static str,
) -> Option<vk::Result> {
    let (limit, limit_ns) = injected_limit(u64::MAX).filter(|_| config().lost_idle)?;
    let create = state.next::<vk::PFN_vkCreateFence>(c"vkCreateFence")?;
    let submit = state.next::<vk::PFN_vkQueueSubmit>(c"vkQueueSubmit")?;
    let wait = state.next::<vk::PFN_vkWaitForFences>(c"vkWaitForFences")?;
    let destroy = state.next::<vk::PFN_vkDestroyFence>(c"vkDestroyFence")?;
    let device = state.handle;
    let mut fences = Vec::new();
    let mut result = vk::Result::SUCCESS;
    for &queue in queues {
        let mut fence = vk::Fence::null();
        result = create(
            device,
            &vk::FenceCreateInfo::default(),
            std::ptr::null(),
            &mut fence,
        );
        if result != vk::Result::SUCCESS {
            break;
        }
        fences.push(fence);
        result = submit(queue, 0, std::ptr::null(), fence);
        if result != vk::Result::SUCCESS {
            break;
        }
    }
    if result == vk::Result::SUCCESS && !fences.is_empty() {
        result = wait(
            device,
            fences.len() as u32,
            fences.as_ptr(),
            vk::TRUE,
            limit_ns,
        );
    }
    if result == vk::Result::TIMEOUT {
        state.orphan_fences.lock().unwrap().extend(fences);
        return Some(state.lose(command, limit));
    }
    for fence in fences {
        destroy(device, fence, std::ptr::null());
    }
    Some(result)
}

unsafe extern "system" fn queue_wait_idle(queue: vk::Queue) -> vk::Result {
    guarded("vkQueueWaitIdle", vk::Result::ERROR_UNKNOWN, || {
        let state = device_of(queue)?;
        if state.is_lost() {
            return Some(state.still_lost("vkQueueWaitIdle"));
        }
        let injected = idle_wait(&state, &[queue], "vkQueueWaitIdle");
        injected.or_else(|| {
            Some(state.next::<vk::PFN_vkQueueWaitIdle>(c"vkQueueWaitIdle")?(
                queue,
            ))
        })
    })
}

unsafe extern "system" fn device_wait_idle(device: vk::Device) -> vk::Result {
    guarded("vkDeviceWaitIdle", vk::Result::ERROR_UNKNOWN, || {
        let state = device_of(device)?;
        if state.is_lost() {
            return Some(state.still_lost("vkDeviceWaitIdle"));
        }
        let queues = state.queues.lock().unwrap().clone();
        let injected = idle_wait(&state, &queues, "vkDeviceWaitIdle");
        injected.or_else(|| {
            Some(state
                .next::<vk::PFN_vkDeviceWaitIdle>(c"vkDeviceWaitIdle")?(
                device,
            ))
        })
    })
}

// ---- after a loss: submits, presents and status queries fail too; destroys drain first ----

/// Commands that fail with VK_ERROR_DEVICE_LOST, without calling down, once the device is lost.
macro_rules! fail_when_lost {
    ($($function:ident = $name:literal as $pfn:ident($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*);)*) => {$(
        unsafe extern "system" fn $function($first: $first_ty $(, $arg: $ty)*) -> vk::Result {
            let name = $name.to_str().unwrap_or("?");
            guarded(name, vk::Result::ERROR_UNKNOWN, || {
                let state = device_of($first)?;
                if state.is_lost() {
                    return Some(state.still_lost(name));
                }
                Some(state.next::<vk::$pfn>($name)?($first $(, $arg)*))
            })
        }
    )*};
}

/// `vkQueueSubmit`: fails once the device is lost; with `BB_FAULT_LOG_SUBMITS=1`, logs each batch whose
/// `pWaitSemaphores` is set with a count of 0.
unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo<'_>,
    fence: vk::Fence,
) -> vk::Result {
    guarded("vkQueueSubmit", vk::Result::ERROR_UNKNOWN, || {
        let state = device_of(queue)?;
        if state.is_lost() {
            return Some(state.still_lost("vkQueueSubmit"));
        }
        if config().log_submits && count > 0 && !submits.is_null() {
            // SAFETY: the caller's array of `count` valid batches.
            let batches = unsafe { std::slice::from_raw_parts(submits, count as usize) };
            for (i, batch) in batches.iter().enumerate() {
                if !batch.p_wait_semaphores.is_null() && batch.wait_semaphore_count == 0 {
                    log(format_args!(
                        "vkQueueSubmit: pSubmits[{i}].pWaitSemaphores set, waitSemaphoreCount 0"
                    ));
                }
            }
        }
        let next = state.next::<vk::PFN_vkQueueSubmit>(c"vkQueueSubmit")?;
        // SAFETY: the caller's arguments, unchanged.
        Some(unsafe { next(queue, count, submits, fence) })
    })
}

fail_when_lost! {
    queue_submit2 = c"vkQueueSubmit2" as PFN_vkQueueSubmit2(queue: vk::Queue, count: u32, submits: *const vk::SubmitInfo2<'_>, fence: vk::Fence);
    queue_submit2_khr = c"vkQueueSubmit2KHR" as PFN_vkQueueSubmit2(queue: vk::Queue, count: u32, submits: *const vk::SubmitInfo2<'_>, fence: vk::Fence);
    queue_present = c"vkQueuePresentKHR" as PFN_vkQueuePresentKHR(queue: vk::Queue, info: *const vk::PresentInfoKHR<'_>);
    get_fence_status = c"vkGetFenceStatus" as PFN_vkGetFenceStatus(device: vk::Device, fence: vk::Fence);
    get_counter = c"vkGetSemaphoreCounterValue" as PFN_vkGetSemaphoreCounterValue(device: vk::Device, semaphore: vk::Semaphore, value: *mut u64);
    get_counter_khr = c"vkGetSemaphoreCounterValueKHR" as PFN_vkGetSemaphoreCounterValue(device: vk::Device, semaphore: vk::Semaphore, value: *mut u64);
}

/// Commands that destroy or free something: after a loss, they first wait (once) for the real work.
macro_rules! drain_first {
    ($($function:ident = $name:literal as $pfn:ty => $ret:ty, $fallback:expr, ($($arg:ident: $ty:ty),*);)*) => {$(
        unsafe extern "system" fn $function(device: vk::Device, $($arg: $ty),*) -> $ret {
            guarded($name.to_str().unwrap_or("?"), $fallback, || {
                let state = device_of(device)?;
                state.drain(device);
                Some(state.next::<$pfn>($name)?(device, $($arg),*))
            })
        }
    )*};
}

drain_first! {
    free_command_buffers = c"vkFreeCommandBuffers" as vk::PFN_vkFreeCommandBuffers => (), (), (pool: vk::CommandPool, count: u32, buffers: *const vk::CommandBuffer);
    free_descriptor_sets = c"vkFreeDescriptorSets" as vk::PFN_vkFreeDescriptorSets => vk::Result, vk::Result::ERROR_UNKNOWN, (pool: vk::DescriptorPool, count: u32, sets: *const vk::DescriptorSet);
}

/// The destroy and free commands shaped `(device, handle, allocator)`, all with one implementation.
macro_rules! destroy_hooks {
    ($($function:ident = $name:literal,)*) => {
        drain_first! {
            $($function = $name as DestroyFunction => (), (), (object: u64, allocator: *const c_void);)*
        }
        const DESTROY_HOOKS: &[(&CStr, DestroyFunction)] = &[$(($name, $function)),*];
    };
}

destroy_hooks! {
    destroy_buffer = c"vkDestroyBuffer",
    destroy_buffer_view = c"vkDestroyBufferView",
    destroy_image = c"vkDestroyImage",
    destroy_image_view = c"vkDestroyImageView",
    free_memory = c"vkFreeMemory",
    destroy_sampler = c"vkDestroySampler",
    destroy_pipeline = c"vkDestroyPipeline",
    destroy_pipeline_layout = c"vkDestroyPipelineLayout",
    destroy_descriptor_set_layout = c"vkDestroyDescriptorSetLayout",
    destroy_descriptor_pool = c"vkDestroyDescriptorPool",
    destroy_render_pass = c"vkDestroyRenderPass",
    destroy_framebuffer = c"vkDestroyFramebuffer",
    destroy_command_pool = c"vkDestroyCommandPool",
    destroy_fence = c"vkDestroyFence",
    destroy_semaphore = c"vkDestroySemaphore",
    destroy_event = c"vkDestroyEvent",
    destroy_query_pool = c"vkDestroyQueryPool",
}

// ---- allocation failures ----

/// Whether this call of `command` is the one `BB_FAULT_OOM` names (calls counted per process).
fn oom_now(command: OomCommand, calls: &AtomicU32, name: &str) -> bool {
    match config().oom {
        Some((target, n)) if target == command => {
            let call = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if call == n {
                log(format_args!(
                    "injected VK_ERROR_OUT_OF_DEVICE_MEMORY in {name} (call {call})"
                ));
            }
            call == n
        }
        _ => false,
    }
}

unsafe extern "system" fn allocate_memory(
    device: vk::Device,
    info: *const vk::MemoryAllocateInfo<'_>,
    allocator: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::DeviceMemory,
) -> vk::Result {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    guarded("vkAllocateMemory", vk::Result::ERROR_UNKNOWN, || {
        if oom_now(OomCommand::AllocateMemory, &CALLS, "vkAllocateMemory") {
            return Some(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        }
        let next = device_of(device)?.next::<vk::PFN_vkAllocateMemory>(c"vkAllocateMemory")?;
        Some(next(device, info, allocator, out))
    })
}

unsafe extern "system" fn create_buffer(
    device: vk::Device,
    info: *const vk::BufferCreateInfo<'_>,
    allocator: *const vk::AllocationCallbacks<'_>,
    out: *mut vk::Buffer,
) -> vk::Result {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    guarded("vkCreateBuffer", vk::Result::ERROR_UNKNOWN, || {
        if oom_now(OomCommand::CreateBuffer, &CALLS, "vkCreateBuffer") {
            return Some(vk::Result::ERROR_OUT_OF_DEVICE_MEMORY);
        }
        let next = device_of(device)?.next::<vk::PFN_vkCreateBuffer>(c"vkCreateBuffer")?;
        Some(next(device, info, allocator, out))
    })
}

// ---- a device without buffer device address ----

const BDA_EXTENSIONS: [&CStr; 2] = [
    c"VK_KHR_buffer_device_address",
    c"VK_EXT_buffer_device_address",
];

/// The pNext chain of a features query or device create info, as (sType, struct) pairs.
unsafe fn chain(mut next: *const c_void) -> impl Iterator<Item = (vk::StructureType, *mut c_void)> {
    std::iter::from_fn(move || {
        let base = (next as *const vk::BaseOutStructure<'_>).as_ref()?;
        let item = (base.s_type, next as *mut c_void);
        next = base.p_next as *const c_void;
        Some(item)
    })
}

/// Clears every buffer-device-address feature bit in a features query's chain.
unsafe fn hide_bda(features: *mut vk::PhysicalDeviceFeatures2<'_>) {
    let Some(features) = features.as_mut() else {
        return;
    };
    for (s_type, p) in chain(features.p_next) {
        match s_type {
            vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => {
                let v12 = &mut *(p as *mut vk::PhysicalDeviceVulkan12Features<'_>);
                v12.buffer_device_address = vk::FALSE;
                v12.buffer_device_address_capture_replay = vk::FALSE;
                v12.buffer_device_address_multi_device = vk::FALSE;
            }
            vk::StructureType::PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES => {
                let bda = &mut *(p as *mut vk::PhysicalDeviceBufferDeviceAddressFeatures<'_>);
                bda.buffer_device_address = vk::FALSE;
                bda.buffer_device_address_capture_replay = vk::FALSE;
                bda.buffer_device_address_multi_device = vk::FALSE;
            }
            _ => {}
        }
    }
}

/// What a driver without buffer device address would refuse in this create info, if anything.
unsafe fn asks_for_bda(info: &vk::DeviceCreateInfo<'_>) -> Option<vk::Result> {
    let names = if info.pp_enabled_extension_names.is_null() {
        &[][..]
    } else {
        std::slice::from_raw_parts(
            info.pp_enabled_extension_names,
            info.enabled_extension_count as usize,
        )
    };
    if names
        .iter()
        .any(|&n| BDA_EXTENSIONS.contains(&CStr::from_ptr(n)))
    {
        return Some(vk::Result::ERROR_EXTENSION_NOT_PRESENT);
    }
    let asked = chain(info.p_next).any(|(s_type, p)| match s_type {
        vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES => {
            (*(p as *const vk::PhysicalDeviceVulkan12Features<'_>)).buffer_device_address
                == vk::TRUE
        }
        vk::StructureType::PHYSICAL_DEVICE_BUFFER_DEVICE_ADDRESS_FEATURES => {
            (*(p as *const vk::PhysicalDeviceBufferDeviceAddressFeatures<'_>)).buffer_device_address
                == vk::TRUE
        }
        _ => false,
    });
    asked.then_some(vk::Result::ERROR_FEATURE_NOT_PRESENT)
}

// ---- a faked VK_AMD_buffer_marker ----

const BUFFER_MARKER_EXTENSION: &CStr = c"VK_AMD_buffer_marker";
const BUFFER_MARKER_COMMAND: &CStr = c"vkCmdWriteBufferMarkerAMD";

/// Set when the extension list was given the faked extension: the driver's own list lacks it.
static DRIVER_LACKS_BUFFER_MARKER: AtomicBool = AtomicBool::new(false);

fn driver_has_buffer_marker() -> bool {
    !DRIVER_LACKS_BUFFER_MARKER.load(Ordering::Relaxed)
}

/// The faked `vkCmdWriteBufferMarkerAMD`: records nothing (`BB_FAULT_LOG_MARKERS=1`: logs the write).
unsafe extern "system" fn write_no_buffer_marker(
    _command_buffer: vk::CommandBuffer,
    stage: vk::PipelineStageFlags,
    _buffer: vk::Buffer,
    _offset: vk::DeviceSize,
    marker: u32,
) {
    if config().log_markers {
        log(format_args!("vkCmdWriteBufferMarkerAMD {stage:?} {marker}"));
    }
}

/// `BB_FAULT_LOG_MARKERS=1`: the dispatch is logged as it is recorded; the call goes down unchanged.
unsafe extern "system" fn cmd_dispatch(command_buffer: vk::CommandBuffer, x: u32, y: u32, z: u32) {
    guarded("vkCmdDispatch", (), || {
        log(format_args!("vkCmdDispatch"));
        // A command buffer's dispatch key is its device's.
        let next = device_of(command_buffer)?.next::<vk::PFN_vkCmdDispatch>(c"vkCmdDispatch")?;
        // SAFETY: the caller's arguments, unchanged.
        unsafe { next(command_buffer, x, y, z) };
        Some(())
    })
}

/// The physical-device commands hooked here: their next functions are resolved at instance creation
/// (asked later, the loader's terminator would answer with the top of the chain, this layer's hook).
const PHYSICAL_DEVICE_HOOKS: [&CStr; 3] = [
    c"vkGetPhysicalDeviceFeatures2",
    c"vkGetPhysicalDeviceFeatures2KHR",
    c"vkEnumerateDeviceExtensionProperties",
];

unsafe fn next_instance_command<F: Copy>(
    physical_device: vk::PhysicalDevice,
    name: &CStr,
) -> Option<F> {
    let instance = lookup(&INSTANCES, dispatch_key(physical_device))?;
    let f = instance.next_physical.get(name)?;
    Some(std::mem::transmute_copy::<VoidFunction, F>(f))
}

macro_rules! features2_hook {
    ($function:ident, $name:literal, $c_name:literal) => {
        unsafe extern "system" fn $function(
            physical_device: vk::PhysicalDevice,
            features: *mut vk::PhysicalDeviceFeatures2<'_>,
        ) {
            guarded($name, (), || {
                let next: vk::PFN_vkGetPhysicalDeviceFeatures2 =
                    next_instance_command(physical_device, $c_name)?;
                next(physical_device, features);
                if config().no_bda {
                    hide_bda(features);
                }
                Some(())
            })
        }
    };
}

features2_hook!(
    get_features2,
    "vkGetPhysicalDeviceFeatures2",
    c"vkGetPhysicalDeviceFeatures2"
);
features2_hook!(
    get_features2_khr,
    "vkGetPhysicalDeviceFeatures2KHR",
    c"vkGetPhysicalDeviceFeatures2KHR"
);

unsafe extern "system" fn enumerate_device_extensions(
    physical_device: vk::PhysicalDevice,
    layer_name: *const c_char,
    count: *mut u32,
    properties: *mut vk::ExtensionProperties,
) -> vk::Result {
    guarded(
        "vkEnumerateDeviceExtensionProperties",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let next: vk::PFN_vkEnumerateDeviceExtensionProperties =
                next_instance_command(physical_device, c"vkEnumerateDeviceExtensionProperties")?;
            if !(config().no_bda || config().fake_buffer_marker) || !layer_name.is_null() {
                return Some(next(physical_device, layer_name, count, properties));
            }
            // The whole list from below, less the hidden extensions and with the faked one, then the usual
            // two-call protocol.
            let mut all_count = 0;
            let result = next(
                physical_device,
                layer_name,
                &mut all_count,
                std::ptr::null_mut(),
            );
            if result != vk::Result::SUCCESS {
                return Some(result);
            }
            let mut all = vec![vk::ExtensionProperties::default(); all_count as usize];
            let result = next(
                physical_device,
                layer_name,
                &mut all_count,
                all.as_mut_ptr(),
            );
            if result != vk::Result::SUCCESS {
                return Some(result);
            }
            all.truncate(all_count as usize);
            if config().no_bda {
                all.retain(|e| {
                    e.extension_name_as_c_str()
                        .is_ok_and(|n| !BDA_EXTENSIONS.contains(&n))
                });
            }
            let listed = |all: &[vk::ExtensionProperties]| {
                all.iter()
                    .any(|e| e.extension_name_as_c_str() == Ok(BUFFER_MARKER_EXTENSION))
            };
            if config().fake_buffer_marker && !listed(&all) {
                DRIVER_LACKS_BUFFER_MARKER.store(true, Ordering::Relaxed);
                let mut fake = vk::ExtensionProperties {
                    spec_version: 1,
                    ..Default::default()
                };
                for (to, &from) in fake
                    .extension_name
                    .iter_mut()
                    .zip(BUFFER_MARKER_EXTENSION.to_bytes())
                {
                    *to = from as c_char;
                }
                all.push(fake);
            }
            let count = count.as_mut()?;
            if properties.is_null() {
                *count = all.len() as u32;
                return Some(vk::Result::SUCCESS);
            }
            let written = (*count as usize).min(all.len());
            std::ptr::copy_nonoverlapping(all.as_ptr(), properties, written);
            *count = written as u32;
            Some(if written < all.len() {
                vk::Result::INCOMPLETE
            } else {
                vk::Result::SUCCESS
            })
        },
    )
}
