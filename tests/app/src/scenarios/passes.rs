//! `passes` (not in `all`): what `blackbox bisect` searches. `--passes` (16) dispatches, each in its own
//! label `pass K` inside `frame` and with its own pipeline `pass-K` (the same passes.comp), each writing its
//! own 64 floats. Pass `--bad-pass` (11) goes wrong as `--pass-fault` says: `nan` (invocation 7 takes the
//! square root of -1: a NaN Blackbox reports at VK_BLACKBOX_NAN=ops), `hang` (`--hang-groups` workgroups
//! of a loop of `--hang-iterations` (60,000) iterations: on lavapipe 1500 groups outlast a 1 s watchdog; a
//! GPU needs a longer loop), `crash` (bad_address.comp writes through
//! `--bad-address`: on lavapipe a SIGSEGV). `none`: every pass is fine. Then the floats are read back.
//!
//! Needs bufferDeviceAddress (for `crash`; enabled when the scenario is on the command line).

use std::ffi::CString;

use anyhow::Result;
use ash::vk;

use super::program::{frame_label, push_bytes, ComputeProgram, Labels};
use super::Outcome;
use crate::context::{fnv1a, Access, Context, Memory};
use crate::{shaders, Options, PassFault};

/// Loop iterations per invocation of the hanging pass (x its workgroups): below lavapipe's cut at 65,535.
const HANG_ITERATIONS: u32 = 60_000;

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let fault = options.fault;
    let d = &cx.device;
    let labels = Labels(cx.debug_utils.as_ref());
    let passes = fault.passes;
    let bad = fault.bad_pass.min(passes - 1);
    let bytes = u64::from(passes) * 64 * 4;
    let usage = vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC;
    let data = cx.create_buffer(bytes, usage, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let mut programs = Vec::new();
    for k in 0..passes {
        let name = CString::new(format!("pass-{k}")).expect("no NUL");
        let program = if k == bad && fault.pass_fault == PassFault::Crash {
            if !cx.features.buffer_device_address {
                return Ok(Outcome::Skipped(
                    "--pass-fault crash needs bufferDeviceAddress".into(),
                ));
            }
            ComputeProgram::new(cx, shaders::BAD_ADDRESS_COMP, &[], 12, &name)?
        } else {
            ComputeProgram::new(cx, shaders::PASSES_COMP, &[data.handle], 16, &name)?
        };
        programs.push(program);
    }
    eprintln!(
        "bb-testapp: passes: {passes} passes; pass {bad} goes wrong: {:?}",
        fault.pass_fault
    );
    cx.submit_and_wait_timeout(u64::MAX, |cmd| {
        labels.begin(cmd, &frame_label(fault.frame));
        for (k, program) in (0..passes).zip(&programs) {
            labels.begin(cmd, &format!("pass {k}"));
            let wrong = k == bad;
            match fault.pass_fault {
                PassFault::Crash if wrong => {
                    let at = fault.bad_address;
                    let push = push_bytes(&[at as u32, (at >> 32) as u32, k]);
                    program.record(d, cmd, &push, [1, 1, 1]);
                }
                _ => {
                    let mode = match fault.pass_fault {
                        PassFault::Nan if wrong => 1,
                        PassFault::Hang if wrong => 2,
                        _ => 0,
                    };
                    let groups = if mode == 2 { fault.hang_groups } else { 1 };
                    let iterations = fault.hang_iterations.unwrap_or(HANG_ITERATIONS);
                    let push = push_bytes(&[k, mode, (-1.0f32).to_bits(), iterations]);
                    program.record(d, cmd, &push, [groups, 1, 1]);
                }
            }
            labels.end(cmd);
        }
        cx.record_buffer_readback(cmd, &data, Access::COMPUTE_WRITE, &readback);
        labels.end(cmd);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
