//! `frame-bench` (not part of `all`): the GPU time a layer adds to a frame, which is what breadcrumbs that
//! write markers between commands cost. Each of `--frames` K frames (default 20) records one command buffer:
//! a classic render pass on a 64x64 RGBA8 target with `--frame-draws` N one-triangle draws (default 10,000;
//! two push-constant values alternate, so that no draw can be merged with its neighbour), then
//! `--frame-dispatches` M dispatches of one 8x8 workgroup of compute.comp (default 10,000; two push-constant
//! values alternate, no barriers in between). Timestamps (TOP_OF_PIPE before, BOTTOM_OF_PIPE after) bracket
//! the pass and the dispatches; the frame is submitted alone and waited for with a fence.
//!
//! Prints `frame-bench draws_gpu_us X` and `frame-bench dispatches_gpu_us Y` (medians of the timestamp
//! intervals, one decimal), or `frame-bench no timestamps` where the queue family has timestampValidBits 0,
//! then `frame-bench frame_cpu_us Z` (median of vkQueueSubmit + vkWaitForFences, one decimal). The first frame
//! is a warm-up and not counted. The dispatches' first timestamp may be written while the last draws still
//! run (TOP_OF_PIPE waits for nothing): on a GPU that overlaps them the two intervals overlap slightly.
//! On lavapipe the intervals say little: llvmpipe writes a timestamp taken inside a render pass when it
//! rasterises the pass's binned scene, which can be after later commands ran; compare `frame_cpu_us` there.
//! The checksum is of N, M and K: it depends only on the options. Numbers are for comparing runs, never for
//! assertions.
//!
//! With `--frame-kind scene`, the frame is one of realistic draws instead, whose GPU time a marker per
//! command barely changes where one-triangle draws (15 ns each on an H200) show every marker: 4 classic
//! render passes on a 512x512 RGBA8 target, each cleared, of 250 quads each (1,000 draws) whose areas run
//! from 1,000 to 50,000 pixels (log-uniform, from a fixed seed: 12.5 million pixels in all), with push
//! constants before every draw and a pipeline change (opaque, additive) every 4 draws. Prints `frame-bench
//! scene_gpu_us X` (timestamps before the first pass and after the last) and `frame-bench frame_cpu_us Z`.

use std::time::Instant;

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, ComputePush, GRID, GRID_BYTES, GROUP, VALUES_USAGE};
use super::draw::{Blend, DrawKit, PassTarget, Target, QUAD, TRIANGLE};
use super::record_bench::median;
use super::Outcome;
use crate::context::{begin_command_buffer, Context, Fnv1a, Memory, VkResultExt};
use crate::Options;

const EXTENT: vk::Extent2D = vk::Extent2D {
    width: 64,
    height: 64,
};
/// Timestamps per frame: before and after the pass, before and after the dispatches.
const QUERIES: u32 = 4;
/// The scene's target, passes and draws per pass.
const SCENE_EXTENT: vk::Extent2D = vk::Extent2D {
    width: 512,
    height: 512,
};
const SCENE_PASSES: u32 = 4;
const SCENE_DRAWS_PER_PASS: u32 = 250;
/// A pipeline change every this many draws of the scene.
const SCENE_DRAWS_PER_PIPELINE: u32 = 4;
/// The quads' areas in pixels, drawn log-uniformly.
const SCENE_AREAS: (f32, f32) = (1_000.0, 50_000.0);

/// Everything a frame's command buffer refers to (only handles, cheap to copy).
#[derive(Clone, Copy)]
struct Frame<'a> {
    device: &'a ash::Device,
    target: &'a PassTarget,
    draw: DrawKit,
    compute: ComputeKit,
    set: vk::DescriptorSet,
    /// None where the queue family has no timestamps.
    queries: Option<vk::QueryPool>,
}

