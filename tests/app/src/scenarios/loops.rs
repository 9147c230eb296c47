//! `loop-one`, `loop-forever` and `int-div` (not in `all`): errors inside one shader invocation that no
//! validation layer sees.
//!
//! - `loop-one`: loop_one.comp (pipeline `loop-one`), 4096 invocations in one dispatch; each loops as many
//!   times as its word of a counts buffer says: 10, but 60,000 for invocation 1234 (lavapipe cuts loops at
//!   65,535 iterations, so the shader still ends there). Each writes (iterations run, value computed). Stderr
//!   says how many invocations ran a count other than their own: 0 without Blackbox, 1 (invocation 1234)
//!   with VK_BLACKBOX_LOOPS=break and a limit below 60,000. The checksum leaves invocation 1234 out (stderr
//!   has the one of all results).
//! - `loop-forever`: the same shader (pipeline `loop-forever`) in its "forever" mode: invocation 1234 loops
//!   while its word is not 0, and nothing writes it, so on a GPU the dispatch never ends by itself. The app
//!   waits `--loop-wait-ms` (10,000) for the fence; then it writes 0 into the word itself (a host-coherent
//!   buffer) and waits again, so that a run without Blackbox ends too. With VK_BLACKBOX_LOOPS=break the loop
//!   is broken by its budget and the first wait succeeds. Stderr says which happened.
//! - `int-div`: int_div.comp (pipeline `int-div`), 4096 invocations dividing `7i + 3` by a divisor from a
//!   buffer: 1 for all but invocation 2345, whose divisor is 0 (undefined in SPIR-V: the driver may give
//!   anything). Stderr prints what invocation 2345 got.

use anyhow::{bail, Result};
use ash::vk;

use super::program::{push_bytes, ComputeProgram};
use super::Outcome;
use crate::context::{fnv1a, timed_out, Access, Context, Memory};
use crate::{shaders, Options};

/// Invocations per dispatch (64 workgroups of 64).
const INVOCATIONS: u32 = 4096;
/// `loop-one`'s long invocation and its count; every other runs `SHORT_COUNT`.
pub const LONG_INVOCATION: u32 = 1234;
pub const LONG_COUNT: u32 = 60_000;
const SHORT_COUNT: u32 = 10;
/// `int-div`'s invocation that divides by zero.
pub const ZERO_DIVISOR_INVOCATION: u32 = 2345;

const RESULTS_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw() | vk::BufferUsageFlags::TRANSFER_SRC.as_raw(),
);

fn words(values: impl Iterator<Item = u32>) -> Vec<u8> {
    values.flat_map(u32::to_ne_bytes).collect()
}

fn read_words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
        .collect()
}

/// The loop shader's buffers and pipeline: counts (host-visible, so the host can end `loop-forever`),
/// results, and their readback.
struct LoopProgram {
    counts: crate::context::Buffer,
    results: crate::context::Buffer,
    readback: crate::context::Buffer,
    program: ComputeProgram,
}

impl LoopProgram {
    fn new(cx: &Context, counts: &[u32], name: &std::ffi::CStr) -> Result<LoopProgram> {
        let counts = cx.create_buffer_with_data(
            &words(counts.iter().copied()),
            vk::BufferUsageFlags::STORAGE_BUFFER,
        )?;
        let bytes = u64::from(INVOCATIONS) * 8;
        let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
        let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
        let program = ComputeProgram::new(
            cx,
            shaders::LOOP_ONE_COMP,
            &[counts.handle, results.handle],
            4,
            name,
        )?;
        Ok(LoopProgram {
            counts,
            results,
            readback,
            program,
        })
    }

    fn record(&self, cx: &Context, cmd: vk::CommandBuffer, forever: bool) {
        let push = push_bytes(&[forever as u32]);
        self.program
            .record(&cx.device, cmd, &push, [INVOCATIONS / 64, 1, 1]);
        cx.record_buffer_readback(cmd, &self.results, Access::COMPUTE_WRITE, &self.readback);
    }

    /// (iterations run, value) per invocation.
    fn results(&self) -> Vec<(u32, u32)> {
        read_words(self.readback.bytes())
            .chunks_exact(2)
            .map(|pair| (pair[0], pair[1]))
            .collect()
    }
}

