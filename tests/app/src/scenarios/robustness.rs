//! Scenarios for Blackbox's robustness tests (not in `all`):
//!
//! - `stress`: `--threads` threads (default 8), each with its own command pool, pipeline and results
//!   buffer, record and submit for `--seconds` (default 5) on the device's queues (two where the family has
//!   two; each queue behind a lock, as Vulkan requires), waiting on their own fences (every eighth wait by
//!   polling vkGetFenceStatus). Every command buffer has a label and two dispatches of assert.comp, in which
//!   exactly one invocation fails assert 7. Prints `stress_dispatches N`: Blackbox must count N failures.
//! - `flood`: flood.comp over 65,536 invocations, `--flood-frames` frames (default 10), one submission and
//!   fence wait each: every invocation fails assert 9 and calls 160 debugPrintf sites, more records than
//!   the error buffer holds. Prints `flood_invocations`, `flood_frames` and the frame times (submit to end
//!   of the fence wait, which is where Blackbox reads the buffer): `flood_frame_ms_median`, `_max`.
//! - `malformed-spirv`: vkCreateShaderModule with modules no engine can instrument (truncated mid
//!   instruction, a wrong magic number, an opcode no grammar has); prints `malformed <case> <VkResult>`
//!   for each. No pipeline is made from them (that would be undefined behaviour).
//! - `destroy-early`: submits a command buffer without a fence, learns that it finished only by polling a
//!   host-visible word its last command writes, then destroys its command pool (and so the command buffer)
//!   and the pipeline it used before any Vulkan call could have told Blackbox the work is done; then
//!   records and submits a second command buffer, likely under the same handle values.
//! - `fork-child`: runs `compute`, then forks; the child ends at once with `exit(0)`, which runs the
//!   process's exit handlers (Blackbox's among them) in a process that has none of the parent's threads. The
//!   parent waits for it and prints `fork-child: the child exited with status N`.

use std::ffi::CString;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use ash::vk;

use super::compute::{ComputeKit, ComputePush, GRID, GRID_BYTES, GROUP};
use super::program::{note_non_semantic, ComputeProgram, Labels};
use super::Outcome;
use crate::context::{
    allocate_command_buffers, begin_command_buffer, buffer_barrier, create_command_pool, fnv1a,
    Access, Context, Memory, VkResultExt,
};
use crate::{shaders, Options};

const RESULTS_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw() | vk::BufferUsageFlags::TRANSFER_SRC.as_raw(),
);

/// assert.comp's sizes: small everywhere, 0.3 (failing `size < 0.25`) at invocation (12, 34) only.
fn assert_sizes() -> Vec<u8> {
    (0..GRID * GRID)
        .map(|i| {
            if i == 34 * GRID + 12 {
                0.3f32
            } else {
                0.05 + (i % 16) as f32 * 0.01
            }
        })
        .flat_map(f32::to_ne_bytes)
        .collect()
}