impl Frame<'_> {
    fn timestamp(&self, cmd: vk::CommandBuffer, stage: vk::PipelineStageFlags, query: u32) {
        if let Some(pool) = self.queries {
            unsafe { self.device.cmd_write_timestamp(cmd, stage, pool, query) };
        }
    }

    fn record(&self, cmd: vk::CommandBuffer, draws: u32, dispatches: u32) -> Result<()> {
        let d = self.device;
        begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
        if let Some(pool) = self.queries {
            unsafe { d.cmd_reset_query_pool(cmd, pool, 0, QUERIES) };
        }

        self.timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, 0);
        self.target.begin(d, cmd, vk::SubpassContents::INLINE);
        unsafe {
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, self.draw.opaque);
            d.cmd_bind_vertex_buffers(cmd, 0, &[self.draw.vertices], &[0]);
        }
        self.draw.set_area(d, cmd, EXTENT, super::draw::Area::Full);
        let (first, count) = TRIANGLE;
        for i in 0..draws {
            let (offset, tint) = if i % 2 == 0 {
                (-0.5, [1.0, 0.5, 0.25, 0.0])
            } else {
                (0.5, [0.25, 0.5, 1.0, 0.0])
            };
            self.draw.push(d, cmd, [0.25, 0.25, offset, offset], tint);
            unsafe { d.cmd_draw(cmd, count, 1, first, 0) };
        }
        unsafe { d.cmd_end_render_pass(cmd) };
        self.timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, 1);

        self.timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, 2);
        let layout = self.compute.layout;
        unsafe {
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, self.compute.pipeline);
            d.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                layout,
                0,
                &[self.set],
                &[],
            );
        }
        for i in 0..dispatches {
            // One workgroup of GROUP x GROUP invocations on one of GRID rows of the array.
            let push = ComputePush {
                pass: i % 2,
                offset: (i % GRID) * GRID,
                width: GROUP,
                scale: 0.75,
            };
            unsafe {
                d.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, &push.bytes());
                d.cmd_dispatch(cmd, 1, 1, 1);
            }
        }
        self.timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, 3);
        unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")
    }
}

/// The realistic frame: its target, pipelines and the draws of every pass (push constants and blend).
struct Scene<'a> {
    device: &'a ash::Device,
    target: PassTarget,
    draw: DrawKit,
    /// (transform, tint) of each draw, pass after pass.
    draws: Vec<([f32; 4], [f32; 4])>,
    queries: Option<vk::QueryPool>,
}

impl<'a> Scene<'a> {
    fn new(cx: &'a Context, queries: Option<vk::QueryPool>) -> Result<Scene<'a>> {
        let target = PassTarget::new(cx, SCENE_EXTENT)?;
        let draw = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
        // A fixed seed: every run draws the same quads (xorshift32).
        let mut state = 0x9e37_79b9u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32
        };
        let (small, large) = SCENE_AREAS;
        let draws = (0..SCENE_PASSES * SCENE_DRAWS_PER_PASS)
            .map(|_| {
                let area = small * (large / small).powf(next());
                // A quad spans 2 * scale in clip space, scale * width pixels.
                let scale = area.sqrt() / SCENE_EXTENT.width as f32;
                let (x, y) = (next() * 2.0 - 1.0, next() * 2.0 - 1.0);
                let transform = [scale, scale, x * (1.0 - scale), y * (1.0 - scale)];
                (transform, [next(), next(), next(), next() * 4.0])
            })
            .collect();
        Ok(Scene {
            device: &cx.device,
            target,
            draw,
            draws,
            queries,
        })
    }

