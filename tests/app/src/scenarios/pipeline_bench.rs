//! `pipeline-bench` (not part of `all`): the CPU cost of creating pipelines, which is where a layer that
//! instruments shaders adds its work. Each of `--iters` iterations (default 5) creates `--pipelines` N
//! compute pipelines (compute.comp, nan.comp and hang.comp in turn) and N graphics pipelines (draw.vert with
//! draw.frag, fullscreen.vert with nan.frag, in turn), one vkCreate*Pipelines call each, without a pipeline
//! cache, then destroys them. A pipeline's time is that of vkCreateShaderModule for its modules plus its
//! vkCreate*Pipelines call; each layout is the one the shader's own scenario uses.
//!
//! Every module is new: `tag` inserts `OpModuleProcessed "bench <iteration> <index>"` into a copy of the
//! embedded SPIR-V, so that nothing keyed by the module's words (Blackbox's instrumentation cache, a driver's
//! cache of SPIR-V) can reuse earlier work. A driver cache keyed by its own lowered form still sees the same
//! shaders again (on lavapipe, Mesa 22.3, `MESA_SHADER_CACHE_DISABLE=true` changes nothing measurable).
//!
//! Prints `pipeline-bench pipelines N iterations K`, then `pipeline-bench compute_us_per_pipeline X` and
//! `pipeline-bench graphics_us_per_pipeline Y` (medians over iterations, one decimal). The checksum is of the
//! tagged modules and the pipeline count: it depends only on the options. Numbers are for comparing runs,
//! never for assertions.

use std::ffi::CStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use ash::vk;

use super::compute::ComputeKit;
use super::draw::{create_render_pass, DrawKit, Target};
use super::program::{ComputeProgram, FullscreenProgram};
use super::record_bench::median;
use super::Outcome;
use crate::context::{Context, Fnv1a, Memory, VkResultExt};
use crate::{shaders, Options};

const DEFAULT_ITERS: u32 = 5;

// ---- the SPIR-V tag ----

const SPIRV_MAGIC: u32 = 0x0723_0203;
/// Words of the module header (magic, version, generator, bound, schema).
const HEADER_WORDS: usize = 5;
const OP_MODULE_PROCESSED: u32 = 330;
/// OpDecorate, OpMemberDecorate, OpDecorationGroup, OpGroupDecorate, OpGroupMemberDecorate, OpDecorateId,
/// OpDecorateString, OpMemberDecorateString: the annotation section, which follows the debug section.
const ANNOTATIONS: [u32; 8] = [71, 72, 73, 74, 75, 332, 5632, 5633];

/// Type declarations (OpTypeVoid..=OpTypeForwardPointer) and constants (OpConstantTrue..=OpConstantNull):
/// where a module without annotations leaves its debug section.
fn is_type_or_constant(opcode: u32) -> bool {
    (19..=39).contains(&opcode) || (41..=46).contains(&opcode)
}

/// A copy of `spirv` with `OpModuleProcessed "<process>"` at the end of its debug section, i.e. just before
/// the first annotation or, in a module without any, the first type or constant. Valid wherever the original
/// is, and different from it in its words only.
pub fn tag(spirv: &[u32], process: &str) -> Result<Vec<u32>> {
    if spirv.len() < HEADER_WORDS || spirv[0] != SPIRV_MAGIC {
        bail!("not a SPIR-V module");
    }
    if process.contains('\0') {
        bail!("OpModuleProcessed text with a NUL");
    }
    let mut at = HEADER_WORDS;
    loop {
        let Some(&first) = spirv.get(at) else {
            bail!("SPIR-V module without annotations, types or constants");
        };
        let (words, opcode) = ((first >> 16) as usize, first & 0xffff);
        if words == 0 || at + words > spirv.len() {
            bail!("malformed SPIR-V instruction at word {at}");
        }
        if ANNOTATIONS.contains(&opcode) || is_type_or_constant(opcode) {
            break;
        }
        at += words;
    }
    // A literal string: UTF-8, NUL-terminated, padded with NULs to whole words, first byte lowest.
    let mut text = process.as_bytes().to_vec();
    text.resize(text.len() / 4 * 4 + 4, 0);
    let instruction_words = 1 + text.len() / 4;
    let mut out = Vec::with_capacity(spirv.len() + instruction_words);
    out.extend_from_slice(&spirv[..at]);
    out.push(((instruction_words as u32) << 16) | OP_MODULE_PROCESSED);
    out.extend(
        text.chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))),
    );
    out.extend_from_slice(&spirv[at..]);
    Ok(out)
}

