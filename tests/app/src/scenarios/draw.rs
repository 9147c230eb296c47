//! `draw-renderpass` and `draw-dynamic`: the same picture drawn into a 128x128 RGBA8 image with a classic
//! render pass and with dynamic rendering, so both print the same checksum. Also the graphics pieces
//! (`DrawKit`, the scene, the render pass) that other scenarios share.

use anyhow::Result;
use ash::vk;

use super::Outcome;
use crate::context::{fnv1a, Context, Image, Memory, Owned, VkResultExt, COLOR_RANGE};
use crate::{shaders, Options};

pub const EXTENT: vk::Extent2D = vk::Extent2D {
    width: 128,
    height: 128,
};
pub const CLEAR_COLOR: [f32; 4] = [0.1, 0.2, 0.3, 1.0];
pub const TARGET_USAGE: vk::ImageUsageFlags = vk::ImageUsageFlags::from_raw(
    vk::ImageUsageFlags::COLOR_ATTACHMENT.as_raw() | vk::ImageUsageFlags::TRANSFER_SRC.as_raw(),
);

/// Vertices: position (x, y), color (r, g, b). A quad (6 vertices) then a triangle (3).
const VERTICES: [[f32; 5]; 9] = [
    [-1.0, -1.0, 1.0, 0.2, 0.2],
    [1.0, -1.0, 0.2, 1.0, 0.2],
    [1.0, 1.0, 0.2, 0.2, 1.0],
    [-1.0, -1.0, 1.0, 0.2, 0.2],
    [1.0, 1.0, 0.2, 0.2, 1.0],
    [-1.0, 1.0, 1.0, 1.0, 0.2],
    [0.0, -1.0, 1.0, 0.5, 0.2],
    [1.0, 1.0, 0.2, 1.0, 0.5],
    [-1.0, 1.0, 0.5, 0.2, 1.0],
];
pub const QUAD: (u32, u32) = (0, 6);
pub const TRIANGLE: (u32, u32) = (6, 3);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blend {
    Opaque,
    Additive,
}

/// The viewport (and scissor) of a draw: the whole target or its top-left quarter.
#[derive(Clone, Copy, Debug)]
pub enum Area {
    Full,
    Quarter,
}

/// One draw of the scene.
#[derive(Clone, Copy, Debug)]
pub struct SceneDraw {
    pub blend: Blend,
    pub area: Area,
    /// (first vertex, vertex count)
    pub vertices: (u32, u32),
    /// xy: scale, zw: offset
    pub transform: [f32; 4],
    /// rgb: color multiplier, w: ripple phase
    pub tint: [f32; 4],
}

/// The picture every graphics scenario draws: both pipelines, both viewports, overlapping draws.
pub const SCENE: [SceneDraw; 4] = [
    SceneDraw {
        blend: Blend::Opaque,
        area: Area::Full,
        vertices: QUAD,
        transform: [0.8, 0.8, 0.0, 0.0],
        tint: [1.0, 1.0, 1.0, 0.0],
    },
    SceneDraw {
        blend: Blend::Additive,
        area: Area::Full,
        vertices: TRIANGLE,
        transform: [0.6, 0.6, 0.2, -0.1],
        tint: [0.5, 1.0, 0.3, 1.0],
    },
    SceneDraw {
        blend: Blend::Additive,
        area: Area::Quarter,
        vertices: QUAD,
        transform: [0.9, 0.9, 0.0, 0.0],
        tint: [0.2, 0.4, 1.0, 2.0],
    },
    SceneDraw {
        blend: Blend::Opaque,
        area: Area::Full,
        vertices: TRIANGLE,
        transform: [0.3, 0.3, -0.5, 0.5],
        tint: [1.0, 0.8, 0.6, 3.0],
    },
];

/// What the graphics pipelines render into.
#[derive(Clone, Copy)]
pub enum Target {
    RenderPass(vk::RenderPass),
    /// Dynamic rendering into one color attachment of this format.
    Dynamic(vk::Format),
}

/// The two graphics pipelines (opaque and additive), their layout and the vertex buffer. Only handles.
#[derive(Clone, Copy)]
pub struct DrawKit {
    pub layout: vk::PipelineLayout,
    pub opaque: vk::Pipeline,
    pub additive: vk::Pipeline,
    pub vertices: vk::Buffer,
}

