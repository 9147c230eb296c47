//! A swapchain as frame capture keeps it: each presented image copied into a ring of [`SLOTS`] buffers, and
//! with `VK_BLACKBOX_FLASH=on` the flash pass run on the copy, in command buffers of the layer's own
//! submitted at `vkQueuePresentKHR`.
//!
//! The copy is submitted on the present queue before the present goes down: it waits for the app's present
//! semaphores, copies the image (a layout transition from `PRESENT_SRC_KHR` to `TRANSFER_SRC_OPTIMAL` and
//! back), runs the flash pass, and signals a semaphore of the layer's own (one per swapchain image) that
//! the present waits for instead. Each slot has a fence: a slot is reused only once its fence signalled,
//! and its results (timestamps, the flash grid) are read then, a frame or more later, without waiting.
//!
//! Why a copy of every frame: shader errors are drained after the GPU work completes, often after the
//! image was presented and re-acquired, so the image of a bad frame must already be kept when the error is
//! known. The ring lives in device-local, host-visible memory where the device has it (an image copy at
//! memory speed, read by the host only for a report), otherwise in host memory.

use ash::vk;
use ash::vk::Handle;

use super::flash::{FlashPipeline, Grid, Push, CELLS, GRID, GRID_WORDS};
use super::image::Texels;
use crate::device::Device;
use crate::memory::HostBuffer;

/// Presented images kept per swapchain: enough for the flash test (the frames before, during and after a
/// flash, while the next one is copied) and for a shader error drained a frame or two late.
pub const SLOTS: usize = 4;
/// Timestamps per slot: before the copy, after it, after the flash pass.
const QUERIES_PER_SLOT: u32 = 3;
/// The grid buffer's size: its frames need 18 KiB; best practices warn about a buffer alone in an allocation
/// under 1 MiB.
const GRID_BUFFER_BYTES: u64 = 1024 * 1024;
/// How long a present waits for the copy it is about to reuse (normally finished frames ago).
const REUSE_WAIT_NS: u64 = 2_000_000_000;

/// What frame capture knows of one swapchain.
pub struct Swapchain {
    /// The app's handle.
    pub handle: vk::SwapchainKHR,
    /// Its image format.
    pub format: vk::Format,
    /// Its image size.
    pub extent: vk::Extent2D,
    /// How its texels lie, where frame capture can read them.
    pub texels: Option<Texels>,
    /// Its images, by index.
    images: Vec<vk::Image>,
    /// Why images are not copied, if they are not.
    pub not_copied: Option<String>,
    /// The copies, made at the first present.
    copies: Option<Copies>,
    /// GPU time of the copies and flash passes, for the line logged when the swapchain goes.
    pub timings: Timings,
}

/// GPU time per present, from the slots' timestamps: the last [`TIMINGS_KEPT`] of each, so that an app
/// presenting for hours keeps a fixed 64 KiB.
#[derive(Default)]
pub struct Timings {
    /// Nanoseconds of each copy (the layout transitions included).
    pub copy_ns: Vec<u64>,
    /// Nanoseconds of each flash pass.
    pub flash_ns: Vec<u64>,
    /// Copies and flash passes timed so far, kept or not.
    pub copies_seen: usize,
    pub flashes_seen: usize,
}

/// Presents whose times are kept (a median of these many is as good as one of more).
const TIMINGS_KEPT: usize = 4096;

impl Timings {
    /// Keeps `ns` in `times`, over the oldest once [`TIMINGS_KEPT`] are kept; `seen` counts them all.
    fn keep(times: &mut Vec<u64>, seen: usize, ns: u64) {
        if times.len() < TIMINGS_KEPT {
            times.push(ns);
        } else {
            times[seen % TIMINGS_KEPT] = ns;
        }
    }
}

/// A slot of the ring.
struct Slot {
    pool: vk::CommandPool,
    command_buffer: vk::CommandBuffer,
    fence: vk::Fence,
    set: vk::DescriptorSet,
    /// The frame whose image it holds (or is copying).
    frame: Option<u64>,
    /// Its copy was submitted and its fence not yet seen signalled.
    pending: bool,
    /// The flash pass ran in it.
    flashed: bool,
    /// That pass compared with the frame just before.
    compared: bool,
}

/// The GPU side of a swapchain's capture.
struct Copies {
    /// The queue family the slots' command pools belong to.
    family: u32,
    /// `SLOTS` images, `slot_bytes` apart.
    ring: HostBuffer,
    slot_bytes: u64,
    /// The flash grids, a slot's at `slot * GRID_WORDS` words.
    grids: Option<HostBuffer>,
    slots: Vec<Slot>,
    /// One per swapchain image: what the present waits for instead of the app's semaphores. Reused when
    /// its image is presented again (the image was acquired again, so the present that waited is done).
    semaphores: Vec<vk::Semaphore>,
    descriptor_pool: vk::DescriptorPool,
    timestamps: Option<Timestamps>,
    /// The slot the last copy went to.
    last_slot: Option<usize>,
}

