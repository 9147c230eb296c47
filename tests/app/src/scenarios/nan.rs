//! `nan-compute`, `nan-fragment` and `nan-fp16-fp64` (not in `all`): the rare flash. Exactly one invocation
//! (one pixel) computes a NaN or an Inf, by the operation `--nan-op` chooses: `normalize` of a zero vector,
//! `pow(-0.5, 0.3)` or `1.0 / 0.0`; every other one computes finite values. The bad operand comes from the
//! host (a storage buffer, or push constants for the fragment shader), so no compiler can fold it away.
//!
//! - `nan-compute`: nan.comp, `--nan-dispatches` (100) dispatches of 64x64 invocations in one command
//!   buffer; the bad one is dispatch 42 (the last if there are fewer), invocation (12,0,0).
//! - `nan-fragment`: nan.frag drawn over a 64x64 RGBA32F target; the bad pixel is (12,34).
//! - `nan-fp16-fp64`: nan_fp16_fp64.comp, 64 invocations computing in float16 and float64; the bad one is
//!   invocation 12. The `pow` case is sqrt(-0.5) there (GLSL has no fp64 pow; lavapipe crashes on fp16
//!   pow). Needs shaderFloat16 and shaderFloat64.
//!
//! - `nan-poll`: nan.comp, one dispatch of 64x64 invocations (the bad one (12,0,0)), pipeline `nan-poll`;
//!   the submission signals an app-owned timeline semaphore, and the app learns of completion only by
//!   polling `vkGetSemaphoreCounterValue` (as wgpu does): no fence, no semaphore wait, no idle wait. The
//!   moment the poll sees the value it prints `bb-testapp: nan-poll: reading results` on stderr (the
//!   stream Blackbox logs to, so the order of the lines is the order of the events), reads the
//!   host-coherent readback buffer, then keeps the device alive for `IDLE` doing nothing, prints
//!   `bb-testapp: nan-poll: tearing down` and only then waits for the queue and destroys everything.
//! - `nan-sleep`: the same (pipeline `nan-sleep`), but the app makes no Vulkan call at all for
//!   `SLEEP` after submitting, then polls (the work has long finished by then) and reads.
//! - `nan-signal-array`: the same dispatch (pipeline `nan-signal-array`) in a batch that passes a signal
//!   array with a count of 0, as libplacebo does (best practices reports it, once), with a fence. The app
//!   makes no Vulkan call for `SLEEP`, prints `bb-testapp: nan-signal-array: waiting for the fence`, waits
//!   for it and reads.
//!
//! These need timelineSemaphore. The others submit their command buffer `--repeat` times (vkQueueWaitIdle
//! after each) and read the results back:
//! the NaN or Inf is really there (stderr says where), and the checksum lets a run under instrumentation be
//! compared with a plain one. `--shader-debug nonsemantic` uses the `-gVS` builds of nan.comp and nan.frag.

use std::ffi::CStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ash::vk;

use super::compute::{GRID, GROUP};
use super::draw::{PassTarget, Target};
use super::program::{
    by_debug_info, note_non_semantic, push_bytes, ComputeProgram, FullscreenProgram,
};
use super::Outcome;
use crate::context::{begin_command_buffer, fnv1a, Access, Context, Memory, VkResultExt};
use crate::{shaders, NanOp, Options, ShaderDebug};

/// The dispatch of `nan-compute` that hits the bad case (unless there are fewer).
pub const BAD_DISPATCH: u32 = 42;
/// The invocation (x, 0, 0) of that dispatch, and of `nan-fp16-fp64`'s only one.
pub const BAD_INVOCATION: u32 = 12;
/// The pixel of `nan-fragment` (and `assert-fragment`) that hits the bad case.
pub const BAD_PIXEL: [u32; 2] = [12, 34];
/// `nan-fragment`'s target: 64x64.
pub const SMALL_EXTENT: vk::Extent2D = vk::Extent2D {
    width: 64,
    height: 64,
};

const INVOCATIONS: u32 = GRID * GRID;
const VEC4_BYTES: vk::DeviceSize = 16;
const RESULTS_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw() | vk::BufferUsageFlags::TRANSFER_SRC.as_raw(),
);

/// The one bad input: a zero vector for normalize, a negative base for pow, a zero divisor for div.
fn bad_input(op: NanOp) -> [f32; 4] {
    match op {
        NanOp::Normalize => [0.0, 0.0, 0.0, 1.0],
        NanOp::Pow => [-0.5, 0.5, 0.5, 1.0],
        NanOp::Div => [0.0, 0.5, 0.5, 1.0],
    }
}

