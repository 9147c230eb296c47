//! Pieces the fault and shader-error scenarios share: a compute pipeline with its storage buffers bound
//! (`ComputeProgram`), a full-screen fragment pass (`FullscreenProgram`), optional debug labels (`Labels`),
//! push-constant bytes, and the note printed when debugPrintf modules meet a driver that cannot load them.

use std::ffi::{CStr, CString};

use anyhow::Result;
use ash::vk;

use super::draw::Target;
use crate::context::{Context, Owned, VkResultExt};
use crate::{shaders, ShaderDebug};

/// Push-constant bytes from 32-bit words (floats go in as `f32::to_bits`).
pub fn push_bytes(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

/// Picks the `-g` or the `-gVS` build of a shader, as `--shader-debug` says.
pub fn by_debug_info(
    debug: ShaderDebug,
    opline: &'static [u8],
    nonsemantic: &'static [u8],
) -> &'static [u8] {
    match debug {
        ShaderDebug::OpLine => opline,
        ShaderDebug::NonSemantic => nonsemantic,
    }
}

/// Says on stderr that debugPrintf (or `-gVS`) modules are about to meet a driver without
/// VK_KHR_shader_non_semantic_info: without Blackbox, creating their pipelines may then fail.
pub fn note_non_semantic(cx: &Context) {
    if !cx.features.non_semantic_info {
        eprintln!(
            "bb-testapp: note: VK_KHR_shader_non_semantic_info missing, running anyway (Blackbox \
             strips/rewrites NonSemantic instructions)"
        );
    }
}

/// The outer label of the fault scenarios: `frame`, or `frame N` with `--frame N`.
pub fn frame_label(frame: Option<u32>) -> String {
    match frame {
        Some(n) => format!("frame {n}"),
        None => "frame".to_owned(),
    }
}

/// Command-buffer debug labels when VK_EXT_debug_utils is enabled; nothing otherwise.
#[derive(Clone, Copy)]
pub struct Labels<'a>(pub Option<&'a ash::ext::debug_utils::Device>);

impl Labels<'_> {
    pub fn begin(&self, cmd: vk::CommandBuffer, name: &str) {
        if let Some(debug_utils) = self.0 {
            let name = CString::new(name).expect("label names have no NUL");
            let label = vk::DebugUtilsLabelEXT::default()
                .label_name(&name)
                .color([0.8, 0.4, 0.1, 1.0]);
            unsafe { debug_utils.cmd_begin_debug_utils_label(cmd, &label) };
        }
    }

    pub fn end(&self, cmd: vk::CommandBuffer) {
        if let Some(debug_utils) = self.0 {
            unsafe { debug_utils.cmd_end_debug_utils_label(cmd) };
        }
    }
}

/// `CAPTURE_STATISTICS` where the run asked for pipeline statistics and the device has them
/// (`--pipeline-stats`), else no flags.
fn capture_flags(cx: &Context) -> vk::PipelineCreateFlags {
    if cx.features.pipeline_statistics {
        vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
    } else {
        vk::PipelineCreateFlags::empty()
    }
}

/// A compute pipeline from SPIR-V whose storage buffers (set 0, bindings 0..n, whole buffers) are bound
/// once, with `push_size` bytes of push constants. Only handles.
#[derive(Clone, Copy)]
pub struct ComputeProgram {
    pub layout: vk::PipelineLayout,
    pub pipeline: vk::Pipeline,
    set: Option<vk::DescriptorSet>,
}

impl ComputeProgram {
    pub fn new(
        cx: &Context,
        spirv: &[u8],
        buffers: &[vk::Buffer],
        push_size: u32,
        name: &CStr,
    ) -> Result<ComputeProgram> {
        let d = &cx.device;
        let set_layouts = storage_set_layout(cx, buffers.len(), vk::ShaderStageFlags::COMPUTE)?;
        let push_ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::COMPUTE)
            .size(push_size)];
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&set_layouts)
            .push_constant_ranges(if push_size > 0 { &push_ranges } else { &[] });
        let layout = unsafe { d.create_pipeline_layout(&layout_info, None) }
            .vk_context("vkCreatePipelineLayout")?;
        cx.own(Owned::PipelineLayout(layout));

        let module = cx.create_shader_module(spirv)?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default()
            .flags(capture_flags(cx))
            .stage(stage)
            .layout(layout);
        let created =
            unsafe { d.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
        cx.destroy_shader_module(module);
        let pipeline = created
            .map_err(|(_, r)| r)
            .vk_context("vkCreateComputePipelines")?[0];
        cx.own(Owned::Pipeline(pipeline));
        cx.set_name(pipeline, name)?;

        let set = bind_buffers(cx, &set_layouts, buffers)?;
        Ok(ComputeProgram {
            layout,
            pipeline,
            set,
        })
    }

    /// Binds the pipeline and its buffers, pushes `push` and dispatches `groups` workgroups.
    pub fn record(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        push: &[u8],
        groups: [u32; 3],
    ) {
        unsafe {
            device.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            bind_set(
                device,
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                self.layout,
                self.set,
            );
            if !push.is_empty() {
                device.cmd_push_constants(cmd, self.layout, vk::ShaderStageFlags::COMPUTE, 0, push);
            }
            device.cmd_dispatch(cmd, groups[0], groups[1], groups[2]);
        }
    }
}