struct Timestamps {
    pool: vk::QueryPool,
    /// Nanoseconds per tick.
    period: f32,
    /// Valid bits.
    mask: u64,
}

/// A presented image, copied out of the ring for a report.
pub struct Copied {
    /// Its texels, row by row, tightly packed.
    pub words: Vec<u32>,
    /// Width and height.
    pub extent: vk::Extent2D,
    /// Their layout.
    pub texels: Texels,
}

fn check(what: &str, result: vk::Result) -> Result<(), String> {
    if result == vk::Result::SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {result:?}"))
    }
}

fn need<T>(f: Option<T>, what: &str) -> Result<T, String> {
    f.ok_or_else(|| format!("{what} is missing"))
}

impl Swapchain {
    /// A swapchain the app just created with `info`: its images are asked for now.
    pub fn new(
        device: &Device,
        handle: vk::SwapchainKHR,
        info: &vk::SwapchainCreateInfoKHR,
        copyable: Result<(), String>,
    ) -> Self {
        let texels = Texels::of(info.image_format);
        let mut images = Vec::new();
        let mut not_copied = copyable.err();
        if not_copied.is_none() && texels.is_none() {
            not_copied = Some(format!(
                "its format {:?} is not one frame capture reads (4-byte RGBA, BGRA or 10-bit formats)",
                info.image_format
            ));
        }
        if not_copied.is_none() {
            match swapchain_images(device, handle) {
                Ok(list) => images = list,
                Err(e) => not_copied = Some(e),
            }
        }
        Swapchain {
            handle,
            format: info.image_format,
            extent: info.image_extent,
            texels,
            images,
            not_copied,
            copies: None,
            timings: Timings::default(),
        }
    }

    /// Before the present of image `index` goes down, on `queue` (family `family`): reads what finished
    /// copies left (returning the flash grids, oldest first), then records and submits the copy of this
    /// frame, waiting for `waits`. Returns the grids and the semaphore the present must wait for instead
    /// (`None`: this frame is not copied, the present goes down as the app made it).
    #[allow(clippy::too_many_arguments)]
    pub fn before_present(
        &mut self,
        device: &Device,
        queue: vk::Queue,
        family: u32,
        index: u32,
        waits: &[vk::Semaphore],
        frame: u64,
        flash: Option<&FlashPipeline>,
    ) -> (Vec<Grid>, Result<Option<vk::Semaphore>, String>) {
        if self.not_copied.is_some() {
            return (Vec::new(), Ok(None));
        }
        if self.copies.is_none() {
            match Copies::new(device, self, family, flash) {
                Ok(c) => {
                    debug!(
                        "frame capture: swapchain {:#x} ({}x{} {:?}): each present is copied",
                        self.handle.as_raw(),
                        self.extent.width,
                        self.extent.height,
                        self.format
                    );
                    self.copies = Some(c);
                }
                Err(e) => {
                    self.not_copied = Some(e.clone());
                    return (Vec::new(), Err(e));
                }
            }
        }
        let mut grids = self.collect(device, false);
        let Some(copies) = self.copies.as_mut() else {
            return (grids, Ok(None));
        };
        if copies.family != family {
            return (
                grids,
                Err(format!(
                    "presented on a queue of family {family}, not {}: this frame is not copied",
                    copies.family
                )),
            );
        }
        let slot = frame as usize % SLOTS;
        if copies.slots[slot].pending {
            // Normally finished frames ago; the wait is bounded, and a frame that cannot have its slot is
            // not copied.
            match wait_fence(device, copies.slots[slot].fence, REUSE_WAIT_NS) {
                vk::Result::SUCCESS => grids.extend(self.collect(device, false)),
                other => {
                    return (
                        grids,
                        Err(format!(
                            "the copy of frame {:?} is not finished ({other:?}): this frame is not copied",
                            self.copies.as_ref().and_then(|c| c.slots[slot].frame)
                        )),
                    )
                }
            }
        }
        let Some(copies) = self.copies.as_mut() else {
            return (grids, Ok(None));
        };
        let Some(&image) = self.images.get(index as usize) else {
            return (
                grids,
                Err(format!("image index {index} is not the swapchain's")),
            );
        };
        let texels = self.texels.unwrap_or(Texels::Bgra8);
        let result = copies.submit(
            device,
            queue,
            slot,
            image,
            index,
            waits,
            frame,
            self.extent,
            texels,
            flash,
        );
        (grids, result)
    }

