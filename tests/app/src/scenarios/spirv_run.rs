//! `spirv-run`: runs each `--spirv` file once, a compute shader or a fragment shader, with whatever set-0
//! interface it declares (see `reflect`): storage buffers of 256 KiB and uniform buffers of 4 KiB holding a
//! fixed float pattern, 64x64 storage images (rgba32f or rgba8, cleared to a fixed color), 64x64 rgba32f
//! sampled images holding the pattern, nearest-filtering samplers, and 128 bytes of push constants holding
//! the small integers 1, 2, 3... (no loop bound read from them runs long). Specialization constants keep
//! their defaults; the device has robust buffer access (a shader that reads an index from the pattern stays
//! in bounds).
//!
//! - A compute shader gets 4096 invocations in x, or a 64x64 grid for 2D workgroups.
//! - A fragment shader draws one triangle over a 64x64 target, behind a vertex shader made here to match
//!   its inputs (`companion_vertex_shader`): float inputs vary across the target, integer ones are flat.
//!   Each output goes to an rgba32f attachment (or `--attachment-format`'s) cleared to a fixed color,
//!   writing only the components the output has.
//!
//! It prints `spirv <file name> checksum <hex>` over every storage buffer, storage image and attachment, in
//! binding and location order: the same module must give the same bits with and without Blackbox. A module
//! it cannot run prints `spirv <file name> skipped: <reason>` (another stage, another interface, a
//! capability the device lacks) and the scenario goes on.

use std::ffi::CString;

use anyhow::{Context as _, Result};
use ash::vk;

use super::Outcome;
use crate::context::{
    Access, Buffer, Context, Fnv1a, Image, Memory, Owned, VkResultExt, COLOR_LAYERS, COLOR_RANGE,
};
use crate::reflect::{shader_interface, Descriptor, Scalar, ShaderInterface, Stage, Varying};
use crate::Options;

const STORAGE_BYTES: u64 = 256 * 1024;
const UNIFORM_BYTES: u64 = 4 * 1024;
const IMAGE: vk::Extent2D = vk::Extent2D {
    width: 64,
    height: 64,
};
const PUSH_BYTES: u32 = 128;
const INVOCATIONS_1D: u32 = 4096;

/// The float pattern of buffers and sampled images: values in [-2, 3), no NaN or infinity.
fn pattern(bytes: u64) -> Vec<u8> {
    (0..bytes / 4)
        .map(|i| ((i * 37) % 101) as f32 * 0.05 - 2.0)
        .flat_map(f32::to_ne_bytes)
        .collect()
}

/// Why this device cannot run a module with these capabilities, if it cannot.
fn missing_feature(cx: &Context, capabilities: &[u32]) -> Option<String> {
    let f = &cx.features;
    capabilities.iter().find_map(|&c| {
        let (have, what) = match c {
            9 => (f.shader_float16, "Float16"),
            10 => (f.shader_float64, "Float64"),
            11 => (f.shader_int64, "Int64"),
            22 => (f.shader_int16, "Int16"),
            4433..=4435 => (f.storage_16bit, "16-bit storage"),
            55 | 56 => (f.images_without_format, "storage images without format"),
            5345 | 5346 => (f.vulkan_memory_model, "the Vulkan memory model"),
            41 => (f.resource_residency, "shaderResourceResidency"),
            _ => (true, ""),
        };
        (!have).then(|| format!("the device lacks {what} (capability {c})"))
    })
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let mut all = Fnv1a::new();
    for path in &options.stress.spirv_files {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = file_name(path);
        let interface = match runnable(cx, &bytes) {
            Ok(interface) => interface,
            Err(reason) => {
                println!("spirv {name} skipped: {reason}");
                continue;
            }
        };
        let sum = match interface.stage {
            Stage::Compute => run_compute(cx, &bytes, &interface, &name),
            Stage::Fragment => run_fragment(cx, &bytes, &interface, &name, options),
        }
        .with_context(|| format!("running {}", path.display()))?;
        println!("spirv {name} checksum {sum:016x}");
        all.update(&sum.to_le_bytes());
    }
    Ok(Outcome::Checksum(all.finish()))
}