fn words(spirv: &[u8]) -> Result<Vec<u32>> {
    ash::util::read_spv(&mut std::io::Cursor::new(spirv)).context("embedded SPIR-V is malformed")
}

// ---- the pipelines ----

/// A compute shader of the benchmark and the pipeline layout its scenario uses.
struct ComputeShader {
    spirv: Vec<u32>,
    layout: vk::PipelineLayout,
}

/// A vertex and fragment shader pair of the benchmark, with the layout and render pass its scenario uses.
struct GraphicsShaders {
    vert: Vec<u32>,
    frag: Vec<u32>,
    layout: vk::PipelineLayout,
    render_pass: vk::RenderPass,
    /// draw.vert's vertex buffer (position xy, color rgb); fullscreen.vert has none.
    vertex_input: bool,
}

/// The pipelines of one iteration, destroyed when it ends (also after an error). Only pipeline creation
/// happens here, no GPU work: destroying them is always valid.
struct Created<'a> {
    device: &'a ash::Device,
    pipelines: Vec<vk::Pipeline>,
}

impl Drop for Created<'_> {
    fn drop(&mut self) {
        for &pipeline in &self.pipelines {
            // SAFETY: created on this device, never used.
            unsafe { self.device.destroy_pipeline(pipeline, None) };
        }
    }
}

/// Creates a module from each of `spirv`, then a pipeline from them with `create`, and destroys the modules;
/// returns the pipeline and the time the creation calls took.
fn create_timed(
    device: &ash::Device,
    spirv: &[&[u32]],
    create: impl FnOnce(&[vk::ShaderModule]) -> Result<vk::Pipeline>,
) -> Result<(vk::Pipeline, Duration)> {
    let mut modules = Vec::with_capacity(spirv.len());
    let start = Instant::now();
    let created = (|| {
        for code in spirv {
            let info = vk::ShaderModuleCreateInfo::default().code(code);
            let module = unsafe { device.create_shader_module(&info, None) }
                .vk_context("vkCreateShaderModule")?;
            modules.push(module);
        }
        create(&modules)
    })();
    let elapsed = start.elapsed();
    for module in modules {
        // SAFETY: the pipeline (if any) is created; nothing else uses the module.
        unsafe { device.destroy_shader_module(module, None) };
    }
    Ok((created?, elapsed))
}

fn create_compute_pipeline(
    device: &ash::Device,
    layout: vk::PipelineLayout,
    module: vk::ShaderModule,
) -> Result<vk::Pipeline> {
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(c"main");
    let info = vk::ComputePipelineCreateInfo::default()
        .stage(stage)
        .layout(layout);
    let created =
        unsafe { device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) };
    Ok(created
        .map_err(|(_, r)| r)
        .vk_context("vkCreateComputePipelines")?[0])
}

/// A graphics pipeline with the state of `DrawKit`'s opaque pipeline or of `FullscreenProgram`.
fn create_graphics_pipeline(
    device: &ash::Device,
    shaders: &GraphicsShaders,
    vert: vk::ShaderModule,
    frag: vk::ShaderModule,
) -> Result<vk::Pipeline> {
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
    let vertex_input = if shaders.vertex_input {
        vk::PipelineVertexInputStateCreateInfo::default()
            .vertex_binding_descriptions(&bindings)
            .vertex_attribute_descriptions(&attributes)
    } else {
        vk::PipelineVertexInputStateCreateInfo::default()
    };
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
    let info = vk::GraphicsPipelineCreateInfo::default()
        .stages(&stages)
        .vertex_input_state(&vertex_input)
        .input_assembly_state(&input_assembly)
        .viewport_state(&viewport)
        .rasterization_state(&raster)
        .multisample_state(&multisample)
        .color_blend_state(&blend)
        .dynamic_state(&dynamic)
        .layout(shaders.layout)
        .render_pass(shaders.render_pass)
        .subpass(0);
    let created =
        unsafe { device.create_graphics_pipelines(vk::PipelineCache::null(), &[info], None) };
    Ok(created
        .map_err(|(_, r)| r)
        .vk_context("vkCreateGraphicsPipelines")?[0])
}