/// A safe input for every op: x in [0.5, 1.5), y and z in [-1, 1), w = 1.
fn safe_input(index: u32) -> [f32; 4] {
    let unit = |salt: u32| {
        let mut x = index.wrapping_mul(0x9e37_79b9) ^ salt.wrapping_mul(0x85eb_ca6b);
        x ^= x >> 16;
        x = x.wrapping_mul(0x7feb_352d);
        x ^= x >> 15;
        (x >> 8) as f32 / 16_777_216.0
    };
    [0.5 + unit(1), unit(2) * 2.0 - 1.0, unit(3) * 2.0 - 1.0, 1.0]
}

fn vec4_bytes(vectors: impl Iterator<Item = [f32; 4]>) -> Vec<u8> {
    vectors.flatten().flat_map(f32::to_ne_bytes).collect()
}

fn floats(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_ne_bytes(b.try_into().expect("4 bytes")))
}

/// Prints how many of the vec4s read back hold a NaN or Inf, and where the first one is.
fn report_non_finite(scenario: &str, values: &[f32], place: impl Fn(usize) -> String) {
    let mut bad = values
        .chunks_exact(4)
        .enumerate()
        .filter(|(_, v)| v.iter().any(|f| !f.is_finite()));
    match bad.next() {
        None => eprintln!("bb-testapp: {scenario}: no NaN or Inf read back"),
        Some((index, first)) => eprintln!(
            "bb-testapp: {scenario}: {} result(s) with NaN/Inf read back; first {first:?} at {}",
            1 + bad.count(),
            place(index)
        ),
    }
}

