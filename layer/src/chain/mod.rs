//! `pNext` chains: finding a struct of a given type in one, and copying one so that the layer can change
//! what it passes down without ever writing into the app's structs (which may be `const`, in read-only
//! memory, or shared with other threads).

mod structs;

use ash::vk;
use once_cell::sync::Lazy;
use std::collections::HashMap;
use std::ffi::c_void;

/// The first struct of type `T` in a `pNext` chain.
///
/// # Safety
/// `p_next` must be a valid chain (or null).
pub unsafe fn find<T: vk::TaggedStructure>(mut p_next: *const c_void) -> Option<*const T> {
    while !p_next.is_null() {
        // SAFETY: every struct of a chain starts like VkBaseInStructure.
        let base = unsafe { &*(p_next as *const vk::BaseInStructure) };
        if base.s_type == T::STRUCTURE_TYPE {
            return Some(p_next as *const T);
        }
        p_next = base.p_next as *const c_void;
    }
    None
}

/// Sizes of the structs a chain may hold, by `sType`.
/// The loader's own structs (`VkLayerInstanceCreateInfo`, `VkLayerDeviceCreateInfo`) are in a create
/// info's chain too, and must reach the next layers.
static SIZES: Lazy<HashMap<vk::StructureType, usize>> = Lazy::new(|| {
    let loader = [
        (
            loader_abi::LOADER_INSTANCE_CREATE_INFO,
            size_of::<loader_abi::LayerInstanceCreateInfo>(),
        ),
        (
            loader_abi::LOADER_DEVICE_CREATE_INFO,
            size_of::<loader_abi::LayerDeviceCreateInfo>(),
        ),
    ];
    structs::SIZES.iter().copied().chain(loader).collect()
});