/// A path's file name, as the scenarios print it.
pub(super) fn file_name(path: &std::path::Path) -> String {
    path.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// The interface of a module this device can run, or why it cannot.
pub(super) fn runnable(cx: &Context, bytes: &[u8]) -> std::result::Result<ShaderInterface, String> {
    let interface = ash::util::read_spv(&mut std::io::Cursor::new(bytes))
        .map_err(anyhow::Error::from)
        .and_then(|words| shader_interface(&words))
        .map_err(|e| e.to_string())?;
    let missing = missing_feature(cx, &interface.capabilities)
        .or_else(|| {
            (interface.local_size_id && !cx.features.maintenance4)
                .then(|| "the device lacks maintenance4 (LocalSizeId)".to_string())
        })
        .or_else(|| {
            (interface.stage == Stage::Fragment && !cx.features.dynamic_rendering)
                .then(|| "the device lacks dynamicRendering".to_string())
        });
    match missing {
        Some(reason) => Err(reason),
        None => Ok(interface),
    }
}

/// What a binding was given.
enum Bound {
    Buffer(Buffer),
    /// A storage image and the host buffer its texels are copied into.
    StorageImage(Image, Buffer),
    SampledImage(Image),
    Sampler(vk::Sampler),
    /// A sampled image with its sampler.
    Combined(Image, vk::Sampler),
}

/// The descriptors, layouts and push constants of a module, and what they are bound to.
pub(super) struct Resources {
    bound: Vec<Bound>,
    /// Sampled images and the buffers their texels are uploaded from.
    uploads: Vec<(Image, Buffer)>,
    pub(super) layout: vk::PipelineLayout,
    set: Option<vk::DescriptorSet>,
    push: Option<Vec<u8>>,
}

impl Resources {
    pub(super) fn new(
        cx: &Context,
        interface: &ShaderInterface,
        stage: vk::ShaderStageFlags,
    ) -> Result<Self> {
        let d = &cx.device;
        let mut bound = Vec::new();
        let mut uploads = Vec::new();
        for &(_, descriptor) in &interface.bindings {
            bound.push(match descriptor {
                Descriptor::StorageBuffer => Bound::Buffer(cx.create_buffer_with_data(
                    &pattern(STORAGE_BYTES),
                    vk::BufferUsageFlags::STORAGE_BUFFER,
                )?),
                Descriptor::UniformBuffer => Bound::Buffer(cx.create_buffer_with_data(
                    &pattern(UNIFORM_BYTES),
                    vk::BufferUsageFlags::UNIFORM_BUFFER,
                )?),
                Descriptor::StorageImage { rgba8 } => {
                    let format = if rgba8 {
                        vk::Format::R8G8B8A8_UNORM
                    } else {
                        vk::Format::R32G32B32A32_SFLOAT
                    };
                    let usage = vk::ImageUsageFlags::STORAGE
                        | vk::ImageUsageFlags::TRANSFER_SRC
                        | vk::ImageUsageFlags::TRANSFER_DST;
                    let image = cx.create_image_with_format(IMAGE, format, usage)?;
                    Bound::StorageImage(image, readback_buffer(cx, &image)?)
                }
                Descriptor::SampledImage | Descriptor::CombinedImageSampler => {
                    let usage = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST;
                    let image =
                        cx.create_image_with_format(IMAGE, vk::Format::R32G32B32A32_SFLOAT, usage)?;
                    let upload = cx.create_buffer_with_data(
                        &pattern(image.byte_size()),
                        vk::BufferUsageFlags::TRANSFER_SRC,
                    )?;
                    uploads.push((image, upload));
                    if descriptor == Descriptor::SampledImage {
                        Bound::SampledImage(image)
                    } else {
                        Bound::Combined(image, create_sampler(cx)?)
                    }
                }
                Descriptor::Sampler => Bound::Sampler(create_sampler(cx)?),
            });
        }

        let types: Vec<vk::DescriptorType> = interface
            .bindings
            .iter()
            .map(|&(_, descriptor)| match descriptor {
                Descriptor::StorageBuffer => vk::DescriptorType::STORAGE_BUFFER,
                Descriptor::UniformBuffer => vk::DescriptorType::UNIFORM_BUFFER,
                Descriptor::StorageImage { .. } => vk::DescriptorType::STORAGE_IMAGE,
                Descriptor::SampledImage => vk::DescriptorType::SAMPLED_IMAGE,
                Descriptor::CombinedImageSampler => vk::DescriptorType::COMBINED_IMAGE_SAMPLER,
                Descriptor::Sampler => vk::DescriptorType::SAMPLER,
            })
            .collect();
        let layout_bindings: Vec<_> = interface
            .bindings
            .iter()
            .zip(&types)
            .map(|(&(binding, _), &ty)| {
                vk::DescriptorSetLayoutBinding::default()
                    .binding(binding)
                    .descriptor_type(ty)
                    .descriptor_count(1)
                    .stage_flags(stage)
            })
            .collect();
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&layout_bindings);
        let set_layout = unsafe { d.create_descriptor_set_layout(&info, None) }
            .vk_context("vkCreateDescriptorSetLayout")?;
        cx.own(Owned::DescriptorSetLayout(set_layout));
        let push_ranges = [vk::PushConstantRange::default()
            .stage_flags(stage)
            .size(PUSH_BYTES)];
        let set_layouts = [set_layout];
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&set_layouts)
            .push_constant_ranges(if interface.push_constants {
                &push_ranges
            } else {
                &[]
            });
        let layout = unsafe { d.create_pipeline_layout(&layout_info, None) }
            .vk_context("vkCreatePipelineLayout")?;
        cx.own(Owned::PipelineLayout(layout));
        let set = if types.is_empty() {
            None
        } else {
            let sizes: Vec<_> = types
                .iter()
                .map(|&ty| vk::DescriptorPoolSize {
                    ty,
                    descriptor_count: 1,
                })
                .collect();
            let pool_info = vk::DescriptorPoolCreateInfo::default()
                .max_sets(1)
                .pool_sizes(&sizes);
            let pool = unsafe { d.create_descriptor_pool(&pool_info, None) }
                .vk_context("vkCreateDescriptorPool")?;
            cx.own(Owned::DescriptorPool(pool));
            let alloc = vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(pool)
                .set_layouts(&set_layouts);
            let set = unsafe { d.allocate_descriptor_sets(&alloc) }
                .vk_context("vkAllocateDescriptorSets")?[0];
            write_descriptors(cx, set, interface, &types, &bound);
            Some(set)
        };
        let push = interface
            .push_constants
            .then(|| (1..=PUSH_BYTES / 4).flat_map(u32::to_ne_bytes).collect());
        Ok(Resources {
            bound,
            uploads,
            layout,
            set,
            push,
        })
    }

    /// Uploads the sampled images and clears the storage images, ready for `stage`'s shaders.
    fn record_setup(&self, d: &ash::Device, cmd: vk::CommandBuffer) {
        for (image, upload) in &self.uploads {
            image_barrier(d, cmd, image, UNDEFINED, TRANSFER_DST);
            let region = vk::BufferImageCopy::default()
                .image_subresource(COLOR_LAYERS)
                .image_extent(vk::Extent3D {
                    width: IMAGE.width,
                    height: IMAGE.height,
                    depth: 1,
                });
            unsafe {
                d.cmd_copy_buffer_to_image(
                    cmd,
                    upload.handle,
                    image.handle,
                    TRANSFER_DST,
                    &[region],
                )
            };
            image_barrier(d, cmd, image, TRANSFER_DST, READ_ONLY);
        }
        for b in &self.bound {
            if let Bound::StorageImage(image, _) = b {
                image_barrier(d, cmd, image, UNDEFINED, TRANSFER_DST);
                let color = vk::ClearColorValue {
                    float32: [0.25, 0.5, 0.75, 1.0],
                };
                unsafe {
                    d.cmd_clear_color_image(cmd, image.handle, TRANSFER_DST, &color, &[COLOR_RANGE])
                };
                image_barrier(d, cmd, image, TRANSFER_DST, vk::ImageLayout::GENERAL);
            }
        }
    }

    /// Binds the set and pushes the constants.
    fn record_bind(&self, d: &ash::Device, cmd: vk::CommandBuffer, point: vk::PipelineBindPoint) {
        unsafe {
            if let Some(set) = self.set {
                d.cmd_bind_descriptor_sets(cmd, point, self.layout, 0, &[set], &[]);
            }
            if let Some(push) = &self.push {
                let stages = match point {
                    vk::PipelineBindPoint::COMPUTE => vk::ShaderStageFlags::COMPUTE,
                    _ => vk::ShaderStageFlags::FRAGMENT,
                };
                d.cmd_push_constants(cmd, self.layout, stages, 0, push);
            }
        }
    }

    /// Copies what the shaders wrote where the host can read it.
    fn record_readback(&self, cx: &Context, cmd: vk::CommandBuffer) {
        for b in &self.bound {
            match b {
                Bound::Buffer(buffer) => {
                    cx.buffer_barrier(cmd, buffer, ALL_WRITES, Access::HOST_READ)
                }
                Bound::StorageImage(image, readback) => {
                    image_barrier(
                        &cx.device,
                        cmd,
                        image,
                        vk::ImageLayout::GENERAL,
                        TRANSFER_SRC,
                    );
                    cx.record_image_readback(cmd, image, readback);
                }
                _ => {}
            }
        }
    }

    /// Adds the storage buffers and images, in binding order.
    fn checksum(&self, interface: &ShaderInterface, sum: &mut Fnv1a) {
        for (b, &(_, descriptor)) in self.bound.iter().zip(&interface.bindings) {
            match b {
                Bound::Buffer(buffer) if descriptor == Descriptor::StorageBuffer => {
                    sum.update(buffer.bytes());
                }
                Bound::StorageImage(_, readback) => {
                    sum.update(readback.bytes());
                }
                _ => {}
            }
        }
    }
}