    /// After the present: a semaphore whose wait may not have happened (a present that failed other than
    /// by being out of date) is replaced, the old one kept for the device's end.
    pub fn after_present(
        &mut self,
        device: &Device,
        index: u32,
        result: vk::Result,
        graveyard: &mut Vec<vk::Semaphore>,
    ) {
        let waited = matches!(
            result,
            vk::Result::SUCCESS | vk::Result::SUBOPTIMAL_KHR | vk::Result::ERROR_OUT_OF_DATE_KHR
        );
        if waited {
            return;
        }
        if let Some(copies) = self.copies.as_mut() {
            if let Some(s) = copies.semaphores.get_mut(index as usize) {
                graveyard.push(*s);
                *s = create_semaphore(device).unwrap_or(vk::Semaphore::null());
            }
        }
    }

    /// Reads the slots whose copies finished (timestamps, flash grids), in frame order; with `wait`, waits
    /// for every pending one first (at the swapchain's end).
    pub fn collect(&mut self, device: &Device, wait: bool) -> Vec<Grid> {
        let Some(copies) = self.copies.as_mut() else {
            return Vec::new();
        };
        let mut done: Vec<usize> = Vec::new();
        for (i, slot) in copies.slots.iter().enumerate() {
            if !slot.pending {
                continue;
            }
            let timeout = if wait { REUSE_WAIT_NS } else { 0 };
            if wait_fence(device, slot.fence, timeout) == vk::Result::SUCCESS {
                done.push(i);
            }
        }
        done.sort_by_key(|&i| copies.slots[i].frame);
        let mut grids = Vec::new();
        for i in done {
            copies.slots[i].pending = false;
            copies.read_timestamps(device, i, &mut self.timings);
            if let Some(grid) = copies.read_grid(i) {
                grids.push(grid);
            }
        }
        grids
    }

    /// The frames whose images are kept and finished copying, oldest first.
    pub fn kept_frames(&self) -> Vec<u64> {
        let mut frames: Vec<u64> = self
            .copies
            .iter()
            .flat_map(|c| c.slots.iter())
            .filter(|s| !s.pending)
            .filter_map(|s| s.frame)
            .collect();
        frames.sort_unstable();
        frames
    }

    /// Whether the image of `frame` is being copied (submitted, not yet seen finished).
    pub fn copying(&self, frame: u64) -> bool {
        self.copies
            .iter()
            .flat_map(|c| c.slots.iter())
            .any(|s| s.pending && s.frame == Some(frame))
    }

    /// The slot that the next present (of frame `next`) overwrites holds this frame, if any.
    pub fn frame_overwritten_by(&self, next: u64) -> Option<u64> {
        let copies = self.copies.as_ref()?;
        copies.slots[next as usize % SLOTS].frame
    }

    /// A copy of the image of `frame`, if its copy finished and is still kept.
    pub fn image(&self, frame: u64) -> Option<Copied> {
        let copies = self.copies.as_ref()?;
        let slot = copies
            .slots
            .iter()
            .position(|s| s.frame == Some(frame) && !s.pending)?;
        let texels = self.texels?;
        let count = self.extent.width as usize * self.extent.height as usize;
        let first = slot * (copies.slot_bytes / 4) as usize;
        Some(Copied {
            words: copies.ring.read_words(first, count),
            extent: self.extent,
            texels,
        })
    }

    /// The last image whose copy finished, for a device-loss or hang report (read as best effort: after a
    /// loss the memory's content is formally undefined).
    pub fn last_image(&self) -> Option<(u64, Copied)> {
        let frame = *self.kept_frames().last()?;
        Some((frame, self.image(frame)?))
    }

    /// Frees the GPU side, after waiting (bounded) for the copies in flight. The semaphores go to
    /// `graveyard`: a present may still be waiting for one.
    pub fn destroy(&mut self, device: &Device, graveyard: &mut Vec<vk::Semaphore>) {
        if let Some(copies) = self.copies.take() {
            for slot in &copies.slots {
                if slot.pending {
                    let _ = wait_fence(device, slot.fence, REUSE_WAIT_NS);
                }
            }
            copies.destroy(device, graveyard);
        }
    }
}

/// The swapchain's images.
fn swapchain_images(
    device: &Device,
    swapchain: vk::SwapchainKHR,
) -> Result<Vec<vk::Image>, String> {
    let get = need(
        device.next.get_swapchain_images_khr,
        "vkGetSwapchainImagesKHR",
    )?;
    let mut count = 0u32;
    // SAFETY: the app's live swapchain; a count query.
    check("vkGetSwapchainImagesKHR", unsafe {
        get(device.handle, swapchain, &mut count, std::ptr::null_mut())
    })?;
    let mut images = vec![vk::Image::null(); count as usize];
    // SAFETY: room for `count` handles.
    let result = unsafe { get(device.handle, swapchain, &mut count, images.as_mut_ptr()) };
    if result != vk::Result::SUCCESS && result != vk::Result::INCOMPLETE {
        return Err(format!("vkGetSwapchainImagesKHR failed: {result:?}"));
    }
    images.truncate(count as usize);
    Ok(images)
}

