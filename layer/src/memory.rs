//! Buffers the layer owns: host-visible, host-coherent, mapped once at creation and kept mapped, so that
//! the CPU can read what the GPU wrote at any moment (after a device loss too, as best effort).

use ash::vk;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::dispatch::DeviceDispatch;

/// A buffer of the layer's own, with its memory, mapped.
pub struct HostBuffer {
    /// The buffer.
    pub buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// The mapping, `size` bytes, valid until [`HostBuffer::destroy`].
    ptr: *mut u32,
    /// Size in bytes.
    pub size: u64,
    /// Words that may be read and written: `size / 4`, and 0 once destroyed, so that a recording that
    /// outlives its device's buffers reads zeros instead of freed memory.
    mapped_words: AtomicUsize,
    /// Set by the first [`HostBuffer::destroy`]: a second one frees nothing.
    destroyed: AtomicBool,
    /// The buffer's device address, when it was created for one.
    pub address: Option<u64>,
    /// The host range the memory was imported from, for [`HostBuffer::new_at_fixed_address`].
    fixed: Option<FixedRange>,
}

// SAFETY: the mapping is plain host memory shared with the GPU; all access goes through volatile reads and
// writes of u32 words, which are fine from any thread.
unsafe impl Send for HostBuffer {}
// SAFETY: shared references only read and write words volatilely (no references into the mapping are
// handed out), and `destroy` needs the device idle and no other user (its contract).
unsafe impl Sync for HostBuffer {}

/// Why a buffer could not be made.
#[derive(Debug)]
pub struct BufferError(pub &'static str, pub vk::Result);

impl std::fmt::Display for BufferError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {:?}", self.0, self.1)
    }
}

fn check(what: &'static str, result: vk::Result) -> Result<(), BufferError> {
    if result == vk::Result::SUCCESS {
        Ok(())
    } else {
        Err(BufferError(what, result))
    }
}

impl HostBuffer {
    /// Creates a zeroed buffer of `size` bytes in `memory_type`, with a device address if `device_address`.
    ///
    /// # Safety
    /// `device` must be live and `next` its dispatch table; `memory_type` must be host-visible and coherent.
    pub unsafe fn new(
        device: vk::Device,
        next: &DeviceDispatch,
        size: u64,
        usage: vk::BufferUsageFlags,
        memory_type: u32,
        device_address: bool,
    ) -> Result<Self, BufferError> {
        // SAFETY: forwarded to the caller.
        unsafe { Self::new_in(device, next, size, usage, memory_type, device_address, None) }
    }

    /// As [`HostBuffer::new`], with a device address, in host memory imported from the same virtual address
    /// in every run (`VK_EXT_external_memory_host`, which must be enabled): for a CPU device, whose device
    /// addresses are host pointers. Modules with that address baked in are then the same from run to run,
    /// and the driver's shader cache finds them. Fails (the caller falls back to [`HostBuffer::new`]) when the
    /// range is taken or the driver refuses the import.
    ///
    /// # Safety
    /// As [`HostBuffer::new`].
    pub unsafe fn new_at_fixed_address(
        device: vk::Device,
        next: &DeviceDispatch,
        size: u64,
        usage: vk::BufferUsageFlags,
        memory_type: u32,
    ) -> Result<Self, BufferError> {
        // `new_in` looks these up before it owns the range, and would return without unmapping it; what it
        // lacks later, it frees the range for.
        let complete = next.create_buffer.is_some()
            && next.get_buffer_memory_requirements.is_some()
            && next.allocate_memory.is_some()
            && next.bind_buffer_memory.is_some()
            && next.map_memory.is_some();
        if !complete {
            return Err(BufferError(
                "importing host memory",
                vk::Result::ERROR_EXTENSION_NOT_PRESENT,
            ));
        }
        let range = FixedRange::map(size)?;
        // SAFETY: forwarded to the caller; the range is ours until the buffer is destroyed (or this fails,
        // and `new_in` unmaps it).
        unsafe { Self::new_in(device, next, size, usage, memory_type, true, Some(range)) }
    }

