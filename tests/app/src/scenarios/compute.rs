//! `compute`: three dependent dispatches in one command buffer; and the compute pipeline (`ComputeKit`)
//! the other scenarios share.

use anyhow::Result;
use ash::vk;

use super::Outcome;
use crate::context::{buffer_barrier, fnv1a, Access, Context, Memory, Owned, VkResultExt};
use crate::{shaders, Options};

/// Invocations per side of the standard dispatch: GRID x GRID floats.
pub const GRID: u32 = 64;
/// Workgroup size per side, as declared in compute.comp.
pub const GROUP: u32 = 8;
/// Bytes of one GRID x GRID float array.
pub const GRID_BYTES: vk::DeviceSize = (GRID * GRID * 4) as vk::DeviceSize;
/// Initial value of every float (bit pattern of 1.0f32), written with vkCmdFillBuffer.
const INITIAL_BITS: u32 = 0x3f80_0000;

/// compute.comp's push constants.
#[derive(Clone, Copy, Debug)]
pub struct ComputePush {
    pub pass: u32,
    pub offset: u32,
    pub width: u32,
    pub scale: f32,
}

impl ComputePush {
    /// Pass `pass` over a whole GRID x GRID array.
    pub fn grid(pass: u32) -> Self {
        ComputePush {
            pass,
            offset: 0,
            width: GRID,
            scale: 0.75,
        }
    }

    pub fn bytes(&self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[0..4].copy_from_slice(&self.pass.to_ne_bytes());
        out[4..8].copy_from_slice(&self.offset.to_ne_bytes());
        out[8..12].copy_from_slice(&self.width.to_ne_bytes());
        out[12..16].copy_from_slice(&self.scale.to_ne_bytes());
        out
    }
}

/// compute.comp as a pipeline, with one storage-buffer binding and a descriptor pool for `max_sets` sets.
/// Only handles: it can be shared with worker threads.
#[derive(Clone, Copy)]
pub struct ComputeKit {
    pub set_layout: vk::DescriptorSetLayout,
    pub layout: vk::PipelineLayout,
    pub pipeline: vk::Pipeline,
    pool: vk::DescriptorPool,
}

impl ComputeKit {
    /// The kit, destroyed by the context with the scenario's other objects.
    pub fn new(cx: &Context, max_sets: u32) -> Result<ComputeKit> {
        Self::build(cx, max_sets, &|object| cx.own(object))
    }

    /// The kit, for the caller to [`destroy`](Self::destroy) (if creation fails half way, what was made
    /// is left to process exit).
    pub fn unowned(cx: &Context, max_sets: u32) -> Result<ComputeKit> {
        Self::build(cx, max_sets, &|_| {})
    }

    /// Destroys an [`unowned`](Self::unowned) kit.
    pub fn destroy(self, cx: &Context) {
        let d = &cx.device;
        // SAFETY: the caller's own objects; no pending work uses them any more.
        unsafe {
            d.destroy_pipeline(self.pipeline, None);
            d.destroy_pipeline_layout(self.layout, None);
            d.destroy_descriptor_set_layout(self.set_layout, None);
            d.destroy_descriptor_pool(self.pool, None);
        }
    }