impl DrawKit {
    pub fn new(cx: &Context, target: Target) -> Result<DrawKit> {
        let d = &cx.device;
        let vertex_bytes: Vec<u8> = VERTICES
            .iter()
            .flatten()
            .flat_map(|f| f.to_ne_bytes())
            .collect();
        let vertices =
            cx.create_buffer_with_data(&vertex_bytes, vk::BufferUsageFlags::VERTEX_BUFFER)?;

        // One push-constant block shared by both stages (see draw.vert / draw.frag).
        let push_ranges = [vk::PushConstantRange::default()
            .stage_flags(vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT)
            .size(32)];
        let layout_info =
            vk::PipelineLayoutCreateInfo::default().push_constant_ranges(&push_ranges);
        let layout = unsafe { d.create_pipeline_layout(&layout_info, None) }
            .vk_context("vkCreatePipelineLayout")?;
        cx.own(Owned::PipelineLayout(layout));

        let vert = cx.create_shader_module(shaders::DRAW_VERT)?;
        let frag = cx.create_shader_module(shaders::DRAW_FRAG)?;
        let created = create_pipelines(d, layout, vert, frag, target);
        cx.destroy_shader_module(vert);
        cx.destroy_shader_module(frag);
        let [opaque, additive] = created?;
        cx.own(Owned::Pipeline(opaque));
        cx.own(Owned::Pipeline(additive));

        Ok(DrawKit {
            layout,
            opaque,
            additive,
            vertices: vertices.handle,
        })
    }

    pub fn pipeline(&self, blend: Blend) -> vk::Pipeline {
        match blend {
            Blend::Opaque => self.opaque,
            Blend::Additive => self.additive,
        }
    }

    pub fn push(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        transform: [f32; 4],
        tint: [f32; 4],
    ) {
        // On the stack: an allocation per push would be the app's cost in record-bench, not the layers'.
        let mut bytes = [0u8; 32];
        for (to, from) in bytes.chunks_exact_mut(4).zip(transform.iter().chain(&tint)) {
            to.copy_from_slice(&from.to_ne_bytes());
        }
        let stages = vk::ShaderStageFlags::VERTEX | vk::ShaderStageFlags::FRAGMENT;
        unsafe { device.cmd_push_constants(cmd, self.layout, stages, 0, &bytes) };
    }

    /// Sets viewport and scissor to `area` of a target of `extent`.
    pub fn set_area(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        extent: vk::Extent2D,
        area: Area,
    ) {
        let extent = match area {
            Area::Full => extent,
            Area::Quarter => vk::Extent2D {
                width: extent.width / 2,
                height: extent.height / 2,
            },
        };
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
            device.cmd_set_viewport(cmd, 0, &[viewport]);
            device.cmd_set_scissor(cmd, 0, &[scissor]);
        }
    }

    /// Records one scene draw with all the state it needs (so it also works at the start of a secondary
    /// command buffer, which inherits no state).
    /// As [`DrawKit::record_draw`] without the draw: what is left of it when the draw is not recorded
    /// (`--omit`, the reference for Blackbox's skipping, which keeps state commands).
    pub fn record_draw_state(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        extent: vk::Extent2D,
        draw: &SceneDraw,
    ) {
        unsafe {
            device.cmd_bind_pipeline(
                cmd,
                vk::PipelineBindPoint::GRAPHICS,
                self.pipeline(draw.blend),
            );
            device.cmd_bind_vertex_buffers(cmd, 0, &[self.vertices], &[0]);
        }
        self.set_area(device, cmd, extent, draw.area);
        self.push(device, cmd, draw.transform, draw.tint);
    }

    pub fn record_draw(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        extent: vk::Extent2D,
        draw: &SceneDraw,
    ) {
        self.record_draw_state(device, cmd, extent, draw);
        unsafe { device.cmd_draw(cmd, draw.vertices.1, 1, draw.vertices.0, 0) };
    }

    pub fn record_scene(&self, device: &ash::Device, cmd: vk::CommandBuffer, extent: vk::Extent2D) {
        for draw in &SCENE {
            self.record_draw(device, cmd, extent, draw);
        }
    }
}