    /// # Safety
    /// As [`HostBuffer::new`].
    unsafe fn new_in(
        device: vk::Device,
        next: &DeviceDispatch,
        size: u64,
        usage: vk::BufferUsageFlags,
        memory_type: u32,
        device_address: bool,
        fixed: Option<FixedRange>,
    ) -> Result<Self, BufferError> {
        let missing = |what| BufferError(what, vk::Result::ERROR_EXTENSION_NOT_PRESENT);
        let create_buffer = next.create_buffer.ok_or(missing("vkCreateBuffer"))?;
        let requirements = next
            .get_buffer_memory_requirements
            .ok_or(missing("vkGetBufferMemoryRequirements"))?;
        let allocate = next.allocate_memory.ok_or(missing("vkAllocateMemory"))?;
        let bind = next
            .bind_buffer_memory
            .ok_or(missing("vkBindBufferMemory"))?;
        let map = next.map_memory.ok_or(missing("vkMapMemory"))?;
        let usage = if device_address {
            usage | vk::BufferUsageFlags::SHADER_DEVICE_ADDRESS
        } else {
            usage
        };
        let mut external = vk::ExternalMemoryBufferCreateInfo::default()
            .handle_types(vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT);
        let mut info = vk::BufferCreateInfo::default()
            .size(size)
            .usage(usage)
            .sharing_mode(vk::SharingMode::EXCLUSIVE);
        if fixed.is_some() {
            info = info.push_next(&mut external);
        }
        let mut this = HostBuffer {
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            ptr: std::ptr::null_mut(),
            size,
            mapped_words: AtomicUsize::new(0),
            destroyed: AtomicBool::new(false),
            address: None,
            fixed,
        };
        // SAFETY: valid create info; the handle is written on success.
        check("vkCreateBuffer", unsafe {
            create_buffer(device, &info, std::ptr::null(), &mut this.buffer)
        })?;
        let result = (|| {
            let mut reqs = vk::MemoryRequirements::default();
            // SAFETY: a live buffer.
            unsafe { requirements(device, this.buffer, &mut reqs) };
            if reqs.memory_type_bits & (1 << memory_type) == 0 {
                return Err(BufferError(
                    "choosing a memory type",
                    vk::Result::ERROR_FEATURE_NOT_PRESENT,
                ));
            }
            let mut flags = vk::MemoryAllocateFlagsInfo::default()
                .flags(vk::MemoryAllocateFlags::DEVICE_ADDRESS);
            let mut alloc = vk::MemoryAllocateInfo::default()
                .allocation_size(reqs.size)
                .memory_type_index(memory_type);
            if device_address {
                alloc = alloc.push_next(&mut flags);
            }
            let mut import = vk::ImportMemoryHostPointerInfoEXT::default()
                .handle_type(vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT);
            if let Some(range) = &this.fixed {
                let properties = next
                    .get_memory_host_pointer_properties_ext
                    .ok_or(missing("vkGetMemoryHostPointerPropertiesEXT"))?;
                let mut host = vk::MemoryHostPointerPropertiesEXT::default();
                // SAFETY: a live mapping of ours, aligned to 64 KiB.
                check("vkGetMemoryHostPointerPropertiesEXT", unsafe {
                    properties(
                        device,
                        vk::ExternalMemoryHandleTypeFlags::HOST_ALLOCATION_EXT,
                        range.ptr,
                        &mut host,
                    )
                })?;
                if host.memory_type_bits & (1 << memory_type) == 0 || reqs.size > range.len as u64 {
                    return Err(BufferError(
                        "importing host memory",
                        vk::Result::ERROR_FEATURE_NOT_PRESENT,
                    ));
                }
                import = import.host_pointer(range.ptr);
                alloc = alloc
                    .allocation_size(range.len as u64)
                    .push_next(&mut import);
            }
            // SAFETY: valid allocate info.
            check("vkAllocateMemory", unsafe {
                allocate(device, &alloc, std::ptr::null(), &mut this.memory)
            })?;
            // SAFETY: fresh buffer and memory of a compatible type and size.
            check("vkBindBufferMemory", unsafe {
                bind(device, this.buffer, this.memory, 0)
            })?;
            let mut ptr = std::ptr::null_mut();
            // SAFETY: host-visible memory, mapped whole, once.
            check("vkMapMemory", unsafe {
                map(
                    device,
                    this.memory,
                    0,
                    vk::WHOLE_SIZE,
                    vk::MemoryMapFlags::empty(),
                    &mut ptr,
                )
            })?;
            this.ptr = ptr as *mut u32;
            // SAFETY: the mapping is `size` bytes long.
            unsafe { std::ptr::write_bytes(this.ptr as *mut u8, 0, size as usize) };
            this.mapped_words
                .store((size / 4) as usize, Ordering::Release);
            if device_address {
                let get = next
                    .get_buffer_device_address
                    .ok_or(missing("vkGetBufferDeviceAddress"))?;
                let info = vk::BufferDeviceAddressInfo::default().buffer(this.buffer);
                // SAFETY: a bound buffer created with SHADER_DEVICE_ADDRESS usage.
                this.address = Some(unsafe { get(device, &info) });
            }
            Ok(())
        })();
        match result {
            Ok(()) => Ok(this),
            Err(e) => {
                // SAFETY: what was created above, not yet used by any command.
                unsafe { this.destroy(device, next) };
                Err(e)
            }
        }
    }

