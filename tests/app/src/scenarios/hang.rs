//! `hang` and `hang-draw` (not in `all`): one submission whose middle command runs for seconds, inside debug
//! labels, so that a hang watchdog or a device-loss report has a command in flight to name.
//!
//! `hang`: one command buffer, five compute dispatches in labels `dispatch 1`..`dispatch 5` inside `frame`
//! (`frame N` with `--frame N`), with barriers between them. Dispatches 1, 2, 4 and 5 are compute.comp over 64x64 invocations (pipeline
//! `short-pipeline`); dispatch 3 is hang.comp (`long-pipeline`) over `--hang-groups` workgroups of 64
//! invocations doing 172,000 multiply-adds each (about 0.65 s per 1000 workgroups on lavapipe: 5 s by
//! default).
//!
//! `hang-draw`: a classic render pass over a `--hang-size`-square target with three draws in labels
//! `draw 1`..`draw 3` inside `frame`: the scene's opaque quad and triangle (`short-pipeline`) around a
//! full-screen triangle whose fragment shader, hang.frag (`long-pipeline`), is slow (about 5 s for the
//! default 1024x1024 on lavapipe).
//!
//! Both wait for their fence with no timeout (UINT64_MAX) and print how long it took on stderr. Without
//! VK_EXT_debug_utils they run without labels and names. Where a wait fails (the device lost), the app
//! first sets the long shader's `stop` word (a host-visible buffer it reads at the start of each
//! invocation), so that work a layer declared lost while it still runs, as the test fault layer does on
//! lavapipe, ends in milliseconds rather than after seconds in the teardown.
//!
//! Variants, for device-loss reports on other shapes of work (each prints the default's checksum):
//! - `hang --two-queues`: dispatches 1-2 (after the buffer init) in one command buffer submitted to queue A,
//!   signalling a binary semaphore; dispatches 3-5 and the readback in a second one submitted to queue B,
//!   waiting for it. Each command buffer has its own `frame` label. Where the family has one queue
//!   (lavapipe) both go to that queue: two submissions in a row on it. Both fences are waited for at once.
//! - `hang --resubmit`: the five dispatches' command buffer is recorded once (no ONE_TIME_SUBMIT) and
//!   submitted twice. Dispatch 3 runs hang.comp built with BB_ITERATIONS_FROM_BUFFER: its loop count comes
//!   from a host-visible buffer, 1 for the first submission (short; waited for with the usual 60 s limit),
//!   then the real count for the second, which runs long.
//! - `hang-draw --dynamic`: the same draws between vkCmdBeginRendering and vkCmdEndRendering (with the
//!   image transitions around them, synchronization2), instead of the classic render pass.
//! - `hang-draw --secondary`: the three labelled draws recorded in a secondary command buffer named
//!   `draws-secondary` (RENDER_PASS_CONTINUE, inheriting the render pass, subpass 0 and framebuffer),
//!   executed by vkCmdExecuteCommands inside the classic pass (SECONDARY_COMMAND_BUFFERS contents); the
//!   `frame` label stays in the primary.

use std::time::Instant;

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, GRID, GRID_BYTES, VALUES_USAGE};
use super::draw::{
    begin_rendering, end_rendering, DrawKit, PassTarget, Target, SCENE, TARGET_USAGE,
};
use super::program::{frame_label, push_bytes, ComputeProgram, FullscreenProgram, Labels};
use super::Outcome;
use crate::context::{
    begin_command_buffer, Access, Buffer, Context, Fnv1a, Memory, VkResultExt, WAIT_TIMEOUT_NS,
};
use crate::{shaders, DrawMode, HangMode, Options};

/// hang.comp's loop count: 4 multiply-adds each, 172,000 per invocation (below lavapipe's loop cut).
const COMPUTE_ITERATIONS: u32 = 43_000;
/// `hang --resubmit`: dispatch 3's loop count in the first, short submission.
const SHORT_ITERATIONS: u32 = 1;
/// hang.frag's loop count: 4 multiply-adds each. About 5 s for 1024x1024 pixels on lavapipe.
const FRAGMENT_ITERATIONS: u32 = 21_000;

