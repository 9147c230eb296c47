//! Hooks for command buffer lifetime and recording.
//!
//! The many commands that need nothing but a log entry (and markers around the actions) are generated from
//! the one table in [`recorded!`]; those that change recording state (begin/end, render passes, labels,
//! pipeline binds, secondaries) are written by hand below it.

use ash::vk;
use std::ffi::CStr;
use std::sync::Arc;

use super::{entry, Hook};
use crate::command_buffer::{self as cbs, BindPoint, Executed};
use crate::registry;

/// A command parameter as the log keeps it.
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

/// Builds a `&'static CStr` from a string literal.
macro_rules! cstr {
    ($s:literal) => {
        match CStr::from_bytes_with_nul(concat!($s, "\0").as_bytes()) {
            Ok(c) => c,
            Err(_) => panic!("command name"),
        }
    };
}

/// Marks a hook as one that watches recording: with breadcrumbs off it is not handed out at all.
const fn recording(hook: Hook) -> Hook {
    Hook {
        recording: true,
        ..hook
    }
}

/// Calls down for a command buffer the layer does not know (its state was lost to an internal error):
/// the device is still found by dispatch key, so the app's call goes through.
fn unknown<F>(
    command_buffer: vk::CommandBuffer,
    pick: impl FnOnce(&crate::device::Device) -> Option<F>,
) -> Option<F> {
    // SAFETY: a valid command buffer from the app.
    unsafe { registry::device_of(command_buffer) }.and_then(|d| pick(&d))
}

/// The table of recorded commands: for each, the hook, its dispatch entry, how it is logged, and its key
/// parameters. `action` commands do GPU work and get markers; `state` commands are only logged; `sync`
/// commands (barriers, event waits) are logged and carry the "finished" marker owed before them.
macro_rules! recorded {
    ($(
        $hook:ident: $pfn:ident = $name:literal $(| $alias:literal)*;
        fn($($arg:ident: $ty:ty),*) $class:ident($bind:ident) [$($param:expr),*];
    )*) => {
        /// The next layer's recorded commands.
        #[derive(Clone, Copy)]
        pub struct RecordedDispatch {
            $(pub $hook: Option<vk::$pfn>,)*
        }

        impl RecordedDispatch {
            /// Resolves every command through `load`, core name first, then aliases.
            pub fn load(mut load: impl FnMut(&CStr) -> vk::PFN_vkVoidFunction) -> Self {
                Self {
                    $($hook: load(cstr!($name))$(.or_else(|| load(cstr!($alias))))*.map(|f| {
                        // SAFETY: the command of this name has this type.
                        unsafe { std::mem::transmute::<unsafe extern "system" fn(), vk::$pfn>(f) }
                    }),)*
                }
            }
        }

        $(
            unsafe extern "system" fn $hook(command_buffer: vk::CommandBuffer, $($arg: $ty),*) {
                entry($name, (), || {
                    // SAFETY: the app's arguments, forwarded as they came.
                    let call = |next: vk::$pfn| unsafe { next(command_buffer, $($arg),*) };
                    let Some(cb) = cbs::lookup(command_buffer) else {
                        if let Some(next) = unknown(command_buffer, |d| d.recorded.$hook) {
                            call(next);
                        }
                        return;
                    };
                    let Some(next) = cb.device.recorded.$hook else { return };
                    #[allow(unused_unsafe)]
                    // SAFETY: parameters read from the app's valid arguments.
                    let params: &[u64] = unsafe { &[$(Param::param($param)),*] };
                    recorded!(@$class cb, $name, $bind, params, || call(next));
                })
            }
        )*

        /// Hooks generated from the table.
        pub(super) const RECORDED_HOOKS: &[Hook] = &[
            $(
                recording(hook!(Device, cstr!($name), $hook as $pfn)),
                $(recording(hook!(Device, cstr!($alias), $hook as $pfn)),)*
            )*
        ];
    };
    (@action $cb:ident, $name:literal, $bind:ident, $params:ident, $call:expr) => {
        $cb.action($name, BindPoint::$bind, $params, $call)
    };
    (@state $cb:ident, $name:literal, $bind:ident, $params:ident, $call:expr) => {
        $cb.state($name, $params, $call)
    };
    (@sync $cb:ident, $name:literal, $bind:ident, $params:ident, $call:expr) => {
        $cb.sync($name, $params, $call)
    };
}