/// Waits at most `timeout_ns` for one of the layer's fences (0: its status). Through the next layer, so the
/// validation layer below sees the host wait that makes the slot's memory reusable.
fn wait_fence(device: &Device, fence: vk::Fence, timeout_ns: u64) -> vk::Result {
    let Some(wait) = device.next.wait_for_fences else {
        return vk::Result::ERROR_EXTENSION_NOT_PRESENT;
    };
    // SAFETY: the layer's own live fence on this device.
    unsafe { wait(device.handle, 1, &fence, vk::TRUE, timeout_ns) }
}

fn create_semaphore(device: &Device) -> Result<vk::Semaphore, String> {
    let create = need(device.next.create_semaphore, "vkCreateSemaphore")?;
    let info = vk::SemaphoreCreateInfo::default();
    let mut semaphore = vk::Semaphore::null();
    // SAFETY: a live device, valid create info.
    check("vkCreateSemaphore", unsafe {
        create(device.handle, &info, std::ptr::null(), &mut semaphore)
    })?;
    Ok(semaphore)
}

impl Copies {
    /// The ring, its slots and their command buffers for presents on queues of `family`.
    fn new(
        device: &Device,
        swapchain: &Swapchain,
        family: u32,
        flash: Option<&FlashPipeline>,
    ) -> Result<Self, String> {
        let n = &device.next;
        let extent = swapchain.extent;
        let image_bytes = u64::from(extent.width) * u64::from(extent.height) * 4;
        // Slots start at multiples of 256 bytes: every storage-buffer offset alignment divides it.
        let slot_bytes = image_bytes.div_ceil(256) * 256;
        let usage = vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::STORAGE_BUFFER;
        let caps = &device.capabilities;
        // Device-local first (the copy runs at memory speed); plain host memory if that heap is too small.
        let mut ring = Err("no host-visible coherent memory".to_owned());
        for memory_type in [caps.marker_memory_type, caps.error_memory_type]
            .into_iter()
            .flatten()
        {
            // SAFETY: a live device and its table; the memory types are host-visible and coherent.
            ring = unsafe {
                HostBuffer::new(
                    device.handle,
                    n,
                    slot_bytes * SLOTS as u64,
                    usage,
                    memory_type,
                    false,
                )
            }
            .map_err(|e| e.to_string());
            if ring.is_ok() {
                break;
            }
        }
        let ring = ring?;
        let mut this = Copies {
            family,
            ring,
            slot_bytes,
            grids: None,
            slots: Vec::new(),
            semaphores: Vec::new(),
            descriptor_pool: vk::DescriptorPool::null(),
            timestamps: None,
            last_slot: None,
        };
        match this.create_objects(device, swapchain, flash) {
            Ok(()) => Ok(this),
            Err(e) => {
                let mut graveyard = Vec::new();
                this.destroy(device, &mut graveyard);
                // Never used by a present: safe to destroy now.
                if let Some(destroy) = n.destroy_semaphore {
                    for s in graveyard {
                        // SAFETY: the layer's own unused semaphores.
                        unsafe { destroy(device.handle, s, std::ptr::null()) };
                    }
                }
                Err(e)
            }
        }
    }

