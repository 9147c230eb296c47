//! Every `extern "system"` entry point of the layer, and the one list of what it intercepts.
//!
//! The loader calls [`vkNegotiateLoaderLayerInterfaceVersion`], the only exported symbol, and gets back
//! `get_instance_proc_addr` and `get_device_proc_addr`. Those hand out Blackbox's hook for a command in
//! [`INTERCEPTED`] and the next layer's pointer for anything else, so a command Blackbox does not intercept
//! costs nothing. The hooks are not exported: an exported `vkCreateDevice` could be interposed by libvulkan's.
//!
//! Each hook runs its body through `entry`, which catches panics: a failure inside the layer is logged and
//! the call goes on as if the layer were not there.

/// One entry of a hook table: a command name, its scope, and Blackbox's implementation.
macro_rules! hook {
    ($scope:ident, $name:expr, $function:path as $pfn:ident) => {
        $crate::ffi::Hook {
            name: $name,
            scope: $crate::ffi::Scope::$scope,
            // SAFETY: a function pointer of the command's own type, handed out under the command's name.
            function: unsafe { std::mem::transmute::<vk::$pfn, unsafe extern "system" fn()>($function as vk::$pfn) },
            recording: false,
        }
    };
}

pub mod loader;

mod command_buffer;
mod device;
mod instance;
mod queue;
mod shader;

pub use command_buffer::RecordedDispatch;

use ash::vk;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::registry;

/// Where a command's first parameter comes from, which decides how it is dispatched.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Scope {
    /// Needs no instance (`vkCreateInstance`, `vkGetInstanceProcAddr`).
    Global,
    /// Dispatched on an instance or physical device.
    Instance,
    /// Dispatched on a device, queue or command buffer.
    Device,
}

/// One intercepted command.
pub struct Hook {
    /// The command's name.
    pub name: &'static CStr,
    /// How it is dispatched.
    pub scope: Scope,
    /// Blackbox's implementation.
    pub function: unsafe extern "system" fn(),
    /// A command-recording hook, skipped when breadcrumbs are off.
    pub recording: bool,
}

/// The commands Blackbox intercepts for instance and device lifetime; with the recording hooks of
/// `command_buffer.rs`, everything Blackbox intercepts. Everything else resolves straight to the next layer.
pub const INTERCEPTED: &[Hook] = &[
    hook!(
        Global,
        c"vkGetInstanceProcAddr",
        get_instance_proc_addr as PFN_vkGetInstanceProcAddr
    ),
    hook!(
        Global,
        c"vkCreateInstance",
        instance::create_instance as PFN_vkCreateInstance
    ),
    hook!(
        Instance,
        c"vkDestroyInstance",
        instance::destroy_instance as PFN_vkDestroyInstance
    ),
    hook!(
        Instance,
        c"vkCreateDevice",
        instance::create_device as PFN_vkCreateDevice
    ),
    hook!(
        Device,
        c"vkGetDeviceProcAddr",
        get_device_proc_addr as PFN_vkGetDeviceProcAddr
    ),
    hook!(
        Device,
        c"vkDestroyDevice",
        device::destroy_device as PFN_vkDestroyDevice
    ),
    hook!(
        Device,
        c"vkGetDeviceQueue",
        device::get_device_queue as PFN_vkGetDeviceQueue
    ),
    hook!(
        Device,
        c"vkGetDeviceQueue2",
        device::get_device_queue2 as PFN_vkGetDeviceQueue2
    ),
];

/// Every hook by name: [`INTERCEPTED`] and the recording hooks.
static HOOKS: once_cell::sync::Lazy<std::collections::HashMap<&'static CStr, &'static Hook>> =
    once_cell::sync::Lazy::new(|| {
        INTERCEPTED
            .iter()
            .chain(command_buffer::HOOKS)
            .chain(command_buffer::RECORDED_HOOKS)
            .chain(queue::HOOKS)
            .chain(shader::HOOKS)
            .map(|hook| (hook.name, hook))
            .collect()
    });

/// Whether command recording is watched. With breadcrumbs off it is not: the recording hooks are not handed
/// out at all, and the app records straight into the next layer.
fn records_commands() -> bool {
    crate::config().breadcrumbs != crate::config::Breadcrumbs::Off
}

fn find_hook(name: &CStr) -> Option<&'static Hook> {
    HOOKS.get(name).copied()
}

/// Runs an entry point's body. A panic is logged (by the panic hook) and `on_panic` is returned instead.
fn entry<R>(command: &str, on_panic: R, body: impl FnOnce() -> R) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(_) => {
            error!("{command}: internal error, Blackbox steps aside for this call");
            on_panic
        }
    }
}

/// Runs a piece of the layer's own work inside a hook, after or before the call down the chain. A panic is
/// logged and the work is skipped; the app's call goes on.
fn contained<R>(what: &str, body: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => Some(result),
        Err(_) => {
            error!("{what}: internal error, Blackbox goes on without it");
            None
        }
    }
}

