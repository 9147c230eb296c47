//! `shader-bench` (not part of `all`): how long shaders run, which is what instrumenting them (asserts,
//! NaN checks, a validation layer's GPU-assisted checks) adds to. Two ALU-heavy shaders share one loop
//! (shaders/testapp/shader_bench.glsl: divisions, normalize, pow, sqrt, and a BB_ASSERT that always holds,
//! `--shader-iterations` times, default 64), on values that stay finite:
//!
//! - compute: one dispatch of `--shader-invocations` N invocations (default 65536), each writing a vec4;
//! - fragment: one full-screen triangle over a `--shader-size` W x W RGBA32F target (default 256).
//!
//! Each is recorded once into its own command buffer, bracketed by timestamps (TOP_OF_PIPE before,
//! BOTTOM_OF_PIPE after, both outside any render pass), and submitted alone `--frames` K times (default
//! 20; the first a warm-up, not counted), each waited for with a fence: the K compute runs, then the K
//! fragment runs. Prints `shader-bench compute_gpu_us X` and `shader-bench fragment_gpu_us Y` (medians of
//! the timestamp intervals, one decimal; `shader-bench no timestamps` where the queue family has none), then
//! `compute_cpu_us` and `fragment_cpu_us` (medians of vkQueueSubmit + vkWaitForFences).
//!
//! With `--shader-condition-only` both shaders are built with the assert replaced by its condition checked
//! by hand (shader_bench.glsl says how): run without a layer, the reference for what an assert costs.
//!
//! With `--pipeline-stats` it first prints the driver's statistics of both pipelines (registers, code
//! size, as the driver names them: VK_KHR_pipeline_executable_properties), where the device has
//! them.
//!
//! The checksum is of the results of the last run (the vec4s, then the image): any setting that changes
//! what the shaders compute changes it. The app fails if a result is NaN or Inf. The defaults keep each
//! part at tens of milliseconds on lavapipe; give a GPU far larger sizes. Numbers are for comparing runs,
//! never for assertions.

use std::time::Instant;

use anyhow::{bail, Result};
use ash::vk;

use super::draw::{PassTarget, Target};
use super::program::{note_non_semantic, push_bytes, ComputeProgram, FullscreenProgram};
use super::record_bench::median;
use super::Outcome;
use crate::context::{begin_command_buffer, Access, Context, Fnv1a, Memory, VkResultExt};
use crate::{shaders, Options};

/// shader_bench.comp's local_size_x.
const LOCAL_SIZE: u32 = 64;
/// Workgroups along x at most (the rest go along y): below maxComputeWorkGroupCount[0]'s minimum, 65,535.
const MAX_GROUPS_X: u32 = 32768;
/// Timestamps: before and after the dispatch, before and after the render pass.
const QUERIES: u32 = 4;
const VEC4_BYTES: u64 = 16;

const RESULTS_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw() | vk::BufferUsageFlags::TRANSFER_SRC.as_raw(),
);

/// Prints the driver's statistics of each executable of each pipeline (`--pipeline-stats`), one line
/// each: `shader-bench stats PART EXECUTABLE: NAME = VALUE`: what the driver kept of each shader (on the
/// H200: registers, code size), beside its run time. The names and what is counted are the driver's own.
fn print_pipeline_statistics(cx: &Context, pipelines: &[(&str, vk::Pipeline)]) -> Result<()> {
    if !cx.features.pipeline_statistics {
        println!(
            "shader-bench stats none: the device has no VK_KHR_pipeline_executable_properties"
        );
        return Ok(());
    }
    let executables =
        ash::khr::pipeline_executable_properties::Device::new(&cx.instance, &cx.device);
    for &(part, pipeline) in pipelines {
        let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
        let properties = unsafe { executables.get_pipeline_executable_properties(&info) }
            .vk_context("vkGetPipelineExecutablePropertiesKHR")?;
        for (index, executable) in properties.iter().enumerate() {
            let name = executable
                .name_as_c_str()
                .map(|n| n.to_string_lossy().into_owned());
            let name = name.unwrap_or_else(|_| format!("executable {index}"));
            let info = vk::PipelineExecutableInfoKHR::default()
                .pipeline(pipeline)
                .executable_index(index as u32);
            let statistics = unsafe { executables.get_pipeline_executable_statistics(&info) }
                .vk_context("vkGetPipelineExecutableStatisticsKHR")?;
            for statistic in &statistics {
                let stat = statistic
                    .name_as_c_str()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                // SAFETY: the union member read is the one `format` names.
                let value = unsafe {
                    match statistic.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => {
                            (statistic.value.b32 == vk::TRUE).to_string()
                        }
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => {
                            statistic.value.i64.to_string()
                        }
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => {
                            statistic.value.u64.to_string()
                        }
                        vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => {
                            statistic.value.f64.to_string()
                        }
                        _ => "?".to_string(),
                    }
                };
                println!("shader-bench stats {part} {name}: {stat} = {value}");
            }
        }
    }
    Ok(())
}

