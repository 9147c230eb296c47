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
//! VK_EXT_debug_utils they run without labels and names.

use std::time::Instant;

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, GRID, GRID_BYTES, VALUES_USAGE};
use super::draw::{DrawKit, PassTarget, Target, SCENE};
use super::program::{frame_label, push_bytes, ComputeProgram, FullscreenProgram, Labels};
use super::Outcome;
use crate::context::{Access, Context, Fnv1a, Memory};
use crate::{shaders, Options};

/// hang.comp's loop count: 4 multiply-adds each, 172,000 per invocation (below lavapipe's loop cut).
const COMPUTE_ITERATIONS: u32 = 43_000;
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
    let labels = labels(cx, "hang");

    let short = ComputeKit::new(cx, 1)?;
    cx.set_name(short.pipeline, c"short-pipeline")?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let set = short.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    let results_bytes = u64::from(groups) * 64 * 4;
    let results = cx.create_buffer(results_bytes, VALUES_USAGE, Memory::Device)?;
    let long = ComputeProgram::new(
        cx,
        shaders::HANG_COMP,
        &[values.handle, results.handle],
        8,
        c"long-pipeline",
    )?;
    let values_readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let results_readback = cx.create_buffer(
        results_bytes,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;

    eprintln!(
        "bb-testapp: hang: dispatch 3 runs {groups} workgroups x 64 invocations x {} multiply-adds",
        COMPUTE_ITERATIONS * 4
    );
    let start = Instant::now();
    cx.submit_and_wait_timeout(u64::MAX, |cmd| {
        record_init(d, cmd, values.handle, 0, GRID_BYTES);
        labels.begin(cmd, &frame_label(options.fault.frame));
        for k in 1..=5u32 {
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
                let push = push_bytes(&[COMPUTE_ITERATIONS, GRID * GRID]);
                long.record(d, cmd, &push, [groups, 1, 1]);
            } else {
                short.record_grid(d, cmd, set, 40 + k);
            }
            labels.end(cmd);
        }
        labels.end(cmd);
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &values_readback);
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &results_readback);
        Ok(())
    })?;
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

pub fn run_draw(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let size = options.fault.hang_size;
    let extent = vk::Extent2D {
        width: size,
        height: size,
    };
    let labels = labels(cx, "hang-draw");

    let target = PassTarget::new(cx, extent)?;
    let short = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
    cx.set_name(short.opaque, c"short-pipeline")?;
    let long = FullscreenProgram::new(
        cx,
        target.render_pass,
        shaders::HANG_FRAG,
        4,
        c"long-pipeline",
    )?;
    let readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;

    eprintln!(
        "bb-testapp: hang-draw: draw 2 shades {size}x{size} pixels x {} multiply-adds",
        FRAGMENT_ITERATIONS * 4
    );
    let start = Instant::now();
    cx.submit_and_wait_timeout(u64::MAX, |cmd| {
        labels.begin(cmd, &frame_label(options.fault.frame));
        target.begin(d, cmd, vk::SubpassContents::INLINE);
        labels.begin(cmd, "draw 1");
        short.record_draw(d, cmd, extent, &SCENE[0]);
        labels.end(cmd);
        labels.begin(cmd, "draw 2");
        long.record(d, cmd, extent, &push_bytes(&[FRAGMENT_ITERATIONS]));
        labels.end(cmd);
        labels.begin(cmd, "draw 3");
        short.record_draw(d, cmd, extent, &SCENE[3]);
        labels.end(cmd);
        unsafe { d.cmd_end_render_pass(cmd) };
        labels.end(cmd);
        cx.record_image_readback(cmd, &target.image, &readback);
        Ok(())
    })?;
    eprintln!(
        "bb-testapp: hang-draw: the fence signalled after {:.2} s",
        start.elapsed().as_secs_f64()
    );
    Ok(Outcome::Checksum(
        Fnv1a::new().update(readback.bytes()).finish(),
    ))
}