    /// A buffer of plain host memory, for unit tests of what reads and writes mapped words (never freed).
    #[cfg(test)]
    pub fn host_only(words: u32) -> Self {
        let memory: &'static mut [u32] = Box::leak(vec![0u32; words as usize].into_boxed_slice());
        HostBuffer {
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            ptr: memory.as_mut_ptr(),
            size: u64::from(words) * 4,
            mapped_words: AtomicUsize::new(words as usize),
            destroyed: AtomicBool::new(true),
            address: None,
            fixed: None,
        }
    }

    /// Number of u32 words (0 once destroyed).
    pub fn words(&self) -> usize {
        self.mapped_words.load(Ordering::Acquire)
    }

    /// Reads word `index` as the GPU last made it visible.
    pub fn read(&self, index: usize) -> u32 {
        if index >= self.words() {
            return 0;
        }
        // SAFETY: in bounds of the live mapping; volatile because the GPU writes it behind our back.
        unsafe { std::ptr::read_volatile(self.ptr.add(index)) }
    }

    /// Words `first..first + count` (fewer past the end), read in one copy: for large reads of memory the
    /// GPU finished writing (its fence waited for), where word-by-word volatile reads would be slow.
    pub fn read_words(&self, first: usize, count: usize) -> Vec<u32> {
        let end = first.saturating_add(count).min(self.words());
        if first >= end {
            return Vec::new();
        }
        let mut out = vec![0u32; end - first];
        // SAFETY: in bounds of the live mapping; the GPU no longer writes these words (the caller's fence).
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(first), out.as_mut_ptr(), out.len()) };
        out
    }

    /// Writes word `index`.
    pub fn write(&self, index: usize, value: u32) {
        if index < self.words() {
            // SAFETY: in bounds of the live mapping.
            unsafe { std::ptr::write_volatile(self.ptr.add(index), value) }
        }
    }

    /// Frees the buffer and its memory (which unmaps it). Reads and writes through it then do nothing.
    ///
    /// # Safety
    /// No pending GPU work may use the buffer, and no other thread may be reading or writing it now.
    pub unsafe fn destroy(&self, device: vk::Device, next: &DeviceDispatch) {
        self.mapped_words.store(0, Ordering::Release);
        if self.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        // SAFETY: handles created by `new` on this device (null ones are ignored by Vulkan).
        unsafe {
            if let Some(destroy) = next.destroy_buffer {
                destroy(device, self.buffer, std::ptr::null());
            }
            if let Some(free) = next.free_memory {
                free(device, self.memory, std::ptr::null());
            }
        }
        if let Some(range) = &self.fixed {
            // SAFETY: the memory imported from the range is freed above.
            unsafe { range.unmap() };
        }
    }
}