fn labels<'a>(cx: &'a Context, scenario: &str) -> Labels<'a> {
    if cx.debug_utils.is_none() {
        eprintln!("bb-testapp: {scenario}: VK_EXT_debug_utils unavailable: no labels or names");
    }
    Labels(cx.debug_utils.as_ref())
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let groups = options.fault.hang_groups;
    let mode = options.fault.hang_mode;
    let labels = labels(cx, "hang");

    let short = ComputeKit::new(cx, 1)?;
    cx.set_name(short.pipeline, c"short-pipeline")?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let set = short.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    let results_bytes = u64::from(groups) * 64 * 4;
    let results = cx.create_buffer(results_bytes, VALUES_USAGE, Memory::Device)?;
    // Dispatch 3's control words: its loop count with --resubmit (changed by the host between the two
    // submissions), and `stop`, set after a failed wait.
    let control = cx.create_buffer(16, vk::BufferUsageFlags::STORAGE_BUFFER, Memory::Host)?;
    control.write(&push_bytes(&[0, 0]));
    let resubmit = mode == HangMode::Resubmit;
    let long = ComputeProgram::new(
        cx,
        if resubmit {
            shaders::HANG_CONTROL_COMP
        } else {
            shaders::HANG_STOPPABLE_COMP
        },
        &[values.handle, results.handle, control.handle],
        8,
        c"long-pipeline",
    )?;
    let iterations = long_iterations(
        cx,
        options,
        &labels,
        &long,
        [&values, &results],
        resubmit.then_some(&control),
    )?;
    let values_readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let results_readback = cx.create_buffer(
        results_bytes,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;

    // Dispatch k in its label, after barriers on what the dispatch before it wrote or read.
    let record_dispatch = |cmd: vk::CommandBuffer, k: u32| {
        if k > 1 {
            // Each dispatch reads or overwrites what the one before wrote or read.
            for buffer in [&values, &results] {
                cx.buffer_barrier(
                    cmd,
                    buffer,
                    Access::COMPUTE_READ_WRITE,
                    Access::COMPUTE_READ_WRITE,
                );
            }
        }
        labels.begin(cmd, &format!("dispatch {k}"));
        if k == 3 {
            let push = push_bytes(&[iterations, GRID * GRID]);
            long.record(d, cmd, &push, [groups, 1, 1]);
        } else {
            short.record_grid(d, cmd, set, 40 + k);
        }
        labels.end(cmd);
    };
    // Dispatches `ks` inside the outer label.
    let record_frame = |cmd: vk::CommandBuffer, ks: std::ops::RangeInclusive<u32>| {
        labels.begin(cmd, &frame_label(options.fault.frame));
        for k in ks {
            record_dispatch(cmd, k);
        }
        labels.end(cmd);
    };
    let record_readback = |cmd: vk::CommandBuffer| {
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &values_readback);
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &results_readback);
    };

    eprintln!(
        "bb-testapp: hang: dispatch 3 runs {groups} workgroups x 64 invocations x {} multiply-adds",
        u64::from(iterations) * 4
    );
    let start = Instant::now();
    let waited = (|| match mode {
        HangMode::OneSubmission => cx.submit_and_wait_timeout_or(
            u64::MAX,
            |cmd| {
                record_init(d, cmd, values.handle, 0, GRID_BYTES);
                record_frame(cmd, 1..=5);
                record_readback(cmd);
                Ok(())
            },
            || stop_long_work(&control, 1),
        ),
        HangMode::TwoQueues => {
            let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
            let cmds = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 2)?;
            let (first, second) = (cmds[0], cmds[1]);
            begin_command_buffer(d, first, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
            record_init(d, first, values.handle, 0, GRID_BYTES);
            record_frame(first, 1..=2);
            unsafe { d.end_command_buffer(first) }.vk_context("vkEndCommandBuffer")?;
            // The semaphore makes dispatch 2's writes visible to dispatch 3; the barriers dispatch 3
            // records after it are then redundant but harmless.
            begin_command_buffer(d, second, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
            record_frame(second, 3..=5);
            record_readback(second);
            unsafe { d.end_command_buffer(second) }.vk_context("vkEndCommandBuffer")?;
            submit_two_queues(cx, first, second)
        }
        HangMode::Simultaneous => {
            let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
            let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
            begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::SIMULTANEOUS_USE)?;
            record_init(d, cmd, values.handle, 0, GRID_BYTES);
            record_frame(cmd, 1..=5);
            record_readback(cmd);
            unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
            // Two submissions of the same command buffer, the second made before the first finished. The
            // queue runs them one after the other, so the result is that of one run.
            let (first, second) = (cx.create_fence()?, cx.create_fence()?);
            let cmds = [cmd];
            for fence in [first, second] {
                let submit = vk::SubmitInfo::default().command_buffers(&cmds);
                unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }
                    .vk_context("vkQueueSubmit")?;
            }
            cx.wait_fence_timeout(first, u64::MAX)?;
            cx.wait_fence_timeout(second, u64::MAX)
        }
        HangMode::Resubmit => {
            let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
            let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
            // Neither ONE_TIME_SUBMIT nor SIMULTANEOUS_USE: submitted again once the first run is done.
            begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::empty())?;
            record_init(d, cmd, values.handle, 0, GRID_BYTES);
            record_frame(cmd, 1..=5);
            record_readback(cmd);
            unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
            submit_twice(cx, cmd, &control, iterations)
        }
    })();
    // The other modes destroy nothing before they return; the one-submission path set the word already,
    // before its fence and command buffer went (a second store changes nothing).
    if waited.is_err() {
        stop_long_work(&control, 1);
    }
    waited?;
    eprintln!(
        "bb-testapp: hang: the fence signalled after {:.2} s",
        start.elapsed().as_secs_f64()
    );

    let sum = Fnv1a::new()
        .update(values_readback.bytes())
        .update(results_readback.bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}