/// The layout of set 0 for `count` storage buffers (bindings 0..count) seen by `stage`: none (an empty
/// list) for no buffers.
fn storage_set_layout(
    cx: &Context,
    count: usize,
    stage: vk::ShaderStageFlags,
) -> Result<Vec<vk::DescriptorSetLayout>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    let bindings: Vec<_> = (0..count as u32)
        .map(|binding| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(binding)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(stage)
        })
        .collect();
    let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
    let set_layout = unsafe { cx.device.create_descriptor_set_layout(&info, None) }
        .vk_context("vkCreateDescriptorSetLayout")?;
    cx.own(Owned::DescriptorSetLayout(set_layout));
    Ok(vec![set_layout])
}

/// Binds `set`, where there is one, as set 0 of `layout`.
fn bind_set(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    point: vk::PipelineBindPoint,
    layout: vk::PipelineLayout,
    set: Option<vk::DescriptorSet>,
) {
    if let Some(set) = set {
        // SAFETY: `cmd` is recording and `set` was made for `layout`.
        unsafe { device.cmd_bind_descriptor_sets(cmd, point, layout, 0, &[set], &[]) };
    }
}

/// A descriptor set (from a pool of its own) with `buffers` as storage buffers 0..n, for the layout
/// [`storage_set_layout`] made (none where it made none).
fn bind_buffers(
    cx: &Context,
    set_layouts: &[vk::DescriptorSetLayout],
    buffers: &[vk::Buffer],
) -> Result<Option<vk::DescriptorSet>> {
    let Some(&set_layout) = set_layouts.first() else {
        return Ok(None);
    };
    let d = &cx.device;
    let pool_sizes = [vk::DescriptorPoolSize {
        ty: vk::DescriptorType::STORAGE_BUFFER,
        descriptor_count: buffers.len() as u32,
    }];
    let pool_info = vk::DescriptorPoolCreateInfo::default()
        .max_sets(1)
        .pool_sizes(&pool_sizes);
    let pool = unsafe { d.create_descriptor_pool(&pool_info, None) }
        .vk_context("vkCreateDescriptorPool")?;
    cx.own(Owned::DescriptorPool(pool));
    let set_layouts = [set_layout];
    let alloc = vk::DescriptorSetAllocateInfo::default()
        .descriptor_pool(pool)
        .set_layouts(&set_layouts);
    let set =
        unsafe { d.allocate_descriptor_sets(&alloc) }.vk_context("vkAllocateDescriptorSets")?[0];
    let infos: Vec<_> = buffers
        .iter()
        .map(|&buffer| {
            [vk::DescriptorBufferInfo {
                buffer,
                offset: 0,
                range: vk::WHOLE_SIZE,
            }]
        })
        .collect();
    let writes: Vec<_> = infos
        .iter()
        .enumerate()
        .map(|(binding, info)| {
            vk::WriteDescriptorSet::default()
                .dst_set(set)
                .dst_binding(binding as u32)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .buffer_info(info)
        })
        .collect();
    unsafe { d.update_descriptor_sets(&writes, &[]) };
    Ok(Some(set))
}

/// A graphics pipeline drawing one full-screen triangle (fullscreen.vert) with a fragment shader from
/// SPIR-V, for subpass 0 of a render pass or for dynamic rendering (`target`); `push_size` bytes of
/// fragment push constants, and `buffers` as the fragment shader's storage buffers (set 0, bindings 0..n,
/// whole buffers, bound once). Only handles.
#[derive(Clone, Copy)]
pub struct FullscreenProgram {
    pub layout: vk::PipelineLayout,
    pub pipeline: vk::Pipeline,
    set: Option<vk::DescriptorSet>,
}

