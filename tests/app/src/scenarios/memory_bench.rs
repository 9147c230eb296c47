//! `memory-bench` (not part of `all`; run it alone): the memory a layer adds per device and per command
//! buffer. The process's resident memory is read from /proc/self/status at five checkpoints:
//!
//! - `start`: in `main::run`, before the Vulkan loader is loaded (so before any layer's code is);
//! - `instance`: after vkCreateInstance (and the debug messenger);
//! - `device`: after vkCreateDevice and the context's one command pool (nothing else exists yet);
//! - `setup`: after this scenario created record-bench's pipelines, buffers and target, and recorded and
//!   submitted one command buffer like those below (so that one-time costs are behind it);
//! - `recorded`: after allocating `--memory-cmdbufs` N command buffers (default 1000) from one pool and
//!   recording each with `--memory-draws` M draws (default 100) as record-bench does (pipeline and
//!   vertex-buffer binds, push constants, inserted labels, a dispatch and a barrier every 50 draws);
//! - `submitted`: after submitting all N in one vkQueueSubmit and waiting for its fence, the command
//!   buffers still allocated.
//!
//! Each prints `memory-bench rss_kib <checkpoint> <anon> <file>`: RssAnon + RssShmem (what the process
//! allocated) and RssFile (mapped files: mostly code), in KiB. Where the device has VK_EXT_memory_budget,
//! `memory-bench device_kib <checkpoint> <KiB>` gives the sum of heapUsage over the heaps at `device`,
//! `setup` and `submitted` (else `-`). On a CPU driver device memory is host memory: it is in RssAnon once
//! touched. Per device is `device` minus `start`; per command buffer, `submitted` minus `setup`, over N.
//! Compare settings by subtracting a run without the layer (scripts/bench-memory.sh); the checksum is of N,
//! M and the commands recorded.

use std::sync::Mutex;

use anyhow::Result;
use ash::vk;

use super::draw::PassTarget;
use super::record_bench::{Bench, EXTENT};
use super::Outcome;
use crate::context::{Context, Fnv1a, VkResultExt};
use crate::Options;

/// Resident memory in KiB: (anonymous + shared memory, mapped files).
type Rss = Option<(u64, u64)>;

/// The checkpoints taken so far, in order.
static CHECKPOINTS: Mutex<Vec<(&'static str, Rss)>> = Mutex::new(Vec::new());
/// The instance and physical device to ask for heap usage, where the device has VK_EXT_memory_budget.
static BUDGET: Mutex<Option<(ash::Instance, vk::PhysicalDevice)>> = Mutex::new(None);

fn rss_kib() -> Rss {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].split_whitespace().next()?.parse().ok()
    };
    Some((field("RssAnon:")? + field("RssShmem:")?, field("RssFile:")?))
}

/// Records the process's resident memory now, as checkpoint `name`.
pub fn checkpoint(name: &'static str) {
    let rss = rss_kib();
    CHECKPOINTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((name, rss));
}

/// Lets the scenario ask `instance` for the heap usage of its physical device `device_index`, if that
/// device has VK_EXT_memory_budget (its physical-device query needs no enabled extension).
pub fn use_instance(instance: &ash::Instance, device_index: usize) -> Result<()> {
    // SAFETY: plain queries on a valid instance.
    let devices = unsafe { instance.enumerate_physical_devices() }
        .vk_context("vkEnumeratePhysicalDevices")?;
    let Some(&physical_device) = devices.get(device_index) else {
        return Ok(()); // Context::new has reported it already
    };
    let extensions = unsafe { instance.enumerate_device_extension_properties(physical_device) }
        .vk_context("vkEnumerateDeviceExtensionProperties")?;
    let has_budget = extensions
        .iter()
        .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::memory_budget::NAME));
    if has_budget {
        *BUDGET.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((instance.clone(), physical_device));
    }
    Ok(())
}

/// The sum of heapUsage over the device's heaps, in KiB; None without VK_EXT_memory_budget.
fn device_kib() -> Option<u64> {
    let budget = BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    let (instance, physical_device) = budget.as_ref()?;
    let mut budget_props = vk::PhysicalDeviceMemoryBudgetPropertiesEXT::default();
    let mut props = vk::PhysicalDeviceMemoryProperties2::default().push_next(&mut budget_props);
    // SAFETY: the extension is supported (checked in `use_instance`); the structs outlive the call.
    unsafe { instance.get_physical_device_memory_properties2(*physical_device, &mut props) };
    let heaps = props.memory_properties.memory_heap_count as usize;
    Some(budget_props.heap_usage[..heaps].iter().sum::<u64>() / 1024)
}

pub fn run(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let (count, draws) = (options.bench.memory_cmdbufs, options.bench.memory_draws);
    let device_usage = device_kib();

    let target = PassTarget::new(cx, EXTENT)?;
    let bench = Bench::new(cx, &target)?;

    // One command buffer like the N, submitted before `setup`: the driver's and the layer's one-time costs
    // (threads, code paths run for the first time, the pool) are not counted per command buffer.
    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let fence = cx.create_fence()?;
    let submit_all = |cmds: &[vk::CommandBuffer]| -> Result<()> {
        let submit = vk::SubmitInfo::default().command_buffers(cmds);
        unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }.vk_context("vkQueueSubmit")?;
        cx.wait_fence(fence)?;
        unsafe { d.reset_fences(&[fence]) }.vk_context("vkResetFences")
    };
    let warm_up = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?;
    bench.record(warm_up[0], draws, 0)?;
    submit_all(&warm_up)?;
    checkpoint("setup");
    let setup_usage = device_kib();

    let cmds = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, count)?;
    let mut commands = 0;
    for (n, &cmd) in cmds.iter().enumerate() {
        commands += bench.record(cmd, draws, n as u32 + 1)?;
    }
    checkpoint("recorded");
    submit_all(&cmds)?;
    checkpoint("submitted");
    let submitted_usage = device_kib();

    println!("memory-bench cmdbufs {count} draws {draws} commands {commands}");
    for (name, rss) in CHECKPOINTS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        match rss {
            Some((anon, file)) => println!("memory-bench rss_kib {name} {anon} {file}"),
            None => println!("memory-bench rss_kib {name} - -"),
        }
    }
    for (name, usage) in [
        ("device", device_usage),
        ("setup", setup_usage),
        ("submitted", submitted_usage),
    ] {
        match usage {
            Some(kib) => println!("memory-bench device_kib {name} {kib}"),
            None => println!("memory-bench device_kib {name} -"),
        }
    }
    let sum = Fnv1a::new()
        .update(&count.to_le_bytes())
        .update(&draws.to_le_bytes())
        .update(&commands.to_le_bytes())
        .finish();
    Ok(Outcome::Checksum(sum))
}
