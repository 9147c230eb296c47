//! Dispatch tables: the next layer's commands, generated from the one list in [`crate::commands`].
//!
//! Commands Blackbox does not intercept never pass through these tables: `vkGet*ProcAddr` hands the app the
//! next layer's pointer directly. Every entry is an `Option` because a command the driver lacks must stay
//! absent (ash's own loaders fill gaps with stubs that panic).

use ash::vk;
use std::ffi::CStr;

/// Resolves a command by its names: the core name first where `api_version` has it, else its extension
/// aliases first, so the layer calls what the app's Vulkan version allows; then any name that resolves.
fn resolve(
    load: &mut impl FnMut(&CStr) -> vk::PFN_vkVoidFunction,
    api_version: u32,
    core: &CStr,
    core_since: u32,
    aliases: &[&CStr],
) -> vk::PFN_vkVoidFunction {
    if api_version >= core_since {
        load(core).or_else(|| aliases.iter().find_map(|&a| load(a)))
    } else {
        aliases.iter().find_map(|&a| load(a)).or_else(|| load(core))
    }
}

/// `since` of a table entry, or 1.0 for commands that were always core.
macro_rules! core_since {
    () => {
        vk::API_VERSION_1_0
    };
    ($version:ident) => {
        vk::$version
    };
}

/// Builds a `&'static CStr` from a string literal.
macro_rules! cstr {
    ($s:literal) => {
        match CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("command name"),
        }
    };
}

macro_rules! dispatch_tables {
    (instance; $($entries:tt)*) => {
        dispatch_tables!(@table
            /// Instance-level commands of the next layer.
            InstanceDispatch; $($entries)*);
    };
    (device; $($entries:tt)*) => {
        dispatch_tables!(@table
            /// Device-level commands of the next layer: those Blackbox intercepts and those it calls itself.
            DeviceDispatch; $($entries)*);
    };
    (@table $(#[$meta:meta])* $table:ident; $(
        [$scope:ident $class:ident $field:ident: $pfn:ident = $name:literal $(since $since:ident)? $(| $alias:literal)*]
        { $($handler:tt)* }
    )*) => {
        $(#[$meta])*
        #[derive(Clone, Copy)]
        pub struct $table {
            $(#[doc = concat!("`", $name, "`")] pub $field: Option<vk::$pfn>,)*
        }

        impl $table {
            /// Resolves every command through `load` (the next layer's `vkGet*ProcAddr`), choosing among a
            /// command's names by `api_version`, the version the app created the instance or device for.
            pub fn load(api_version: u32, mut load: impl FnMut(&CStr) -> vk::PFN_vkVoidFunction) -> Self {
                Self {
                    $($field: resolve(&mut load, api_version, cstr!($name), core_since!($($since)?), &[$(cstr!($alias)),*])
                        .map(|f| {
                            // SAFETY: the loader returns the command of the name asked for; all its names
                            // share the type `$pfn`.
                            unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::$pfn>(f) }
                        }),)*
                }
            }
        }
    };
}

vulkan_commands!(dispatch_tables);

#[cfg(test)]
mod tests {
    use super::*;

    unsafe extern "system" fn some() {}

    #[test]
    fn names_are_chosen_by_the_api_version() {
        let asked = std::cell::RefCell::new(Vec::new());
        let mut load = |name: &CStr| -> vk::PFN_vkVoidFunction {
            asked.borrow_mut().push(name.to_owned());
            Some(some)
        };
        let core = c"vkWaitSemaphores";
        let khr = c"vkWaitSemaphoresKHR";
        resolve(
            &mut load,
            vk::API_VERSION_1_1,
            core,
            vk::API_VERSION_1_2,
            &[khr],
        );
        assert_eq!(
            asked.borrow_mut().drain(..).collect::<Vec<_>>(),
            [khr.to_owned()]
        );
        resolve(
            &mut load,
            vk::API_VERSION_1_2,
            core,
            vk::API_VERSION_1_2,
            &[khr],
        );
        assert_eq!(
            asked.borrow_mut().drain(..).collect::<Vec<_>>(),
            [core.to_owned()]
        );
        // Where only the other name resolves, it is used.
        let mut only_core =
            |name: &CStr| -> vk::PFN_vkVoidFunction { (name == core).then_some(some as _) };
        assert!(resolve(
            &mut only_core,
            vk::API_VERSION_1_0,
            core,
            vk::API_VERSION_1_2,
            &[khr]
        )
        .is_some());
    }
}
