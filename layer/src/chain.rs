//! `pNext` chains: finding a struct of a given type in one.

use ash::vk;
use std::ffi::c_void;

/// The first struct of type `T` in a `pNext` chain.
///
/// # Safety
/// `p_next` must be a valid chain (or null).
pub unsafe fn find<T: vk::TaggedStructure>(mut p_next: *const c_void) -> Option<*mut T> {
    while !p_next.is_null() {
        // SAFETY: every struct of a chain starts like VkBaseInStructure.
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == T::STRUCTURE_TYPE {
            return Some(p_next as *mut T);
        }
        p_next = base.p_next as *const c_void;
    }
    None
}
