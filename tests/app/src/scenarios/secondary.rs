//! `secondary`: the scene drawn by two secondary command buffers executed inside a render pass begun with
//! SECONDARY_COMMAND_BUFFERS contents, plus a compute dispatch recorded in a third secondary and executed
//! outside the pass. The image part of the checksum matches draw-renderpass's picture.

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, GRID_BYTES, VALUES_USAGE};
use super::draw::{DrawKit, PassTarget, Target, EXTENT, SCENE};
use super::Outcome;
use crate::context::{Access, Context, Fnv1a, Memory, VkResultExt};
use crate::Options;

pub fn run(cx: &Context, _options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let target = PassTarget::new(cx, EXTENT)?;
    let draw_kit = DrawKit::new(cx, Target::RenderPass(target.render_pass))?;
    let compute_kit = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let set = compute_kit.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    let image_readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let values_readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;

    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let secondaries = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::SECONDARY, 3)?;
    let (draw_cmds, compute_cmd) = (&secondaries[..2], secondaries[2]);

    // Two draw secondaries, each half of the scene. They continue the render pass, so they name it (and
    // the framebuffer) in their inheritance info; they inherit no dynamic state, which record_draw sets.
    let inheritance = vk::CommandBufferInheritanceInfo::default()
        .render_pass(target.render_pass)
        .subpass(0)
        .framebuffer(target.framebuffer);
    for (cmd, draws) in draw_cmds.iter().zip(SCENE.chunks(2)) {
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(
                vk::CommandBufferUsageFlags::RENDER_PASS_CONTINUE
                    | vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
            )
            .inheritance_info(&inheritance);
        unsafe { d.begin_command_buffer(*cmd, &begin) }.vk_context("vkBeginCommandBuffer")?;
        for draw in draws {
            draw_kit.record_draw(d, *cmd, EXTENT, draw);
        }
        unsafe { d.end_command_buffer(*cmd) }.vk_context("vkEndCommandBuffer")?;
    }

    // The compute secondary runs outside any render pass: empty inheritance info.
    let no_inheritance = vk::CommandBufferInheritanceInfo::default();
    let begin = vk::CommandBufferBeginInfo::default()
        .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)
        .inheritance_info(&no_inheritance);
    unsafe { d.begin_command_buffer(compute_cmd, &begin) }.vk_context("vkBeginCommandBuffer")?;
    compute_kit.record_grid(d, compute_cmd, set, 0);
    unsafe { d.end_command_buffer(compute_cmd) }.vk_context("vkEndCommandBuffer")?;

    cx.submit_and_wait(|cmd| {
        // The barriers around the compute secondary live in the primary.
        record_init(d, cmd, values.handle, 0, GRID_BYTES);
        unsafe { d.cmd_execute_commands(cmd, &[compute_cmd]) };
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &values_readback);

        target.begin(d, cmd, vk::SubpassContents::SECONDARY_COMMAND_BUFFERS);
        unsafe {
            d.cmd_execute_commands(cmd, draw_cmds);
            d.cmd_end_render_pass(cmd);
        }
        cx.record_image_readback(cmd, &target.image, &image_readback);
        Ok(())
    })?;

    let sum = Fnv1a::new()
        .update(image_readback.bytes())
        .update(values_readback.bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}
