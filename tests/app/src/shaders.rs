//! SPIR-V compiled by build.rs from `shaders/testapp/*` (glslangValidator, Vulkan 1.2 target).

macro_rules! spirv {
    ($file:literal) => {
        include_bytes!(concat!(env!("OUT_DIR"), "/", $file))
    };
}

pub const COMPUTE: &[u8] = spirv!("compute.comp.spv");
pub const DRAW_VERT: &[u8] = spirv!("draw.vert.spv");
pub const DRAW_FRAG: &[u8] = spirv!("draw.frag.spv");

// The fault and shader-error scenarios' shaders, built with debug info (`-g`; `_GVS`: `-gVS`).
pub const FULLSCREEN_VERT: &[u8] = spirv!("fullscreen.vert.spv");
/// hang.comp with its two buffers: for the scenarios that crash while it runs.
pub const HANG_COMP: &[u8] = spirv!("hang.comp.spv");
/// hang.comp with a third buffer (binding 2) whose `stop` word makes invocations not yet started skip
/// their loops (`hang`: set after a failed wait).
pub const HANG_STOPPABLE_COMP: &[u8] = spirv!("hang_stoppable.comp.spv");
/// hang.comp reading its loop count from binding 2 instead of the push constant (and stoppable).
pub const HANG_CONTROL_COMP: &[u8] = spirv!("hang_control.comp.spv");
pub const HANG_FRAG: &[u8] = spirv!("hang.frag.spv");
pub const BAD_ADDRESS_COMP: &[u8] = spirv!("bad_address.comp.spv");
pub const NAN_COMP: &[u8] = spirv!("nan.comp.spv");
pub const NAN_COMP_GVS: &[u8] = spirv!("nan.comp.gvs.spv");
/// `loop-one` and `loop-forever`: one invocation's loop runs long.
pub const LOOP_ONE_COMP: &[u8] = spirv!("loop_one.comp.spv");
/// `passes`: one pass of many; one may make a NaN or run long.
pub const PASSES_COMP: &[u8] = spirv!("passes.comp.spv");
/// `int-div`: one invocation divides by zero.
pub const INT_DIV_COMP: &[u8] = spirv!("int_div.comp.spv");
/// `nan.comp` as SPIR-V 1.0, for apps of Vulkan 1.0 and 1.1 (`--api`).
pub const NAN_COMP_VK10: &[u8] = spirv!("nan.comp.vk10.spv");
pub const NAN_FRAG: &[u8] = spirv!("nan.frag.spv");
pub const NAN_FRAG_GVS: &[u8] = spirv!("nan.frag.gvs.spv");
/// `frames`: the presented picture, with a NaN pixel or a one-frame flash in one frame.
pub const FRAMES_FRAG: &[u8] = spirv!("frames.frag.spv");
pub const NAN_FP16_FP64_COMP: &[u8] = spirv!("nan_fp16_fp64.comp.spv");
pub const ASSERT_COMP: &[u8] = spirv!("assert.comp.spv");
pub const ASSERT_COMP_GVS: &[u8] = spirv!("assert.comp.gvs.spv");
pub const ASSERT_FRAG: &[u8] = spirv!("assert.frag.spv");
pub const ASSERT_FRAG_GVS: &[u8] = spirv!("assert.frag.gvs.spv");
pub const PRINTF_COMP: &[u8] = spirv!("printf.comp.spv");
pub const PRINTF_INT64_COMP: &[u8] = spirv!("printf_int64.comp.spv");
/// `hostile-strings`: printf output holding control characters (through `%c`).
pub const HOSTILE_PRINTF_COMP: &[u8] = spirv!("hostile_printf.comp.spv");

// shader-bench's ALU loop (shader_bench.glsl, with a BB_ASSERT), built with `-g` like a debug build.
pub const SHADER_BENCH_COMP: &[u8] = spirv!("shader_bench.comp.spv");
pub const SHADER_BENCH_FRAG: &[u8] = spirv!("shader_bench.frag.spv");
// The same with the assert's condition alone in place of the assert (`--shader-condition-only`).
pub const SHADER_BENCH_CONDITION_COMP: &[u8] = spirv!("shader_bench_condition.comp.spv");
pub const SHADER_BENCH_CONDITION_FRAG: &[u8] = spirv!("shader_bench_condition.frag.spv");
pub const FLOOD_COMP: &[u8] = spirv!("flood.comp.spv");