pub fn run_loop_one(cx: &Context, _options: &Options) -> Result<Outcome> {
    let counts: Vec<u32> = (0..INVOCATIONS)
        .map(|i| {
            if i == LONG_INVOCATION {
                LONG_COUNT
            } else {
                SHORT_COUNT
            }
        })
        .collect();
    let program = LoopProgram::new(cx, &counts, c"loop-one")?;
    eprintln!(
        "bb-testapp: loop-one: invocation {LONG_INVOCATION} of {INVOCATIONS} loops {LONG_COUNT} times, \
         every other {SHORT_COUNT}"
    );
    cx.submit_and_wait(|cmd| {
        program.record(cx, cmd, false);
        Ok(())
    })?;
    let results = program.results();
    let cut: Vec<String> = results
        .iter()
        .enumerate()
        .filter(|&(i, &(ran, _))| ran != counts[i])
        .map(|(i, &(ran, _))| format!("invocation {i} ran {ran} of {}", counts[i]))
        .collect();
    eprintln!(
        "bb-testapp: loop-one: {} invocation(s) ran another count than their own{}{}",
        cut.len(),
        if cut.is_empty() { "" } else { ": " },
        cut.iter().take(4).cloned().collect::<Vec<_>>().join(", ")
    );
    // The checksum leaves the long invocation out, so that a run whose loop Blackbox broke compares with a
    // plain one: every other result must be the same.
    let others: Vec<u8> = results
        .iter()
        .enumerate()
        .filter(|&(i, _)| i as u32 != LONG_INVOCATION)
        .flat_map(|(_, &(ran, value))| [ran.to_ne_bytes(), value.to_ne_bytes()].concat())
        .collect();
    eprintln!(
        "bb-testapp: loop-one: all results checksum {:016x}",
        fnv1a(program.readback.bytes())
    );
    Ok(Outcome::Checksum(fnv1a(&others)))
}

pub fn run_loop_forever(cx: &Context, options: &Options) -> Result<Outcome> {
    let counts: Vec<u32> = (0..INVOCATIONS)
        .map(|i| u32::from(i == LONG_INVOCATION))
        .collect();
    let program = LoopProgram::new(cx, &counts, c"loop-forever")?;
    let wait_ms = options.fault.loop_wait_ms;
    eprintln!(
        "bb-testapp: loop-forever: invocation {LONG_INVOCATION} loops until its word is 0; the app writes \
         0 after {wait_ms} ms"
    );
    let d = &cx.device;
    let pool = cx.create_command_pool(vk::CommandPoolCreateFlags::empty())?;
    let cmd = cx.allocate_command_buffers(pool, vk::CommandBufferLevel::PRIMARY, 1)?[0];
    crate::context::begin_command_buffer(d, cmd, vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT)?;
    program.record(cx, cmd, true);
    unsafe { d.end_command_buffer(cmd) }?;
    let fence = cx.create_fence()?;
    let cmds = [cmd];
    let submit = vk::SubmitInfo::default().command_buffers(&cmds);
    let started = std::time::Instant::now();
    unsafe { d.queue_submit(cx.queues[0], &[submit], fence) }?;
    let first = cx.wait_fence_timeout(fence, u64::from(wait_ms) * 1_000_000);
    if timed_out(&first) {
        eprintln!(
            "bb-testapp: loop-forever: still running after {wait_ms} ms: writing 0 to end the loop"
        );
        program
            .counts
            .write(&words(std::iter::repeat_n(0, INVOCATIONS as usize)));
        cx.wait_fence(fence)?;
        eprintln!("bb-testapp: loop-forever: the loop ended when the host wrote 0");
    } else {
        first?;
        eprintln!(
            "bb-testapp: loop-forever: the dispatch ended by itself after {:.0} ms",
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    let (ran, _) = program.results()[LONG_INVOCATION as usize];
    eprintln!("bb-testapp: loop-forever: invocation {LONG_INVOCATION} ran {ran} iteration(s)");
    Ok(Outcome::Checksum(u64::from(ran != 0)))
}

pub fn run_int_div(cx: &Context, _options: &Options) -> Result<Outcome> {
    let divisors = (0..INVOCATIONS).map(|i| u32::from(i != ZERO_DIVISOR_INVOCATION));
    let divisors =
        cx.create_buffer_with_data(&words(divisors), vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let bytes = u64::from(INVOCATIONS) * 4;
    let quotients = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let program = ComputeProgram::new(
        cx,
        shaders::INT_DIV_COMP,
        &[divisors.handle, quotients.handle],
        0,
        c"int-div",
    )?;
    eprintln!(
        "bb-testapp: int-div: invocation {ZERO_DIVISOR_INVOCATION} of {INVOCATIONS} divides by zero"
    );
    cx.submit_and_wait(|cmd| {
        program.record(&cx.device, cmd, &[], [INVOCATIONS / 64, 1, 1]);
        cx.record_buffer_readback(cmd, &quotients, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    let quotients = read_words(readback.bytes());
    let wrong = (0..INVOCATIONS)
        .filter(|&i| i != ZERO_DIVISOR_INVOCATION && quotients[i as usize] != i * 7 + 3)
        .count();
    if wrong > 0 {
        bail!("{wrong} quotient(s) with a divisor of 1 are wrong");
    }
    eprintln!(
        "bb-testapp: int-div: invocation {ZERO_DIVISOR_INVOCATION} got {} (the quotient is undefined)",
        quotients[ZERO_DIVISOR_INVOCATION as usize] as i32
    );
    // The undefined quotient is left out, so runs with and without Blackbox compare.
    let defined: Vec<u8> = quotients
        .iter()
        .enumerate()
        .filter(|&(i, _)| i as u32 != ZERO_DIVISOR_INVOCATION)
        .flat_map(|(_, q)| q.to_ne_bytes())
        .collect();
    Ok(Outcome::Checksum(fnv1a(&defined)))
}