/// The loader's first call: agree on interface version 2 and hand back the two `GetProcAddr`s.
///
/// # Safety
/// Called by the loader with a valid `VkNegotiateLayerInterface`.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(
    negotiate: *mut loader::NegotiateLayerInterface,
) -> vk::Result {
    entry(
        "vkNegotiateLoaderLayerInterfaceVersion",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            // SAFETY: the loader passes a valid struct or null.
            let Some(negotiate) = (unsafe { negotiate.as_mut() }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            if negotiate.s_type != loader::LAYER_NEGOTIATE_INTERFACE_STRUCT
                || negotiate.loader_layer_interface_version < 2
            {
                // Versions 0 and 1 find the layer's functions by exported names, which this layer does not export.
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            }
            negotiate.loader_layer_interface_version = loader::LAYER_INTERFACE_VERSION;
            negotiate.pfn_get_instance_proc_addr = Some(get_instance_proc_addr);
            negotiate.pfn_get_device_proc_addr = Some(get_device_proc_addr);
            negotiate.pfn_get_physical_device_proc_addr = None;
            vk::Result::SUCCESS
        },
    )
}

/// `vkGetInstanceProcAddr`: Blackbox's hook where there is one and the chain below has the command, else
/// the next layer's pointer.
unsafe extern "system" fn get_instance_proc_addr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    entry("vkGetInstanceProcAddr", None, || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the app passes a NUL-terminated command name.
        let name = unsafe { CStr::from_ptr(name) };
        let hook = find_hook(name);
        if let Some(hook) = hook.filter(|h| h.scope == Scope::Global) {
            return Some(hook.function);
        }
        // SAFETY: a non-null instance handle passed by the app is valid.
        let state = unsafe { registry::instance_of(instance) }?;
        // SAFETY: the next layer resolves commands for its live instance.
        let next = unsafe { (state.next_get_instance_proc_addr)(instance, name.as_ptr()) };
        match hook {
            Some(hook) if hook.recording && !records_commands() => next,
            // A hook is only handed out where the chain below has the command, so absent commands stay absent.
            Some(hook) if next.is_some() => Some(hook.function),
            _ => next,
        }
    })
}

/// `vkGetDeviceProcAddr`: as `get_instance_proc_addr`, for device commands.
unsafe extern "system" fn get_device_proc_addr(
    device: vk::Device,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    entry("vkGetDeviceProcAddr", None, || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the app passes a NUL-terminated command name.
        let name = unsafe { CStr::from_ptr(name) };
        // SAFETY: a non-null device handle passed by the app is valid.
        let state = unsafe { registry::device_of(device) }?;
        // SAFETY: the next layer resolves commands for its live device.
        let next = unsafe { (state.next_get_device_proc_addr)(device, name.as_ptr()) };
        match find_hook(name) {
            // With breadcrumbs off, recording is not watched at all: the app records straight into the
            // next layer, at no cost.
            Some(hook) if hook.recording && !records_commands() => next,
            Some(hook) if hook.scope == Scope::Device && next.is_some() => Some(hook.function),
            _ => next,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intercepted_names_are_unique_commands() {
        let all: Vec<&Hook> = INTERCEPTED
            .iter()
            .chain(command_buffer::HOOKS)
            .chain(command_buffer::RECORDED_HOOKS)
            .chain(queue::HOOKS)
            .chain(shader::HOOKS)
            .collect();
        for (i, hook) in all.iter().enumerate() {
            assert!(hook.name.to_bytes().starts_with(b"vk"));
            assert!(
                all[i + 1..].iter().all(|other| other.name != hook.name),
                "{:?} twice",
                hook.name
            );
        }
        assert_eq!(HOOKS.len(), all.len());
    }

    #[test]
    fn negotiation_refuses_old_interfaces_and_fills_pointers() {
        let mut n = loader::NegotiateLayerInterface {
            s_type: loader::LAYER_NEGOTIATE_INTERFACE_STRUCT,
            p_next: std::ptr::null_mut(),
            loader_layer_interface_version: 1,
            pfn_get_instance_proc_addr: None,
            pfn_get_device_proc_addr: None,
            pfn_get_physical_device_proc_addr: None,
        };
        // SAFETY: a valid struct.
        assert_eq!(
            unsafe { vkNegotiateLoaderLayerInterfaceVersion(&mut n) },
            vk::Result::ERROR_INITIALIZATION_FAILED
        );
        n.loader_layer_interface_version = 5;
        // SAFETY: a valid struct.
        assert_eq!(
            unsafe { vkNegotiateLoaderLayerInterfaceVersion(&mut n) },
            vk::Result::SUCCESS
        );
        assert_eq!(n.loader_layer_interface_version, 2);
        assert!(n.pfn_get_instance_proc_addr.is_some() && n.pfn_get_device_proc_addr.is_some());
    }

    #[test]
    fn unknown_handles_resolve_nothing_but_global_hooks() {
        // SAFETY: null handles are looked up without being dereferenced.
        unsafe {
            assert!(
                get_instance_proc_addr(vk::Instance::null(), c"vkCreateInstance".as_ptr())
                    .is_some()
            );
            assert!(get_instance_proc_addr(vk::Instance::null(), c"vkCmdDraw".as_ptr()).is_none());
            assert!(get_device_proc_addr(vk::Device::null(), c"vkCmdDraw".as_ptr()).is_none());
        }
    }
}
