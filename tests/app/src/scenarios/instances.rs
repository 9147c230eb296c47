//! `instances`: two more instances, each with its own device, alive at the same time; a tiny dispatch on
//! each; both destroyed. Three rounds, one after the other. This makes a layer handle several instances
//! at once and be loaded and unloaded several times in one process.

use anyhow::Result;
use ash::vk;

use super::compute::{record_init, ComputeKit, ComputePush, GROUP, VALUES_USAGE};
use super::Outcome;
use crate::context::{Access, Context, Fnv1a, Memory, Needs};
use crate::{AppInstance, Options};

const ROUNDS: u32 = 3;
/// One workgroup: GROUP x GROUP floats.
const TINY_BYTES: vk::DeviceSize = (GROUP * GROUP * 4) as vk::DeviceSize;

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let mut sum = Fnv1a::new();
    for round in 0..ROUNDS {
        let apps = [
            AppInstance::create(&cx.entry, cx.api_version)?,
            AppInstance::create(&cx.entry, cx.api_version)?,
        ];
        let contexts = apps
            .iter()
            .map(|app| Context::new(app, options.device_index, Needs::NONE))
            .collect::<Result<Vec<_>>>()?;
        for (i, other) in contexts.iter().enumerate() {
            sum.update(&tiny_dispatch(other, round * 2 + i as u32)?);
            other.destroy_owned();
        }
        for other in contexts {
            other.destroy();
        }
        for app in apps {
            app.destroy();
        }
    }
    Ok(Outcome::Checksum(sum.finish()))
}

/// One workgroup of compute.comp on `cx`; returns the bytes it produced.
fn tiny_dispatch(cx: &Context, pass: u32) -> Result<Vec<u8>> {
    let d = &cx.device;
    let kit = ComputeKit::new(cx, 1)?;
    let values = cx.create_buffer(TINY_BYTES, VALUES_USAGE, Memory::Device)?;
    let readback =
        cx.create_buffer(TINY_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let set = kit.descriptor_set(cx, values.handle, 0, TINY_BYTES)?;
    cx.submit_and_wait(|cmd| {
        record_init(d, cmd, values.handle, 0, TINY_BYTES);
        let push = ComputePush {
            pass,
            offset: 0,
            width: GROUP,
            scale: 0.75,
        };
        kit.record_dispatch(d, cmd, set, push, [1, 1]);
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    Ok(readback.bytes().to_vec())
}
