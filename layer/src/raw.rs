//! Reading what the app passes by pointer: arrays given as pointer and count, and C strings. Each function
//! states what the pointer must be; the hooks call them with the app's arguments, which the command's
//! valid-usage rules make so.

use blackbox_report::untrusted;
use std::ffi::{c_char, CStr};

/// The `count` items at `ptr`; empty for a null pointer or a zero count (which Vulkan allows together).
///
/// # Safety
/// A non-null `ptr` must point to `count` initialized items that outlive `'a`.
pub unsafe fn slice<'a, T>(ptr: *const T, count: u32) -> &'a [T] {
    if ptr.is_null() || count == 0 {
        &[]
    } else {
        // SAFETY: non-null, and `count` items there (the caller's contract).
        unsafe { std::slice::from_raw_parts(ptr, count as usize) }
    }
}

/// The pointer to pass down for an array the layer made: null when it is empty, as an app passes an empty
/// array (an empty `Vec`'s pointer is dangling, not null, and best practices warns about some arrays that
/// are set with a count of 0).
pub fn array_ptr<T>(items: &[T]) -> *const T {
    if items.is_empty() {
        std::ptr::null()
    } else {
        items.as_ptr()
    }
}

/// An array of `count` NUL-terminated strings (extension names, say).
///
/// # Safety
/// A non-null `names` must point to `count` pointers, each to a NUL-terminated string, all outliving `'a`.
pub unsafe fn names<'a>(names: *const *const c_char, count: u32) -> Vec<&'a CStr> {
    // SAFETY: the array, as the caller promises.
    unsafe { slice(names, count) }
        .iter()
        // SAFETY: each a NUL-terminated string, as the caller promises.
        .map(|&name| unsafe { CStr::from_ptr(name) })
        .collect()
}

/// An app's NUL-terminated string as the layer keeps it ([`untrusted::keep_bytes`]: invalid UTF-8 replaced,
/// cut after [`untrusted::KEEP_BYTES`] with the cut said); empty for a null pointer. Labels, object names
/// and the app's name come through here.
///
/// # Safety
/// A non-null `s` must point to a NUL-terminated string.
pub unsafe fn text(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated (the caller's contract).
    untrusted::keep_bytes(unsafe { CStr::from_ptr(s) }.to_bytes())
}

/// A fixed-size NUL-terminated char array from a Vulkan struct (`deviceName`, say), as text.
pub fn c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}