pub fn run_compute(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let fault = options.fault;
    let dispatches = fault.nan_dispatches;
    let bad_dispatch = BAD_DISPATCH.min(dispatches - 1);
    let count = dispatches * INVOCATIONS;
    let bad_index = bad_dispatch * INVOCATIONS + BAD_INVOCATION;

    let inputs = (0..count).map(|i| {
        if i == bad_index {
            bad_input(fault.nan_op)
        } else {
            safe_input(i)
        }
    });
    let inputs =
        cx.create_buffer_with_data(&vec4_bytes(inputs), vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let bytes = u64::from(count) * VEC4_BYTES;
    let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    if fault.shader_debug == ShaderDebug::NonSemantic {
        note_non_semantic(cx);
    }
    // A Vulkan 1.0 or 1.1 app may not use SPIR-V 1.5.
    let spirv = if cx.api_version < vk::API_VERSION_1_2 {
        shaders::NAN_COMP_VK10
    } else {
        by_debug_info(fault.shader_debug, shaders::NAN_COMP, shaders::NAN_COMP_GVS)
    };
    let program = ComputeProgram::new(
        cx,
        spirv,
        &[inputs.handle, results.handle],
        8,
        c"nan-compute",
    )?;

    eprintln!(
        "bb-testapp: nan-compute: {:?} goes bad in dispatch {bad_dispatch} of {dispatches}, invocation \
         ({BAD_INVOCATION},0,0), {} time(s)",
        fault.nan_op, fault.repeat
    );
    cx.submit_repeatedly(fault.repeat, |cmd| {
        // Each dispatch writes its own slice and reads only the inputs: no barriers between them.
        for k in 0..dispatches {
            let push = push_bytes(&[k, fault.nan_op as u32]);
            program.record(d, cmd, &push, [GRID / GROUP, GRID / GROUP, 1]);
        }
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;

    let values: Vec<f32> = floats(readback.bytes()).collect();
    report_non_finite("nan-compute", &values, |index| {
        let (dispatch, invocation) = (index as u32 / INVOCATIONS, index as u32 % INVOCATIONS);
        format!(
            "dispatch {dispatch} invocation ({},{},0)",
            invocation % GRID,
            invocation / GRID
        )
    });
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_fragment(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let fault = options.fault;
    let target = PassTarget::with_format(cx, SMALL_EXTENT, vk::Format::R32G32B32A32_SFLOAT)?;
    let readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    if fault.shader_debug == ShaderDebug::NonSemantic {
        note_non_semantic(cx);
    }
    let spirv = by_debug_info(fault.shader_debug, shaders::NAN_FRAG, shaders::NAN_FRAG_GVS);
    let program = FullscreenProgram::new(
        cx,
        Target::RenderPass(target.render_pass),
        spirv,
        32,
        &[],
        c"nan-fragment",
    )?;
    let bad = bad_input(fault.nan_op);
    let push = push_bytes(&[
        BAD_PIXEL[0],
        BAD_PIXEL[1],
        fault.nan_op as u32,
        u32::from(fault.nan_discard),
        bad[0].to_bits(),
        bad[1].to_bits(),
        bad[2].to_bits(),
        bad[3].to_bits(),
    ]);

    eprintln!(
        "bb-testapp: nan-fragment: {:?} goes bad at pixel ({},{}), {} time(s)",
        fault.nan_op, BAD_PIXEL[0], BAD_PIXEL[1], fault.repeat
    );
    cx.submit_repeatedly(fault.repeat, |cmd| {
        target.begin(d, cmd, vk::SubpassContents::INLINE);
        program.record(d, cmd, SMALL_EXTENT, &push);
        unsafe { d.cmd_end_render_pass(cmd) };
        cx.record_image_readback(cmd, &target.image, &readback);
        Ok(())
    })?;

    let values: Vec<f32> = floats(readback.bytes()).collect();
    report_non_finite("nan-fragment", &values, |index| {
        let width = SMALL_EXTENT.width as usize;
        format!("pixel ({},{})", index % width, index / width)
    });
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_fp16_fp64(cx: &Context, options: &Options) -> Result<Outcome> {
    if !(cx.features.shader_float16 && cx.features.shader_float64) {
        return Ok(Outcome::Skipped(
            "needs shaderFloat16 and shaderFloat64".into(),
        ));
    }
    let d = &cx.device;
    let fault = options.fault;
    const COUNT: u32 = 64;
    let inputs = (0..COUNT).map(|i| {
        if i == BAD_INVOCATION {
            bad_input(fault.nan_op)
        } else {
            safe_input(i)
        }
    });
    let inputs =
        cx.create_buffer_with_data(&vec4_bytes(inputs), vk::BufferUsageFlags::STORAGE_BUFFER)?;
    // 64 vec4 (fp16 results, widened) then 64 dvec4.
    let half_bytes = u64::from(COUNT) * VEC4_BYTES;
    let bytes = half_bytes + u64::from(COUNT) * 2 * VEC4_BYTES;
    let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let program = ComputeProgram::new(
        cx,
        shaders::NAN_FP16_FP64_COMP,
        &[inputs.handle, results.handle],
        4,
        c"nan-fp16-fp64",
    )?;

    cx.submit_repeatedly(fault.repeat, |cmd| {
        program.record(d, cmd, &push_bytes(&[fault.nan_op as u32]), [1, 1, 1]);
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;

    let (half, double) = readback.bytes().split_at(half_bytes as usize);
    let half: Vec<f32> = floats(half).collect();
    report_non_finite("nan-fp16-fp64 (fp16)", &half, |i| format!("invocation {i}"));
    // Narrowed to f32 only to find them: NaN and Inf stay what they are.
    let double: Vec<f32> = double
        .chunks_exact(8)
        .map(|b| f64::from_ne_bytes(b.try_into().expect("8 bytes")) as f32)
        .collect();
    report_non_finite("nan-fp16-fp64 (fp64)", &double, |i| {
        format!("invocation {i}")
    });
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

/// `nan-sleep`: how long the app makes no Vulkan call after submitting.
pub const SLEEP: Duration = Duration::from_millis(500);
/// `nan-poll`, `nan-sleep`: how long the device stays alive, idle, after the results were read.
pub const IDLE: Duration = Duration::from_millis(300);
/// How long the poll goes on before the app gives up.
const POLL_LIMIT: Duration = Duration::from_secs(60);

pub fn run_poll(cx: &Context, options: &Options) -> Result<Outcome> {
    run_one_dispatch(cx, options, c"nan-poll", Completion::Polled(None))
}

pub fn run_sleep(cx: &Context, options: &Options) -> Result<Outcome> {
    run_one_dispatch(cx, options, c"nan-sleep", Completion::Polled(Some(SLEEP)))
}

pub fn run_signal_array(cx: &Context, options: &Options) -> Result<Outcome> {
    run_one_dispatch(
        cx,
        options,
        c"nan-signal-array",
        Completion::FenceAfterSleep,
    )
}

/// How the app learns that its dispatch finished.
enum Completion {
    /// From an app-owned timeline semaphore the batch signals, polled with vkGetSemaphoreCounterValue
    /// (after a sleep without any Vulkan call, if given).
    Polled(Option<Duration>),
    /// From a fence, waited for after [`SLEEP`] without any Vulkan call; the batch passes a signal array
    /// with a count of 0.
    FenceAfterSleep,
}

/// One nan.comp dispatch, its completion learnt as `completion` says.
fn run_one_dispatch(
    cx: &Context,
    options: &Options,
    name: &CStr,
    completion: Completion,
) -> Result<Outcome> {
    if !cx.features.timeline_semaphore {
        return Ok(Outcome::Skipped("needs timelineSemaphore".into()));
    }
    let scenario = name.to_string_lossy();
    let d = &cx.device;
    let op = options.fault.nan_op;
    let inputs = (0..INVOCATIONS).map(|i| {
        if i == BAD_INVOCATION {
            bad_input(op)
        } else {
            safe_input(i)
        }
    });
    let inputs =
        cx.create_buffer_with_data(&vec4_bytes(inputs), vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let bytes = u64::from(INVOCATIONS) * VEC4_BYTES;
    let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let program = ComputeProgram::new(
        cx,
        shaders::NAN_COMP,
        &[inputs.handle, results.handle],
        8,
        name,
    )?;
    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
    begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
    program.record(
        d,
        cmd,
        &push_bytes(&[0, op as u32]),
        [GRID / GROUP, GRID / GROUP, 1],
    );
    // Ends with a barrier to HOST_READ: the semaphore signal alone does not make writes host-visible.
    cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &readback);
    unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;

    let cmds = [cmd];
    let how = match completion {
        Completion::Polled(sleep) => {
            let timeline = cx.create_timeline_semaphore(0)?;
            let (semaphores, values) = ([timeline], [1u64]);
            let mut timeline_info =
                vk::TimelineSemaphoreSubmitInfo::default().signal_semaphore_values(&values);
            let submit = vk::SubmitInfo::default()
                .command_buffers(&cmds)
                .signal_semaphores(&semaphores)
                .push_next(&mut timeline_info);
            eprintln!(
                "bb-testapp: {scenario}: {op:?} goes bad at invocation ({BAD_INVOCATION},0,0); completion \
                 learnt only from vkGetSemaphoreCounterValue{}",
                match sleep {
                    Some(s) => format!(", after {} ms without any Vulkan call", s.as_millis()),
                    None => String::new(),
                }
            );
            unsafe { d.queue_submit(cx.queues[0], &[submit], vk::Fence::null()) }
                .vk_context("vkQueueSubmit")?;
            if let Some(sleep) = sleep {
                std::thread::sleep(sleep);
            }
            let started = Instant::now();
            let mut polls = 0u64;
            loop {
                polls += 1;
                let value = unsafe { d.get_semaphore_counter_value(timeline) }
                    .vk_context("vkGetSemaphoreCounterValue")?;
                if value >= 1 {
                    break;
                }
                if started.elapsed() > POLL_LIMIT {
                    bail!(
                        "{scenario}: the timeline semaphore is still at {value} after {POLL_LIMIT:?}"
                    );
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            format!(" (after {polls} poll(s))")
        }
        Completion::FenceAfterSleep => {
            // Never signalled or waited for: only its address is passed, with a count of 0.
            let unused = [cx.create_semaphore()?];
            let mut submit = vk::SubmitInfo::default().command_buffers(&cmds);
            submit.p_signal_semaphores = unused.as_ptr();
            let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
                .vk_context("vkCreateFence")?;
            eprintln!(
                "bb-testapp: {scenario}: {op:?} goes bad at invocation ({BAD_INVOCATION},0,0); the batch \
                 passes a signal array with a count of 0; no Vulkan call for {} ms, then a fence wait",
                SLEEP.as_millis()
            );
            unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }
                .vk_context("vkQueueSubmit")?;
            std::thread::sleep(SLEEP);
            eprintln!("bb-testapp: {scenario}: waiting for the fence");
            cx.wait_fence(fence)?;
            // SAFETY: the fence signalled: nothing pending uses it.
            unsafe { d.destroy_fence(fence, None) };
            String::new()
        }
    };
    eprintln!("bb-testapp: {scenario}: reading results{how}");
    let values: Vec<f32> = floats(readback.bytes()).collect();
    report_non_finite(&scenario, &values, |index| {
        format!(
            "invocation ({},{},0)",
            index as u32 % GRID,
            index as u32 / GRID
        )
    });
    let checksum = fnv1a(readback.bytes());
    std::thread::sleep(IDLE);
    eprintln!("bb-testapp: {scenario}: tearing down");
    // Not needed for the results (the semaphore said the work is done), but lavapipe 22.3's queue thread
    // can still be finishing the batch: destroying the semaphore then can deadlock (see `timeline`).
    unsafe { d.queue_wait_idle(cx.queues[0]) }.vk_context("vkQueueWaitIdle")?;
    Ok(Outcome::Checksum(checksum))
}