/// Where fixed host ranges start: above where Linux puts a position-independent program and its heap
/// (0x5555_5555_4000 plus up to 1 TiB of randomization), below its mappings (down from the top of the
/// 47-bit address space), inside the range ThreadSanitizer leaves to the program
/// (0x5500_0000_0000-0x5680_0000_0000) and in AddressSanitizer's high memory. Outside TSan's range its `mmap`
/// turned the request into one at address 0, which root was given, and TSan ended the process
/// (0x4242_0000_0000, before 2026-12-05).
const FIXED_BASE: usize = 0x5660_0000_0000;
/// Each range's slot of the address space: a device's error buffer is about 4.3 MiB (4 MiB of records, 256 KiB
/// of counters).
const FIXED_STRIDE: usize = 64 << 20;
// Every slot stays inside TSan's range for the program.
const _: () = assert!(FIXED_BASE + 64 * FIXED_STRIDE <= 0x5680_0000_0000);
/// Alignment of a range's start and length: over any driver's minimum for imported host pointers.
const FIXED_ALIGN: usize = 64 << 10;
/// Slots in use (bit i: slot i). The lowest free slot is taken, so the first device of a process (and the
/// next after it is destroyed) gets the same address every run.
static FIXED_SLOTS: Mutex<u64> = Mutex::new(0);

/// Anonymous host memory mapped at `FIXED_BASE + slot * FIXED_STRIDE`.
struct FixedRange {
    ptr: *mut std::ffi::c_void,
    len: usize,
    slot: u32,
}

impl FixedRange {
    /// Maps `size` bytes (rounded up to 64 KiB) at the lowest free slot; fails where that range is taken
    /// (`MAP_FIXED_NOREPLACE`: nothing of the app's is ever replaced) or every slot is in use.
    fn map(size: u64) -> Result<Self, BufferError> {
        let refused = |what| BufferError(what, vk::Result::ERROR_OUT_OF_HOST_MEMORY);
        let len = (size as usize).div_ceil(FIXED_ALIGN) * FIXED_ALIGN;
        if len > FIXED_STRIDE {
            return Err(refused("a fixed host range (too large)"));
        }
        let mut slots = FIXED_SLOTS.lock().unwrap_or_else(|e| e.into_inner());
        let slot = (!*slots).trailing_zeros();
        if slot >= 64 {
            return Err(refused("a fixed host range (all in use)"));
        }
        let at = FIXED_BASE + slot as usize * FIXED_STRIDE;
        // SAFETY: an anonymous private mapping at an address nothing else may hold (NOREPLACE).
        let ptr = unsafe {
            libc::mmap(
                at as *mut std::ffi::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(refused("mapping a fixed host range (taken)"));
        }
        if ptr as usize != at {
            // A kernel before 4.17 takes MAP_FIXED_NOREPLACE for a hint and maps elsewhere.
            // SAFETY: the mapping just made.
            unsafe { libc::munmap(ptr, len) };
            return Err(refused("mapping a fixed host range (moved)"));
        }
        *slots |= 1 << slot;
        Ok(Self { ptr, len, slot })
    }

    /// # Safety
    /// Nothing may use the range any more (its imported memory freed).
    unsafe fn unmap(&self) {
        // SAFETY: our mapping (the caller's contract).
        unsafe { libc::munmap(self.ptr, self.len) };
        *FIXED_SLOTS.lock().unwrap_or_else(|e| e.into_inner()) &= !(1 << self.slot);
    }
}
