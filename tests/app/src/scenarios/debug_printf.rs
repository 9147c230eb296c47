//! `assert-compute`, `assert-fragment` and `printf` (not in `all`): shaders calling debugPrintf, which
//! Blackbox turns into records it logs. Without Blackbox, a driver lacking VK_KHR_shader_non_semantic_info
//! (lavapipe here) may refuse these pipelines: the app says so on stderr and tries anyway.
//!
//! - `assert-compute`: assert.comp over 64x64 invocations; assert 7 (`[bb-assert %u] size %f too big,
//!   delta %d`) fails on invocation (12,34,0) only, with size 0.3 and delta -22 (x - y).
//! - `assert-fragment`: assert.frag over a 64x64 target; the same assert fails on pixel (12,34) only, with
//!   size 0.3 and delta -22.
//! - `printf`: printf.comp, invocation 0 prints each format once (expected text in printf.comp); the 64-bit
//!   formats only where the device has shaderInt64 (else a note on stderr).
//!
//! Each submits its command buffer `--repeat` times (vkQueueWaitIdle after each); `--shader-debug
//! nonsemantic` uses the `-gVS` builds of the assert shaders.

use anyhow::Result;
use ash::vk;

use super::compute::{GRID, GROUP};
use super::draw::{PassTarget, Target};
use super::nan::{BAD_PIXEL, SMALL_EXTENT};
use super::program::{
    by_debug_info, note_non_semantic, push_bytes, ComputeProgram, FullscreenProgram,
};
use super::Outcome;
use crate::context::{fnv1a, Access, Context, Memory};
use crate::{shaders, Options};

/// The size the failing invocation or pixel sees (the assert wants size < 0.25).
const BAD_SIZE: f32 = 0.3;
/// assert-compute's failing invocation (x, y, 0); the same as the fragment's pixel.
const BAD_INVOCATION: [u32; 2] = BAD_PIXEL;

const RESULTS_USAGE: vk::BufferUsageFlags = vk::BufferUsageFlags::from_raw(
    vk::BufferUsageFlags::STORAGE_BUFFER.as_raw() | vk::BufferUsageFlags::TRANSFER_SRC.as_raw(),
);

pub fn run_assert_compute(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let fault = options.fault;
    note_non_semantic(cx);
    let count = GRID * GRID;
    let bad_index = BAD_INVOCATION[1] * GRID + BAD_INVOCATION[0];
    let sizes: Vec<u8> = (0..count)
        .map(|i| {
            if i == bad_index {
                BAD_SIZE
            } else {
                0.05 + (i % 16) as f32 * 0.01
            }
        })
        .flat_map(f32::to_ne_bytes)
        .collect();
    let sizes = cx.create_buffer_with_data(&sizes, vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let bytes = u64::from(count) * 4;
    let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let spirv = by_debug_info(
        fault.shader_debug,
        shaders::ASSERT_COMP,
        shaders::ASSERT_COMP_GVS,
    );
    let program = ComputeProgram::new(
        cx,
        spirv,
        &[sizes.handle, results.handle],
        0,
        c"assert-compute",
    )?;

    cx.submit_repeatedly(fault.repeat, |cmd| {
        program.record(d, cmd, &[], [GRID / GROUP, GRID / GROUP, 1]);
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

pub fn run_assert_fragment(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    let fault = options.fault;
    note_non_semantic(cx);
    let target = PassTarget::new(cx, SMALL_EXTENT)?;
    let readback = cx.create_buffer(
        target.image.byte_size(),
        vk::BufferUsageFlags::TRANSFER_DST,
        Memory::Host,
    )?;
    let spirv = by_debug_info(
        fault.shader_debug,
        shaders::ASSERT_FRAG,
        shaders::ASSERT_FRAG_GVS,
    );
    let program = FullscreenProgram::new(
        cx,
        Target::RenderPass(target.render_pass),
        spirv,
        12,
        &[],
        c"assert-fragment",
    )?;
    let push = push_bytes(&[BAD_PIXEL[0], BAD_PIXEL[1], BAD_SIZE.to_bits()]);

    cx.submit_repeatedly(fault.repeat, |cmd| {
        target.begin(d, cmd, vk::SubpassContents::INLINE);
        program.record(d, cmd, SMALL_EXTENT, &push);
        unsafe { d.cmd_end_render_pass(cmd) };
        cx.record_image_readback(cmd, &target.image, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}

/// printf.comp's `w[]`: the values each format prints (see the expected text there).
#[allow(clippy::approx_constant)] // 3.14159 is a value to print with %.3f, not an approximation of pi
fn printf_words() -> Vec<u32> {
    let lu: u64 = 1_099_511_627_777;
    let lx: u64 = 0xdead_beef_cafe;
    vec![
        (-7i32) as u32,       // 0: %d, mixed %d
        42,                   // 1: %i, mixed %u
        4_000_000_000,        // 2: %u
        255,                  // 3: %x, mixed %x
        0xBEEF,               // 4: %X
        0o777,                // 5: %o
        3.5f32.to_bits(),     // 6: %f, %a, mixed %f
        1e-3f32.to_bits(),    // 7: %e, %g
        u32::from(b'A'),      // 8: %c
        3.14159f32.to_bits(), // 9: %.3f
        1.5f32.to_bits(),     // 10, 11: %v2f
        (-2.0f32).to_bits(),
        1, // 12..14: %v3u
        2,
        3,
        (-1i32) as u32, // 15..18: %v4d
        0,
        1,
        2,
        lu as u32, // 19, 20: %lu (low, high)
        (lu >> 32) as u32,
        lx as u32, // 21, 22: %lx
        (lx >> 32) as u32,
    ]
}

pub fn run_printf(cx: &Context, options: &Options) -> Result<Outcome> {
    let d = &cx.device;
    note_non_semantic(cx);
    let spirv = if cx.features.shader_int64 {
        shaders::PRINTF_INT64_COMP
    } else {
        eprintln!(
            "bb-testapp: note: shaderInt64 not supported: printf skips the 64-bit formats (%lu %lx)"
        );
        shaders::PRINTF_COMP
    };
    let words: Vec<u8> = printf_words()
        .iter()
        .flat_map(|w| w.to_ne_bytes())
        .collect();
    let words = cx.create_buffer_with_data(&words, vk::BufferUsageFlags::STORAGE_BUFFER)?;
    let bytes = 64 * 4;
    let results = cx.create_buffer(bytes, RESULTS_USAGE, Memory::Device)?;
    let readback = cx.create_buffer(bytes, vk::BufferUsageFlags::TRANSFER_DST, Memory::Host)?;
    let program = ComputeProgram::new(cx, spirv, &[words.handle, results.handle], 4, c"printf")?;

    cx.submit_repeatedly(options.fault.repeat, |cmd| {
        // Invocation 0 prints.
        program.record(d, cmd, &push_bytes(&[0]), [1, 1, 1]);
        cx.record_buffer_readback(cmd, &results, Access::COMPUTE_WRITE, &readback);
        Ok(())
    })?;
    Ok(Outcome::Checksum(fnv1a(readback.bytes())))
}