impl FullscreenProgram {
    pub fn new(
        cx: &Context,
        target: Target,
        fragment_spirv: &[u8],
        push_size: u32,
        buffers: &[vk::Buffer],
        name: &CStr,
    ) -> Result<FullscreenProgram> {
        let d = &cx.device;
        let set_layouts = storage_set_layout(cx, buffers.len(), vk::ShaderStageFlags::FRAGMENT)?;
        let push_ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::FRAGMENT)
            .size(push_size)];
        let layout_info = vk::PipelineLayoutCreateInfo::default()
            .set_layouts(&set_layouts)
            .push_constant_ranges(&push_ranges);
        let layout = unsafe { d.create_pipeline_layout(&layout_info, None) }
            .vk_context("vkCreatePipelineLayout")?;
        cx.own(Owned::PipelineLayout(layout));

        let vert = cx.create_shader_module(shaders::FULLSCREEN_VERT)?;
        let frag = match cx.create_shader_module(fragment_spirv) {
            Ok(frag) => frag,
            Err(e) => {
                cx.destroy_shader_module(vert);
                return Err(e);
            }
        };
        let stages = [
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::VERTEX)
                .module(vert)
                .name(c"main"),
            vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::FRAGMENT)
                .module(frag)
                .name(c"main"),
        ];
        let vertex_input = vk::PipelineVertexInputStateCreateInfo::default();
        let input_assembly = vk::PipelineInputAssemblyStateCreateInfo::default()
            .topology(vk::PrimitiveTopology::TRIANGLE_LIST);
        let viewport = vk::PipelineViewportStateCreateInfo::default()
            .viewport_count(1)
            .scissor_count(1);
        let raster = vk::PipelineRasterizationStateCreateInfo::default()
            .polygon_mode(vk::PolygonMode::FILL)
            .cull_mode(vk::CullModeFlags::NONE)
            .front_face(vk::FrontFace::COUNTER_CLOCKWISE)
            .line_width(1.0);
        let multisample = vk::PipelineMultisampleStateCreateInfo::default()
            .rasterization_samples(vk::SampleCountFlags::TYPE_1);
        let attachments = [vk::PipelineColorBlendAttachmentState::default()
            .color_write_mask(vk::ColorComponentFlags::RGBA)];
        let blend = vk::PipelineColorBlendStateCreateInfo::default().attachments(&attachments);
        let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
        let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);
        let color_formats = [match target {
            Target::Dynamic(format) => format,
            Target::RenderPass(_) => vk::Format::UNDEFINED,
        }];
        let mut rendering =
            vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&color_formats);
        let info = vk::GraphicsPipelineCreateInfo::default()
            .flags(capture_flags(cx))
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&input_assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .color_blend_state(&blend)
            .dynamic_state(&dynamic)
            .layout(layout);
        let info = match target {
            Target::RenderPass(render_pass) => info.render_pass(render_pass).subpass(0),
            Target::Dynamic(_) => info.push_next(&mut rendering),
        };
        let created =
            unsafe { d.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
        cx.destroy_shader_module(vert);
        cx.destroy_shader_module(frag);
        let pipeline = created
            .map_err(|(_, r)| r)
            .vk_context("vkCreateGraphicsPipelines")?[0];
        cx.own(Owned::Pipeline(pipeline));
        cx.set_name(pipeline, name)?;
        let set = bind_buffers(cx, &set_layouts, buffers)?;
        Ok(FullscreenProgram {
            layout,
            pipeline,
            set,
        })
    }

    /// Draws the triangle over a target of `extent` (inside its render pass), with `push`.
    pub fn record(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        extent: vk::Extent2D,
        push: &[u8],
    ) {
        let viewport = vk::Viewport {
            x: 0.0,
            y: 0.0,
            width: extent.width as f32,
            height: extent.height as f32,
            min_depth: 0.0,
            max_depth: 1.0,
        };
        let scissor = vk::Rect2D {
            offset: vk::Offset2D::default(),
            extent,
        };
        unsafe {
            device.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.pipeline);
            bind_set(
                device,
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.layout,
                self.set,
            );
            device.cmd_set_viewport(cmd, 0, &[viewport]);
            device.cmd_set_scissor(cmd, 0, &[scissor]);
            device.cmd_push_constants(cmd, self.layout, vk::ShaderStageFlags::FRAGMENT, 0, push);
            device.cmd_draw(cmd, 3, 1, 0, 0);
        }
    }
}
