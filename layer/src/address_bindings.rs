//! Where device memory was bound, from `VK_EXT_device_address_binding_report`, to name the resource at or
//! near a faulting address in a device-fault report.
//!
//! The driver reports bindings through a debug-utils messenger. The layer creates one of its own on an
//! instance whose app enabled `VK_EXT_debug_utils` (then the app has a messenger too, so the validation
//! layers' default console output is not affected), the first time a device with the extension is created.
//! Bindings and unbindings are kept in a bounded list: a fault often hits memory that was just freed.

use ash::vk;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::ffi::c_void;

use crate::instance::Instance;

/// How many binding events are kept.
const KEPT: usize = 64 * 1024;

/// One binding or unbinding.
#[derive(Clone, Debug)]
struct Binding {
    object: String,
    base: u64,
    size: u64,
    bound: bool,
}

static BINDINGS: Mutex<VecDeque<Binding>> = Mutex::new(VecDeque::new());

/// Creates the instance's binding messenger, once.
pub fn ensure_messenger(instance: &Instance) {
    let mut messenger = instance.binding_messenger.lock();
    if messenger.is_some() || !instance.debug_utils {
        return;
    }
    // SAFETY: the next layer resolves instance commands of a live instance.
    let create = unsafe {
        (instance.next_get_instance_proc_addr)(
            instance.handle,
            c"vkCreateDebugUtilsMessengerEXT".as_ptr(),
        )
    };
    let Some(create) = create else { return };
    // SAFETY: the command of that name has this type.
    let create: vk::PFN_vkCreateDebugUtilsMessengerEXT = unsafe { std::mem::transmute(create) };
    let info = vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::VERBOSE
                | vk::DebugUtilsMessageSeverityFlagsEXT::INFO
                | vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        )
        .message_type(vk::DebugUtilsMessageTypeFlagsEXT::DEVICE_ADDRESS_BINDING)
        .pfn_user_callback(Some(on_message));
    let mut handle = vk::DebugUtilsMessengerEXT::null();
    // SAFETY: a valid create info on a live instance with VK_EXT_debug_utils.
    if unsafe { create(instance.handle, &info, std::ptr::null(), &mut handle) }
        == vk::Result::SUCCESS
    {
        *messenger = Some(handle);
    }
}

/// Destroys the instance's binding messenger, if any.
pub fn destroy_messenger(instance: &Instance) {
    let Some(handle) = instance.binding_messenger.lock().take() else {
        return;
    };
    // SAFETY: as in `ensure_messenger`.
    let destroy = unsafe {
        (instance.next_get_instance_proc_addr)(
            instance.handle,
            c"vkDestroyDebugUtilsMessengerEXT".as_ptr(),
        )
    };
    if let Some(destroy) = destroy {
        // SAFETY: the command of that name has this type; our own messenger.
        let destroy: vk::PFN_vkDestroyDebugUtilsMessengerEXT =
            unsafe { std::mem::transmute(destroy) };
        // SAFETY: our own live messenger.
        unsafe { destroy(instance.handle, handle, std::ptr::null()) };
    }
}

unsafe extern "system" fn on_message(
    _severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    _types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user: *mut c_void,
) -> vk::Bool32 {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the driver's valid callback data, with a valid chain and object list.
        let Some(data) = (unsafe { data.as_ref() }) else {
            return;
        };
        // SAFETY: the driver's valid chain.
        let Some(b) =
            (unsafe { crate::chain::find::<vk::DeviceAddressBindingCallbackDataEXT>(data.p_next) })
        else {
            return;
        };
        // SAFETY: the struct found, valid for the callback.
        let b = unsafe { &*b };
        let object = if data.object_count > 0 && !data.p_objects.is_null() {
            // SAFETY: `object_count` objects.
            let o = unsafe { &*data.p_objects };
            let name = if o.p_object_name.is_null() {
                String::new()
            } else {
                // SAFETY: a NUL-terminated name.
                format!(" \"{}\"", unsafe { crate::raw::text(o.p_object_name) })
            };
            format!("{:?} {:#x}{name}", o.object_type, o.object_handle)
        } else {
            "an object".to_owned()
        };
        let mut list = BINDINGS.lock();
        if list.len() >= KEPT {
            list.pop_front();
        }
        list.push_back(Binding {
            object,
            base: b.base_address,
            size: b.size,
            bound: b.binding_type == vk::DeviceAddressBindingTypeEXT::BIND,
        });
    });
    vk::FALSE
}

/// The resource bound at `address` (or, failing that, the nearest one below it within 64 KiB), from the
/// newest binding events first, saying whether it is still bound.
pub fn near(_device: &crate::device::Device, address: u64) -> Option<String> {
    let list = BINDINGS.try_lock_for(std::time::Duration::from_millis(200))?;
    find(&list, address)
}

fn find(list: &VecDeque<Binding>, address: u64) -> Option<String> {
    let state = |b: &Binding| if b.bound { "bound" } else { "freed" };
    if let Some(b) = list
        .iter()
        .rev()
        .find(|b| address >= b.base && address < b.base.saturating_add(b.size))
    {
        return Some(format!(
            "inside {} [{:#x}, +{:#x}) ({})",
            b.object,
            b.base,
            b.size,
            state(b)
        ));
    }
    let below = list
        .iter()
        .rev()
        .filter(|b| b.base <= address && address - b.base.saturating_add(b.size) < 64 * 1024)
        .max_by_key(|b| b.base.saturating_add(b.size));
    below.map(|b| {
        let end = b.base.saturating_add(b.size);
        format!(
            "{:#x} bytes past the end of {} [{:#x}, +{:#x}) ({})",
            address - end,
            b.object,
            b.base,
            b.size,
            state(b)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_resource_at_or_just_below_an_address() {
        let list: VecDeque<Binding> = [
            Binding {
                object: "Buffer 0x1 \"particles\"".into(),
                base: 0x1000,
                size: 0x100,
                bound: false,
            },
            Binding {
                object: "Buffer 0x2".into(),
                base: 0x8000,
                size: 0x100,
                bound: true,
            },
        ]
        .into();
        assert_eq!(
            find(&list, 0x1010).as_deref(),
            Some("inside Buffer 0x1 \"particles\" [0x1000, +0x100) (freed)")
        );
        assert_eq!(
            find(&list, 0x8110).as_deref(),
            Some("0x10 bytes past the end of Buffer 0x2 [0x8000, +0x100) (bound)")
        );
        assert_eq!(find(&list, 0x40_0000), None);
    }
}
