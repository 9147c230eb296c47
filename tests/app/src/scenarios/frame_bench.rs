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

use std::time::Instant;

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, ComputePush, GRID, GRID_BYTES, GROUP, VALUES_USAGE};
use super::draw::{DrawKit, PassTarget, Target, TRIANGLE};
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

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let opts = options.bench;
    let (draws, dispatches, frames) = (opts.frame_draws, opts.frame_dispatches, opts.frames);
    let target = PassTarget::new(cx, EXTENT)?;
    let draw = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
    let compute = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let set = compute.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    cx.submit_and_wait(|cmd| {
        record_init(d, cmd, values.handle, 0, GRID_BYTES);
        Ok(())
    })?;
    let valid_bits = cx.timestamp_valid_bits;
    let queries = if valid_bits > 0 {
        Some(cx.create_timestamp_pool(QUERIES)?)
    } else {
        None
    };
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
        frame.record(cmd, draws, dispatches)?;

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
            unsafe { d.get_query_pool_results(queries, 0, &mut stamps, flags) }
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
    if queries.is_some() {
        println!("frame-bench draws_gpu_us {:.1}", us(median(draws_ns)));
        println!(
            "frame-bench dispatches_gpu_us {:.1}",
            us(median(dispatches_ns))
        );
    } else {
        println!("frame-bench no timestamps");
    }
    println!("frame-bench frame_cpu_us {:.1}", us(median(frame_ns)));

    let sum = Fnv1a::new()
        .update(&draws.to_le_bytes())
        .update(&dispatches.to_le_bytes())
        .update(&frames.to_le_bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}