fn create_pipelines(
    device: &ash::Device,
    layout: vk::PipelineLayout,
    vert: vk::ShaderModule,
    frag: vk::ShaderModule,
    target: Target,
) -> Result<[vk::Pipeline; 2]> {
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
    let bindings = [vk::VertexInputBindingDescription {
        binding: 0,
        stride: 20,
        input_rate: vk::VertexInputRate::VERTEX,
    }];
    let attributes = [
        vk::VertexInputAttributeDescription {
            location: 0,
            binding: 0,
            format: vk::Format::R32G32_SFLOAT,
            offset: 0,
        },
        vk::VertexInputAttributeDescription {
            location: 1,
            binding: 0,
            format: vk::Format::R32G32B32_SFLOAT,
            offset: 8,
        },
    ];
    let vertex_input = vk::PipelineVertexInputStateCreateInfo::default()
        .vertex_binding_descriptions(&bindings)
        .vertex_attribute_descriptions(&attributes);
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
    let dynamic_states = [vk::DynamicState::VIEWPORT, vk::DynamicState::SCISSOR];
    let dynamic = vk::PipelineDynamicStateCreateInfo::default().dynamic_states(&dynamic_states);

    let opaque_attachment = [vk::PipelineColorBlendAttachmentState::default()
        .color_write_mask(vk::ColorComponentFlags::RGBA)];
    let additive_attachment = [vk::PipelineColorBlendAttachmentState::default()
        .blend_enable(true)
        .src_color_blend_factor(vk::BlendFactor::ONE)
        .dst_color_blend_factor(vk::BlendFactor::ONE)
        .color_blend_op(vk::BlendOp::ADD)
        .src_alpha_blend_factor(vk::BlendFactor::ONE)
        .dst_alpha_blend_factor(vk::BlendFactor::ZERO)
        .alpha_blend_op(vk::BlendOp::ADD)
        .color_write_mask(vk::ColorComponentFlags::RGBA)];
    let opaque_blend =
        vk::PipelineColorBlendStateCreateInfo::default().attachments(&opaque_attachment);
    let additive_blend =
        vk::PipelineColorBlendStateCreateInfo::default().attachments(&additive_attachment);

    let color_formats = [match target {
        Target::Dynamic(format) => format,
        Target::RenderPass(_) => vk::Format::UNDEFINED,
    }];
    let mut rendering = [
        vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&color_formats),
        vk::PipelineRenderingCreateInfo::default().color_attachment_formats(&color_formats),
    ];
    let mut infos = Vec::new();
    for (blend, rendering) in [&opaque_blend, &additive_blend]
        .into_iter()
        .zip(&mut rendering)
    {
        let mut info = vk::GraphicsPipelineCreateInfo::default()
            .stages(&stages)
            .vertex_input_state(&vertex_input)
            .input_assembly_state(&input_assembly)
            .viewport_state(&viewport)
            .rasterization_state(&raster)
            .multisample_state(&multisample)
            .color_blend_state(blend)
            .dynamic_state(&dynamic)
            .layout(layout);
        info = match target {
            Target::RenderPass(render_pass) => info.render_pass(render_pass).subpass(0),
            Target::Dynamic(_) => info.push_next(rendering),
        };
        infos.push(info);
    }
    // Both pipelines in one call, through a pipeline cache (best practices asks for one when a call creates
    // several); the cache is not needed once they exist.
    let cache =
        unsafe { device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) }
            .vk_context("vkCreatePipelineCache")?;
    let created = unsafe { device.create_graphics_pipelines(cache, &infos, None) }
        .map_err(|(_, r)| r)
        .vk_context("vkCreateGraphicsPipelines");
    // SAFETY: no other call uses the cache.
    unsafe { device.destroy_pipeline_cache(cache, None) };
    let pipelines = created?;
    Ok([pipelines[0], pipelines[1]])
}

