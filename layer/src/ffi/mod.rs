//! Every `extern "system"` entry point of the layer. Nothing else in the layer imports from here.
//!
//! The loader calls [`vkNegotiateLoaderLayerInterfaceVersion`], the only exported symbol, and gets back
//! `get_instance_proc_addr` and `get_device_proc_addr`. Those hand out Blackbox's trampoline for a command
//! of the one list ([`crate::commands`]) and the next layer's pointer for anything else, so a command
//! Blackbox does not intercept costs nothing. The trampolines are not exported: an exported
//! `vkCreateDevice` could be interposed by libvulkan's.
//!
//! A trampoline ([`hooks`]) does only this: catch panics, find the state of the object it is called on
//! ([`crate::registry`], [`crate::command_buffer::lookup`]), call that state's method, and where it cannot,
//! return a [`Fallback`]. The loader's own protocol (negotiation, `vkGet*ProcAddr`, creating and destroying
//! instances and devices, which advance the loader's chain) is written by hand here and in [`lifetime`].

mod hooks;
mod lifetime;

/// The by-hand trampolines the generated hook list names.
mod by_hand {
    pub(super) use super::lifetime::{
        create_device, create_instance, destroy_device, destroy_instance,
    };
    pub(super) use super::{get_device_proc_addr, get_instance_proc_addr};
}

use ash::vk;
use loader_abi as loader;
use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::fallback::Fallback;
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

/// One name of an intercepted command.
pub struct Hook {
    /// The command's name (a core name or an alias).
    pub name: &'static CStr,
    /// How it is dispatched.
    pub scope: Scope,
    /// A command of recording (`vkCmd*`, command pools and buffers): not handed out with breadcrumbs off.
    pub recording: bool,
    /// Blackbox's trampoline.
    pub function: unsafe extern "system" fn(),
}

/// Runs a trampoline's body. `None` (no state, no next command) and a panic (logged by the panic hook)
/// give the [`Fallback`]. Inlined: each instance has one caller, its `extern "system"` function, which
/// would otherwise spill the arguments for it and call it.
#[inline(always)]
fn trampoline<R: Fallback>(command: &'static str, body: impl FnOnce() -> Option<R>) -> R {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Some(result)) => result,
        Ok(None) => {
            unknown_object(command);
            R::fallback()
        }
        Err(_) => {
            stepped_aside(command);
            R::fallback()
        }
    }
}

// The two logs of `trampoline`, out of line and given the name by value: formatted in place, the name was
// stored to the stack on entry to every trampoline, for a message that is almost never written.

#[cold]
#[inline(never)]
fn unknown_object(command: &'static str) {
    debug!("{command}: called on an object Blackbox does not know; returned its fallback");
}

#[cold]
#[inline(never)]
fn stepped_aside(command: &'static str) {
    error!("{command}: internal error, Blackbox steps aside for this call");
}

/// A command parameter as the recorded log keeps it.
pub trait Param {
    /// As 64 bits.
    fn param(self) -> u64;
}
macro_rules! param_as_u64 {
    ($($t:ty),*) => { $(impl Param for $t { fn param(self) -> u64 { self as u64 } })* };
}
param_as_u64!(u32, i32, u64);
macro_rules! param_handle {
    ($($t:ty),*) => { $(impl Param for $t { fn param(self) -> u64 { vk::Handle::as_raw(self) } })* };
}
param_handle!(vk::Buffer, vk::Image, vk::QueryPool, vk::Event);