recorded! {
    cmd_draw: PFN_vkCmdDraw = "vkCmdDraw";
        fn(vertex_count: u32, instance_count: u32, first_vertex: u32, first_instance: u32)
        action(Graphics) [vertex_count, instance_count, first_vertex, first_instance];
    cmd_draw_indexed: PFN_vkCmdDrawIndexed = "vkCmdDrawIndexed";
        fn(index_count: u32, instance_count: u32, first_index: u32, vertex_offset: i32, first_instance: u32)
        action(Graphics) [index_count, instance_count, first_index, vertex_offset];
    cmd_draw_indirect: PFN_vkCmdDrawIndirect = "vkCmdDrawIndirect";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize, draw_count: u32, stride: u32)
        action(Graphics) [buffer, offset, draw_count, stride];
    cmd_draw_indexed_indirect: PFN_vkCmdDrawIndexedIndirect = "vkCmdDrawIndexedIndirect";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize, draw_count: u32, stride: u32)
        action(Graphics) [buffer, offset, draw_count, stride];
    cmd_draw_indirect_count: PFN_vkCmdDrawIndirectCount =
        "vkCmdDrawIndirectCount" | "vkCmdDrawIndirectCountKHR" | "vkCmdDrawIndirectCountAMD";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize, count_buffer: vk::Buffer, count_offset: vk::DeviceSize,
           max_draw_count: u32, stride: u32)
        action(Graphics) [buffer, offset, count_buffer, max_draw_count];
    cmd_draw_indexed_indirect_count: PFN_vkCmdDrawIndexedIndirectCount =
        "vkCmdDrawIndexedIndirectCount" | "vkCmdDrawIndexedIndirectCountKHR" | "vkCmdDrawIndexedIndirectCountAMD";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize, count_buffer: vk::Buffer, count_offset: vk::DeviceSize,
           max_draw_count: u32, stride: u32)
        action(Graphics) [buffer, offset, count_buffer, max_draw_count];
    cmd_draw_multi_ext: PFN_vkCmdDrawMultiEXT = "vkCmdDrawMultiEXT";
        fn(draw_count: u32, vertex_info: *const vk::MultiDrawInfoEXT, instance_count: u32, first_instance: u32,
           stride: u32)
        action(Graphics) [draw_count, instance_count, first_instance];
    cmd_draw_multi_indexed_ext: PFN_vkCmdDrawMultiIndexedEXT = "vkCmdDrawMultiIndexedEXT";
        fn(draw_count: u32, index_info: *const vk::MultiDrawIndexedInfoEXT, instance_count: u32,
           first_instance: u32, stride: u32, vertex_offset: *const i32)
        action(Graphics) [draw_count, instance_count, first_instance];
    cmd_draw_indirect_byte_count_ext: PFN_vkCmdDrawIndirectByteCountEXT = "vkCmdDrawIndirectByteCountEXT";
        fn(instance_count: u32, first_instance: u32, counter_buffer: vk::Buffer,
           counter_buffer_offset: vk::DeviceSize, counter_offset: u32, vertex_stride: u32)
        action(Graphics) [instance_count, first_instance, counter_buffer, vertex_stride];
    cmd_draw_mesh_tasks_ext: PFN_vkCmdDrawMeshTasksEXT = "vkCmdDrawMeshTasksEXT";
        fn(group_count_x: u32, group_count_y: u32, group_count_z: u32)
        action(Graphics) [group_count_x, group_count_y, group_count_z];
    cmd_draw_mesh_tasks_indirect_ext: PFN_vkCmdDrawMeshTasksIndirectEXT = "vkCmdDrawMeshTasksIndirectEXT";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize, draw_count: u32, stride: u32)
        action(Graphics) [buffer, offset, draw_count, stride];
    cmd_draw_mesh_tasks_indirect_count_ext: PFN_vkCmdDrawMeshTasksIndirectCountEXT =
        "vkCmdDrawMeshTasksIndirectCountEXT";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize, count_buffer: vk::Buffer, count_offset: vk::DeviceSize,
           max_draw_count: u32, stride: u32)
        action(Graphics) [buffer, offset, count_buffer, max_draw_count];
    cmd_dispatch: PFN_vkCmdDispatch = "vkCmdDispatch";
        fn(group_count_x: u32, group_count_y: u32, group_count_z: u32)
        action(Compute) [group_count_x, group_count_y, group_count_z];
    cmd_dispatch_indirect: PFN_vkCmdDispatchIndirect = "vkCmdDispatchIndirect";
        fn(buffer: vk::Buffer, offset: vk::DeviceSize)
        action(Compute) [buffer, offset];
    cmd_dispatch_base: PFN_vkCmdDispatchBase = "vkCmdDispatchBase" | "vkCmdDispatchBaseKHR";
        fn(base_x: u32, base_y: u32, base_z: u32, group_count_x: u32, group_count_y: u32, group_count_z: u32)
        action(Compute) [group_count_x, group_count_y, group_count_z, base_x];
    cmd_trace_rays_khr: PFN_vkCmdTraceRaysKHR = "vkCmdTraceRaysKHR";
        fn(raygen: *const vk::StridedDeviceAddressRegionKHR, miss: *const vk::StridedDeviceAddressRegionKHR,
           hit: *const vk::StridedDeviceAddressRegionKHR, callable: *const vk::StridedDeviceAddressRegionKHR,
           width: u32, height: u32, depth: u32)
        action(RayTracing) [width, height, depth];
    cmd_trace_rays_indirect_khr: PFN_vkCmdTraceRaysIndirectKHR = "vkCmdTraceRaysIndirectKHR";
        fn(raygen: *const vk::StridedDeviceAddressRegionKHR, miss: *const vk::StridedDeviceAddressRegionKHR,
           hit: *const vk::StridedDeviceAddressRegionKHR, callable: *const vk::StridedDeviceAddressRegionKHR,
           indirect_address: vk::DeviceAddress)
        action(RayTracing) [indirect_address];
    cmd_trace_rays_indirect2_khr: PFN_vkCmdTraceRaysIndirect2KHR = "vkCmdTraceRaysIndirect2KHR";
        fn(indirect_address: vk::DeviceAddress)
        action(RayTracing) [indirect_address];
    cmd_build_acceleration_structures_khr: PFN_vkCmdBuildAccelerationStructuresKHR =
        "vkCmdBuildAccelerationStructuresKHR";
        fn(info_count: u32, infos: *const vk::AccelerationStructureBuildGeometryInfoKHR<'_>,
           ranges: *const *const vk::AccelerationStructureBuildRangeInfoKHR)
        action(None) [info_count];
    cmd_copy_buffer: PFN_vkCmdCopyBuffer = "vkCmdCopyBuffer";
        fn(src: vk::Buffer, dst: vk::Buffer, region_count: u32, regions: *const vk::BufferCopy)
        action(None) [src, dst, region_count];
    cmd_copy_image: PFN_vkCmdCopyImage = "vkCmdCopyImage";
        fn(src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Image, dst_layout: vk::ImageLayout,
           region_count: u32, regions: *const vk::ImageCopy)
        action(None) [src, dst, region_count];
    cmd_blit_image: PFN_vkCmdBlitImage = "vkCmdBlitImage";
        fn(src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Image, dst_layout: vk::ImageLayout,
           region_count: u32, regions: *const vk::ImageBlit, filter: vk::Filter)
        action(None) [src, dst, region_count];
    cmd_resolve_image: PFN_vkCmdResolveImage = "vkCmdResolveImage";
        fn(src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Image, dst_layout: vk::ImageLayout,
           region_count: u32, regions: *const vk::ImageResolve)
        action(None) [src, dst, region_count];
    cmd_copy_buffer_to_image: PFN_vkCmdCopyBufferToImage = "vkCmdCopyBufferToImage";
        fn(src: vk::Buffer, dst: vk::Image, dst_layout: vk::ImageLayout, region_count: u32,
           regions: *const vk::BufferImageCopy)
        action(None) [src, dst, region_count];
    cmd_copy_image_to_buffer: PFN_vkCmdCopyImageToBuffer = "vkCmdCopyImageToBuffer";
        fn(src: vk::Image, src_layout: vk::ImageLayout, dst: vk::Buffer, region_count: u32,
           regions: *const vk::BufferImageCopy)
        action(None) [src, dst, region_count];
    cmd_copy_buffer2: PFN_vkCmdCopyBuffer2 = "vkCmdCopyBuffer2" | "vkCmdCopyBuffer2KHR";
        fn(info: *const vk::CopyBufferInfo2<'_>)
        action(None) [(*info).src_buffer, (*info).dst_buffer, (*info).region_count];
    cmd_copy_image2: PFN_vkCmdCopyImage2 = "vkCmdCopyImage2" | "vkCmdCopyImage2KHR";
        fn(info: *const vk::CopyImageInfo2<'_>)
        action(None) [(*info).src_image, (*info).dst_image, (*info).region_count];
    cmd_blit_image2: PFN_vkCmdBlitImage2 = "vkCmdBlitImage2" | "vkCmdBlitImage2KHR";
        fn(info: *const vk::BlitImageInfo2<'_>)
        action(None) [(*info).src_image, (*info).dst_image, (*info).region_count];
    cmd_resolve_image2: PFN_vkCmdResolveImage2 = "vkCmdResolveImage2" | "vkCmdResolveImage2KHR";
        fn(info: *const vk::ResolveImageInfo2<'_>)
        action(None) [(*info).src_image, (*info).dst_image, (*info).region_count];
    cmd_copy_buffer_to_image2: PFN_vkCmdCopyBufferToImage2 = "vkCmdCopyBufferToImage2" | "vkCmdCopyBufferToImage2KHR";
        fn(info: *const vk::CopyBufferToImageInfo2<'_>)
        action(None) [(*info).src_buffer, (*info).dst_image, (*info).region_count];
    cmd_copy_image_to_buffer2: PFN_vkCmdCopyImageToBuffer2 = "vkCmdCopyImageToBuffer2" | "vkCmdCopyImageToBuffer2KHR";
        fn(info: *const vk::CopyImageToBufferInfo2<'_>)
        action(None) [(*info).src_image, (*info).dst_buffer, (*info).region_count];
    cmd_update_buffer: PFN_vkCmdUpdateBuffer = "vkCmdUpdateBuffer";
        fn(dst: vk::Buffer, offset: vk::DeviceSize, size: vk::DeviceSize, data: *const std::ffi::c_void)
        action(None) [dst, offset, size];
    cmd_fill_buffer: PFN_vkCmdFillBuffer = "vkCmdFillBuffer";
        fn(dst: vk::Buffer, offset: vk::DeviceSize, size: vk::DeviceSize, data: u32)
        action(None) [dst, offset, size, data];
    cmd_clear_color_image: PFN_vkCmdClearColorImage = "vkCmdClearColorImage";
        fn(image: vk::Image, layout: vk::ImageLayout, color: *const vk::ClearColorValue, range_count: u32,
           ranges: *const vk::ImageSubresourceRange)
        action(None) [image, range_count];
    cmd_clear_depth_stencil_image: PFN_vkCmdClearDepthStencilImage = "vkCmdClearDepthStencilImage";
        fn(image: vk::Image, layout: vk::ImageLayout, value: *const vk::ClearDepthStencilValue, range_count: u32,
           ranges: *const vk::ImageSubresourceRange)
        action(None) [image, range_count];
    cmd_clear_attachments: PFN_vkCmdClearAttachments = "vkCmdClearAttachments";
        fn(attachment_count: u32, attachments: *const vk::ClearAttachment, rect_count: u32,
           rects: *const vk::ClearRect)
        action(None) [attachment_count, rect_count];
    cmd_copy_query_pool_results: PFN_vkCmdCopyQueryPoolResults = "vkCmdCopyQueryPoolResults";
        fn(pool: vk::QueryPool, first_query: u32, query_count: u32, dst: vk::Buffer, dst_offset: vk::DeviceSize,
           stride: vk::DeviceSize, flags: vk::QueryResultFlags)
        action(None) [pool, first_query, query_count, dst];
    cmd_reset_query_pool: PFN_vkCmdResetQueryPool = "vkCmdResetQueryPool";
        fn(pool: vk::QueryPool, first_query: u32, query_count: u32)
        state(None) [pool, first_query, query_count];
    cmd_begin_query: PFN_vkCmdBeginQuery = "vkCmdBeginQuery";
        fn(pool: vk::QueryPool, query: u32, flags: vk::QueryControlFlags)
        state(None) [pool, query];
    cmd_end_query: PFN_vkCmdEndQuery = "vkCmdEndQuery";
        fn(pool: vk::QueryPool, query: u32)
        state(None) [pool, query];
    cmd_write_timestamp: PFN_vkCmdWriteTimestamp = "vkCmdWriteTimestamp";
        fn(stage: vk::PipelineStageFlags, pool: vk::QueryPool, query: u32)
        state(None) [pool, query];
    cmd_write_timestamp2: PFN_vkCmdWriteTimestamp2 = "vkCmdWriteTimestamp2" | "vkCmdWriteTimestamp2KHR";
        fn(stage: vk::PipelineStageFlags2, pool: vk::QueryPool, query: u32)
        state(None) [pool, query];
    cmd_pipeline_barrier: PFN_vkCmdPipelineBarrier = "vkCmdPipelineBarrier";
        fn(src_stage: vk::PipelineStageFlags, dst_stage: vk::PipelineStageFlags, flags: vk::DependencyFlags,
           memory_count: u32, memory: *const vk::MemoryBarrier<'_>, buffer_count: u32,
           buffers: *const vk::BufferMemoryBarrier<'_>, image_count: u32, images: *const vk::ImageMemoryBarrier<'_>)
        sync(None) [memory_count, buffer_count, image_count];
    cmd_pipeline_barrier2: PFN_vkCmdPipelineBarrier2 = "vkCmdPipelineBarrier2" | "vkCmdPipelineBarrier2KHR";
        fn(info: *const vk::DependencyInfo<'_>)
        sync(None) [(*info).memory_barrier_count, (*info).buffer_memory_barrier_count,
                     (*info).image_memory_barrier_count];
    cmd_wait_events: PFN_vkCmdWaitEvents = "vkCmdWaitEvents";
        fn(event_count: u32, events: *const vk::Event, src_stage: vk::PipelineStageFlags,
           dst_stage: vk::PipelineStageFlags, memory_count: u32, memory: *const vk::MemoryBarrier<'_>,
           buffer_count: u32, buffers: *const vk::BufferMemoryBarrier<'_>, image_count: u32,
           images: *const vk::ImageMemoryBarrier<'_>)
        sync(None) [event_count];
    cmd_wait_events2: PFN_vkCmdWaitEvents2 = "vkCmdWaitEvents2" | "vkCmdWaitEvents2KHR";
        fn(event_count: u32, events: *const vk::Event, infos: *const vk::DependencyInfo<'_>)
        sync(None) [event_count];
    cmd_set_event: PFN_vkCmdSetEvent = "vkCmdSetEvent";
        fn(event: vk::Event, stage: vk::PipelineStageFlags)
        state(None) [event];
    cmd_set_event2: PFN_vkCmdSetEvent2 = "vkCmdSetEvent2" | "vkCmdSetEvent2KHR";
        fn(event: vk::Event, info: *const vk::DependencyInfo<'_>)
        state(None) [event];
    cmd_reset_event: PFN_vkCmdResetEvent = "vkCmdResetEvent";
        fn(event: vk::Event, stage: vk::PipelineStageFlags)
        state(None) [event];
    cmd_reset_event2: PFN_vkCmdResetEvent2 = "vkCmdResetEvent2" | "vkCmdResetEvent2KHR";
        fn(event: vk::Event, stage: vk::PipelineStageFlags2)
        state(None) [event];
}

// ---- Command buffer lifetime ----

pub(super) unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    entry(
        "vkAllocateCommandBuffers",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let Some(next) = dev.next.allocate_command_buffers else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the app's arguments, forwarded as they came.
            let result = unsafe { next(device, info, out) };
            if result == vk::Result::SUCCESS {
                super::contained("tracking command buffers", || {
                    // SAFETY: the app's valid allocate info; `out` holds that many handles now.
                    let (info, handles) = unsafe {
                        (
                            &*info,
                            std::slice::from_raw_parts(out, (*info).command_buffer_count as usize),
                        )
                    };
                    cbs::register(
                        &dev,
                        info.command_pool,
                        info.level == vk::CommandBufferLevel::SECONDARY,
                        handles,
                    );
                });
            }
            result
        },
    )
}

pub(super) unsafe extern "system" fn free_command_buffers(
    device: vk::Device,
    pool: vk::CommandPool,
    count: u32,
    handles: *const vk::CommandBuffer,
) {
    entry("vkFreeCommandBuffers", (), || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return;
        };
        if !handles.is_null() {
            // SAFETY: the app's array of `count` handles.
            let list = unsafe { std::slice::from_raw_parts(handles, count as usize) };
            super::contained("forgetting command buffers", || {
                cbs::unregister(&dev, list.iter().copied())
            });
        }
        if let Some(next) = dev.next.free_command_buffers {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(device, pool, count, handles) };
        }
    })
}

pub(super) unsafe extern "system" fn destroy_command_pool(
    device: vk::Device,
    pool: vk::CommandPool,
    allocator: *const vk::AllocationCallbacks,
) {
    entry("vkDestroyCommandPool", (), || {
        // SAFETY: a live device from the app.
        let Some(dev) = (unsafe { registry::device_of(device) }) else {
            return;
        };
        if pool != vk::CommandPool::null() {
            super::contained("forgetting a command pool", || {
                cbs::unregister_pool(&dev, Some(pool))
            });
        }
        if let Some(next) = dev.next.destroy_command_pool {
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(device, pool, allocator) };
        }
    })
}

pub(super) unsafe extern "system" fn reset_command_pool(
    device: vk::Device,
    pool: vk::CommandPool,
    flags: vk::CommandPoolResetFlags,
) -> vk::Result {
    entry(
        "vkResetCommandPool",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            // SAFETY: a live device from the app.
            let Some(dev) = (unsafe { registry::device_of(device) }) else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            let Some(next) = dev.next.reset_command_pool else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            // SAFETY: the app's arguments, forwarded as they came.
            let result = unsafe { next(device, pool, flags) };
            if result == vk::Result::SUCCESS {
                super::contained("resetting a command pool", || {
                    cbs::of_pool(pool).iter().for_each(|cb| cb.reset())
                });
            }
            result
        },
    )
}

pub(super) unsafe extern "system" fn begin_command_buffer(
    command_buffer: vk::CommandBuffer,
    info: *const vk::CommandBufferBeginInfo,
) -> vk::Result {
    entry(
        "vkBeginCommandBuffer",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let cb = cbs::lookup(command_buffer);
            let next = match &cb {
                Some(cb) => cb.device.next.begin_command_buffer,
                None => unknown(command_buffer, |d| d.next.begin_command_buffer),
            };
            let Some(next) = next else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            if let Some(cb) = &cb {
                super::contained("starting a recording", || {
                    // SAFETY: the app's valid begin info.
                    let flags = unsafe { (*info).flags };
                    let continues = cb.secondary
                        && flags.contains(vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE);
                    cb.begin(continues);
                });
            }
            // SAFETY: the app's arguments, forwarded as they came.
            let result = unsafe { next(command_buffer, info) };
            if let (vk::Result::SUCCESS, Some(cb)) = (result, &cb) {
                // SAFETY: the command buffer is now recording.
                super::contained("marking the recording's start", || unsafe {
                    cb.after_begin()
                });
            }
            result
        },
    )
}

pub(super) unsafe extern "system" fn end_command_buffer(
    command_buffer: vk::CommandBuffer,
) -> vk::Result {
    entry(
        "vkEndCommandBuffer",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let cb = cbs::lookup(command_buffer);
            let next = match &cb {
                Some(cb) => cb.device.next.end_command_buffer,
                None => unknown(command_buffer, |d| d.next.end_command_buffer),
            };
            let Some(next) = next else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            if let Some(cb) = &cb {
                super::contained("finishing a recording", || cb.end());
            }
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(command_buffer) }
        },
    )
}