/// Submits `cmd` alone, waits for `fence` and resets it; returns the CPU time of submit + wait.
fn submit_timed(cx: &Context, cmd: vk::CommandBuffer, fence: vk::Fence) -> Result<u128> {
    let d = &cx.device;
    let cmds = [cmd];
    let start = Instant::now();
    let submit = vk::SubmitInfo::default().command_buffers(&cmds);
    unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")?;
    cx.wait_fence(fence)?;
    let elapsed = start.elapsed().as_nanos();
    unsafe { d.reset_fences(&[fence]) }.vk_context("vkResetFences")?;
    Ok(elapsed)
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let opts = options.bench;
    let (count, size, iterations) = (
        opts.shader_invocations,
        opts.shader_size,
        opts.shader_iterations,
    );
    note_non_semantic(cx);

    let bytes = u64::from(count) * VEC4_BYTES;
    let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let results_readback =
        cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let (comp, frag) = if opts.shader_condition_only {
        (
            shaders::SHADER_BENCH_CONDITION_COMP,
            shaders::SHADER_BENCH_CONDITION_FRAG,
        )
    } else {
        (shaders::SHADER_BENCH_COMP, shaders::SHADER_BENCH_FRAG)
    };
    let compute = ComputeProgram::new(cx, comp, &[results.handle], 8, c"shader-bench compute")?;
    let groups = count.div_ceil(LOCAL_SIZE);
    let groups_x = groups.min(MAX_GROUPS_X);
    let group_counts = [groups_x, groups.div_ceil(groups_x), 1];

    let extent = vk::Extent2D {
        width: size,
        height: size,
    };
    let target = PassTarget::with_format(cx, extent, vk::Format::R32G32B32A32_SFLOAT)?;
    let image_readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let fragment = FullscreenProgram::new(
        cx,
        Target::RenderPass(target.render_pass),
        frag,
        8,
        &[],
        c"shader-bench fragment",
    )?;

    if opts.pipeline_stats {
        print_pipeline_statistics(
            cx,
            &[
                ("compute", compute.pipeline),
                ("fragment", fragment.pipeline),
            ],
        )?;
    }

    let valid_bits = cx.timestamp_valid_bits;
    let queries = if valid_bits > 0 {
        Some(cx.create_timestamp_pool(QUERIES)?)
    } else {
        None
    };
    let timestamp = |cmd, stage, query| {
        if let Some(pool) = queries {
            unsafe { d.cmd_write_timestamp(cmd, stage, pool, query) };
        }
    };
    let reset = |cmd, first| {
        if let Some(pool) = queries {
            unsafe { d.cmd_reset_query_pool(cmd, pool, first, 2) };
        }
    };

    // Recorded once, submitted K times (no ONE_TIME_SUBMIT): the work is the same every run.
    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let cmds = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 2)?;
    let (compute_cmd, fragment_cmd) = (cmds[0], cmds[1]);

    begin_command_buffer(d, compute_cmd, vk::CommandBufferUsageFlags::empty())?;
    reset(compute_cmd, 0);
    // The previous run wrote the same buffer (write-after-write).
    cx.buffer_barrier(
        compute_cmd,
        &results,
        Access::COMPUTE_WRITE,
        Access::COMPUTE_WRITE,
    );
    timestamp(compute_cmd, vk::PipelineStageFlags::TOP_OF_PIPE, 0);
    compute.record(
        d,
        compute_cmd,
        &push_bytes(&[count, iterations]),
        group_counts,
    );
    timestamp(compute_cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, 1);
    unsafe { d.end_command_buffer(compute_cmd) }.vk_context("vkEndCommandBuffer")?;

    begin_command_buffer(d, fragment_cmd, vk::CommandBufferUsageFlags::empty())?;
    reset(fragment_cmd, 2);
    timestamp(fragment_cmd, vk::PipelineStageFlags::TOP_OF_PIPE, 2);
    target.begin(d, fragment_cmd, vk::SubpassContents::INLINE);
    let push = push_bytes(&[iterations, (1.0 / size as f32).to_bits()]);
    fragment.record(d, fragment_cmd, extent, &push);
    unsafe { d.cmd_end_render_pass(fragment_cmd) };
    timestamp(fragment_cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, 3);
    unsafe { d.end_command_buffer(fragment_cmd) }.vk_context("vkEndCommandBuffer")?;

    // Timestamps wrap at 2^valid_bits.
    let mask = if valid_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << valid_bits) - 1
    };
    let elapsed_ns = |first: u32| -> Result<u128> {
        let Some(pool) = queries else { return Ok(0) };
        let mut stamps = [0u64; 2];
        let flags = vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT;
        unsafe { d.get_query_pool_results(pool, first, &mut stamps, flags) }
            .vk_context("vkGetQueryPoolResults")?;
        let ticks = stamps[1].wrapping_sub(stamps[0]) & mask;
        Ok((ticks as f64 * f64::from(cx.timestamp_period)).round() as u128)
    };

    // All compute runs come first: lavapipe (Mesa 22.3) takes a timestamp when its queue thread reaches it
    // only while no framebuffer has been bound; after a render pass it bins it with the pass's tiles and its
    // rasterizer threads write it later, at no fixed point relative to a dispatch (measured: intervals of
    // 20 us around 1.5 ms dispatches).
    let fence = cx.create_fence()?;
    let run = |cmd, first_query| -> Result<(Vec<u128>, Vec<u128>)> {
        let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
        for n in 0..opts.frames {
            let cpu_ns = submit_timed(cx, cmd, fence)?;
            let gpu_ns = elapsed_ns(first_query)?;
            if n > 0 {
                // the first run is a warm-up
                gpu.push(gpu_ns);
                cpu.push(cpu_ns);
            }
        }
        Ok((gpu, cpu))
    };
    let (compute_gpu, compute_cpu) = run(compute_cmd, 0)?;
    let (fragment_gpu, fragment_cpu) = run(fragment_cmd, 2)?;

    cx.submit_and_wait(|cmd| {
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &results_readback);
        // The render pass left the image in TRANSFER_SRC_OPTIMAL; its outgoing dependency covers the copy.
        cx.record_image_readback(cmd, &target.image, &image_readback);
        Ok(())
    })?;
    let floats = |bytes: &[u8]| -> Vec<f32> {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_ne_bytes(b.try_into().expect("4 bytes")))
            .collect()
    };
    for (part, bytes) in [
        ("compute", results_readback.bytes()),
        ("fragment", image_readback.bytes()),
    ] {
        let values = floats(bytes);
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            bail!(
                "shader-bench: {part} result {} (float {i}) is not finite",
                values[i]
            );
        }
    }

    let [compute_gpu, fragment_gpu, compute_cpu, fragment_cpu] =
        [compute_gpu, fragment_gpu, compute_cpu, fragment_cpu].map(|ns| median(ns) as f64 / 1000.0);
    println!(
        "shader-bench invocations {count} size {size} iterations {iterations} runs {}",
        opts.frames
    );
    if queries.is_some() {
        println!("shader-bench compute_gpu_us {compute_gpu:.1}");
        println!("shader-bench fragment_gpu_us {fragment_gpu:.1}");
    } else {
        println!("shader-bench no timestamps");
    }
    println!("shader-bench compute_cpu_us {compute_cpu:.1}");
    println!("shader-bench fragment_cpu_us {fragment_cpu:.1}");

    let sum = Fnv1a::new()
        .update(results_readback.bytes())
        .update(image_readback.bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}
