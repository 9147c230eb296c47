//! `spirv-compute`: runs each `--spirv` file once as a compute shader, with whatever set-0 interface it
//! declares (see `reflect`): storage buffers of 256 KiB and uniform buffers of 4 KiB holding a fixed float
//! pattern, 64x64 storage images (rgba32f or rgba8, cleared to a fixed color), 64x64 rgba32f sampled
//! images holding the pattern, nearest-filtering samplers, and 128 bytes of push constants holding the
//! small integers 1, 2, 3... (no loop bound read from them runs long). Specialization constants keep their
//! defaults. It dispatches 4096 invocations in x, or a 64x64 grid for 2D workgroups, on a device with
//! robust buffer access (a shader that reads an index from the pattern stays in bounds), then prints
//! `spirv <file name> checksum <hex>` over every storage buffer and storage image, in binding order: the
//! same module must give the same bits with and without Blackbox.
//!
//! A module it cannot run prints `spirv <file name> skipped: <reason>` (another stage, another interface,
//! a capability the device lacks) and the scenario goes on.

use std::ffi::CString;

use anyhow::{Context as _, Result};
use ash::vk;

use super::Outcome;
use crate::context::{fnv1a, Access, Buffer, Context, Fnv1a, Image, Memory, Owned, VkResultExt};
use crate::reflect::{compute_interface, ComputeInterface, Descriptor};
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
            _ => (true, ""),
        };
        (!have).then(|| format!("the device lacks {what} (capability {c})"))
    })
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let mut all = Fnv1a::new();
    for path in &options.stress.spirv_files {
        let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let interface = match compute_interface(&words) {
            Ok(interface) => interface,
            Err(reason) => {
                println!("spirv {name} skipped: {reason}");
                continue;
            }
        };
        let missing = missing_feature(cx, &interface.capabilities).or_else(|| {
            (interface.local_size_id && !cx.features.maintenance4)
                .then(|| "the device lacks maintenance4 (LocalSizeId)".to_string())
        });
        if let Some(reason) = missing {
            println!("spirv {name} skipped: {reason}");
            continue;
        }
        let sum = run_one(cx, &bytes, &interface, &name)
            .with_context(|| format!("running {}", path.display()))?;
        println!("spirv {name} checksum {sum:016x}");
        all.update(&sum.to_le_bytes());
    }
    Ok(Outcome::Checksum(all.finish()))
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