/// How long dispatch 3 runs on a device that is not a CPU when neither its loop count nor its time is
/// given: past a watchdog of 1 or 2 s (`blackbox demo`'s, `scripts/gpu-check.sh`'s), short of a driver's
/// own timeout. The fixed default runs for milliseconds on a GPU.
const GPU_HANG_SECONDS: f64 = 3.0;

/// Dispatch 3's loop count: `--hang-iterations` if given; else, with `--hang-seconds` or on a device that
/// is not a CPU, timed on the device: the long program in short dispatches, ten times longer each (from
/// 1,000 iterations), until one takes 50 ms, then scaled to the seconds wanted; else `COMPUTE_ITERATIONS`.
/// `control` is `--resubmit`'s buffer, which the long program reads its count from.
fn long_iterations(
    cx: &Context,
    options: &Options,
    labels: &Labels,
    long: &ComputeProgram,
    [values, results]: [&Buffer; 2],
    control: Option<&Buffer>,
) -> Result<u32> {
    let fault = &options.fault;
    if let Some(iterations) = fault.hang_iterations {
        return Ok(iterations);
    }
    let device_type = unsafe {
        cx.instance
            .get_physical_device_properties(cx.physical_device)
    }
    .device_type;
    let seconds = match fault.hang_seconds {
        Some(seconds) => seconds,
        None if device_type == vk::PhysicalDeviceType::CPU => return Ok(COMPUTE_ITERATIONS),
        None => GPU_HANG_SECONDS,
    };
    let d = &cx.device;
    let mut iterations: u32 = 1000;
    loop {
        if let Some(control) = control {
            control.write(&iterations.to_ne_bytes());
        }
        let start = Instant::now();
        cx.submit_and_wait(|cmd| {
            labels.begin(cmd, "timing dispatch 3");
            record_init(d, cmd, values.handle, 0, GRID_BYTES);
            let push = push_bytes(&[iterations, GRID * GRID]);
            long.record(d, cmd, &push, [fault.hang_groups, 1, 1]);
            // The run's own commands then fill `values` and write `results` again.
            cx.buffer_barrier(
                cmd,
                values,
                Access::COMPUTE_READ_WRITE,
                Access::TRANSFER_WRITE,
            );
            cx.buffer_barrier(
                cmd,
                results,
                Access::COMPUTE_READ_WRITE,
                Access::COMPUTE_READ_WRITE,
            );
            labels.end(cmd);
            Ok(())
        })?;
        let took = start.elapsed().as_secs_f64();
        if took >= 0.05 || iterations >= 100_000_000 {
            let scaled = (f64::from(iterations) * seconds / took.max(1e-6))
                .clamp(1.0, f64::from(u32::MAX)) as u32;
            eprintln!(
                "bb-testapp: hang: {iterations} iterations took {:.1} ms on {}: {scaled} for about {seconds} s",
                took * 1e3,
                cx.device_name
            );
            return Ok(scaled);
        }
        iterations *= 10;
    }
}