const UNDEFINED: vk::ImageLayout = vk::ImageLayout::UNDEFINED;
const TRANSFER_DST: vk::ImageLayout = vk::ImageLayout::TRANSFER_DST_OPTIMAL;
const TRANSFER_SRC: vk::ImageLayout = vk::ImageLayout::TRANSFER_SRC_OPTIMAL;
const READ_ONLY: vk::ImageLayout = vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL;

fn readback_buffer(cx: &Context, image: &Image) -> Result<Buffer> {
    cx.create_buffer(
        image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )
}

fn run_compute(cx: &Context, spirv: &[u8], interface: &ShaderInterface, name: &str) -> Result<u64> {
    let res = Resources::new(cx, interface, vk::ShaderStageFlags::COMPUTE)?;
    let module = cx.create_shader_module(spirv)?;
    let created = create_compute_pipeline(cx, module, interface, res.layout);
    cx.destroy_shader_module(module);
    let pipeline = keep_pipeline(cx, created?, name)?;
    cx.submit_and_wait(|cmd| {
        record_dispatch(cx, cmd, &res, pipeline, compute_groups(interface));
        Ok(())
    })?;
    let mut sum = Fnv1a::new();
    res.checksum(interface, &mut sum);
    Ok(sum.finish())
}

/// The workgroups that give 4096 invocations in x, or a 64x64 grid for 2D workgroups.
fn compute_groups(interface: &ShaderInterface) -> [u32; 3] {
    let [lx, ly, _] = interface.local_size.map(|n| n.max(1));
    if ly > 1 {
        [IMAGE.width.div_ceil(lx), IMAGE.height.div_ceil(ly), 1]
    } else {
        [INVOCATIONS_1D.div_ceil(lx), 1, 1]
    }
}