pub(super) unsafe extern "system" fn reset_command_buffer(
    command_buffer: vk::CommandBuffer,
    flags: vk::CommandBufferResetFlags,
) -> vk::Result {
    entry(
        "vkResetCommandBuffer",
        vk::Result::ERROR_INITIALIZATION_FAILED,
        || {
            let cb = cbs::lookup(command_buffer);
            let next = match &cb {
                Some(cb) => cb.device.next.reset_command_buffer,
                None => unknown(command_buffer, |d| d.next.reset_command_buffer),
            };
            let Some(next) = next else {
                return vk::Result::ERROR_INITIALIZATION_FAILED;
            };
            if let Some(cb) = &cb {
                super::contained("resetting a recording", || cb.reset());
            }
            // SAFETY: the app's arguments, forwarded as they came.
            unsafe { next(command_buffer, flags) }
        },
    )
}

// ---- Recording state: pipelines, render passes, labels, secondaries ----

/// Runs a hand-written recording hook: finds the state and the next command, or calls down blind.
fn with_cb<F: Copy>(
    command_buffer: vk::CommandBuffer,
    pick: fn(&crate::device::Device) -> Option<F>,
    known: impl FnOnce(&Arc<cbs::CommandBuffer>, F),
    blind: impl FnOnce(F),
) {
    match cbs::lookup(command_buffer) {
        Some(cb) => {
            if let Some(next) = pick(&cb.device) {
                known(&cb, next);
            }
        }
        None => {
            if let Some(next) = unknown(command_buffer, pick) {
                blind(next);
            }
        }
    }
}