/// After a failed wait (the device lost, as the fault layer says where the work still runs on lavapipe):
/// sets the long shader's `stop` word (word `index` of `control`), so that its invocations not yet started
/// skip their loops and the work ends in milliseconds, not seconds, before the app's teardown waits for it.
/// After a real loss the write reaches nothing, and costs nothing.
fn stop_long_work(control: &Buffer, index: usize) {
    control.write_word_volatile(index, 1);
}

/// `hang --two-queues`: `first` to queue A signalling a semaphore, `second` to queue B waiting for it (at
/// the compute stage, where dispatch 3 reads dispatch 2's results); then waits for both fences at once,
/// with no timeout.
fn submit_two_queues(
    cx: &Context,
    first: vk::CommandBuffer,
    second: vk::CommandBuffer,
) -> Result<()> {
    let d = &cx.device;
    let [queue_a, queue_b] = cx.queues;
    if queue_a == queue_b {
        eprintln!("bb-testapp: hang: the queue family has one queue; using it twice");
    }
    let first_done = cx.create_semaphore()?;
    // One fence per submission: each command buffer is known complete before the pool is destroyed.
    let (first_fence, second_fence) = (cx.create_fence()?, cx.create_fence()?);
    let signal = [first_done];
    let first_cmds = [first];
    let submit = vk::SubmitInfo::default()
        .command_buffers(&first_cmds)
        .signal_semaphores(&signal);
    unsafe { d.queue_submit(queue_a, &[submit], first_fence) }.vk_context("vkQueueSubmit")?;
    let wait_stages = [vk::PipelineStageFlags::COMPUTE_SHADER];
    let second_cmds = [second];
    let submit = vk::SubmitInfo::default()
        .wait_semaphores(&signal)
        .wait_dst_stage_mask(&wait_stages)
        .command_buffers(&second_cmds);
    unsafe { d.queue_submit(queue_b, &[submit], second_fence) }.vk_context("vkQueueSubmit")?;
    unsafe { d.wait_for_fences(&[first_fence, second_fence], true, u64::MAX) }
        .vk_context("vkWaitForFences")
}

/// `hang --resubmit`: submits `cmd` with dispatch 3's loop count at `SHORT_ITERATIONS` and waits for it
/// (the usual limit), then with `COMPUTE_ITERATIONS` and waits with no timeout.
fn submit_twice(
    cx: &Context,
    cmd: vk::CommandBuffer,
    control: &Buffer,
    long_iterations: u32,
) -> Result<()> {
    let d = &cx.device;
    let fence = cx.create_fence()?;
    let cmds = [cmd];
    for (run, iterations) in [(1, SHORT_ITERATIONS), (2, long_iterations)] {
        // Host writes before vkQueueSubmit are visible to the submission: no barrier needed. The first
        // run is over (its fence waited for), so the buffer is free to change.
        control.write(&iterations.to_ne_bytes());
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")?;
        let timeout = if run == 1 { WAIT_TIMEOUT_NS } else { u64::MAX };
        cx.wait_fence_timeout(fence, timeout)?;
        if run == 1 {
            unsafe { d.reset_fences(&[fence]) }.vk_context("vkResetFences")?;
            eprintln!(
                "bb-testapp: hang: the first (short) submission is done; submitting it again"
            );
        }
    }
    Ok(())
}