    fn create_objects(
        &mut self,
        device: &Device,
        swapchain: &Swapchain,
        flash: Option<&FlashPipeline>,
    ) -> Result<(), String> {
        let n = &device.next;
        let handle = device.handle;
        let create_pool = need(n.create_command_pool, "vkCreateCommandPool")?;
        let allocate = need(n.allocate_command_buffers, "vkAllocateCommandBuffers")?;
        let create_fence = need(n.create_fence, "vkCreateFence")?;
        for _ in 0..SLOTS {
            let mut slot = Slot {
                pool: vk::CommandPool::null(),
                command_buffer: vk::CommandBuffer::null(),
                fence: vk::Fence::null(),
                set: vk::DescriptorSet::null(),
                frame: None,
                pending: false,
                flashed: false,
                compared: false,
            };
            // A pool per slot, reset whole before each recording (best practices prefer that to resetting
            // command buffers one by one).
            let info = vk::CommandPoolCreateInfo::default()
                .flags(vk::CommandPoolCreateFlags::TRANSIENT)
                .queue_family_index(self.family);
            // SAFETY: a live device, valid create info.
            let created = check("vkCreateCommandPool", unsafe {
                create_pool(handle, &info, std::ptr::null(), &mut slot.pool)
            });
            let pool = slot.pool;
            self.slots.push(slot);
            created?;
            let info = vk::CommandBufferAllocateInfo::default()
                .command_pool(pool)
                .level(vk::CommandBufferLevel::PRIMARY)
                .command_buffer_count(1);
            let slot = self.slots.last_mut().expect("pushed above");
            // SAFETY: a live pool of this device; one handle written.
            check("vkAllocateCommandBuffers", unsafe {
                allocate(handle, &info, &mut slot.command_buffer)
            })?;
            if let Some(set_loader_data) = device.set_loader_data {
                // SAFETY: a dispatchable object the layer made: the loader fills its dispatch pointer.
                let result = unsafe {
                    set_loader_data(
                        handle,
                        slot.command_buffer.as_raw() as *mut std::ffi::c_void,
                    )
                };
                check("vkSetDeviceLoaderData", result)?;
            }
            let info = vk::FenceCreateInfo::default();
            // SAFETY: as above.
            check("vkCreateFence", unsafe {
                create_fence(handle, &info, std::ptr::null(), &mut slot.fence)
            })?;
        }
        for _ in 0..swapchain.images.len() {
            self.semaphores.push(create_semaphore(device)?);
        }
        self.timestamps = timestamps(device, self.family);
        if let Some(flash) = flash {
            self.create_flash_objects(device, swapchain, flash)?;
        }
        Ok(())
    }

    fn create_flash_objects(
        &mut self,
        device: &Device,
        swapchain: &Swapchain,
        flash: &FlashPipeline,
    ) -> Result<(), String> {
        let n = &device.next;
        let handle = device.handle;
        let memory_type = device
            .capabilities
            .error_memory_type
            .ok_or("no host-visible coherent memory for the flash grids")?;
        // SAFETY: a live device and its table; host-visible coherent memory.
        let grids = unsafe {
            HostBuffer::new(
                handle,
                n,
                GRID_BUFFER_BYTES,
                vk::BufferUsageFlags::STORAGE_BUFFER,
                memory_type,
                false,
            )
        }
        .map_err(|e| e.to_string())?;
        let grid_buffer = grids.buffer;
        self.grids = Some(grids);
        let create_pool = need(n.create_descriptor_pool, "vkCreateDescriptorPool")?;
        let allocate = need(n.allocate_descriptor_sets, "vkAllocateDescriptorSets")?;
        let update = need(n.update_descriptor_sets, "vkUpdateDescriptorSets")?;
        let sizes = [vk::DescriptorPoolSize::default()
            .ty(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(2 * SLOTS as u32)];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(SLOTS as u32)
            .pool_sizes(&sizes);
        // SAFETY: a live device, valid create info.
        check("vkCreateDescriptorPool", unsafe {
            create_pool(handle, &info, std::ptr::null(), &mut self.descriptor_pool)
        })?;
        let _ = swapchain;
        for i in 0..SLOTS {
            let layouts = [flash.set_layout];
            let info = vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(self.descriptor_pool)
                .set_layouts(&layouts);
            let mut set = vk::DescriptorSet::null();
            // SAFETY: a pool with room for SLOTS sets of this layout.
            check("vkAllocateDescriptorSets", unsafe {
                allocate(handle, &info, &mut set)
            })?;
            self.slots[i].set = set;
            let image = [vk::DescriptorBufferInfo::default()
                .buffer(self.ring.buffer)
                .offset(i as u64 * self.slot_bytes)
                .range(self.slot_bytes)];
            let grid = [vk::DescriptorBufferInfo::default()
                .buffer(grid_buffer)
                .offset(0)
                .range(vk::WHOLE_SIZE)];
            let writes = [
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(0)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&image),
                vk::WriteDescriptorSet::default()
                    .dst_set(set)
                    .dst_binding(1)
                    .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                    .buffer_info(&grid),
            ];
            // SAFETY: valid writes of a set no pending work uses.
            unsafe {
                update(
                    handle,
                    writes.len() as u32,
                    writes.as_ptr(),
                    0,
                    std::ptr::null(),
                )
            };
        }
        Ok(())
    }