    fn build(cx: &Context, max_sets: u32, keep: &dyn Fn(Owned)) -> Result<ComputeKit> {
        let d = &cx.device;
        let bindings = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        let set_layout_info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        let set_layout = unsafe { d.create_descriptor_set_layout(&set_layout_info, None) }
            .vk_context("vkCreateDescriptorSetLayout")?;
        keep(Owned::DescriptorSetLayout(set_layout));

        let push_ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(16)];
        let set_layouts = [set_layout];
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&set_layouts)
            .push_constant_ranges(&push_ranges);
        let layout = unsafe { d.create_pipeline_layout(&layout_info, None) }
            .vk_context("vkCreatePipelineLayout")?;
        keep(Owned::PipelineLayout(layout));

        let module = cx.create_shader_module(shaders::COMPUTE)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout);
        let created =
            unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
        cx.destroy_shader_module(module);
        let pipeline = created
            .map_err(|(_, r)| r)
            .vk_context("vkCreateComputePipelines")?[0];
        keep(Owned::Pipeline(pipeline));

        let pool_sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: max_sets,
        }];
        let pool_info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(max_sets)
            .pool_sizes(&pool_sizes);
        let pool = unsafe { d.create_descriptor_pool(&pool_info, None) }
            .vk_context("vkCreateDescriptorPool")?;
        keep(Owned::DescriptorPool(pool));

        Ok(ComputeKit {
            set_layout,
            layout,
            pipeline,
            pool,
        })
    }

    /// A descriptor set binding `range` bytes of `buffer` at `offset` as the shader's `values` array.
    pub fn descriptor_set(
        &self,
        cx: &Context,
        buffer: vk::Buffer,
        offset: vk::DeviceSize,
        range: vk::DeviceSize,
    ) -> Result<vk::DescriptorSet> {
        let set_layouts = [self.set_layout];
        let alloc = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.pool)
            .set_layouts(&set_layouts);
        let set = unsafe { cx.device.allocate_descriptor_sets(&alloc) }
            .vk_context("vkAllocateDescriptorSets")?[0];
        let buffer_info = [vk::DescriptorBufferInfo {
            buffer,
            offset,
            range,
        }];
        let write = vk::WriteDescriptorSet::default()
            .dst_set(set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&buffer_info);
        unsafe { cx.device.update_descriptor_sets(&[write], &[]) };
        Ok(set)
    }

    /// As [`ComputeKit::record_grid`] without the dispatch: what is left of it when the dispatch is not
    /// recorded (`--omit`, the reference for Blackbox's skipping, which keeps state commands).
    pub fn record_grid_state(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        set: vk::DescriptorSet,
        pass: u32,
    ) {
        self.record_state(device, cmd, set, ComputePush::grid(pass));
    }

    fn record_state(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        set: vk::DescriptorSet,
        push: ComputePush,
    ) {
        unsafe {
            device.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            device.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.layout,
                0,
                &[set],
                &[],
            );
            device.cmd_push_constants(
                cmd,
                self.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                &push.bytes(),
            );
        }
    }

    /// Binds the pipeline and `set`, pushes `push` and dispatches `groups` workgroups.
    pub fn record_dispatch(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        set: vk::DescriptorSet,
        push: ComputePush,
        groups: [u32; 2],
    ) {
        self.record_state(device, cmd, set, push);
        unsafe { device.cmd_dispatch(cmd, groups[0], groups[1], 1) };
    }

    /// Pass `pass` over the GRID x GRID array bound by `set`.
    pub fn record_grid(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        set: vk::DescriptorSet,
        pass: u32,
    ) {
        self.record_dispatch(
            device,
            cmd,
            set,
            ComputePush::grid(pass),
            [GRID / GROUP, GRID / GROUP],
        );
    }
}

/// Sets `size` bytes of `buffer` at `offset` to 1.0f and makes them visible to the compute shader.
pub fn record_init(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    buffer: vk::Buffer,
    offset: vk::DeviceSize,
    size: vk::DeviceSize,
) {
    unsafe { device.cmd_fill_buffer(cmd, buffer, offset, size, INITIAL_BITS) };
    record_init_barrier(device, cmd, buffer, offset, size);
}

/// [`record_init`]'s barrier alone: what is left of it when the fill is not recorded (`--omit`).
pub fn record_init_barrier(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    buffer: vk::Buffer,
    offset: vk::DeviceSize,
    size: vk::DeviceSize,
) {
    buffer_barrier(
        device,
        cmd,
        buffer,
        offset,
        size,
        Access::TRANSFER_WRITE,
        Access::COMPUTE_READ_WRITE,
    );
}

/// Usage of a buffer the compute shader works on, initialised by fill and read back by copy.
pub const VALUES_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw()
        | vk::BufferUsageFlags::TRANSFER_DST.as_raw()
        | vk::BufferUsageFlags::TRANSFER_SRC.as_raw(),
);

pub fn run(cx: &Context, _options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let kit = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let set = kit.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;

    cx.submit_and_wait(|cmd| {
        record_init(d, cmd, values.handle, 0, GRID_BYTES);
        for pass in 0..3 {
            if pass > 0 {
                // Each pass reads what the previous one wrote.
                cx.buffer_barrier(
                    cmd,
                    &values,
                    Access::COMPUTE_WRITE,
                    Access::COMPUTE_READ_WRITE,
                );
            }
            kit.record_grid(d, cmd, set, pass);
        }
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