pub fn run_draw(cx: &Context, options: &Options) -> Result<Outcome> {
    let mode = options.fault.draw_mode;
    if mode == DrawMode::Dynamic && !(cx.features.dynamic_rendering && cx.features.synchronization2)
    {
        return Ok(Outcome::Skipped(
            "--dynamic needs dynamicRendering and synchronization2".into(),
        ));
    }
    let d = &cx.device;
    let size = options.fault.hang_size;
    let extent = vk::Extent2D {
        width: size,
        height: size,
    };
    let labels = labels(cx, "hang-draw");

    // A classic render pass (and its target), or only an image for dynamic rendering.
    let (pass, image) = match mode {
        DrawMode::Dynamic => (None, cx.create_image(extent, TARGET_USAGE)?),
        DrawMode::RenderPass | DrawMode::Secondary => {
            let target = PassTarget::new(cx, extent)?;
            let image = target.image;
            (Some(target), image)
        }
    };
    let target = match &pass {
        Some(pass) => Target::RenderPass(pass.render_pass),
        None => Target::Dynamic(image.format),
    };
    let short = DrawKit::new(cx, target)?;
    cx.set_name(short.opaque, c"short-pipeline")?;
    // hang.frag's `stop` word, set after a failed wait.
    let control = cx.create_buffer(16, vk::BufferUsageFlags::STORAGE_BUFFER, Memory::Host)?;
    control.write(&push_bytes(&[0]));
    let long = FullscreenProgram::new(
        cx,
        target,
        shaders::HANG_FRAG,
        4,
        &[control.handle],
        c"long-pipeline",
    )?;
    let readback = cx.create_buffer(
        image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;

    let record_draws = |cmd: vk::CommandBuffer| {
        labels.begin(cmd, "draw 1");
        short.record_draw(d, cmd, extent, &SCENE[0]);
        labels.end(cmd);
        labels.begin(cmd, "draw 2");
        long.record(
            d,
            cmd,
            extent,
            &push_bytes(&[options.fault.hang_iterations.unwrap_or(FRAGMENT_ITERATIONS)]),
        );
        labels.end(cmd);
        labels.begin(cmd, "draw 3");
        short.record_draw(d, cmd, extent, &SCENE[3]);
        labels.end(cmd);
    };

    let secondary = match (mode, &pass) {
        (DrawMode::Secondary, Some(pass)) => {
            let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
            let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::SECONDARY, 1)?[0];
            cx.set_name(cmd, c"draws-secondary")?;
            // It continues the render pass, so it names it (and the framebuffer); it inherits no dynamic
            // state, which the draws set themselves.
            let inheritance = vk::CommandBufferInheritanceInfo::default()
                .render_pass(pass.render_pass)
                .subpass(0)
                .framebuffer(pass.framebuffer);
            let begin = vk::CommandBufferBeginInfo::default()
                .flags(
                    vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE
                        | vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
                )
                .inheritance_info(&inheritance);
            unsafe { d.begin_command_buffer(cmd, &begin) }.vk_context("vkBeginCommandBuffer")?;
            record_draws(cmd);
            unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
            Some(cmd)
        }
        _ => None,
    };

    eprintln!(
        "bb-testapp: hang-draw: draw 2 shades {size}x{size} pixels x {} multiply-adds ({mode:?})",
        u64::from(options.fault.hang_iterations.unwrap_or(FRAGMENT_ITERATIONS)) * 4
    );
    let start = Instant::now();
    let waited = cx.submit_and_wait_timeout_or(
        u64::MAX,
        |cmd| {
            labels.begin(cmd, &frame_label(options.fault.frame));
            match (&pass, secondary) {
                (Some(pass), Some(secondary)) => {
                    pass.begin(d, cmd, vk::SubpassContents::SECONDARY_COMMAND_BUFFERS);
                    unsafe {
                        d.cmd_execute_commands(cmd, &[secondary]);
                        d.cmd_end_render_pass(cmd);
                    }
                }
                (Some(pass), None) => {
                    pass.begin(d, cmd, vk::SubpassContents::INLINE);
                    record_draws(cmd);
                    unsafe { d.cmd_end_render_pass(cmd) };
                }
                (None, _) => {
                    begin_rendering(d, cmd, &image);
                    record_draws(cmd);
                    end_rendering(d, cmd, &image);
                }
            }
            labels.end(cmd);
            cx.record_image_readback(cmd, &image, &readback);
            Ok(())
        },
        || stop_long_work(&control, 0),
    );
    waited?;
    eprintln!(
        "bb-testapp: hang-draw: the fence signalled after {:.2} s",
        start.elapsed().as_secs_f64()
    );
    Ok(Outcome::Checksum(
        Fnv1a::new().update(readback.bytes()).finish(),
    ))
}