    /// Records and submits the copy of `image` (swapchain index `index`) into `slot`, for `frame`.
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &mut self,
        device: &Device,
        queue: vk::Queue,
        slot: usize,
        image: vk::Image,
        index: u32,
        waits: &[vk::Semaphore],
        frame: u64,
        extent: vk::Extent2D,
        texels: Texels,
        flash: Option<&FlashPipeline>,
    ) -> Result<Option<vk::Semaphore>, String> {
        let n = &device.next;
        let handle = device.handle;
        let signal = *self
            .semaphores
            .get(index as usize)
            .filter(|s| **s != vk::Semaphore::null())
            .ok_or("no semaphore for this image")?;
        let (pool, cb, fence, set) = {
            let s = &self.slots[slot];
            (s.pool, s.command_buffer, s.fence, s.set)
        };
        let reset_fences = need(n.reset_fences, "vkResetFences")?;
        let reset_pool = need(n.reset_command_pool, "vkResetCommandPool")?;
        let begin = need(n.begin_command_buffer, "vkBeginCommandBuffer")?;
        let end = need(n.end_command_buffer, "vkEndCommandBuffer")?;
        let barrier = need(n.cmd_pipeline_barrier, "vkCmdPipelineBarrier")?;
        let copy = need(n.cmd_copy_image_to_buffer, "vkCmdCopyImageToBuffer")?;
        let submit = need(n.queue_submit, "vkQueueSubmit")?;
        // SAFETY (whole block): the slot's objects are the layer's own and idle (its fence was waited for,
        // or it was never submitted); the image is the app's swapchain image being presented, in
        // PRESENT_SRC_KHR once the app's semaphores signal (the present's own requirement).
        unsafe {
            check("vkResetFences", reset_fences(handle, 1, &fence))?;
            check(
                "vkResetCommandPool",
                reset_pool(handle, pool, vk::CommandPoolResetFlags::empty()),
            )?;
            let info = vk::CommandBufferBeginInfo::default()
                .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            check("vkBeginCommandBuffer", begin(cb, &info))?;
            let base = slot as u32 * QUERIES_PER_SLOT;
            if let (Some(t), Some(reset), Some(stamp)) = (
                &self.timestamps,
                n.cmd_reset_query_pool,
                n.cmd_write_timestamp,
            ) {
                reset(cb, t.pool, base, QUERIES_PER_SLOT);
                // BOTTOM_OF_PIPE: when everything before it (the app's frame) is done.
                stamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, t.pool, base);
            }
            let range = vk::ImageSubresourceRange {
                aspect_mask: vk::ImageAspectFlags::COLOR,
                base_mip_level: 0,
                level_count: 1,
                base_array_layer: 0,
                layer_count: 1,
            };
            // A layout change of the image from the transfer stage on (no access made available: the
            // layer only reads the image).
            let transition = |old, new, dst_access, dst_stage| {
                let to = vk::ImageMemoryBarrier::default()
                    .dst_access_mask(dst_access)
                    .old_layout(old)
                    .new_layout(new)
                    .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                    .image(image)
                    .subresource_range(range);
                barrier(
                    cb,
                    vk::PipelineStageFlags::TRANSFER,
                    dst_stage,
                    vk::DependencyFlags::empty(),
                    0,
                    std::ptr::null(),
                    0,
                    std::ptr::null(),
                    1,
                    &to,
                );
            };
            // The semaphore wait is at TRANSFER: the transition's first scope starts there, so it follows
            // the app's writes; reads need nothing made available.
            transition(
                vk::ImageLayout::PRESENT_SRC_KHR,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                vk::AccessFlags::TRANSFER_READ,
                vk::PipelineStageFlags::TRANSFER,
            );
            let region = vk::BufferImageCopy {
                buffer_offset: slot as u64 * self.slot_bytes,
                buffer_row_length: 0,
                buffer_image_height: 0,
                image_subresource: vk::ImageSubresourceLayers {
                    aspect_mask: vk::ImageAspectFlags::COLOR,
                    mip_level: 0,
                    base_array_layer: 0,
                    layer_count: 1,
                },
                image_offset: vk::Offset3D::default(),
                image_extent: vk::Extent3D {
                    width: extent.width,
                    height: extent.height,
                    depth: 1,
                },
            };
            copy(
                cb,
                image,
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                self.ring.buffer,
                1,
                &region,
            );
            // Back for the present, which the semaphore signalled at the end of the batch orders.
            transition(
                vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                vk::ImageLayout::PRESENT_SRC_KHR,
                vk::AccessFlags::empty(),
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
            );
            if let (Some(t), Some(stamp)) = (&self.timestamps, n.cmd_write_timestamp) {
                stamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, t.pool, base + 1);
            }
            let mut flashed = None;
            let mut host_stages = vk::PipelineStageFlags::TRANSFER;
            let mut host_access = vk::AccessFlags::TRANSFER_WRITE;
            if let (Some(flash), Some(_)) = (flash, &self.grids) {
                flashed = self.record_flash(device, cb, slot, set, frame, extent, texels, flash)?;
                if flashed.is_some() {
                    host_stages |= vk::PipelineStageFlags::COMPUTE_SHADER;
                    host_access |= vk::AccessFlags::SHADER_WRITE;
                    if let (Some(t), Some(stamp)) = (&self.timestamps, n.cmd_write_timestamp) {
                        stamp(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, t.pool, base + 2);
                    }
                }
            }
            // The host reads the copy (and the grid) after the fence.
            let to_host = vk::MemoryBarrier::default()
                .src_access_mask(host_access)
                .dst_access_mask(vk::AccessFlags::HOST_READ);
            barrier(
                cb,
                host_stages,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                1,
                &to_host,
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
            );
            check("vkEndCommandBuffer", end(cb))?;
            let stages: Vec<vk::PipelineStageFlags> = waits
                .iter()
                .map(|_| vk::PipelineStageFlags::TRANSFER)
                .collect();
            let cbs = [cb];
            let signals = [signal];
            let mut info = vk::SubmitInfo::default()
                .command_buffers(&cbs)
                .signal_semaphores(&signals);
            // An app may present with no wait semaphore (vkd3d does): the copy then waits for none, with
            // null arrays, as best practices warns about a wait array with a count of 0.
            if !waits.is_empty() {
                info = info.wait_semaphores(waits).wait_dst_stage_mask(&stages);
            }
            check("vkQueueSubmit", submit(queue, 1, &info, fence))?;
            let s = &mut self.slots[slot];
            s.frame = Some(frame);
            s.pending = true;
            s.flashed = flashed.is_some();
            s.compared = flashed == Some(true);
        }
        self.last_slot = Some(slot);
        Ok(Some(signal))
    }

    /// Records the flash pass over `slot`'s copy: whether it compares with the frame before, or `None`
    /// when it cannot run.
    #[allow(clippy::too_many_arguments)]
    fn record_flash(
        &self,
        device: &Device,
        cb: vk::CommandBuffer,
        slot: usize,
        set: vk::DescriptorSet,
        frame: u64,
        extent: vk::Extent2D,
        texels: Texels,
        flash: &FlashPipeline,
    ) -> Result<Option<bool>, String> {
        let n = &device.next;
        let barrier = need(n.cmd_pipeline_barrier, "vkCmdPipelineBarrier")?;
        let bind = need(n.cmd_bind_pipeline, "vkCmdBindPipeline")?;
        let bind_sets = need(n.cmd_bind_descriptor_sets, "vkCmdBindDescriptorSets")?;
        let push = need(n.cmd_push_constants, "vkCmdPushConstants")?;
        let dispatch = need(n.cmd_dispatch, "vkCmdDispatch")?;
        if set == vk::DescriptorSet::null() {
            return Ok(None);
        }
        // The frame before compared with: the previous slot's grid, when it is that frame's and its pass
        // ran (submitted earlier on this queue: the barrier below orders its writes before these reads).
        let previous_slot = (slot + SLOTS - 1) % SLOTS;
        let previous = &self.slots[previous_slot];
        let has_previous =
            previous.flashed && previous.frame == Some(frame.wrapping_sub(1)) && frame > 1;
        let constants = Push {
            width: extent.width,
            height: extent.height,
            format: texels.shader_code(),
            cells_x: GRID[0],
            cells_y: GRID[1],
            grid: (slot * GRID_WORDS) as u32,
            previous: (previous_slot * GRID_WORDS) as u32,
            has_previous: u32::from(has_previous),
        };
        // SAFETY: recording into the layer's own command buffer, with its own pipeline and set.
        unsafe {
            // The copy's writes, and the previous pass's grid, before this pass reads them.
            let before = vk::MemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::TRANSFER_WRITE | vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE);
            barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                1,
                &before,
                0,
                std::ptr::null(),
                0,
                std::ptr::null(),
            );
            bind(cb, vk::PipelineBindPoint::COMPUTE, flash.pipeline);
            bind_sets(
                cb,
                vk::PipelineBindPoint::COMPUTE,
                flash.layout,
                0,
                1,
                &set,
                0,
                std::ptr::null(),
            );
            let bytes = constants.bytes();
            push(
                cb,
                flash.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                bytes.len() as u32,
                bytes.as_ptr().cast(),
            );
            dispatch(cb, GRID[0], GRID[1], 1);
        }
        Ok(Some(has_previous))
    }

    fn read_timestamps(&self, device: &Device, slot: usize, timings: &mut Timings) {
        let (Some(t), Some(get)) = (&self.timestamps, device.next.get_query_pool_results) else {
            return;
        };
        let count = if self.slots[slot].flashed { 3 } else { 2 };
        let mut stamps = [0u64; QUERIES_PER_SLOT as usize];
        // SAFETY: the layer's own query pool; the slot's fence signalled, so its queries are available.
        let result = unsafe {
            get(
                device.handle,
                t.pool,
                slot as u32 * QUERIES_PER_SLOT,
                count,
                std::mem::size_of_val(&stamps),
                stamps.as_mut_ptr().cast(),
                8,
                vk::QueryResultFlags::TYPE_64,
            )
        };
        if result != vk::Result::SUCCESS {
            return;
        }
        let ns =
            |a: u64, b: u64| (((b.wrapping_sub(a)) & t.mask) as f64 * f64::from(t.period)) as u64;
        Timings::keep(
            &mut timings.copy_ns,
            timings.copies_seen,
            ns(stamps[0], stamps[1]),
        );
        timings.copies_seen += 1;
        if count == 3 {
            Timings::keep(
                &mut timings.flash_ns,
                timings.flashes_seen,
                ns(stamps[1], stamps[2]),
            );
            timings.flashes_seen += 1;
        }
    }

    fn read_grid(&self, slot: usize) -> Option<Grid> {
        let grids = self.grids.as_ref()?;
        let s = &self.slots[slot];
        if !s.flashed {
            return None;
        }
        let words = grids.read_words(slot * GRID_WORDS, GRID_WORDS);
        let floats: Vec<f32> = words.iter().map(|&w| f32::from_bits(w)).collect();
        Some(Grid {
            frame: s.frame?,
            luminance: floats[..CELLS].to_vec(),
            change: floats[CELLS..].to_vec(),
            compared: s.compared,
        })
    }

    /// Frees what [`Copies::new`] made; the semaphores go to `graveyard`.
    fn destroy(self, device: &Device, graveyard: &mut Vec<vk::Semaphore>) {
        let n = &device.next;
        let handle = device.handle;
        // SAFETY: the layer's own objects; the copies that used them finished (waited for by the caller)
        // or were never submitted.
        unsafe {
            for slot in &self.slots {
                if let Some(destroy) = n.destroy_command_pool {
                    destroy(handle, slot.pool, std::ptr::null());
                }
                if let Some(destroy) = n.destroy_fence {
                    destroy(handle, slot.fence, std::ptr::null());
                }
            }
            if let Some(destroy) = n.destroy_descriptor_pool {
                destroy(handle, self.descriptor_pool, std::ptr::null());
            }
            if let (Some(t), Some(destroy)) = (&self.timestamps, n.destroy_query_pool) {
                destroy(handle, t.pool, std::ptr::null());
            }
            self.ring.destroy(handle, n);
            if let Some(grids) = &self.grids {
                grids.destroy(handle, n);
            }
        }
        graveyard.extend(
            self.semaphores
                .into_iter()
                .filter(|s| *s != vk::Semaphore::null()),
        );
    }
}