/// A render pass with one color attachment of `format` (RGBA8 or RGBA32F): cleared on load,
/// TRANSFER_SRC_OPTIMAL at the end so the image can be copied out.
pub fn create_render_pass(cx: &Context, format: vk::Format) -> Result<vk::RenderPass> {
    let attachments = [vk::AttachmentDescription::default()
        .format(format)
        .samples(vk::SampleCountFlags::TYPE_1)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .stencil_load_op(vk::AttachmentLoadOp::DONT_CARE)
        .stencil_store_op(vk::AttachmentStoreOp::DONT_CARE)
        .initial_layout(vk::ImageLayout::UNDEFINED)
        .final_layout(vk::ImageLayout::TRANSFER_SRC_OPTIMAL)];
    let color_refs = [vk::AttachmentReference {
        attachment: 0,
        layout: vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
    }];
    let subpasses = [vk::SubpassDescription::default()
        .pipeline_bind_point(vk::PipelineBindPoint::GRAPHICS)
        .color_attachments(&color_refs)];
    let color_stage = vk::PipelineStageFlags::COLOR_ATTACHMENT_OUTPUT;
    let color_access =
        vk::AccessFlags::COLOR_ATTACHMENT_READ | vk::AccessFlags::COLOR_ATTACHMENT_WRITE;
    let dependencies = [
        // Earlier uses of the image (a previous pass writing it, a copy reading it) finish before this
        // pass's layout transition and clear.
        vk::SubpassDependency::default()
            .src_subpass(vk::SUBPASS_EXTERNAL)
            .dst_subpass(0)
            .src_stage_mask(color_stage | vk::PipelineStageFlags::TRANSFER)
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
            .dst_stage_mask(color_stage)
            .dst_access_mask(color_access),
        // The pass's writes (and final layout transition) are visible to a following copy.
        vk::SubpassDependency::default()
            .src_subpass(0)
            .dst_subpass(vk::SUBPASS_EXTERNAL)
            .src_stage_mask(color_stage)
            .src_access_mask(vk::AccessFlags::COLOR_ATTACHMENT_WRITE)
            .dst_stage_mask(vk::PipelineStageFlags::TRANSFER)
            .dst_access_mask(vk::AccessFlags::TRANSFER_READ),
    ];
    let info = vk::RenderPassCreateInfo::default()
        .attachments(&attachments)
        .subpasses(&subpasses)
        .dependencies(&dependencies);
    let render_pass =
        unsafe { cx.device.create_render_pass(&info, None) }.vk_context("vkCreateRenderPass")?;
    cx.own(Owned::RenderPass(render_pass));
    Ok(render_pass)
}

pub fn create_framebuffer(
    cx: &Context,
    render_pass: vk::RenderPass,
    image: &Image,
) -> Result<vk::Framebuffer> {
    let views = [image.view];
    let info = vk::FramebufferCreateInfo::default()
        .render_pass(render_pass)
        .attachments(&views)
        .width(image.extent.width)
        .height(image.extent.height)
        .layers(1);
    let framebuffer =
        unsafe { cx.device.create_framebuffer(&info, None) }.vk_context("vkCreateFramebuffer")?;
    cx.own(Owned::Framebuffer(framebuffer));
    Ok(framebuffer)
}

pub fn begin_render_pass(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    render_pass: vk::RenderPass,
    framebuffer: vk::Framebuffer,
    extent: vk::Extent2D,
    contents: vk::SubpassContents,
) {
    let clear = [vk::ClearValue {
        color: vk::ClearColorValue {
            float32: CLEAR_COLOR,
        },
    }];
    let info = vk::RenderPassBeginInfo::default()
        .render_pass(render_pass)
        .framebuffer(framebuffer)
        .render_area(vk::Rect2D {
            offset: vk::Offset2D::default(),
            extent,
        })
        .clear_values(&clear);
    unsafe { device.cmd_begin_render_pass(cmd, &info, contents) };
}

/// A color target of `extent` with its render pass and framebuffer, ready for `begin_render_pass`.
pub struct PassTarget {
    pub image: Image,
    pub render_pass: vk::RenderPass,
    pub framebuffer: vk::Framebuffer,
}

impl PassTarget {
    pub fn new(cx: &Context, extent: vk::Extent2D) -> Result<PassTarget> {
        Self::with_format(cx, extent, vk::Format::R8G8B8A8_UNORM)
    }

    /// A target of another color format (RGBA8 or RGBA32F).
    pub fn with_format(
        cx: &Context,
        extent: vk::Extent2D,
        format: vk::Format,
    ) -> Result<PassTarget> {
        let image = cx.create_image_with_format(extent, format, TARGET_USAGE)?;
        let render_pass = create_render_pass(cx, format)?;
        let framebuffer = create_framebuffer(cx, render_pass, &image)?;
        Ok(PassTarget {
            image,
            render_pass,
            framebuffer,
        })
    }

    pub fn begin(
        &self,
        device: &ash::Device,
        cmd: vk::CommandBuffer,
        contents: vk::SubpassContents,
    ) {
        begin_render_pass(
            device,
            cmd,
            self.render_pass,
            self.framebuffer,
            self.image.extent,
            contents,
        );
    }
}