/// A compute pipeline of `module`'s entry point (one vkCreateComputePipelines call, no pipeline cache).
pub(super) fn create_compute_pipeline(
    cx: &Context,
    module: vk::ShaderModule,
    interface: &ShaderInterface,
    layout: vk::PipelineLayout,
) -> Result<vk::Pipeline> {
    let entry = CString::new(interface.entry.as_str()).unwrap_or_default();
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(&entry);
    let info = vk::ComputePipelineCreateInfo::default()
        .stage(stage)
        .layout(layout);
    let created = unsafe {
        cx.device
            .create_compute_pipelines(vk::PipelineCache::null(), &[info], None)
    };
    Ok(created
        .map_err(|(_, r)| r)
        .vk_context("vkCreateComputePipelines")?[0])
}

/// Records the set-up, a dispatch of `groups` with `pipeline`, and the readback.
pub(super) fn record_dispatch(
    cx: &Context,
    cmd: vk::CommandBuffer,
    res: &Resources,
    pipeline: vk::Pipeline,
    groups: [u32; 3],
) {
    let d = &cx.device;
    res.record_setup(d, cmd);
    unsafe { d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline) };
    res.record_bind(d, cmd, vk::PipelineBindPoint::COMPUTE);
    unsafe { d.cmd_dispatch(cmd, groups[0], groups[1], groups[2]) };
    res.record_readback(cx, cmd);
}

fn run_fragment(
    cx: &Context,
    spirv: &[u8],
    interface: &ShaderInterface,
    name: &str,
    options: &Options,
) -> Result<u64> {
    let format = options.stress.attachment_format;
    let targets = fragment_targets(cx, interface, format)?;
    let res = Resources::new(cx, interface, vk::ShaderStageFlags::FRAGMENT)?;
    let vertex = cx.create_shader_module(&companion_vertex_shader(&interface.inputs))?;
    let fragment = cx.create_shader_module(spirv)?;
    let created = create_fragment_pipeline(cx, vertex, fragment, interface, res.layout, format);
    cx.destroy_shader_module(vertex);
    cx.destroy_shader_module(fragment);
    let pipeline = keep_pipeline(cx, created?, name)?;
    cx.submit_and_wait(|cmd| {
        record_draw(cx, cmd, &res, &targets, pipeline);
        Ok(())
    })?;
    let mut sum = Fnv1a::new();
    for (_, readback) in &targets {
        sum.update(readback.bytes());
    }
    res.checksum(interface, &mut sum);
    Ok(sum.finish())
}

