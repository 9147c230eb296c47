//! `debug-labels`: VK_EXT_debug_utils labels (nested command-buffer labels, inserted labels, a queue
//! label) and object names around dispatches and draws; a layer reporting "where" uses these names.

use std::ffi::CStr;

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, record_init_barrier, ComputeKit, GRID_BYTES, VALUES_USAGE};
use super::draw::{DrawKit, PassTarget, Target, EXTENT, SCENE};
use super::Outcome;
use crate::context::{Access, Context, Fnv1a, Memory};
use crate::Options;

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let omit = |name: &str| options.omit.iter().any(|o| o == name);
    let Some(debug_utils) = &cx.debug_utils else {
        return Ok(Outcome::Skipped("needs VK_EXT_debug_utils".into()));
    };
    let d = &cx.device;
    let compute_kit = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let set = compute_kit.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    let target = PassTarget::new(cx, EXTENT)?;
    let draw_kit = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
    let image_readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let values_readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;

    cx.set_name(values.handle, c"ParticleValues")?;
    cx.set_name(compute_kit.pipeline, c"ParticleSim")?;
    cx.set_name(draw_kit.opaque, c"OpaqueDraw")?;
    cx.set_name(draw_kit.additive, c"AdditiveDraw")?;
    cx.set_name(target.image.handle, c"ColorTarget")?;
    cx.set_name(target.render_pass, c"MainPass")?;
    cx.set_name(cx.queues[0], c"MainQueue")?;

    let label = |name: &'static CStr, color: [f32; 4]| {
        vk::DebugUtilsLabelEXT::default()
            .label_name(name)
            .color(color)
    };
    let queue_label = label(c"debug-labels submit", [1.0, 1.0, 1.0, 1.0]);
    unsafe { debug_utils.queue_begin_debug_utils_label(cx.queues[0], &queue_label) };
    let submitted = cx.submit_and_wait(|cmd| {
        cx.set_name(cmd, c"FrameCommands")?;
        unsafe {
            debug_utils.cmd_begin_debug_utils_label(cmd, &label(c"Frame", [0.9, 0.9, 0.9, 1.0]));
            debug_utils.cmd_begin_debug_utils_label(cmd, &label(c"Simulate", [0.2, 0.8, 0.2, 1.0]));
        }
        if omit("Simulate") {
            // The fill omitted, its barrier kept: what VK_BLACKBOX_SKIP=label:Simulate leaves.
            record_init_barrier(d, cmd, values.handle, 0, GRID_BYTES);
        } else {
            record_init(d, cmd, values.handle, 0, GRID_BYTES);
        }
        let dispatches = !omit("Simulate") && !omit("ParticleSim");
        if dispatches {
            compute_kit.record_grid(d, cmd, set, 30);
        } else {
            compute_kit.record_grid_state(d, cmd, set, 30);
        }
        unsafe {
            debug_utils
                .cmd_insert_debug_utils_label(cmd, &label(c"between passes", [1.0, 1.0, 0.0, 1.0]))
        };
        cx.buffer_barrier(
            cmd,
            &values,
            Access::COMPUTE_WRITE,
            Access::COMPUTE_READ_WRITE,
        );
        if dispatches {
            compute_kit.record_grid(d, cmd, set, 31);
        } else {
            compute_kit.record_grid_state(d, cmd, set, 31);
        }
        unsafe { debug_utils.cmd_end_debug_utils_label(cmd) };
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &values_readback);

        unsafe {
            debug_utils.cmd_begin_debug_utils_label(cmd, &label(c"Draw", [0.2, 0.2, 0.9, 1.0]))
        };
        target.begin(d, cmd, vk::SubpassContents::INLINE);
        let draw_names = [c"Background", c"Glow", c"Corner", c"Marker"];
        for (draw, name) in SCENE.iter().zip(draw_names) {
            unsafe {
                debug_utils.cmd_begin_debug_utils_label(cmd, &label(name, [0.5, 0.5, 1.0, 1.0]))
            };
            if omit(&name.to_string_lossy()) {
                draw_kit.record_draw_state(d, cmd, EXTENT, draw);
            } else {
                draw_kit.record_draw(d, cmd, EXTENT, draw);
            }
            unsafe { debug_utils.cmd_end_debug_utils_label(cmd) };
        }
        unsafe { d.cmd_end_render_pass(cmd) };
        cx.record_image_readback(cmd, &target.image, &image_readback);
        unsafe {
            debug_utils.cmd_end_debug_utils_label(cmd); // Draw
            debug_utils.cmd_end_debug_utils_label(cmd); // Frame
        }
        Ok(())
    });
    unsafe { debug_utils.queue_end_debug_utils_label(cx.queues[0]) };
    submitted?;

    let sum = Fnv1a::new()
        .update(image_readback.bytes())
        .update(values_readback.bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}