pub fn run_render_pass(cx: &Context, _options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let target = PassTarget::new(cx, EXTENT)?;
    let kit = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
    let readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;

    cx.submit_and_wait(|cmd| {
        target.begin(d, cmd, vk::SubpassContents::INLINE);
        kit.record_scene(d, cmd, EXTENT);
        unsafe { d.cmd_end_render_pass(cmd) };
        cx.record_image_readback(cmd, &target.image, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_dynamic(cx: &Context, _options: &Options) -> Result<Outcome> {
    if !(cx.features.dynamic_rendering && cx.features.synchronization2) {
        return Ok(Outcome::Skipped(
            "needs dynamicRendering and synchronization2".into(),
        ));
    }
    let d = &cx.device;
    let image = cx.create_image(EXTENT, TARGET_USAGE)?;
    let kit = DrawKit::new(cx, Target::Dynamic(image.format))?;
    let readback = cx.create_buffer(
        image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;

    cx.submit2_and_wait(|cmd| {
        begin_rendering(d, cmd, &image);
        kit.record_scene(d, cmd, EXTENT);
        end_rendering(d, cmd, &image);
        cx.record_image_readback(cmd, &image, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

/// Begins dynamic rendering into all of `image`, a fresh image (nothing to wait for, only the transition
/// to the attachment layout), cleared to `CLEAR_COLOR`. Needs dynamicRendering and synchronization2.
pub fn begin_rendering(device: &ash::Device, cmd: vk::CommandBuffer, image: &Image) {
    image_barrier2(
        device,
        cmd,
        image.handle,
        (
            vk::PipelineStageFlags2::NONE,
            vk::AccessFlags2::NONE,
            vk::ImageLayout::UNDEFINED,
        ),
        (
            vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
            vk::AccessFlags2::COLOR_ATTACHMENT_READ | vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        ),
    );
    let clear = vk::ClearValue {
        color: vk::ClearColorValue {
            float32: CLEAR_COLOR,
        },
    };
    let attachments = [vk::RenderingAttachmentInfo::default()
        .image_view(image.view)
        .image_layout(vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL)
        .load_op(vk::AttachmentLoadOp::CLEAR)
        .store_op(vk::AttachmentStoreOp::STORE)
        .clear_value(clear)];
    let rendering = vk::RenderingInfo::default()
        .render_area(vk::Rect2D {
            offset: vk::Offset2D::default(),
            extent: image.extent,
        })
        .layer_count(1)
        .color_attachments(&attachments);
    unsafe { device.cmd_begin_rendering(cmd, &rendering) };
}

/// Ends the dynamic rendering `begin_rendering` began and makes `image` ready for a copy
/// (TRANSFER_SRC_OPTIMAL, its writes visible to transfer reads), as a classic pass's final layout does.
pub fn end_rendering(device: &ash::Device, cmd: vk::CommandBuffer, image: &Image) {
    unsafe { device.cmd_end_rendering(cmd) };
    image_barrier2(
        device,
        cmd,
        image.handle,
        (
            vk::PipelineStageFlags2::COLOR_ATTACHMENT_OUTPUT,
            vk::AccessFlags2::COLOR_ATTACHMENT_WRITE,
            vk::ImageLayout::COLOR_ATTACHMENT_OPTIMAL,
        ),
        (
            vk::PipelineStageFlags2::COPY,
            vk::AccessFlags2::TRANSFER_READ,
            vk::ImageLayout::TRANSFER_SRC_OPTIMAL,
        ),
    );
}

/// An image layout transition with synchronization2; each side is (stage, access, layout).
fn image_barrier2(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    image: vk::Image,
    src: (vk::PipelineStageFlags2, vk::AccessFlags2, vk::ImageLayout),
    dst: (vk::PipelineStageFlags2, vk::AccessFlags2, vk::ImageLayout),
) {
    let barriers = [vk::ImageMemoryBarrier2::default()
        .src_stage_mask(src.0)
        .src_access_mask(src.1)
        .old_layout(src.2)
        .dst_stage_mask(dst.0)
        .dst_access_mask(dst.1)
        .new_layout(dst.2)
        .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
        .image(image)
        .subresource_range(COLOR_RANGE)];
    let dependency = vk::DependencyInfo::default().image_memory_barriers(&barriers);
    unsafe { device.cmd_pipeline_barrier2(cmd, &dependency) };
}