/// The attachments of a fragment shader's outputs, of `format` (attachment i is the output at location i),
/// each with the host buffer it is read back into. Fails for interfaces this scenario cannot draw.
pub(super) fn fragment_targets(
    cx: &Context,
    interface: &ShaderInterface,
    format: vk::Format,
) -> Result<Vec<(Image, Buffer)>> {
    if interface.outputs.len() > 1 && !cx.features.independent_blend {
        anyhow::bail!("several outputs need independentBlend (each has its own write mask)");
    }
    if let Some(v) = interface.outputs.iter().find(|v| v.scalar != Scalar::Float) {
        anyhow::bail!(
            "output at location {}: only float outputs are read back",
            v.location
        );
    }
    // Attachment i is the output at location i: locations must be 0..n.
    if interface
        .outputs
        .iter()
        .enumerate()
        .any(|(i, v)| v.location != i as u32)
    {
        anyhow::bail!("output locations are not 0..n");
    }
    let mut targets = Vec::new();
    for _ in &interface.outputs {
        let usage = vk::ImageUsageFlags::COLOR_ATTACHMENT | vk::ImageUsageFlags::TRANSFER_SRC;
        let image = cx.create_image_with_format(IMAGE, format, usage)?;
        targets.push((image, readback_buffer(cx, &image)?));
    }
    Ok(targets)
}

const SCISSOR: vk::Rect2D = vk::Rect2D {
    offset: vk::Offset2D { x: 0, y: 0 },
    extent: IMAGE,
};

/// A graphics pipeline (dynamic rendering) of `vertex` (a `companion_vertex_shader`) and `fragment`, with a
/// 64x64 viewport and an attachment of `format` per output, writing the output's components only (one
/// vkCreateGraphicsPipelines call, no pipeline cache).
pub(super) fn create_fragment_pipeline(
    cx: &Context,
    vertex: vk::ShaderModule,
    fragment: vk::ShaderModule,
    interface: &ShaderInterface,
    layout: vk::PipelineLayout,
    format: vk::Format,
) -> Result<vk::Pipeline> {
    let entry = CString::new(interface.entry.as_str()).unwrap_or_default();
    let stages = [
        vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::VERTEX)
            .module(vertex)
            .name(c"main"),
        vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::FRAGMENT)
            .module(fragment)
            .name(&entry),
    ];
    let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
    let assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
        .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
    let viewports = [vk::Viewport {
        x: 0.0,
        y: 0.0,
        width: IMAGE.width as f32,
        height: IMAGE.height as f32,
        min_depth: 0.0,
        max_depth: 1.0,
    }];
    let scissors = [SCISSOR];
    let viewport = vk::PipelineViewportStateCreateInfo::default()
        .viewports(&viewports)
        .scissors(&scissors);
    let raster = vk::PipelineRasterizationStateCreateInfo::default()
        .polygon_mode(vk::PolygonMode::FILL)
        .cull_mode(vk::CullModeFlags::NONE)
        .line_width(1.0);
    let multisample = vk::PipelineMultisampleStateCreateInfo::default()
        .rasterization_samples(vk::SampleCountFlags::TYPE_1);
    let blends: Vec<_> = interface
        .outputs
        .iter()
        .map(|v| {
            let mask = [
                vk::ColorComponentFlags::R,
                vk::ColorComponentFlags::G,
                vk::ColorComponentFlags::B,
                vk::ColorComponentFlags::A,
            ][..v.components.min(4) as usize]
                .iter()
                .fold(vk::ColorComponentFlags::empty(), |m, &c| m | c);
            vk::PipelineColorBlendAttachmentState::default().color_write_mask(mask)
        })
        .collect();
    let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&blends);
    let formats = vec![format; interface.outputs.len()];
    let mut rendering =
        vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&formats);
    let info = vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(&vertex_input)
        .input_assembly_state(&assembly)
        .viewport_state(&viewport)
        .rasterization_state(&raster)
        .multisample_state(&multisample)
        .color_blend_state(&blend)
        .layout(layout)
        .push_next(&mut rendering);
    let created = unsafe {
        cx.device
            .create_graphics_pipelines(vk::PipelineCache::null(), &[info], None)
    };
    Ok(created
        .map_err(|(_, r)| r)
        .vk_context("vkCreateGraphicsPipelines")?[0])
}

