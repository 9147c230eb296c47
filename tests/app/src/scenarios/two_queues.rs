//! `two-queues`: compute on one queue, a draw on the second (the same queue when the family has only
//! one), ordered by a binary semaphore. The graphics submission also copies the compute results out, so
//! the semaphore is what makes that copy correct.

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, GRID_BYTES, VALUES_USAGE};
use super::draw::{DrawKit, PassTarget, Target, EXTENT};
use super::Outcome;
use crate::context::{
    begin_command_buffer, Access, Context, Fnv1a, Memory, VkResultExt, WAIT_TIMEOUT_NS,
};
use crate::Options;

pub fn run(cx: &Context, _options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let [compute_queue, graphics_queue] = cx.queues;
    if compute_queue == graphics_queue {
        eprintln!("bb-testapp: two-queues: the queue family has one queue; using it twice");
    }
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

    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let cmds = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 2)?;
    let (compute_cmd, graphics_cmd) = (cmds[0], cmds[1]);
    let compute_done = cx.create_semaphore()?;
    // One fence per submission: each command buffer is known complete before the pool is destroyed.
    let (compute_fence, graphics_fence) = (cx.create_fence()?, cx.create_fence()?);

    begin_command_buffer(d, compute_cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
    record_init(d, compute_cmd, values.handle, 0, GRID_BYTES);
    for pass in 0..2 {
        if pass > 0 {
            cx.buffer_barrier(
                compute_cmd,
                &values,
                Access::COMPUTE_WRITE,
                Access::COMPUTE_READ_WRITE,
            );
        }
        compute_kit.record_grid(d, compute_cmd, set, 20 + pass);
    }
    unsafe { d.end_command_buffer(compute_cmd) }.vk_context("vkEndCommandBuffer")?;

    begin_command_buffer(
        d,
        graphics_cmd,
        vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
    )?;
    target.begin(d, graphics_cmd, vk::SubpassContents::INLINE);
    draw_kit.record_scene(d, graphics_cmd, EXTENT);
    unsafe { d.cmd_end_render_pass(graphics_cmd) };
    cx.record_image_readback(graphics_cmd, &target.image, &image_readback);
    // No barrier before this copy: the semaphore wait (stage TRANSFER) made the compute writes visible.
    let region = vk::BufferCopy {
        src_offset: 0,
        dst_offset: 0,
        size: GRID_BYTES,
    };
    unsafe {
        d.cmd_copy_buffer(
            graphics_cmd,
            values.handle,
            values_readback.handle,
            &[region],
        )
    };
    cx.buffer_barrier(
        graphics_cmd,
        &values_readback,
        Access::TRANSFER_WRITE,
        Access::HOST_READ,
    );
    unsafe { d.end_command_buffer(graphics_cmd) }.vk_context("vkEndCommandBuffer")?;

    let signal = [compute_done];
    let compute_cmds = [compute_cmd];
    let submit = vk::SubmitInfo::default()
        .command_buffers(&compute_cmds)
        .signal_semaphores(&signal);
    unsafe { d.queue_submit(compute_queue, &[submit], compute_fence) }
        .vk_context("vkQueueSubmit")?;

    let wait_stages = [vk::PipelineStageFlags::TRANSFER];
    let graphics_cmds = [graphics_cmd];
    let submit = vk::SubmitInfo::default()
        .wait_semaphores(&signal)
        .wait_dst_stage_mask(&wait_stages)
        .command_buffers(&graphics_cmds);
    unsafe { d.queue_submit(graphics_queue, &[submit], graphics_fence) }
        .vk_context("vkQueueSubmit")?;

    unsafe { d.wait_for_fences(&[compute_fence, graphics_fence], true, WAIT_TIMEOUT_NS) }
        .vk_context("vkWaitForFences")?;
    let sum = Fnv1a::new()
        .update(image_readback.bytes())
        .update(values_readback.bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}