/// The layout `ComputeProgram` gives a shader with two storage buffers and 8 bytes of push constants
/// (nan.comp, hang.comp), as their scenarios create it (its one pipeline is a warm-up here).
fn two_buffer_layout(cx: &Context, spirv: &[u8], name: &CStr) -> Result<vk::PipelineLayout> {
    let buffer = cx.create_buffer(256, vk::BufferUsageFlags::STORAGE_BUFFER, Memory::Device)?;
    let program = ComputeProgram::new(cx, spirv, &[buffer.handle, buffer.handle], 8, name)?;
    Ok(program.layout)
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let n = options.bench.pipelines;
    let iters = options.bench.iters.unwrap_or(DEFAULT_ITERS);

    // The layouts and render passes of the scenarios that own the shaders. Creating them also creates one
    // pipeline of each shader, untimed: a warm-up for the driver and the layer.
    let compute = [
        ComputeShader {
            spirv: words(shaders::COMPUTE)?,
            layout: ComputeKit::new(cx, 1)?.layout,
        },
        ComputeShader {
            spirv: words(shaders::NAN_COMP)?,
            layout: two_buffer_layout(cx, shaders::NAN_COMP, c"pipeline-bench nan.comp")?,
        },
        ComputeShader {
            spirv: words(shaders::HANG_COMP)?,
            layout: two_buffer_layout(cx, shaders::HANG_COMP, c"pipeline-bench hang.comp")?,
        },
    ];
    let rgba8 = create_render_pass(cx, vk::Format::R8G8B8A8_UNORM)?;
    let rgba32f = create_render_pass(cx, vk::Format::R32G32B32A32_SFLOAT)?;
    let fullscreen = FullscreenProgram::new(
        cx,
        Target::RenderPass(rgba32f),
        shaders::NAN_FRAG,
        32,
        &[],
        c"pipeline-bench nan.frag",
    )?;
    let graphics = [
        GraphicsShaders {
            vert: words(shaders::DRAW_VERT)?,
            frag: words(shaders::DRAW_FRAG)?,
            layout: DrawKit::new(cx, Target::RenderPass(rgba8))?.layout,
            render_pass: rgba8,
            vertex_input: true,
        },
        GraphicsShaders {
            vert: words(shaders::FULLSCREEN_VERT)?,
            frag: words(shaders::NAN_FRAG)?,
            layout: fullscreen.layout,
            render_pass: rgba32f,
            vertex_input: false,
        },
    ];

    let mut checksum = Fnv1a::new();
    let mut hash = |spirv: &[u32]| {
        for word in spirv {
            checksum.update(&word.to_le_bytes());
        }
    };
    let (mut compute_ns, mut graphics_ns) = (Vec::new(), Vec::new());
    let mut count: u64 = 0;
    for iter in 0..iters {
        // Tagged before the clock runs: an app has its SPIR-V ready too.
        let process = |i: u32| format!("bench {iter} {i}");
        let compute_spirv = (0..n)
            .map(|i| tag(&compute[i as usize % compute.len()].spirv, &process(i)))
            .collect::<Result<Vec<_>>>()?;
        let graphics_spirv = (0..n)
            .map(|i| {
                let shaders = &graphics[i as usize % graphics.len()];
                Ok([
                    tag(&shaders.vert, &process(i))?,
                    tag(&shaders.frag, &process(i))?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        compute_spirv.iter().for_each(|spirv| hash(spirv));
        graphics_spirv
            .iter()
            .flatten()
            .for_each(|spirv| hash(spirv));

        let mut created = Created {
            device: d,
            pipelines: Vec::new(),
        };
        let mut total = Duration::ZERO;
        for (i, spirv) in compute_spirv.iter().enumerate() {
            let layout = compute[i % compute.len()].layout;
            let (pipeline, time) = create_timed(d, &[spirv], |modules| {
                create_compute_pipeline(d, layout, modules[0])
            })?;
            created.pipelines.push(pipeline);
            total += time;
        }
        compute_ns.push(total.as_nanos());

        let mut total = Duration::ZERO;
        for (i, [vert, frag]) in graphics_spirv.iter().enumerate() {
            let shaders = &graphics[i % graphics.len()];
            let (pipeline, time) = create_timed(d, &[vert, frag], |modules| {
                create_graphics_pipeline(d, shaders, modules[0], modules[1])
            })?;
            created.pipelines.push(pipeline);
            total += time;
        }
        graphics_ns.push(total.as_nanos());
        count += created.pipelines.len() as u64;
    }

    let us_per_pipeline = |ns: Vec<u128>| median(ns) as f64 / f64::from(n) / 1000.0;
    println!("pipeline-bench pipelines {n} iterations {iters}");
    println!(
        "pipeline-bench compute_us_per_pipeline {:.1}",
        us_per_pipeline(compute_ns)
    );
    println!(
        "pipeline-bench graphics_us_per_pipeline {:.1}",
        us_per_pipeline(graphics_ns)
    );
    Ok(Outcome::Checksum(
        checksum.update(&count.to_le_bytes()).finish(),
    ))
}