/// Where a struct of a chain copy is.
pub enum Found<'a, T> {
    /// In the layer's copy: it may be changed.
    Copied(&'a mut T),
    /// In the part of the app's chain the copy shares (after a struct the layer does not know): read-only.
    Shared(&'a T),
    /// Not in the chain.
    Absent,
}

/// A copy of an app's `pNext` chain that the layer owns and may change.
///
/// Every struct up to the first one of a type the layer does not know (`chain::structs`) is copied; from
/// that one on, the copy links to the app's own structs, which it only reads. Structs the layer adds go in
/// front. The copy must outlive the call it is passed to.
pub struct ChainCopy {
    /// The copied and added structs, each in a buffer of its own (8-byte aligned, as every Vulkan struct).
    nodes: Vec<Box<[u64]>>,
    /// The first of the app's structs that is shared rather than copied.
    shared: *const c_void,
    /// The chain's head: the first node, or `shared`.
    head: *const c_void,
}

impl ChainCopy {
    /// Copies `p_next`.
    ///
    /// # Safety
    /// `p_next` must be a valid chain (or null) that outlives the copy.
    pub unsafe fn new(p_next: *const c_void) -> Self {
        let mut nodes: Vec<Box<[u64]>> = Vec::new();
        let mut next = p_next;
        while !next.is_null() {
            // SAFETY: every struct of a chain starts like VkBaseInStructure.
            let base = unsafe { &*(next as *const vk::BaseInStructure) };
            let Some(&size) = SIZES.get(&base.s_type) else {
                break;
            };
            let mut node = vec![0u64; size.div_ceil(8)].into_boxed_slice();
            // SAFETY: the app's struct is `size` bytes (its type's size, from its sType); the buffer is at
            // least as large.
            unsafe {
                std::ptr::copy_nonoverlapping(next as *const u8, node.as_mut_ptr() as *mut u8, size)
            };
            nodes.push(node);
            next = base.p_next as *const c_void;
        }
        let mut copy = ChainCopy {
            nodes,
            shared: next,
            head: next,
        };
        copy.relink();
        copy
    }

    /// Links the nodes in order, the last to the shared part.
    fn relink(&mut self) {
        let mut next = self.shared;
        for node in self.nodes.iter_mut().rev() {
            let base = node.as_mut_ptr() as *mut vk::BaseOutStructure;
            // SAFETY: the node holds a struct that starts like VkBaseOutStructure.
            unsafe { (*base).p_next = next as *mut vk::BaseOutStructure };
            next = node.as_ptr() as *const c_void;
        }
        self.head = next;
    }

    /// The chain to pass down.
    pub fn head(&self) -> *const c_void {
        self.head
    }

    /// The chain's struct of type `T`.
    pub fn find<T: vk::TaggedStructure>(&mut self) -> Found<'_, T> {
        let copied = self.nodes.iter_mut().find(|n| {
            // SAFETY: each node holds a struct that starts like VkBaseInStructure.
            unsafe { (*(n.as_ptr() as *const vk::BaseInStructure)).s_type == T::STRUCTURE_TYPE }
        });
        if let Some(node) = copied {
            // SAFETY: the node holds a `T` (its sType says so), copied whole, aligned.
            return Found::Copied(unsafe { &mut *(node.as_mut_ptr() as *mut T) });
        }
        // SAFETY: the shared part is the app's valid chain, which outlives the copy.
        match unsafe { find::<T>(self.shared) } {
            // SAFETY: a struct of the app's chain, of type `T` by its sType, valid as long as the chain.
            Some(p) => Found::Shared(unsafe { &*p }),
            None => Found::Absent,
        }
    }

    /// Puts `s` at the front of the chain (its `pNext` is overwritten).
    pub fn prepend<T: vk::TaggedStructure>(&mut self, s: T) {
        let size = size_of::<T>();
        let mut node = vec![0u64; size.div_ceil(8)].into_boxed_slice();
        // SAFETY: `T` is a plain Vulkan struct of `size` bytes; the buffer is at least as large and aligned.
        unsafe { std::ptr::write(node.as_mut_ptr() as *mut T, s) };
        self.nodes.insert(0, node);
        self.relink();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_changes_nothing_of_the_app_and_keeps_every_struct() {
        let v12 = vk::PhysicalDeviceVulkan12Features::default();
        let f2 = vk::PhysicalDeviceFeatures2 {
            p_next: &v12 as *const _ as *mut c_void,
            ..Default::default()
        };
        let app: *const c_void = &f2 as *const _ as *const c_void;
        // SAFETY: a valid chain of two structs that outlives the copy.
        let mut copy = unsafe { ChainCopy::new(app) };
        match copy.find::<vk::PhysicalDeviceVulkan12Features>() {
            Found::Copied(v) => v.buffer_device_address = vk::TRUE,
            _ => panic!("not copied"),
        }
        copy.prepend(vk::PhysicalDeviceFaultFeaturesEXT::default().device_fault(true));
        assert_eq!(
            v12.buffer_device_address,
            vk::FALSE,
            "the app's struct is untouched"
        );
        assert!(f2.p_next == &v12 as *const _ as *mut c_void);
        // The copy: fault features, features2, vulkan12 with the feature on.
        let mut types = Vec::new();
        let mut p = copy.head();
        while !p.is_null() {
            // SAFETY: the copy's valid chain.
            let base = unsafe { &*(p as *const vk::BaseInStructure) };
            types.push(base.s_type);
            p = base.p_next as *const c_void;
        }
        assert_eq!(
            types,
            [
                vk::StructureType::PHYSICAL_DEVICE_FAULT_FEATURES_EXT,
                vk::StructureType::PHYSICAL_DEVICE_FEATURES_2,
                vk::StructureType::PHYSICAL_DEVICE_VULKAN_1_2_FEATURES
            ]
        );
        // SAFETY: the copy's chain, alive while `copy` is.
        let found = unsafe { find::<vk::PhysicalDeviceVulkan12Features>(copy.head()) }.unwrap();
        // SAFETY: a struct of the copy.
        assert_eq!(unsafe { (*found).buffer_device_address }, vk::TRUE);
    }

    #[test]
    fn a_struct_the_layer_does_not_know_ends_the_copied_part() {
        #[repr(C)]
        struct Unknown {
            s_type: vk::StructureType,
            p_next: *const c_void,
        }
        let v12 = vk::PhysicalDeviceVulkan12Features::default();
        let unknown = Unknown {
            s_type: vk::StructureType::from_raw(0x7fff_0001),
            p_next: &v12 as *const _ as *const c_void,
        };
        // SAFETY: a valid chain.
        let mut copy = unsafe { ChainCopy::new(&unknown as *const _ as *const c_void) };
        assert!(copy.head() == &unknown as *const _ as *const c_void);
        assert!(matches!(
            copy.find::<vk::PhysicalDeviceVulkan12Features>(),
            Found::Shared(_)
        ));
        assert!(matches!(
            copy.find::<vk::PhysicalDeviceFeatures2>(),
            Found::Absent
        ));
    }
}