/// Records the set-up, one triangle over the 64x64 targets with `pipeline`, and the readback.
pub(super) fn record_draw(
    cx: &Context,
    cmd: vk::CommandBuffer,
    res: &Resources,
    targets: &[(Image, Buffer)],
    pipeline: vk::Pipeline,
) {
    let d = &cx.device;
    res.record_setup(d, cmd);
    let attachments: Vec<_> = targets
        .iter()
        .map(|(image, _)| {
            image_barrier(d, cmd, image, UNDEFINED, ATTACHMENT);
            vk::RenderingAttachmentInfo::default()
                .image_view(image.view)
                .image_layout(ATTACHMENT)
                .load_op(vk::AttachmentLoadOp::CLEAR)
                .store_op(vk::AttachmentStoreOp::STORE)
                .clear_value(vk::ClearValue {
                    color: vk::ClearColorValue {
                        float32: [0.1, 0.2, 0.3, 0.4],
                    },
                })
        })
        .collect();
    let rendering = vk::RenderingInfo::default()
        .render_area(SCISSOR)
        .layer_count(1)
        .color_attachments(&attachments);
    unsafe {
        d.cmd_begin_rendering(cmd, &rendering);
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, pipeline);
    }
    res.record_bind(d, cmd, vk::PipelineBindPoint::GRAPHICS);
    unsafe {
        d.cmd_draw(cmd, 3, 1, 0, 0);
        d.cmd_end_rendering(cmd);
    }
    for (image, readback) in targets {
        image_barrier(d, cmd, image, ATTACHMENT, TRANSFER_SRC);
        cx.record_image_readback(cmd, image, readback);
    }
    res.record_readback(cx, cmd);
}

/// Keeps `pipeline` until the scenario ends (the context owns it), named after the module.
fn keep_pipeline(cx: &Context, pipeline: vk::Pipeline, name: &str) -> Result<vk::Pipeline> {
    cx.own(Owned::Pipeline(pipeline));
    cx.set_name(pipeline, &CString::new(name).unwrap_or_default())?;
    Ok(pipeline)
}

const ATTACHMENT: vk::ImageLayout = vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL;
/// Every stage this scenario's commands use (named, not ALL_COMMANDS: best practices reports that).
const WORK_STAGES: vk::PipelineStageFlags = vk::PipelineStageFlags::from_raw(
    vk::PipelineStageFlags::TRANSFER.as_raw()
        | vk::PipelineStageFlags::VERTEX_SHADER.as_raw()
        | vk::PipelineStageFlags::FRAGMENT_SHADER.as_raw()
        | vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT.as_raw()
        | vk::PipelineStageFlags::COMPUTE_SHADER.as_raw(),
);
/// Whatever the commands before wrote.
const ALL_WRITES: Access = Access {
    stage: WORK_STAGES,
    access: vk::AccessFlags::MEMORY_WRITE,
};