fn run_one(cx: &Context, spirv: &[u8], interface: &ComputeInterface, name: &str) -> Result<u64> {
    let d = &cx.device;
    let storage_usage = vk::BufferUsageFlags::STORAGE_BUFFER;
    let mut bound = Vec::new();
    let mut sampled_uploads = Vec::new();
    for &(_, descriptor) in &interface.bindings {
        bound.push(match descriptor {
            Descriptor::StorageBuffer => {
                Bound::Buffer(cx.create_buffer_with_data(&pattern(STORAGE_BYTES), storage_usage)?)
            }
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
                let readback = cx.create_buffer(
                    image.byte_size(),
                    vk::BufferUsageFlags::TRANSFER_DST,
                    Memory::Host,
                )?;
                Bound::StorageImage(image, readback)
            }
            Descriptor::SampledImage | Descriptor::CombinedImageSampler => {
                let usage = vk::ImageUsageFlags::SAMPLED | vk::ImageUsageFlags::TRANSFER_DST;
                let image =
                    cx.create_image_with_format(IMAGE, vk::Format::R32G32B32A32_SFLOAT, usage)?;
                let upload = cx.create_buffer_with_data(
                    &pattern(image.byte_size()),
                    vk::BufferUsageFlags::TRANSFER_SRC,
                )?;
                sampled_uploads.push((image, upload));
                if descriptor == Descriptor::SampledImage {
                    Bound::SampledImage(image)
                } else {
                    Bound::Combined(image, create_sampler(cx)?)
                }
            }
            Descriptor::Sampler => Bound::Sampler(create_sampler(cx)?),
        });
    }

    // Set layout, pool and set.
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
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&layout_bindings);
    let set_layout = unsafe { d.create_descriptor_set_layout(&info, None) }
        .vk_context("vkCreateDescriptorSetLayout")?;
    cx.own(Owned::DescriptorSetLayout(set_layout));
    let push_ranges = [vk::PushConstantRange::default()
        .stage_flags(vk::ShaderStageFlags::COMPUTE)
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

    // The pipeline.
    let module = cx.create_shader_module(spirv)?;
    let entry = CString::new(interface.entry.as_str()).unwrap_or_default();
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(&entry);
    let info = vk::ComputePipelineCreateInfo::default()
        .stage(stage)
        .layout(layout);
    let created = unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
    cx.destroy_shader_module(module);
    let pipeline = created
        .map_err(|(_, r)| r)
        .vk_context("vkCreateComputePipelines")?[0];
    cx.own(Owned::Pipeline(pipeline));
    cx.set_name(pipeline, &CString::new(name).unwrap_or_default())?;

    let [lx, ly, _] = interface.local_size.map(|n| n.max(1));
    let groups = if ly > 1 {
        [IMAGE.width.div_ceil(lx), IMAGE.height.div_ceil(ly), 1]
    } else {
        [INVOCATIONS_1D.div_ceil(lx), 1, 1]
    };
    let push: Vec<u8> = (1..=PUSH_BYTES / 4).flat_map(u32::to_ne_bytes).collect();
    cx.submit_and_wait(|cmd| {
        unsafe {
            for (image, upload) in &sampled_uploads {
                image_barrier(
                    d,
                    cmd,
                    image,
                    vk::ImageLayout::UNDEFINED,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                );
                let region = vk::BufferImageCopy::default()
                    .image_subresource(crate::context::COLOR_LAYERS)
                    .image_extent(vk::Extent3D {
                        width: IMAGE.width,
                        height: IMAGE.height,
                        depth: 1,
                    });
                d.cmd_copy_buffer_to_image(
                    cmd,
                    upload.handle,
                    image.handle,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    &[region],
                );
                image_barrier(
                    d,
                    cmd,
                    image,
                    vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    vk::ImageLayout::SHADER_READ_ONLY_OPTIMAL,
                );
            }
            for b in &bound {
                if let Bound::StorageImage(image, _) = b {
                    image_barrier(
                        d,
                        cmd,
                        image,
                        vk::ImageLayout::UNDEFINED,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                    );
                    let color = vk::ClearColorValue {
                        float32: [0.25, 0.5, 0.75, 1.0],
                    };
                    d.cmd_clear_color_image(
                        cmd,
                        image.handle,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        &color,
                        &[crate::context::COLOR_RANGE],
                    );
                    image_barrier(
                        d,
                        cmd,
                        image,
                        vk::ImageLayout::TRANSFER_DST_OPTIMAL,
                        vk::ImageLayout::GENERAL,
                    );
                }
            }
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
            if let Some(set) = set {
                d.cmd_bind_descriptor_sets(
                    cmd,
                    vk::PipelineBindPoint::COMPUTE,
                    layout,
                    0,
                    &[set],
                    &[],
                );
            }
            if interface.push_constants {
                d.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, &push);
            }
            d.cmd_dispatch(cmd, groups[0], groups[1], groups[2]);
            for b in &bound {
                match b {
                    Bound::Buffer(buffer) => {
                        cx.buffer_barrier(cmd, buffer, Access::COMPUTE_WRITE, Access::HOST_READ)
                    }
                    Bound::StorageImage(image, readback) => {
                        image_barrier(
                            d,
                            cmd,
                            image,
                            vk::ImageLayout::GENERAL,
                            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
                        );
                        cx.record_image_readback(cmd, image, readback);
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    })?;
    let mut sum = Fnv1a::new();
    for (b, &(_, descriptor)) in bound.iter().zip(&interface.bindings) {
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
    // An empty interface still says something: the module ran.
    Ok(if interface.bindings.is_empty() {
        fnv1a(&[])
    } else {
        sum.finish()
    })
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
    interface: &ComputeInterface,
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

/// A whole-image layout transition that waits for all earlier work (this scenario is not about speed).
fn image_barrier(
    d: &ash::Device,
    cmd: vk::CommandBuffer,
    image: &Image,
    old: vk::ImageLayout,
    new: vk::ImageLayout,
) {
    let barrier = vk::ImageMemoryBarrier::default()
        .src_access_mask(vk::AccessFlags::MEMORY_WRITE)
        .dst_access_mask(vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
        .old_layout(old)
        .new_layout(new)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image.handle)
        .subresource_range(crate::context::COLOR_RANGE);
    unsafe {
        d.cmd_pipeline_barrier(
            cmd,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::PipelineStageFlags::ALL_COMMANDS,
            vk::DependencyFlags::empty(),
            &[],
            &[],
            &[barrier],
        )
    };
}