pub(super) unsafe extern "system" fn cmd_bind_pipeline(
    command_buffer: vk::CommandBuffer,
    point: vk::PipelineBindPoint,
    pipeline: vk::Pipeline,
) {
    entry("vkCmdBindPipeline", (), || {
        // SAFETY (both closures): the app's arguments, forwarded as they came.
        with_cb(
            command_buffer,
            |d| d.next.cmd_bind_pipeline,
            |cb, next| {
                cb.bind_pipeline(point, pipeline);
                unsafe { next(command_buffer, point, pipeline) }
            },
            |next| unsafe { next(command_buffer, point, pipeline) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_begin_render_pass(
    command_buffer: vk::CommandBuffer,
    info: *const vk::RenderPassBeginInfo,
    contents: vk::SubpassContents,
) {
    entry("vkCmdBeginRenderPass", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_begin_render_pass,
            |cb, next| {
                // SAFETY: the app's valid begin info.
                let (pass, fb) = unsafe { ((*info).render_pass, (*info).framebuffer) };
                let params = [vk::Handle::as_raw(pass), vk::Handle::as_raw(fb)];
                // SAFETY: forwarded as they came.
                cb.begin_render_pass("vkCmdBeginRenderPass", &params, || unsafe {
                    next(command_buffer, info, contents)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, info, contents) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_begin_render_pass2(
    command_buffer: vk::CommandBuffer,
    info: *const vk::RenderPassBeginInfo,
    subpass: *const vk::SubpassBeginInfo,
) {
    entry("vkCmdBeginRenderPass2", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_begin_render_pass2,
            |cb, next| {
                // SAFETY: the app's valid begin info.
                let (pass, fb) = unsafe { ((*info).render_pass, (*info).framebuffer) };
                let params = [vk::Handle::as_raw(pass), vk::Handle::as_raw(fb)];
                // SAFETY: forwarded as they came.
                cb.begin_render_pass("vkCmdBeginRenderPass2", &params, || unsafe {
                    next(command_buffer, info, subpass)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, info, subpass) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_begin_rendering(
    command_buffer: vk::CommandBuffer,
    info: *const vk::RenderingInfo,
) {
    entry("vkCmdBeginRendering", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_begin_rendering,
            |cb, next| {
                // SAFETY: the app's valid rendering info.
                let (w, h, n) = unsafe {
                    let i = &*info;
                    (
                        i.render_area.extent.width,
                        i.render_area.extent.height,
                        i.color_attachment_count,
                    )
                };
                let params = [u64::from(w), u64::from(h), u64::from(n)];
                // SAFETY: forwarded as they came.
                cb.begin_render_pass("vkCmdBeginRendering", &params, || unsafe {
                    next(command_buffer, info)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, info) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_next_subpass(
    command_buffer: vk::CommandBuffer,
    contents: vk::SubpassContents,
) {
    entry("vkCmdNextSubpass", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_next_subpass,
            // SAFETY: forwarded as they came.
            |cb, next| {
                cb.state("vkCmdNextSubpass", &[], || unsafe {
                    next(command_buffer, contents)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, contents) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_next_subpass2(
    command_buffer: vk::CommandBuffer,
    begin: *const vk::SubpassBeginInfo,
    end: *const vk::SubpassEndInfo,
) {
    entry("vkCmdNextSubpass2", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_next_subpass2,
            // SAFETY: forwarded as they came.
            |cb, next| {
                cb.state("vkCmdNextSubpass2", &[], || unsafe {
                    next(command_buffer, begin, end)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, begin, end) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_end_render_pass(command_buffer: vk::CommandBuffer) {
    entry("vkCmdEndRenderPass", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_end_render_pass,
            // SAFETY: forwarded as they came.
            |cb, next| cb.end_render_pass("vkCmdEndRenderPass", || unsafe { next(command_buffer) }),
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_end_render_pass2(
    command_buffer: vk::CommandBuffer,
    end: *const vk::SubpassEndInfo,
) {
    entry("vkCmdEndRenderPass2", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_end_render_pass2,
            // SAFETY: forwarded as they came.
            |cb, next| {
                cb.end_render_pass("vkCmdEndRenderPass2", || unsafe {
                    next(command_buffer, end)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, end) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_end_rendering(command_buffer: vk::CommandBuffer) {
    entry("vkCmdEndRendering", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_end_rendering,
            // SAFETY: forwarded as they came.
            |cb, next| cb.end_render_pass("vkCmdEndRendering", || unsafe { next(command_buffer) }),
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer) },
        )
    })
}

/// The text of a debug label.
fn label_text(label: *const vk::DebugUtilsLabelEXT) -> String {
    // SAFETY: the app's valid label struct with a NUL-terminated name (or null).
    unsafe { label.as_ref() }
        .filter(|l| !l.p_label_name.is_null())
        // SAFETY: as above.
        .map(|l| {
            unsafe { CStr::from_ptr(l.p_label_name) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default()
}

pub(super) unsafe extern "system" fn cmd_begin_debug_utils_label_ext(
    command_buffer: vk::CommandBuffer,
    label: *const vk::DebugUtilsLabelEXT,
) {
    entry("vkCmdBeginDebugUtilsLabelEXT", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_begin_debug_utils_label_ext,
            |cb, next| {
                cb.label(label_text(label), false);
                // SAFETY: forwarded as they came.
                unsafe { next(command_buffer, label) }
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, label) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_insert_debug_utils_label_ext(
    command_buffer: vk::CommandBuffer,
    label: *const vk::DebugUtilsLabelEXT,
) {
    entry("vkCmdInsertDebugUtilsLabelEXT", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_insert_debug_utils_label_ext,
            |cb, next| {
                cb.label(label_text(label), true);
                // SAFETY: forwarded as they came.
                unsafe { next(command_buffer, label) }
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, label) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_end_debug_utils_label_ext(
    command_buffer: vk::CommandBuffer,
) {
    entry("vkCmdEndDebugUtilsLabelEXT", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_end_debug_utils_label_ext,
            |cb, next| {
                cb.end_label();
                // SAFETY: forwarded as they came.
                unsafe { next(command_buffer) }
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer) },
        )
    })
}

pub(super) unsafe extern "system" fn cmd_execute_commands(
    command_buffer: vk::CommandBuffer,
    count: u32,
    secondaries: *const vk::CommandBuffer,
) {
    entry("vkCmdExecuteCommands", (), || {
        with_cb(
            command_buffer,
            |d| d.next.cmd_execute_commands,
            |cb, next| {
                let list = if secondaries.is_null() {
                    &[][..]
                } else {
                    // SAFETY: the app's array of `count` handles.
                    unsafe { std::slice::from_raw_parts(secondaries, count as usize) }
                };
                let executed = list
                    .iter()
                    .filter_map(|&h| cbs::lookup(h))
                    .map(|s| Executed {
                        log: s.last_log(),
                        command_buffer: s,
                    })
                    .collect();
                // SAFETY: forwarded as they came.
                cb.execute_commands(executed, || unsafe {
                    next(command_buffer, count, secondaries)
                })
            },
            // SAFETY: forwarded as they came.
            |next| unsafe { next(command_buffer, count, secondaries) },
        )
    })
}

/// The hand-written hooks of this file.
pub(super) const HOOKS: &[Hook] = &[
    recording(hook!(
        Device,
        c"vkAllocateCommandBuffers",
        allocate_command_buffers as PFN_vkAllocateCommandBuffers
    )),
    recording(hook!(
        Device,
        c"vkFreeCommandBuffers",
        free_command_buffers as PFN_vkFreeCommandBuffers
    )),
    recording(hook!(
        Device,
        c"vkDestroyCommandPool",
        destroy_command_pool as PFN_vkDestroyCommandPool
    )),
    recording(hook!(
        Device,
        c"vkResetCommandPool",
        reset_command_pool as PFN_vkResetCommandPool
    )),
    recording(hook!(
        Device,
        c"vkBeginCommandBuffer",
        begin_command_buffer as PFN_vkBeginCommandBuffer
    )),
    recording(hook!(
        Device,
        c"vkEndCommandBuffer",
        end_command_buffer as PFN_vkEndCommandBuffer
    )),
    recording(hook!(
        Device,
        c"vkResetCommandBuffer",
        reset_command_buffer as PFN_vkResetCommandBuffer
    )),
    recording(hook!(
        Device,
        c"vkCmdBindPipeline",
        cmd_bind_pipeline as PFN_vkCmdBindPipeline
    )),
    recording(hook!(
        Device,
        c"vkCmdBeginRenderPass",
        cmd_begin_render_pass as PFN_vkCmdBeginRenderPass
    )),
    recording(hook!(
        Device,
        c"vkCmdBeginRenderPass2",
        cmd_begin_render_pass2 as PFN_vkCmdBeginRenderPass2
    )),
    recording(hook!(
        Device,
        c"vkCmdBeginRenderPass2KHR",
        cmd_begin_render_pass2 as PFN_vkCmdBeginRenderPass2
    )),
    recording(hook!(
        Device,
        c"vkCmdBeginRendering",
        cmd_begin_rendering as PFN_vkCmdBeginRendering
    )),
    recording(hook!(
        Device,
        c"vkCmdBeginRenderingKHR",
        cmd_begin_rendering as PFN_vkCmdBeginRendering
    )),
    recording(hook!(
        Device,
        c"vkCmdNextSubpass",
        cmd_next_subpass as PFN_vkCmdNextSubpass
    )),
    recording(hook!(
        Device,
        c"vkCmdNextSubpass2",
        cmd_next_subpass2 as PFN_vkCmdNextSubpass2
    )),
    recording(hook!(
        Device,
        c"vkCmdNextSubpass2KHR",
        cmd_next_subpass2 as PFN_vkCmdNextSubpass2
    )),
    recording(hook!(
        Device,
        c"vkCmdEndRenderPass",
        cmd_end_render_pass as PFN_vkCmdEndRenderPass
    )),
    recording(hook!(
        Device,
        c"vkCmdEndRenderPass2",
        cmd_end_render_pass2 as PFN_vkCmdEndRenderPass2
    )),
    recording(hook!(
        Device,
        c"vkCmdEndRenderPass2KHR",
        cmd_end_render_pass2 as PFN_vkCmdEndRenderPass2
    )),
    recording(hook!(
        Device,
        c"vkCmdEndRendering",
        cmd_end_rendering as PFN_vkCmdEndRendering
    )),
    recording(hook!(
        Device,
        c"vkCmdEndRenderingKHR",
        cmd_end_rendering as PFN_vkCmdEndRendering
    )),
    recording(hook!(
        Device,
        c"vkCmdBeginDebugUtilsLabelEXT",
        cmd_begin_debug_utils_label_ext as PFN_vkCmdBeginDebugUtilsLabelEXT
    )),
    recording(hook!(
        Device,
        c"vkCmdInsertDebugUtilsLabelEXT",
        cmd_insert_debug_utils_label_ext as PFN_vkCmdInsertDebugUtilsLabelEXT
    )),
    recording(hook!(
        Device,
        c"vkCmdEndDebugUtilsLabelEXT",
        cmd_end_debug_utils_label_ext as PFN_vkCmdEndDebugUtilsLabelEXT
    )),
    recording(hook!(
        Device,
        c"vkCmdExecuteCommands",
        cmd_execute_commands as PFN_vkCmdExecuteCommands
    )),
];