/// Every hook by name.
static HOOKS: once_cell::sync::Lazy<HashMap<&'static CStr, &'static Hook>> =
    once_cell::sync::Lazy::new(|| {
        hooks::INSTANCE_HOOKS
            .iter()
            .chain(hooks::DEVICE_HOOKS)
            .flat_map(|names| names.iter())
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

/// The loader's first call: agree on interface version 2 and hand back the two `GetProcAddr`s.
///
/// # Safety
/// Called by the loader with a valid `VkNegotiateLayerInterface`.
#[no_mangle]
pub unsafe extern "system" fn vkNegotiateLoaderLayerInterfaceVersion(
    negotiate: *mut loader::NegotiateLayerInterface,
) -> vk::Result {
    trampoline("vkNegotiateLoaderLayerInterfaceVersion", || {
        // SAFETY: the loader passes a valid struct or null.
        let negotiate = unsafe { negotiate.as_mut() }?;
        if negotiate.s_type != loader::LAYER_NEGOTIATE_INTERFACE_STRUCT
            || negotiate.loader_layer_interface_version < 2
        {
            // Versions 0 and 1 find the layer's functions by exported names, which this layer does not export.
            return None;
        }
        negotiate.loader_layer_interface_version = loader::LAYER_INTERFACE_VERSION;
        negotiate.pfn_get_instance_proc_addr = Some(get_instance_proc_addr);
        negotiate.pfn_get_device_proc_addr = Some(get_device_proc_addr);
        negotiate.pfn_get_physical_device_proc_addr = None;
        Some(vk::Result::SUCCESS)
    })
}

/// `vkGetInstanceProcAddr`: Blackbox's hook where there is one and the chain below has the command, else
/// the next layer's pointer.
unsafe extern "system" fn get_instance_proc_addr(
    instance: vk::Instance,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    trampoline("vkGetInstanceProcAddr", || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the app passes a NUL-terminated command name.
        let name = unsafe { CStr::from_ptr(name) };
        let hook = find_hook(name);
        if let Some(hook) = hook.filter(|h| h.scope == Scope::Global) {
            return Some(Some(hook.function));
        }
        // SAFETY: a non-null instance handle passed by the app is valid.
        let Some(state) = (unsafe { registry::instance_of(instance) }) else {
            // Layers above built on the loader's sample layer (Mesa's overlay, MangoHud, vkBasalt) ask for
            // `vkCreateDevice` with a null instance. Blackbox's instance-level hooks find their state from
            // their own first parameter, so they are handed out as the validation layer does; anything
            // else needs the instance to ask the chain below.
            let hook = hook.filter(|h| h.scope == Scope::Instance)?;
            return Some(Some(hook.function));
        };
        // SAFETY: the next layer resolves commands for its live instance.
        let next = unsafe { (state.next_get_instance_proc_addr)(instance, name.as_ptr()) };
        Some(match hook {
            Some(hook) if hook.recording && !records_commands() => next,
            // A hook is only handed out where the chain below has the command, so absent commands stay absent.
            Some(hook) if next.is_some() => Some(hook.function),
            _ => next,
        })
    })
}

/// `vkGetDeviceProcAddr`: as `get_instance_proc_addr`, for device commands.
unsafe extern "system" fn get_device_proc_addr(
    device: vk::Device,
    name: *const c_char,
) -> vk::PFN_vkVoidFunction {
    trampoline("vkGetDeviceProcAddr", || {
        if name.is_null() {
            return None;
        }
        // SAFETY: the app passes a NUL-terminated command name.
        let name = unsafe { CStr::from_ptr(name) };
        // SAFETY: a non-null device handle passed by the app is valid.
        let state = unsafe { registry::device_of(device) }?;
        // SAFETY: the next layer resolves commands for its live device.
        let next = unsafe { (state.next_get_device_proc_addr)(device, name.as_ptr()) };
        Some(match find_hook(name) {
            // With breadcrumbs off, recording is not watched at all: the app records straight into the
            // next layer, at no cost.
            Some(hook) if hook.recording && !records_commands() => next,
            Some(hook) if hook.scope == Scope::Device && next.is_some() => Some(hook.function),
            _ => next,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intercepted_names_are_unique_commands() {
        let all: Vec<&Hook> = hooks::INSTANCE_HOOKS
            .iter()
            .chain(hooks::DEVICE_HOOKS)
            .flat_map(|names| names.iter())
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
        // Every alias of a recorded command is handed out too.
        for name in [
            c"vkCmdCopyBuffer2KHR",
            c"vkCmdDrawIndirectCountAMD",
            c"vkQueueSubmit2KHR",
        ] {
            assert!(HOOKS.contains_key(name), "{name:?}");
        }
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
    fn unknown_handles_resolve_only_global_and_instance_hooks() {
        // SAFETY: null handles are looked up without being dereferenced.
        unsafe {
            assert!(
                get_instance_proc_addr(vk::Instance::null(), c"vkCreateInstance".as_ptr())
                    .is_some()
            );
            assert!(get_instance_proc_addr(vk::Instance::null(), c"vkCmdDraw".as_ptr()).is_none());
            // Layers built on the loader's sample ask for vkCreateDevice with a null instance.
            assert!(
                get_instance_proc_addr(vk::Instance::null(), c"vkCreateDevice".as_ptr()).is_some()
            );
            assert!(get_instance_proc_addr(
                vk::Instance::null(),
                c"vkGetPhysicalDeviceProperties".as_ptr()
            )
            .is_none());
            assert!(get_device_proc_addr(vk::Device::null(), c"vkCmdDraw".as_ptr()).is_none());
        }
    }
}
