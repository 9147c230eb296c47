//! `bad-address` (not in `all`): a GPU page fault. Three dispatches of bad_address.comp (pipeline
//! `address-writer`) in labels `dispatch 1`..`dispatch 3` inside `frame`; each writes 64 words through a
//! buffer device address from its push constants. Dispatches 1 and 3 write a real buffer; dispatch 2 writes
//! through `--bad-address` (default 0xdead0000). On lavapipe the process dies of SIGSEGV in a driver thread;
//! a GPU may report VK_ERROR_DEVICE_LOST, or hang. Where nothing goes wrong, the real buffer is read back.
//!
//! Needs bufferDeviceAddress, which the app enables only when this scenario is on the command line.

use anyhow::Result;
use ash::vk;

use super::program::{frame_label, push_bytes, ComputeProgram, Labels};
use super::Outcome;
use crate::context::{fnv1a, Access, Context, Memory};
use crate::{shaders, Options};

const WORDS_BYTES: vk::DeviceSize = 64 * 4;

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    if !cx.features.buffer_device_address {
        return Ok(Outcome::Skipped("needs bufferDeviceAddress".into()));
    }
    let d = &cx.device;
    let bad = options.fault.bad_address;
    let labels = Labels(cx.debug_utils.as_ref());
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC;
    let (words, address) = cx.create_addressable_buffer(WORDS_BYTES, usage, Memory::Device)?;
    let readback = cx.create_buffer(
        WORDS_BYTES,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let program = ComputeProgram::new(cx, shaders::BAD_ADDRESS_COMP, &[], 12, c"address-writer")?;

    eprintln!(
        "bb-testapp: bad-address: dispatch 2 writes through {bad:#x} (the good buffer is at \
         {address:#x}): expect a GPU fault (on lavapipe, SIGSEGV)"
    );
    cx.submit_and_wait(|cmd| {
        labels.begin(cmd, &frame_label(options.fault.frame));
        for k in 1..=3u32 {
            if k > 1 {
                cx.buffer_barrier(
                    cmd,
                    &words,
                    Access::COMPUTE_WRITE,
                    Access::COMPUTE_READ_WRITE,
                );
            }
            let target = if k == 2 { bad } else { address };
            let push = push_bytes(&[target as u32, (target >> 32) as u32, k]);
            labels.begin(cmd, &format!("dispatch {k}"));
            program.record(d, cmd, &push, [1, 1, 1]);
            labels.end(cmd);
        }
        labels.end(cmd);
        cx.record_buffer_readback(cmd, &words, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    eprintln!("bb-testapp: bad-address: no fault: the bad write went nowhere");
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