pub fn run_stress(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    note_non_semantic(cx);
    let threads = options.stress.threads as usize;
    let duration = Duration::from_secs_f64(options.stress.seconds);
    let sizes =
        cx.create_buffer_with_data(&assert_sizes(), vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let mut results = Vec::new();
    let mut programs = Vec::new();
    for t in 0..threads {
        let buffer = cx.create_buffer(GRID_BYTES, RESULTS_USAGE, Memory::Device)?;
        let name = CString::new(format!("stress-{t}")).expect("no NUL");
        programs.push(ComputeProgram::new(
            cx,
            shaders::ASSERT_COMP,
            &[sizes.handle, buffer.handle],
            0,
            &name,
        )?);
        results.push(buffer);
    }
    // One lock per distinct queue: queue submissions are externally synchronized.
    let same_queue = cx.queues[0] == cx.queues[1];
    let locks = [Mutex::new(()), Mutex::new(())];
    let labels = Labels(cx.debug_utils.as_ref());
    let queue_family = cx.queue_family;
    let started = Instant::now();
    let counts: Vec<Result<u64>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let program = &programs[t];
                let results = results[t].handle;
                let (labels, locks) = (&labels, &locks);
                let queue_index = if same_queue { 0 } else { t % 2 };
                let queue = cx.queues[queue_index];
                scope.spawn(move || -> Result<u64> {
                    // One command buffer per pool, reset with its pool (best practices prefers that to
                    // RESET_COMMAND_BUFFER pools).
                    let pool =
                        create_command_pool(d, queue_family, vk::CommandPoolCreateFlags::empty())?;
                    let fence = unsafe { d.create_fence(&vk::FenceCreateInfo::default(), None) }
                        .vk_context("vkCreateFence");
                    let outcome = fence.and_then(|fence| {
                        let run = stress_thread(
                            d,
                            pool,
                            fence,
                            queue,
                            &locks[queue_index],
                            labels,
                            program,
                            results,
                            t,
                            started + duration,
                        );
                        // SAFETY: the thread's last submission was waited for (or failed).
                        unsafe { d.destroy_fence(fence, None) };
                        run
                    });
                    unsafe { d.destroy_command_pool(pool, None) };
                    outcome
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("stress thread panicked"))
            .collect()
    });
    let mut dispatches = 0;
    for (t, count) in counts.into_iter().enumerate() {
        dispatches += count.with_context(|| format!("stress thread {t}"))?;
    }
    eprintln!(
        "bb-testapp: stress: {threads} threads, {dispatches} dispatches in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    println!("stress_dispatches {dispatches}");

    // Every thread's results are the same function of the sizes, whatever the number of iterations.
    let readback = cx.create_buffer(
        GRID_BYTES * threads as u64,
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    cx.submit_and_wait(|cmd| {
        for (t, buffer) in results.iter().enumerate() {
            let offset = GRID_BYTES * t as u64;
            crate::context::record_buffer_readback(
                d,
                cmd,
                buffer.handle,
                0,
                readback.handle,
                offset,
                GRID_BYTES,
                Access::COMPUTE_WRITE,
            );
        }
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

/// One stress thread's loop; returns the dispatches it submitted (all of them waited for).
#[allow(clippy::too_many_arguments)]
fn stress_thread(
    d: &ash::Device,
    pool: vk::CommandPool,
    fence: vk::Fence,
    queue: vk::Queue,
    queue_lock: &Mutex<()>,
    labels: &Labels<'_>,
    program: &ComputeProgram,
    results: vk::Buffer,
    thread: usize,
    deadline: Instant,
) -> Result<u64> {
    let cmd = allocate_command_buffers(d, pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
    let groups = [GRID / GROUP, GRID / GROUP, 1];
    let mut dispatches = 0;
    let mut iteration = 0u64;
    while iteration == 0 || Instant::now() < deadline {
        // SAFETY: the previous submission was waited for.
        unsafe { d.reset_command_pool(pool, vk::CommandPoolResetFlags::empty()) }
            .vk_context("vkResetCommandPool")?;
        begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
        labels.begin(
            cmd,
            &format!("stress thread {thread} iteration {iteration}"),
        );
        program.record(d, cmd, &[], groups);
        let (src, dst) = (Access::COMPUTE_WRITE, Access::COMPUTE_READ_WRITE);
        buffer_barrier(d, cmd, results, 0, GRID_BYTES, src, dst);
        program.record(d, cmd, &[], groups);
        labels.end(cmd);
        unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
        let cmds = [cmd];
        let submit = vk::SubmitInfo::default().command_buffers(&cmds);
        {
            let _queue = queue_lock.lock().unwrap_or_else(|e| e.into_inner());
            unsafe { d.queue_submit(queue, &[submit], fence) }.vk_context("vkQueueSubmit")?;
        }
        if iteration % 8 == 7 {
            let give_up = Instant::now() + Duration::from_secs(30);
            while !unsafe { d.get_fence_status(fence) }.vk_context("vkGetFenceStatus")? {
                if Instant::now() > give_up {
                    bail!("fence not signalled after 30 s");
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        } else {
            unsafe { d.wait_for_fences(&[fence], true, 30_000_000_000) }
                .vk_context("vkWaitForFences")?;
        }
        unsafe { d.reset_fences(&[fence]) }.vk_context("vkResetFences")?;
        dispatches += 2;
        iteration += 1;
    }
    Ok(dispatches)
}

/// flood.comp's invocations per frame.
const FLOOD_INVOCATIONS: u32 = 65_536;

pub fn run_flood(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    note_non_semantic(cx);
    let frames = options.stress.flood_frames;
    let values: Vec<u8> = (0..FLOOD_INVOCATIONS)
        .map(|i| 0.5 + (i % 7) as f32)
        .flat_map(f32::to_ne_bytes)
        .collect();
    let values = cx.create_buffer_with_data(
        &values,
        vk::BufferUsageFlags::STORAGE_BUFFER | vk::BufferUsageFlags::TRANSFER_SRC,
    )?;
    let bytes = u64::from(FLOOD_INVOCATIONS) * 4;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let program = ComputeProgram::new(cx, shaders::FLOOD_COMP, &[values.handle], 0, c"flood")?;
    let mut times = Vec::new();
    for frame in 0..frames {
        let started = Instant::now();
        cx.submit_and_wait(|cmd| {
            program.record(d, cmd, &[], [FLOOD_INVOCATIONS / 64, 1, 1]);
            if frame + 1 == frames {
                cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &readback);
            } else {
                let (src, dst) = (Access::COMPUTE_WRITE, Access::COMPUTE_READ_WRITE);
                buffer_barrier(d, cmd, values.handle, 0, bytes, src, dst);
            }
            Ok(())
        })?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    let max = times.iter().copied().fold(0.0, f64::max);
    times.sort_by(f64::total_cmp);
    println!("flood_invocations {FLOOD_INVOCATIONS}");
    println!("flood_frames {frames}");
    println!("flood_frame_ms_median {:.1}", times[times.len() / 2]);
    println!("flood_frame_ms_max {max:.1}");
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_malformed_spirv(cx: &Context, _options: &Options) -> Result<Outcome> {
    let good: Vec<u32> = shaders::COMPUTE
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    // Cut short at an odd word in the middle: almost surely inside an instruction.
    let mut truncated = good.clone();
    truncated.truncate((good.len() / 2) | 1);
    let mut bad_magic = good.clone();
    bad_magic[0] = 0x0bad_c0de;
    // An OpNop-sized instruction with an opcode no SPIR-V grammar defines, right after the header.
    let mut unknown_opcode = good.clone();
    unknown_opcode.insert(5, (1 << 16) | 0x7ff0);
    let cases = [
        ("truncated", truncated),
        ("bad-magic", bad_magic),
        ("unknown-opcode", unknown_opcode),
    ];
    let mut summary = String::new();
    for (name, words) in cases {
        let info = vk::ShaderModuleCreateInfo::default().code(&words);
        let result = unsafe { cx.device.create_shader_module(&info, None) };
        let code = match result {
            Ok(module) => {
                unsafe { cx.device.destroy_shader_module(module, None) };
                vk::Result::SUCCESS
            }
            Err(e) => e,
        };
        println!("malformed {name} {code:?}");
        summary.push_str(&format!("{name} {code:?}\n"));
    }
    Ok(Outcome::Checksum(fnv1a(summary.as_bytes())))
}

pub fn run_destroy_early(cx: &Context, _options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let values = cx.create_buffer(
        GRID_BYTES,
        vk::BufferUsageFlags::STORAGE_BUFFER
            | vk::BufferUsageFlags::TRANSFER_SRC
            | vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Device,
    )?;
    let done = cx.create_buffer(4, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    // New memory holds whatever it held: a stale 1 would end the wait below before the work ran.
    done.write(&0u32.to_ne_bytes());
    let readback =
        cx.create_buffer(GRID_BYTES, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    // The first kit is destroyed early, by hand; the context owns (and later destroys) the second.
    let early = ComputeKit::unowned(cx, 1)?;
    cx.set_name(early.pipeline, c"destroyed-early")?;
    let kit = ComputeKit::new(cx, 1)?;
    let set = kit.descriptor_set(cx, values.handle, 0, GRID_BYTES)?;

    let pool = create_command_pool(d, cx.queue_family, vk::CommandPoolCreateFlags::empty())?;
    let cmd = allocate_command_buffers(d, pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
    begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
    unsafe {
        d.cmd_fill_buffer(cmd, values.handle, 0, GRID_BYTES, 0x3f80_0000);
        buffer_barrier(
            d,
            cmd,
            values.handle,
            0,
            GRID_BYTES,
            Access::TRANSFER_WRITE,
            Access::COMPUTE_READ_WRITE,
        );
        d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, early.pipeline);
        d.cmd_bind_descriptor_sets(
            cmd,
            vk::PipelineBindPoint::COMPUTE,
            kit.layout,
            0,
            &[set],
            &[],
        );
        d.cmd_push_constants(
            cmd,
            kit.layout,
            vk::ShaderStageFlags::COMPUTE,
            0,
            &ComputePush::grid(1).bytes(),
        );
        d.cmd_dispatch(cmd, GRID / GROUP, GRID / GROUP, 1);
        buffer_barrier(
            d,
            cmd,
            values.handle,
            0,
            GRID_BYTES,
            Access::COMPUTE_WRITE,
            Access::TRANSFER_READ,
        );
        d.cmd_fill_buffer(cmd, done.handle, 0, 4, 1);
    }
    unsafe { d.end_command_buffer(cmd) }.vk_context("vkEndCommandBuffer")?;
    let cmds = [cmd];
    let submit = vk::SubmitInfo::default().command_buffers(&cmds);
    unsafe { d.queue_submit(cx.queues[0], &[submit], vk::Fence::null()) }
        .vk_context("vkQueueSubmit")?;
    // The only sign of completion: the word the last command writes, read from mapped memory.
    let give_up = Instant::now() + Duration::from_secs(30);
    while done.poll_first_word() != 1 {
        if Instant::now() > give_up {
            bail!("the first submission did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    // The word is written before the driver is through with the submission (lavapipe finishes it on its
    // own submit thread). Racing that thread would test the driver, not Blackbox: give it ample time.
    std::thread::sleep(Duration::from_millis(200));
    // The work has run; Blackbox has not been told. Pool, command buffer and pipeline go now.
    unsafe { d.destroy_command_pool(pool, None) };
    early.destroy(cx);

    cx.submit_and_wait(|cmd| {
        unsafe {
            d.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, kit.pipeline);
            d.cmd_bind_descriptor_sets(
                cmd,
                vk::PipelineBindPoint::COMPUTE,
                kit.layout,
                0,
                &[set],
                &[],
            );
            d.cmd_push_constants(
                cmd,
                kit.layout,
                vk::ShaderStageFlags::COMPUTE,
                0,
                &ComputePush::grid(2).bytes(),
            );
            let (src, dst) = (Access::TRANSFER_READ, Access::COMPUTE_READ_WRITE);
            buffer_barrier(d, cmd, values.handle, 0, GRID_BYTES, src, dst);
            d.cmd_dispatch(cmd, GRID / GROUP, GRID / GROUP, 1);
        }
        cx.record_buffer_readback(cmd, &values, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_fork_child(cx: &Context, options: &Options) -> Result<Outcome> {
    let outcome = super::compute::run(cx, options)?;
    // SAFETY: the child calls exit alone, as an app that forks a worker which ends does.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: ends the child, running its exit handlers.
        unsafe { libc::exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked, writing its status into `status`.
    if unsafe { libc::waitpid(pid, &mut status, 0) } != pid {
        bail!("waitpid: {}", std::io::Error::last_os_error());
    }
    if !libc::WIFEXITED(status) {
        bail!("the child did not exit (wait status {status})");
    }
    println!(
        "fork-child: the child exited with status {}",
        libc::WEXITSTATUS(status)
    );
    Ok(outcome)
}
