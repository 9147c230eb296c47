//! The trampolines, generated from the one list in [`crate::commands`]: each catches panics, finds the state
//! of the object it is called on, and calls that state's method of the same purpose (or, for recorded
//! commands that only need a log entry, logs it with [`CommandBuffer::work`], `state` or `sync` and then
//! calls down itself). A trampoline that cannot find the state calls straight down the chain where it can,
//! and otherwise returns its type's [`Fallback`].

use ash::vk;
use std::ffi::CStr;

use super::{trampoline, Hook, Param, Scope};
use crate::command_buffer::{self, BindPoint};
use crate::command_log::CommandId;
use crate::fallback::Fallback;
use crate::registry;

/// Builds a `&'static CStr` from a string literal.
macro_rules! cstr {
    ($s:literal) => {
        match CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("command name"),
        }
    };
}

macro_rules! trampolines {
    (instance; $($entries:tt)*) => { trampolines!(@all INSTANCE_HOOKS; $($entries)*); };
    (device; $($entries:tt)*) => { trampolines!(@all DEVICE_HOOKS; $($entries)*); };
    (@all $list:ident; $(
        [$scope:ident $class:ident $field:ident: $pfn:ident = $name:literal $(since $since:ident)? $(| $alias:literal)*]
        { $($handler:tt)* }
    )*) => {
        $(trampolines!(@hook $scope $class $field $name { $($handler)* });)*

        /// Every intercepted command of this level, with its aliases.
        pub(super) const $list: &[&[Hook]] = &[
            $(trampolines!(@entries $scope $field $pfn $name $($alias)* { $($handler)* }),)*
        ];
    };

    // The hook list's entries: none for a command Blackbox only calls.
    (@entries used $field:ident $pfn:ident $name:literal $($alias:literal)* { $($handler:tt)* }) => { &[] };
    (@entries $scope:ident $field:ident $pfn:ident $name:literal $($alias:literal)* { $($handler:tt)* }) => {
        &[
            trampolines!(@entry $scope $field $pfn $name),
            $(trampolines!(@entry $scope $field $pfn $alias),)*
        ]
    };
    (@entry $scope:ident $field:ident $pfn:ident $name:literal) => {
        Hook {
            name: cstr!($name),
            scope: trampolines!(@scope $scope),
            recording: trampolines!(@recording $scope),
            // The cast checks the trampoline's signature against the command's type.
            // SAFETY: a function pointer of the command's own type, handed out under the command's names.
            function: unsafe { std::mem::transmute::<vk::$pfn, unsafe extern "system" fn()>($field as vk::$pfn) },
        }
    };
    (@scope global) => { Scope::Global };
    (@scope instance) => { Scope::Instance };
    (@scope $other:ident) => { Scope::Device };
    (@recording pool) => { true };
    (@recording cmd) => { true };
    (@recording $other:ident) => { false };

    // Trampolines. `by_hand` ones are the loader protocol's, in `mod.rs` and `lifetime.rs`; `used` commands
    // have none.
    (@hook $scope:ident $class:ident $field:ident $name:literal { by_hand }) => {
        use super::by_hand::$field;
    };
    (@hook used $class:ident $field:ident $name:literal {}) => {};
    (@hook instance $class:ident $field:ident $name:literal {
        fn($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)? => $method:ident
    }) => {
        unsafe extern "system" fn $field($first: $first_ty $(, $arg: $ty)*) $(-> $ret)? {
            trampoline($name, || {
                // SAFETY: the app's dispatchable handle, whose first word is the loader's dispatch key.
                let state = unsafe { registry::instance_of($first) }?;
                // SAFETY: the app's arguments, valid as the command's rules require, handed on as they came.
                Some(unsafe { state.$method($first $(, $arg)*) })
            })
        }
    };
    (@hook cmd $class:ident $field:ident $name:literal {
        fn($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)? => record($bind:ident) [$($param:expr),*]
    }) => {
        unsafe extern "system" fn $field($first: $first_ty $(, $arg: $ty)*) $(-> $ret)? {
            // The log (and marker), the call down, then the "started" mark that goes after the command
            // (`AfterCall`).
            trampoline($name, move || {
                let logged = command_buffer::with($first, move |cb| {
                    let next = cb.device.next.$field?;
                    #[allow(unused_unsafe)]
                    // SAFETY: key parameters read from the app's valid arguments.
                    let params = unsafe { [$(Param::param($param)),*] };
                    // SAFETY: the app's arguments, handed on as they came.
                    let call = move || unsafe { next($first $(, $arg)*) };
                    // `None`: `VK_BLACKBOX_SKIP` kept the command from the driver.
                    Some(trampolines!(@record $class cb, $field, $bind, params, call)
                        .unwrap_or_else(Fallback::fallback))
                });
                match logged {
                    Some(result) => result,
                    None => {
                        // A command buffer the layer lost track of: still the app's call goes down.
                        // SAFETY: the app's dispatchable handle.
                        let next = unsafe { registry::device_of($first) }?.next.$field?;
                        // SAFETY: the app's arguments, handed on as they came.
                        Some(unsafe { next($first $(, $arg)*) })
                    }
                }
            })
        }
    };
    (@hook cmd $class:ident $field:ident $name:literal {
        fn($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)? => $method:ident
    }) => {
        unsafe extern "system" fn $field($first: $first_ty $(, $arg: $ty)*) $(-> $ret)? {
            trampoline($name, || match command_buffer::with($first, |cb| {
                let next = cb.device.next.$field?;
                // SAFETY: the app's arguments, handed on as they came, with the next layer's command.
                Some(unsafe { cb.$method(next $(, $arg)*) })
            }) {
                Some(result) => result,
                None => {
                    // A command buffer the layer lost track of: still the app's call goes down.
                    // SAFETY: the app's dispatchable handle.
                    let next = unsafe { registry::device_of($first) }?.next.$field?;
                    // SAFETY: the app's arguments, handed on as they came.
                    Some(unsafe { next($first $(, $arg)*) })
                }
            })
        }
    };
    // device, pool and queue: the device's state, found from the device or queue handle.
    (@hook $scope:ident $class:ident $field:ident $name:literal {
        fn($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*) $(-> $ret:ty)? => $method:ident
    }) => {
        unsafe extern "system" fn $field($first: $first_ty $(, $arg: $ty)*) $(-> $ret)? {
            trampoline($name, || {
                // SAFETY: the app's dispatchable handle, whose first word is the loader's dispatch key.
                let state = unsafe { registry::device_of($first) }?;
                // SAFETY: the app's arguments, valid as the command's rules require, handed on as they came.
                Some(unsafe { state.$method($first $(, $arg)*) })
            })
        }
    };

    (@record action $cb:ident, $field:ident, $bind:ident, $params:ident, $call:ident) => {
        $cb.work(CommandId::$field, BindPoint::$bind, $params, $call)
    };
    (@record state $cb:ident, $field:ident, $bind:ident, $params:ident, $call:ident) => {{
        $cb.state(CommandId::$field, &$params);
        Some($call())
    }};
    (@record sync $cb:ident, $field:ident, $bind:ident, $params:ident, $call:ident) => {{
        $cb.sync(CommandId::$field, &$params);
        Some($call())
    }};
}

vulkan_commands!(trampolines);
