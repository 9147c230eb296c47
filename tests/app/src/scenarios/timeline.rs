//! `timeline`: a chain of four submissions on a timeline semaphore. Submission k (1..=4) waits for value k
//! and signals k + 1; the host signals value 1 with vkSignalSemaphore, then waits for value 5 with
//! vkWaitSemaphores and reads the result. The host signals before submitting: lavapipe 22.3 sometimes
//! deadlocks a later vkQueueSubmit after a wait-before-signal chain (seen in 5-15% of runs).

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, GRID_BYTES, VALUES_USAGE};
use super::Outcome;
use crate::context::{
    begin_command_buffer, fnv1a, Access, Context, Memory, VkResultExt, WAIT_TIMEOUT_NS,
};
use crate::Options;

const SUBMISSIONS: u64 = 4;

pub fn run(cx: &Context, _options: &Options) -> Result<Outcome> {
    if !cx.features.timeline_semaphore {
        return Ok(Outcome::Skipped("needs timelineSemaphore".into()));
    }
    let d = &cx.device;
    let kit = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(GRID_BYTES, VALUES_USAGE, Memory::Device)?;
    let readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let set = kit.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;
    let timeline = cx.create_timeline_semaphore(0)?;
    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let cmds =
        cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, SUBMISSIONS as u32)?;

    for (k, &cmd) in cmds.iter().enumerate() {
        begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
        if k == 0 {
            record_init(d, cmd, values.handle, 0, GRID_BYTES);
        }
        // No barrier between submissions: the semaphore signal/wait pair is a full memory dependency.
        kit.record_grid(d, cmd, set, k as u32);
        if k as u64 == SUBMISSIONS - 1 {
            cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &readback);
        }
        unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
    }

    let signal = vk::SemaphoreSignalInfo::default()
        .semaphore(timeline)
        .value(1);
    unsafe { d.signal_semaphore(&signal) }.vk_context("vkSignalSemaphore")?;

    for (k, &cmd) in (1..=SUBMISSIONS).zip(&cmds) {
        let (wait_values, signal_values) = ([k], [k + 1]);
        let mut timeline_info = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let semaphores = [timeline];
        // The first submission starts with a fill (transfer), the others with the dispatch.
        let wait_stages =
            [vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::COMPUTE_SHADER];
        let command_buffers = [cmd];
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&semaphores)
            .wait_dst_stage_mask(&wait_stages)
            .command_buffers(&command_buffers)
            .signal_semaphores(&semaphores)
            .push_next(&mut timeline_info);
        unsafe { d.queue_submit(cx.queues[0], &[submit], vk::Fence::null()) }
            .vk_context("vkQueueSubmit")?;
    }

    let semaphores = [timeline];
    let final_value = [SUBMISSIONS + 1];
    let wait = vk::SemaphoreWaitInfo::default()
        .semaphores(&semaphores)
        .values(&final_value);
    unsafe { d.wait_semaphores(&wait, WAIT_TIMEOUT_NS) }.vk_context("vkWaitSemaphores")?;
    // Not needed by the spec (the last signal follows all the work), but lavapipe 22.3's queue thread can
    // still be finishing the batch: destroying the semaphore then deadlocks a later submission (seen in
    // about 1 run of 6). Waiting for the queue to go idle avoids it.
    unsafe { d.queue_wait_idle(cx.queues[0]) }.vk_context("vkQueueWaitIdle")?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
