//! `threads`: two threads, each with its own command pool, record compute work on their own half of one
//! buffer; the main thread submits both command buffers in one vkQueueSubmit.

use anyhow::{Context as _, Result};
use ash::vk;

use super::compute::{record_init, ComputeKit, GRID_BYTES, VALUES_USAGE};
use super::Outcome;
use crate::context::{
    allocate_command_buffers, begin_command_buffer, buffer_barrier, create_command_pool, fnv1a,
    record_buffer_readback, Access, Context, Memory, Owned, VkResultExt,
};
use crate::Options;

const THREADS: u64 = 2;
const PASSES: u32 = 3;

pub fn run(cx: &Context, _options: &Options) -> Result<Outcome> {
    let kit = ComputeKit::new(cx, THREADS as u32)?;
    let values = cx.create_buffer(GRID_BYTES * THREADS, VALUES_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(
        GRID_BYTES * THREADS,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    // Descriptor sets come from one pool, which is externally synchronized: allocate them here, not in
    // the threads. Each set binds only its thread's half, so the threads' accesses never overlap.
    let sets = (0..THREADS)
        .map(|t| kit.descriptor_set(cx, values.handle, t * GRID_BYTES, GRID_BYTES))
        .collect::<Result<Vec<_>>>()?;

    // The context is not Sync; the threads get the device and plain handles.
    let device = &cx.device;
    let queue_family = cx.queue_family;
    let (values, readback_handle) = (values.handle, readback.handle);
    let recorded: Vec<Result<(vk::CommandPool, vk::CommandBuffer)>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let set = sets[t as usize];
                scope.spawn(move || -> Result<(vk::CommandPool, vk::CommandBuffer)> {
                    let pool = create_command_pool(
                        device,
                        queue_family,
                        vk::CommandPoolCreateFlags::empty(),
                    )?;
                    let cmd =
                        allocate_command_buffers(device, pool, vk::CommandBufferLevel::PRIMARY, 1)?
                            [0];
                    begin_command_buffer(
                        device,
                        cmd,
                        vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT,
                    )?;
                    let offset = t * GRID_BYTES;
                    record_init(device, cmd, values, offset, GRID_BYTES);
                    for pass in 0..PASSES {
                        if pass > 0 {
                            let (src, dst) = (Access::COMPUTE_WRITE, Access::COMPUTE_READ_WRITE);
                            buffer_barrier(device, cmd, values, offset, GRID_BYTES, src, dst);
                        }
                        // Different passes per thread, so the halves differ.
                        kit.record_grid(device, cmd, set, pass + 10 * t as u32);
                    }
                    let src = Access::COMPUTE_WRITE;
                    record_buffer_readback(
                        device,
                        cmd,
                        values,
                        offset,
                        readback_handle,
                        offset,
                        GRID_BYTES,
                        src,
                    );
                    unsafe { device.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
                    Ok((pool, cmd))
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("recording thread panicked"))
            .collect()
    });

    // Register every pool that was created before looking at errors, so none leaks.
    let mut cmds = Vec::new();
    let mut first_error = None;
    for result in recorded {
        match result {
            Ok((pool, cmd)) => {
                cx.own(Owned::CommandPool(pool));
                cmds.push(cmd);
            }
            Err(e) => first_error = first_error.or(Some(e)),
        }
    }
    if let Some(e) = first_error {
        return Err(e).context("recording thread");
    }

    let fence = cx.create_fence()?;
    let submit = vk::SubmitInfo::default().command_buffers(&cmds);
    unsafe { device.queue_submit(cx.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")?;
    cx.wait_fence(fence)?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