    fn record(&self, cmd: vk::CommandBuffer) -> Result<()> {
        let d = self.device;
        begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
        if let Some(pool) = self.queries {
            unsafe {
                d.cmd_reset_query_pool(cmd, pool, 0, QUERIES);
                d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::TOP_OF_PIPE, pool, 0);
            }
        }
        for pass in self.draws.chunks(SCENE_DRAWS_PER_PASS as usize) {
            self.target.begin(d, cmd, vk::SubpassContents::INLINE);
            unsafe { d.cmd_bind_vertex_buffers(cmd, 0, &[self.draw.vertices], &[0]) };
            self.draw
                .set_area(d, cmd, SCENE_EXTENT, super::draw::Area::Full);
            let (first, count) = QUAD;
            for (i, &(transform, tint)) in pass.iter().enumerate() {
                let per_pipeline = SCENE_DRAWS_PER_PIPELINE as usize;
                let since_change = i % per_pipeline;
                if since_change == 0 {
                    let blend = [Blend::Opaque, Blend::Additive][(i / per_pipeline) % 2];
                    let pipeline = self.draw.pipeline(blend);
                    unsafe { d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::GRAPHICS, pipeline) };
                }
                self.draw.push(d, cmd, transform, tint);
                unsafe { d.cmd_draw(cmd, count, 1, first, 0) };
            }
            unsafe { d.cmd_end_render_pass(cmd) };
        }
        if let Some(pool) = self.queries {
            unsafe { d.cmd_write_timestamp(cmd, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, 1) };
        }
        unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")
    }
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let opts = options.bench;
    let (draws, dispatches, frames) = (opts.frame_draws, opts.frame_dispatches, opts.frames);
    let valid_bits = cx.timestamp_valid_bits;
    let queries = if valid_bits > 0 {
        Some(cx.create_timestamp_pool(QUERIES)?)
    } else {
        None
    };
    let scene = if opts.frame_scene {
        Some(Scene::new(cx, queries)?)
    } else {
        None
    };
    let target = PassTarget::new(cx, EXTENT)?;
    let draw = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
    let compute = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let set = compute.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    cx.submit_and_wait(|cmd| {
        record_init(d, cmd, values.handle, 0, GRID_BYTES);
        Ok(())
    })?;
    let frame = Frame {
        device: d,
        target: &target,
        draw,
        compute,
        set,
        queries,
    };
    // Timestamps wrap at 2^valid_bits.
    let mask = if valid_bits >= 64 {
        u64::MAX
    } else {
        (1u64 << valid_bits) - 1
    };
    let ticks_to_ns = |start: u64, end: u64| -> u128 {
        let ticks = end.wrapping_sub(start) & mask;
        (ticks as f64 * f64::from(cx.timestamp_period)).round() as u128
    };

    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
    let fence = cx.create_fence()?;
    let (mut draws_ns, mut dispatches_ns, mut frame_ns) = (Vec::new(), Vec::new(), Vec::new());
    for n in 0..frames {
        // The previous frame's fence was waited for: the command buffer can be reset.
        unsafe { d.reset_command_pool(pool, vk::CommandPoolResetFlags::empty()) }
            .vk_context("vkResetCommandPool")?;
        match &scene {
            Some(scene) => scene.record(cmd)?,
            None => frame.record(cmd, draws, dispatches)?,
        }

        let start = Instant::now();
        let cmds = [cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")?;
        cx.wait_fence(fence)?;
        let elapsed = start.elapsed().as_nanos();
        unsafe { d.reset_fences(&[fence]) }.vk_context("vkResetFences")?;

        let mut stamps = [0u64; QUERIES as usize];
        if let Some(queries) = queries {
            let flags = vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT;
            let written = if scene.is_some() { 2 } else { QUERIES as usize };
            unsafe { d.get_query_pool_results(queries, 0, &mut stamps[..written], flags) }
                .vk_context("vkGetQueryPoolResults")?;
        }
        if n == 0 {
            continue; // warm-up
        }
        frame_ns.push(elapsed);
        draws_ns.push(ticks_to_ns(stamps[0], stamps[1]));
        dispatches_ns.push(ticks_to_ns(stamps[2], stamps[3]));
    }

    let us = |ns: u128| ns as f64 / 1000.0;
    match (queries.is_some(), scene.is_some()) {
        (false, _) => println!("frame-bench no timestamps"),
        (true, true) => println!("frame-bench scene_gpu_us {:.1}", us(median(draws_ns))),
        (true, false) => {
            println!("frame-bench draws_gpu_us {:.1}", us(median(draws_ns)));
            println!(
                "frame-bench dispatches_gpu_us {:.1}",
                us(median(dispatches_ns))
            );
        }
    }
    println!("frame-bench frame_cpu_us {:.1}", us(median(frame_ns)));

    let mut sum = Fnv1a::new();
    sum.update(&draws.to_le_bytes())
        .update(&dispatches.to_le_bytes())
        .update(&frames.to_le_bytes());
    if scene.is_some() {
        sum.update(b"scene");
    }
    Ok(Outcome::Checksum(sum.finish()))
}