/// A timestamp pool for the slots, where the queue family has timestamps.
fn timestamps(device: &Device, family: u32) -> Option<Timestamps> {
    let instance = &device.instance;
    let get_families = instance.next.get_physical_device_queue_family_properties?;
    let get_properties = instance.next.get_physical_device_properties?;
    let create = device.next.create_query_pool?;
    let mut count = 0u32;
    // SAFETY: the device's physical device; a count query, then room for `count`.
    let families = unsafe {
        get_families(device.physical_device, &mut count, std::ptr::null_mut());
        let mut families = vec![vk::QueueFamilyProperties::default(); count as usize];
        get_families(device.physical_device, &mut count, families.as_mut_ptr());
        families
    };
    let bits = families.get(family as usize)?.timestamp_valid_bits;
    if bits == 0 {
        return None;
    }
    let mut properties = vk::PhysicalDeviceProperties::default();
    // SAFETY: valid output struct.
    unsafe { get_properties(device.physical_device, &mut properties) };
    let info = vk::QueryPoolCreateInfo::default()
        .query_type(vk::QueryType::TIMESTAMP)
        .query_count(SLOTS as u32 * QUERIES_PER_SLOT);
    let mut pool = vk::QueryPool::null();
    // SAFETY: a live device, valid create info.
    if unsafe { create(device.handle, &info, std::ptr::null(), &mut pool) } != vk::Result::SUCCESS {
        return None;
    }
    Some(Timestamps {
        pool,
        period: properties.limits.timestamp_period,
        mask: if bits >= 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_keep_the_last_presents_in_fixed_room() {
        let mut times = Vec::new();
        let n = TIMINGS_KEPT + 10;
        for seen in 0..n {
            Timings::keep(&mut times, seen, seen as u64);
        }
        assert_eq!(times.len(), TIMINGS_KEPT);
        // The 10 newest took the oldest 10 slots; everything kept is from the last TIMINGS_KEPT.
        assert_eq!(
            &times[..10],
            &(TIMINGS_KEPT as u64..n as u64).collect::<Vec<_>>()[..]
        );
        assert!(times.iter().all(|&t| t >= 10));
    }
}
