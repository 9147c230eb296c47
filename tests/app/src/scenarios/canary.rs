//! `validation-canary` (not in `all`): deliberate misuse that the validation layer reports only with
//! synchronization validation and best practices on, so that a test can prove the settings the tests run
//! with take effect. `FILLS` `vkCmdFillBuffer` write one buffer with no barrier between them (each after
//! the first a write-after-write hazard, `SYNC-HAZARD-WRITE-AFTER-WRITE`: more than the validation layer's
//! default limit of 10 repeats of one message), then a barrier with
//! `VK_PIPELINE_STAGE_ALL_COMMANDS_BIT` as its source stage (best practices' `pipeline-stage-flags`)
//! orders them before the readback. Both are what Blackbox's fill-buffer breadcrumbs must never do to an app.
//! The results are well defined (the second fill wins in practice, but the checksum is not compared).

use anyhow::Result;
use ash::vk;

use super::Outcome;
use crate::context::{fnv1a, Access, Context, Memory};
use crate::Options;

const BYTES: vk::DeviceSize = 4096;
/// Fills of the buffer, with no barrier between them.
pub const FILLS: u32 = 12;

pub fn run(cx: &Context, _options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let buffer = cx.create_buffer(
        BYTES,
        vk::BufferUsageFlags::TRANSFER_DST | vk::BufferUsageFlags::TRANSFER_SRC,
        Memory::Device,
    )?;
    let readback = cx.create_buffer(BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    eprintln!(
        "bb-testapp: validation-canary: {FILLS} fills of one buffer with no barrier, then an \
         ALL_COMMANDS barrier (validation must report both)"
    );
    cx.submit_and_wait(|cmd| {
        // SAFETY: a valid command buffer in the recording state; the buffer is the app's own.
        for k in 0..FILLS {
            unsafe { d.cmd_fill_buffer(cmd, buffer.handle, 0, BYTES, 0x1111_1111 * (k % 15 + 1)) };
        }
        // The readback's first barrier, from ALL_COMMANDS.
        let fills = Access {
            stage: vk::PipelineStageFlags::ALL_COMMANDS,
            access: vk::AccessFlags::TRANSFER_WRITE,
        };
        cx.record_buffer_readback(cmd, &buffer, fills, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