/// A vertex shader (SPIR-V 1.0) that draws one triangle covering the 64x64 target (vertices (-1,-1),
/// (3,-1), (-1,3)) and writes every input of the fragment shader: float component k at location l is
/// `0.25 + 0.1 l + 0.05 k + s/2`, where s runs from 0 to 1 across the target in x (even k) or y (odd k);
/// integer components are `3 l + k`, flat.
pub fn companion_vertex_shader(inputs: &[Varying]) -> Vec<u8> {
    const FUNCTION_STORAGE: u32 = 7;
    let mut a = Assembler::default();
    let void = a.ty(19, &[]);
    let fn_ty = a.ty(33, &[void]);
    let float = a.ty(22, &[32]);
    let int = a.ty(21, &[32, 1]);
    let uint = a.ty(21, &[32, 0]);
    let three = a.constant(43, uint, &[3]);
    let vec4 = a.ty(23, &[float, 4]);
    let positions: [[f32; 2]; 3] = [[-1.0, -1.0], [3.0, -1.0], [-1.0, 3.0]];

    // (the input it feeds, None for the position; its constant value at each vertex; its type)
    let mut outputs = Vec::new();
    let position_values: Vec<u32> = positions
        .iter()
        .map(|p| {
            let c: Vec<u32> = [p[0], p[1], 0.0, 1.0]
                .iter()
                .map(|&f| a.constant(43, float, &[f.to_bits()]))
                .collect();
            a.constant(44, vec4, &c)
        })
        .collect();
    outputs.push((None, position_values, vec4));
    for v in inputs {
        let scalar = match v.scalar {
            Scalar::Float => float,
            Scalar::Int => int,
            Scalar::Uint => uint,
        };
        let ty = if v.components == 1 {
            scalar
        } else {
            a.ty(23, &[scalar, v.components])
        };
        let values: Vec<u32> = positions
            .iter()
            .map(|p| {
                let c: Vec<u32> = (0..v.components)
                    .map(|k| {
                        let word = match v.scalar {
                            Scalar::Float => {
                                let s = (if k % 2 == 0 { p[0] } else { p[1] } + 1.0) / 2.0;
                                (0.25 + 0.1 * v.location as f32 + 0.05 * k as f32 + s / 2.0)
                                    .to_bits()
                            }
                            Scalar::Int | Scalar::Uint => 3 * v.location + k,
                        };
                        a.constant(43, scalar, &[word])
                    })
                    .collect();
                if v.components == 1 {
                    c[0]
                } else {
                    a.constant(44, ty, &c)
                }
            })
            .collect();
        outputs.push((Some(*v), values, ty));
    }

    // Interface variables.
    let int_in = a.ty(32, &[1, int]);
    let vertex_index = a.variable(int_in, 1);
    a.decorate(vertex_index, &[11, 42]); // BuiltIn VertexIndex
    let mut interface = vec![vertex_index];
    let mut body = Vec::new();
    let mut locals = Vec::new();
    let label = a.id();
    let index = a.id();
    let main_id = a.id();
    body.push(op(61, &[int, index, vertex_index])); // OpLoad
    for (varying, values, ty) in outputs {
        let out_ptr = a.ty(32, &[3, ty]);
        let variable = a.variable(out_ptr, 3);
        match varying {
            None => a.decorate(variable, &[11, 0]), // BuiltIn Position
            Some(v) => {
                a.decorate(variable, &[30, v.location]);
                if v.scalar != Scalar::Float {
                    a.decorate(variable, &[14]); // Flat
                }
            }
        }
        interface.push(variable);
        let array = a.ty(28, &[ty, three]);
        let table = a.constant(44, array, &values);
        let local_ptr = a.ty(32, &[FUNCTION_STORAGE, array]);
        let element_ptr = a.ty(32, &[FUNCTION_STORAGE, ty]);
        let local = a.id();
        locals.push(op(59, &[local_ptr, local, FUNCTION_STORAGE]));
        let (element, value) = (a.id(), a.id());
        body.push(op(62, &[local, table])); // OpStore
        body.push(op(65, &[element_ptr, element, local, index])); // OpAccessChain
        body.push(op(61, &[ty, value, element])); // OpLoad
        body.push(op(62, &[variable, value]));
    }

    let mut words = vec![0x0723_0203, 0x0001_0000, 0, 0, 0];
    words.extend(op(17, &[1])); // OpCapability Shader
    words.extend(op(14, &[0, 1])); // OpMemoryModel Logical GLSL450
    let mut entry = vec![0, main_id, u32::from_le_bytes(*b"main"), 0];
    entry.extend(&interface);
    words.extend(op(15, &entry)); // OpEntryPoint Vertex %main "main" ...
    words.extend(&a.decorations);
    words.extend(&a.globals);
    words.extend(op(54, &[void, main_id, 0, fn_ty])); // OpFunction
    words.extend(op(248, &[label])); // OpLabel
    words.extend(locals.concat());
    words.extend(body.concat());
    words.extend(op(253, &[])); // OpReturn
    words.extend(op(56, &[])); // OpFunctionEnd
    words[3] = a.next + 1; // the bound
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// One instruction's words.
fn op(opcode: u32, operands: &[u32]) -> Vec<u32> {
    let mut words = vec![((operands.len() as u32 + 1) << 16) | opcode];
    words.extend_from_slice(operands);
    words
}

/// Ids, and the decoration and global sections of a module being assembled; each type and constant once.
#[derive(Default)]
struct Assembler {
    next: u32,
    decorations: Vec<u32>,
    globals: Vec<u32>,
    made: std::collections::HashMap<Vec<u32>, u32>,
}

impl Assembler {
    fn id(&mut self) -> u32 {
        self.next += 1;
        self.next
    }

    /// A type: `OpTypeX %id operands...`.
    fn ty(&mut self, opcode: u32, operands: &[u32]) -> u32 {
        self.once(opcode, None, operands)
    }

    /// A constant: `OpConstantX %type %id operands...`.
    fn constant(&mut self, opcode: u32, ty: u32, operands: &[u32]) -> u32 {
        self.once(opcode, Some(ty), operands)
    }

    fn once(&mut self, opcode: u32, ty: Option<u32>, operands: &[u32]) -> u32 {
        let mut key = vec![opcode];
        key.extend(ty);
        key.extend_from_slice(operands);
        if let Some(&id) = self.made.get(&key) {
            return id;
        }
        let id = self.id();
        let mut words: Vec<u32> = ty.into_iter().collect();
        words.push(id);
        words.extend_from_slice(operands);
        self.globals.extend(op(opcode, &words));
        self.made.insert(key, id);
        id
    }

    /// A global variable of pointer type `ptr` in `storage`.
    fn variable(&mut self, ptr: u32, storage: u32) -> u32 {
        let id = self.id();
        self.globals.extend(op(59, &[ptr, id, storage]));
        id
    }

    fn decorate(&mut self, target: u32, decoration: &[u32]) {
        let mut operands = vec![target];
        operands.extend_from_slice(decoration);
        self.decorations.extend(op(71, &operands));
    }
}

fn create_sampler(cx: &Context) -> Result<vk::Sampler> {
    let info = vk::SamplerCreateInfo::default()
        .mag_filter(vk::Filter::NEAREST)
        .min_filter(vk::Filter::NEAREST)
        .address_mode_u(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_v(vk::SamplerAddressMode::CLAMP_TO_EDGE)
        .address_mode_w(vk::SamplerAddressMode::CLAMP_TO_EDGE);
    let sampler = unsafe { cx.device.create_sampler(&info, None) }.vk_context("vkCreateSampler")?;
    cx.own(Owned::Sampler(sampler));
    Ok(sampler)
}

fn write_descriptors(
    cx: &Context,
    set: vk::DescriptorSet,
    interface: &ShaderInterface,
    types: &[vk::DescriptorType],
    bound: &[Bound],
) {
    let buffer_infos: Vec<[vk::DescriptorBufferInfo; 1]> = bound
        .iter()
        .map(|b| match b {
            Bound::Buffer(buffer) => [vk::DescriptorBufferInfo {
                buffer: buffer.handle,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }],
            _ => [vk::DescriptorBufferInfo::default()],
        })
        .collect();
    let image_infos: Vec<[vk::DescriptorImageInfo; 1]> = bound
        .iter()
        .map(|b| match b {
            Bound::StorageImage(image, _) => [vk::DescriptorImageInfo::default()
                .image_view(image.view)
                .image_layout(vk::ImageLayout::GENERAL)],
            Bound::SampledImage(image) => [vk::DescriptorImageInfo::default()
                .image_view(image.view)
                .image_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)],
            Bound::Combined(image, sampler) => [vk::DescriptorImageInfo::default()
                .image_view(image.view)
                .sampler(*sampler)
                .image_layout(vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL)],
            Bound::Sampler(sampler) => [vk::DescriptorImageInfo::default().sampler(*sampler)],
            Bound::Buffer(_) => [vk::DescriptorImageInfo::default()],
        })
        .collect();
    let writes: Vec<_> = interface
        .bindings
        .iter()
        .enumerate()
        .map(|(i, &(binding, _))| {
            let write = vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(binding)
                .descriptor_type(types[i]);
            match bound[i] {
                Bound::Buffer(_) => write.buffer_info(&buffer_infos[i]),
                _ => write.image_info(&image_infos[i]),
            }
        })
        .collect();
    unsafe { cx.device.update_descriptor_sets(&writes, &[]) };
}

/// A whole-image layout transition that waits for all earlier work of `WORK_STAGES` (this scenario is not
/// about speed).
/// The accesses an image in `layout` gets here (best practices checks a barrier's access masks against its
/// layouts).
fn layout_access(layout: vk::ImageLayout) -> vk::AccessFlags {
    use vk::AccessFlags as A;
    match layout {
        vk::ImageLayout::UNDEFINED => A::empty(),
        vk::ImageLayout::TRANSFER_DST_OPTIMAL => A::TRANSFER_WRITE,
        vk::ImageLayout::TRANSFER_SRC_OPTIMAL => A::TRANSFER_READ,
        vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL => A::SHADER_READ,
        vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL => {
            A::COLOR_ATTACHMENT_READ | A::COLOR_ATTACHMENT_WRITE
        }
        _ => A::MEMORY_READ | A::MEMORY_WRITE,
    }
}

/// The write accesses, which a barrier's source mask names (reads need no availability).
const WRITES: vk::AccessFlags = vk::AccessFlags::from_raw(
    vk::AccessFlags::TRANSFER_WRITE.as_raw()
        | vk::AccessFlags::COLOR_ATTACHMENT_WRITE.as_raw()
        | vk::AccessFlags::SHADER_WRITE.as_raw()
        | vk::AccessFlags::MEMORY_WRITE.as_raw(),
);

fn image_barrier(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    image: &Image,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
) {
    let barrier = vk::ImageMemoryBarrier::default()
        .src_access_mask(layout_access(old) & WRITES)
        .dst_access_mask(layout_access(new))
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image.handle)
        .subresource_range(COLOR_RANGE);
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            WORK_STAGES,
            WORK_STAGES,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &[barrier],
        )
    };
}
