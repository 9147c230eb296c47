//! bb-testapp: a small Vulkan program whose scenarios the Blackbox integration tests drive.
//!
//! `bb-testapp [OPTIONS] SCENARIO...` prints one line per scenario on stdout,
//! `scenario <name> checksum <16 hex digits>` (FNV-1a 64 of the bytes read back from the GPU), or
//! `scenario <name> skipped <reason>`. Everything else goes to stderr.
//!
//! Exit codes: 0 success; 1 a Vulkan (or other runtime) error; 2 bad command line; 3 the debug-utils
//! messenger received a message (e.g. from the validation layer); 4 a scenario was skipped.
//! After an error the app still destroys everything it created (after vkDeviceWaitIdle), unless a wait
//! timed out with GPU work possibly still running; so a device loss exercises the teardown path too.
//!
//! The benchmarks `record-bench`, `pipeline-bench`, `pipeline-compile`, `frame-bench` and `shader-bench` (not in `all`) also
//! print timings on stdout; `memory-bench` (not in `all`) prints resident and device memory.
//! Some scenarios (not in `all`) are deliberate faults for Blackbox to report: `hang`, `hang-draw` (long
//! GPU work), `bad-address` (a GPU page fault; on lavapipe a SIGSEGV in a driver thread); others make shader
//! errors that only instrumentation reports: `nan-*`, `assert-*`, `printf`.
//!
//! The app never enables layers itself: tests do it with `VK_INSTANCE_LAYERS`.

mod context;
mod reflect;
mod scenarios;
mod shaders;

use std::ffi::{c_void, CStr};
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context as _, Result};
use ash::vk;

use context::{vk_result_of, Context, Needs, VkResultExt};
use scenarios::{Outcome, SCENARIOS};

const USAGE: &str = "\
usage: bb-testapp [OPTIONS] SCENARIO...
  SCENARIO       a name from --list, or `all` (every scenario except the benchmarks and those below)
options:
  --list         print the scenario names, one per line, and exit
  --device-index N   physical device to use (default 0)
  --cmdbufs N    record-bench: command buffers per iteration (default 32)
  --draws M      record-bench: draws per command buffer (default 500)
  --iters K      record-bench, pipeline-bench, pipeline-compile: iterations (defaults 30, 5 and 3)
  --record-only  record-bench: record and reset, never submit (for profiling under callgrind, where
                 lavapipe's execution of the draws would take minutes)
  --ab-layer L   record-bench: also record the same work through a second instance and device of this
                 process that enable layer L (`none`: no layer, for the method's own spread), the two in
                 turn each iteration, and print its figures as `ab_*` lines: a ratio of two instances of
                 one process is free of what moves between processes (set the layer here, not in
                 VK_INSTANCE_LAYERS, which would put it under both)
  --app-markers  record-bench with --ab-layer: the second instance's device also writes a
                 vkCmdWriteBufferMarkerAMD (top of pipe) before each draw and dispatch, as Blackbox's
                 `command` breadcrumbs do: what the driver's own marker call costs (skipped where the
                 device lacks VK_AMD_buffer_marker)
  --pipelines N  pipeline-bench: compute and graphics pipelines created per iteration, N of each
                 (default 40)
  --frame-draws N      frame-bench: draws in the frame's render pass (default 10000)
  --frame-dispatches N frame-bench: 1x1x1 dispatches after the pass (default 10000)
  --frames K           frame-bench, shader-bench: frames (runs), the first one a warm-up (default 20)
  --frame-kind K       frame-bench: `triangles` (the draws and dispatches above, default) or `scene`
                       (4 render passes of 250 draws of 1,000 to 50,000 pixels each on a 512x512 target,
                       a pipeline change every 4 draws, push constants before each)
  --shader-invocations N  shader-bench: compute invocations (default 65536)
  --shader-size W      shader-bench: the fragment shader's target is W x W pixels (16 to 8192, default 256)
  --shader-iterations N   shader-bench: loop iterations per invocation and pixel (default 64)
  --shader-condition-only shader-bench: the shaders with the BB_ASSERT replaced by its condition checked
                       by hand, setting a flag read once at the end: run without a layer, a reference
                       for what an assert costs (without a layer the driver deletes the assert)
  --pipeline-stats     shader-bench: print the driver's statistics of each pipeline's executables
                       (registers, code size: VK_KHR_pipeline_executable_properties, where the
                       device has it; one line says so where it has not)
  --memory-cmdbufs N   memory-bench: command buffers recorded and submitted (default 1000)
  --memory-draws M     memory-bench: draws per command buffer, as record-bench's (default 100)
  --hang-groups N    hang: workgroups of 64 invocations in dispatch 3, the long one (default 8000,
                     at most 65535; on lavapipe about 0.65 s per 1000)
  --hang-iterations N  hang, hang-draw, passes: loop iterations (x 4 multiply-adds; x 1 for passes) of the long
                     dispatch or draw (defaults 43000, 21000 and 60000, sized for lavapipe, which cuts loops at
                     65,535; a GPU runs them in milliseconds: give it hundreds of millions). hang on a device
                     that is not a CPU, without this option: timed on the device first (--hang-seconds)
  --hang-seconds S   hang: the loop count of dispatch 3 is timed on the device first, in short dispatches,
                     and set so that it runs about S seconds (default 3 on a device that is not a CPU, where
                     --hang-iterations is not given; lavapipe's loops stop at 65,535 iterations whatever S)
  --hang-size W      hang-draw: the render target is W x W pixels; draw 2 shades all of them slowly
                     (16 to 8192, default 1024: about 5 s on lavapipe)
  --frame N          hang, hang-draw, bad-address: name the outer label `frame N` instead of `frame`
                     (runs that differ only in a frame number, for crash-signature tests)
  --dynamic          hang-draw: dynamic rendering (vkCmdBeginRendering) instead of a classic render pass
                     (skipped without dynamicRendering and synchronization2)
  --secondary        hang-draw: the three draws in a secondary command buffer (`draws-secondary`,
                     RENDER_PASS_CONTINUE) executed inside the classic render pass
  --two-queues       hang: dispatches 1-2 in a first submission to queue A, dispatches 3-5 in a second one
                     to queue B that waits for a binary semaphore the first signals (the same queue twice
                     where the family has one queue, as on lavapipe)
  --simultaneous     hang: one SIMULTANEOUS_USE command buffer submitted twice in a row, both runs
                     pending at once
  --resubmit         hang: one command buffer, recorded once and submitted twice: dispatch 3 reads its
                     loop count from a host-visible buffer, short (1) for the first submission, which is
                     waited for, and long for the second
  --bad-address A    bad-address: the device address dispatch 2 writes through (default 0xdead0000)
  --nan-op OP        nan-*: the operation that makes the NaN or Inf: normalize (of a zero vector,
                     default), pow (of -0.5) or div (1.0 / 0.0)
  --nan-dispatches N nan-compute: dispatches in the command buffer (default 100); the bad one is
                     dispatch 42 (or the last, if N <= 42), invocation (12,0,0)
  --nan-discard      nan-fragment: the bad pixel discards itself after its NaN or Inf (so nothing is
                     stored: a NaN record written when the invocation ends must come before the discard)
  --passes N         passes: how many (default 16)
  --bad-pass K       passes: the one that goes wrong (default 11)
  --pass-fault F     passes: none (default), nan (sqrt of -1 in invocation 7), hang (a long loop in
                     --hang-groups workgroups), crash (a write through --bad-address: on lavapipe SIGSEGV)
  --loop-wait-ms N   loop-forever: how long the app waits before it ends the loop itself (default 10000)
  --repeat N         nan-*, assert-*, printf: submit the command buffer N times, with vkQueueWaitIdle
                     after each (default 1)
  --threads N        stress: recording and submitting threads (default 8)
  --seconds S        stress: how long each thread runs (default 5)
  --flood-frames N   flood: frames (default 10)
  --spirv FILE       spirv-run, pipeline-compile: a compute or fragment shader (repeatable)
  --attachment-format F  spirv-run, pipeline-compile: a fragment shader's attachments, rgba32f (default),
                     rgba8, rg8 or r8
  --omit NAMES       debug-labels: work not recorded, comma-separated: a draw's label (Background, Glow,
                     Corner, Marker), Simulate (its fill and two dispatches), ParticleSim (the two dispatches)
  --api V            the Vulkan version the app creates its instance for: 1.0, 1.1, 1.2 or 1.3 (default 1.3);
                     below 1.2 nan-compute uses a SPIR-V 1.0 build of its shader
  --features-via-extensions  enable timeline semaphores and buffer device address through
                     VK_KHR_timeline_semaphore and VK_KHR_buffer_device_address and their feature structs
  --layer-setting K=V  chain a VkLayerSettingsCreateInfoEXT to vkCreateInstance giving VK_LAYER_blackbox's
                     setting K the string V (repeatable; `K:bool=true`, `K:u32=N`, `K:i32=N` for those types),
                     (the extension is not enabled: loaders before 1.3.272 refuse it as unknown, and layers read
                     the struct anyway)
  --enable-layer-settings  also enable VK_EXT_layer_settings (an error where no layer or driver offers it)
  --shader-debug D   nan-compute, nan-fragment, assert-*: the shaders' debug info: opline (glslang -g,
                     OpLine only; default) or nonsemantic (glslang -gVS, NonSemantic.Shader.DebugInfo.100)
  --frames-count N   frames: frames presented (default 100)
  --bad-frame N      frames: the frame (from 1) that goes bad (default 57; 0: none)
  --flash            frames: the bad frame flashes a white rectangle for that frame alone, with no NaN
  --present-size WxH frames: the window (or headless surface) size (default 640x480)
  --headless         frames: present to a VK_EXT_headless_surface surface even with DISPLAY set
not in `all` (faults and shader errors, for Blackbox to report):
  hang           5 labelled dispatches in one submission; dispatch 3 runs long (--hang-groups;
                 --two-queues, --resubmit)
  hang-draw      3 labelled draws in a render pass; draw 2 runs long (--hang-size; --dynamic,
                 --secondary)
  bad-address    dispatch 2 of 3 writes through a bad device address (lavapipe: SIGSEGV)
  nan-compute    one invocation of one dispatch makes a NaN/Inf (--nan-op, --nan-dispatches)
  nan-fragment   one pixel (12,34) of a 64x64 target makes a NaN/Inf (--nan-op)
  nan-fp16-fp64  invocation 12 makes a NaN/Inf in 16- and 64-bit floats (--nan-op; pow is sqrt there)
  nan-poll       one dispatch makes a NaN/Inf (--nan-op) and signals a timeline semaphore; the app learns
                 of completion only by polling vkGetSemaphoreCounterValue, prints `reading results` on
                 stderr, reads, idles 300 ms, prints `tearing down`
  nan-sleep      the same, but no Vulkan call at all for 500 ms after submitting, then the poll
  nan-signal-array  the same dispatch in a batch that passes a signal array with a count of 0 (best
                 practices reports it), with a fence; no Vulkan call for 500 ms, then `waiting for the
                 fence`, the wait, the read
  passes         --passes labelled dispatches (`frame` > `pass K`, pipeline `pass-K`), one of which
                 (--bad-pass) goes wrong as --pass-fault says: for blackbox bisect
  loop-one       invocation 1234 of 4096 loops 60,000 times, every other 10; prints how many ran another
                 count than their own
  loop-forever   invocation 1234 loops until the host writes 0 to its word (after --loop-wait-ms): on a GPU,
                 a shader that never ends by itself
  int-div        invocation 2345 of 4096 divides an int by 0; prints the undefined quotient it got
  frames         presents --frames-count frames of a drifting gradient to a window on DISPLAY (xcb), or to a
                 headless surface (VK_EXT_headless_surface) where there is no DISPLAY or with --headless;
                 frame --bad-frame has a NaN in pixel (200,150) of its fragment shader (normalize of a zero
                 vector), or with --flash a white rectangle (160,120)-(320,240) for that frame alone; one
                 frame in flight (each frame's fence is waited for after its present); prints the median
                 frame time (acquire to fence) and present call time, `frames frame_us X present_us Y`;
                 skipped where no surface can be made
  validation-canary  a write-after-write hazard and an ALL_COMMANDS barrier: the validation layer must
                 report both (with synchronization validation and best practices on)
  assert-compute  assert 7 (size < 0.25) fails on invocation (12,34,0): size 0.3, delta -22
  assert-fragment assert 7 (size < 0.25) fails on pixel (12,34): size 0.3, delta -22
  hostile-strings  the app's strings hold what a terminal acts on: its name, printf output (ESC, NUL, CR,
                 LF, U+009B, U+202E through %c), labels, a 100,000-byte label, pipeline and command buffer
                 names; the last command runs long (--hang-groups), for a watchdog report naming them
  crash-in-malloc  frees a 4 KiB block twice: glibc aborts holding its allocator's lock
  crash-read-only  writes to a page mapped read-only (SIGSEGV, SEGV_ACCERR: a page guard's kind of fault)
  crash-in-blackbox-lock  names an object with address 1 as its name: the fault is inside Blackbox's lock
                 (both crash scenarios install the app's own SIGSEGV/SIGABRT handler before the instance:
                 it prints `bb-testapp: the app's own crash handler ran for signal N`, then the default)
  printf         one invocation prints each debugPrintf format once
  stress         --threads threads record and submit assert.comp (one failing invocation per dispatch)
                 for --seconds on both queues; prints `stress_dispatches N`
  flood          every one of 65,536 invocations fails an assert and calls 160 printf sites, for
                 --flood-frames frames; prints the counts and frame times
  malformed-spirv  vkCreateShaderModule with truncated, bad-magic and unknown-opcode modules
  destroy-early  destroys a command pool and pipeline whose work finished but was never waited for
  bypass-loader  alone: loads the driver named by VK_DRIVER_FILES (or VK_ICD_FILENAMES) itself and creates
                 an instance through its vk_icdGetInstanceProcAddr, as ncnn's pip wheel does: no loader,
                 no layer
  spirv-run      runs each --spirv compute or fragment shader once with the set-0 buffers, images and
                 samplers it declares (a fragment shader behind a vertex shader made to match its inputs);
                 prints `spirv <file> checksum X` (storage buffers and images, attachments), or
                 `spirv <file> skipped: <reason>` for a module it cannot run
  pipeline-compile  a benchmark: for each --spirv compute or fragment shader, --iters times, the time of
                 vkCreateShaderModule + vkCreate*Pipelines of a freshly tagged copy, and of its first use
                 minus its second (a driver's deferred compile); prints `compile <file> <stage> create_us C
                 first_use_us F` (medians), or `compile <file> skipped: <reason>`
  (assert-*, printf, shader-bench and --shader-debug nonsemantic need VK_KHR_shader_non_semantic_info; where
   it is missing a note says so and they run anyway: Blackbox rewrites them, some drivers refuse them)";

/// The benchmarks' parameters (record-, pipeline-, frame-, shader- and memory-bench).
#[derive(Clone, Copy, Debug)]
pub struct BenchOptions {
    pub cmdbufs: u32,
    pub draws: u32,
    /// Iterations; `None` is the benchmark's default.
    pub iters: Option<u32>,
    /// record-bench: record and reset only, never submit.
    pub record_only: bool,
    /// record-bench: the layer of the second instance (`none`: no layer), when there is one.
    pub ab_layer: Option<&'static str>,
    /// record-bench: the second instance writes buffer markers of its own.
    pub app_markers: bool,
    /// pipeline-bench: compute pipelines, and graphics pipelines, per iteration.
    pub pipelines: u32,
    /// frame-bench: draws in the render pass, dispatches after it, frames (the first one a warm-up).
    pub frame_draws: u32,
    pub frame_dispatches: u32,
    pub frames: u32,
    /// frame-bench: the realistic scene instead of the one-triangle draws and dispatches.
    pub frame_scene: bool,
    /// shader-bench: compute invocations, the fragment target's side, loop iterations.
    pub shader_invocations: u32,
    pub shader_size: u32,
    pub shader_iterations: u32,
    /// shader-bench: the shaders with the assert's condition alone in place of the assert.
    pub shader_condition_only: bool,
    /// shader-bench: print the driver's statistics of each pipeline (VK_KHR_pipeline_executable_properties).
    pub pipeline_stats: bool,
    /// memory-bench: command buffers, draws per command buffer.
    pub memory_cmdbufs: u32,
    pub memory_draws: u32,
}

/// The operation that makes the NaN or Inf in the `nan-*` scenarios (the shaders' `op` push constant).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanOp {
    /// `normalize` of a zero vector: NaN.
    Normalize = 0,
    /// `pow(-0.5, 0.3)`: NaN.
    Pow = 1,
    /// `1.0 / 0.0`: +Inf.
    Div = 2,
}

/// Which debug info the instrumented test shaders carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShaderDebug {
    /// glslang `-g`: OpLine, OpSource with the text.
    OpLine,
    /// glslang `-gVS`: NonSemantic.Shader.DebugInfo.100 (module-level OpExtInst).
    NonSemantic,
}

/// How `hang-draw` records its three draws.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DrawMode {
    /// Inline in a classic render pass (the default).
    RenderPass,
    /// Inline between vkCmdBeginRendering and vkCmdEndRendering (`--dynamic`).
    Dynamic,
    /// In a secondary command buffer executed inside the classic render pass (`--secondary`).
    Secondary,
}

/// What goes wrong in `passes`' bad pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PassFault {
    None,
    Nan,
    Hang,
    Crash,
}

/// How `hang` submits its five dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HangMode {
    /// One command buffer, one submission (the default).
    OneSubmission,
    /// Dispatches 1-2 and 3-5 in two submissions ordered by a binary semaphore (`--two-queues`).
    TwoQueues,
    /// One command buffer submitted twice, short then long (`--resubmit`).
    Resubmit,
    /// One SIMULTANEOUS_USE command buffer submitted twice without waiting in between (`--simultaneous`).
    Simultaneous,
}

/// Parameters of the fault and shader-error scenarios.
#[derive(Clone, Copy, Debug)]
pub struct FaultOptions {
    /// The number in the outer label (`frame N`); none: the label is `frame`.
    pub frame: Option<u32>,
    pub hang_groups: u32,
    pub hang_size: u32,
    /// Loop iterations of the long dispatch or draw; `None` is the scenario's default (sized for lavapipe).
    pub hang_iterations: Option<u32>,
    /// `hang`: seconds dispatch 3 should run, its loop count timed on the device (`None`: 3 s on a device
    /// that is not a CPU where `hang_iterations` is `None`, else not timed).
    pub hang_seconds: Option<f64>,
    pub draw_mode: DrawMode,
    pub hang_mode: HangMode,
    pub bad_address: u64,
    pub nan_op: NanOp,
    pub nan_dispatches: u32,
    /// `nan-fragment`: the bad pixel discards itself after its NaN.
    pub nan_discard: bool,
    pub loop_wait_ms: u32,
    /// `passes`: how many, which one goes wrong, and how.
    pub passes: u32,
    pub bad_pass: u32,
    pub pass_fault: PassFault,
    pub repeat: u32,
    pub shader_debug: ShaderDebug,
}

/// `frames`: what is presented, and what goes wrong in it.
#[derive(Clone, Copy, Debug)]
pub struct FramesOptions {
    /// Frames presented.
    pub count: u32,
    /// The frame (from 1) with the NaN pixel or the flash; 0 for none.
    pub bad_frame: u32,
    /// The bad frame flashes instead of making a NaN.
    pub flash: bool,
    /// Surface size.
    pub width: u32,
    pub height: u32,
    /// Present to a headless surface even with DISPLAY set.
    pub headless: bool,
}

/// `stress`, `flood` and the device-creation variant, for the robustness tests.
#[derive(Clone, Debug)]
pub struct StressOptions {
    /// stress: recording and submitting threads.
    pub threads: u32,
    /// stress: how long each thread keeps recording and submitting.
    pub seconds: f64,
    /// flood: frames (one submission each).
    pub flood_frames: u32,
    /// The device's timeline-semaphore and buffer-device-address features are enabled through their
    /// extensions and feature structs (VK_KHR_*), not through VkPhysicalDeviceVulkan12Features.
    pub features_via_extensions: bool,
    /// spirv-run: the shaders to run.
    pub spirv_files: Vec<std::path::PathBuf>,
    /// spirv-run, pipeline-compile: the format of a fragment shader's attachments.
    pub attachment_format: ash::vk::Format,
}

#[derive(Clone, Debug)]
pub struct Options {
    pub device_index: usize,
    pub bench: BenchOptions,
    pub frames: FramesOptions,
    pub fault: FaultOptions,
    pub stress: StressOptions,
    pub scenarios: Vec<&'static str>,
    /// `VkApplicationInfo::apiVersion` (`--api`).
    pub api_version: u32,
    /// debug-labels: work the app does not record (`--omit`), the reference for Blackbox's
    /// `VK_BLACKBOX_SKIP`.
    pub omit: Vec<String>,
}

enum Command {
    Run(Box<Options>),
    List,
    Help,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Command> {
    let mut options = Options {
        device_index: 0,
        bench: BenchOptions {
            cmdbufs: 32,
            draws: 500,
            iters: None,
            record_only: false,
            ab_layer: None,
            app_markers: false,
            pipelines: 40,
            frame_draws: 10_000,
            frame_dispatches: 10_000,
            frames: 20,
            frame_scene: false,
            shader_invocations: 65536,
            shader_size: 256,
            shader_iterations: 64,
            shader_condition_only: false,
            pipeline_stats: false,
            memory_cmdbufs: 1000,
            memory_draws: 100,
        },
        frames: FramesOptions {
            count: 100,
            bad_frame: 57,
            flash: false,
            width: 640,
            height: 480,
            headless: false,
        },
        fault: FaultOptions {
            frame: None,
            hang_groups: 8000,
            hang_size: 1024,
            hang_iterations: None,
            hang_seconds: None,
            draw_mode: DrawMode::RenderPass,
            hang_mode: HangMode::OneSubmission,
            bad_address: 0xdead_0000,
            nan_op: NanOp::Normalize,
            nan_dispatches: 100,
            nan_discard: false,
            loop_wait_ms: 10_000,
            passes: 16,
            bad_pass: 11,
            pass_fault: PassFault::None,
            repeat: 1,
            shader_debug: ShaderDebug::OpLine,
        },
        stress: StressOptions {
            threads: 8,
            seconds: 5.0,
            flood_frames: 10,
            features_via_extensions: false,
            spirv_files: Vec::new(),
            attachment_format: ash::vk::Format::R32G32B32A32_SFLOAT,
        },
        scenarios: Vec::new(),
        api_version: vk::API_VERSION_1_3,
        omit: Vec::new(),
    };
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let mut text = |name: &str| -> Result<String> {
            args.next().with_context(|| format!("{name} needs a value"))
        };
        let mut value = |name: &str| -> Result<u32> {
            let v = text(name)?;
            v.parse()
                .with_context(|| format!("{name}: `{v}` is not a non-negative integer"))
        };
        match arg.as_str() {
            "--list" => return Ok(Command::List),
            "-h" | "--help" => return Ok(Command::Help),
            "--device-index" => options.device_index = value("--device-index")? as usize,
            "--cmdbufs" => options.bench.cmdbufs = value("--cmdbufs")?.max(1),
            "--draws" => options.bench.draws = value("--draws")?.max(1),
            "--iters" => options.bench.iters = Some(value("--iters")?.max(1)),
            "--record-only" => options.bench.record_only = true,
            // Leaked: parsed once, and the options stay `Copy`.
            "--ab-layer" => options.bench.ab_layer = Some(text("--ab-layer")?.leak()),
            "--app-markers" => options.bench.app_markers = true,
            "--pipelines" => options.bench.pipelines = value("--pipelines")?.max(1),
            "--frame-draws" => options.bench.frame_draws = value("--frame-draws")?.max(1),
            "--frame-dispatches" => {
                options.bench.frame_dispatches = value("--frame-dispatches")?.max(1)
            }
            "--frames" => options.bench.frames = value("--frames")?.max(2),
            "--frame-kind" => {
                options.bench.frame_scene = match text("--frame-kind")?.as_str() {
                    "triangles" => false,
                    "scene" => true,
                    other => bail!("--frame-kind: `{other}` is not triangles or scene"),
                }
            }
            "--shader-invocations" => {
                options.bench.shader_invocations = value("--shader-invocations")?.max(1)
            }
            "--shader-size" => options.bench.shader_size = value("--shader-size")?.clamp(16, 8192),
            "--shader-iterations" => {
                options.bench.shader_iterations = value("--shader-iterations")?.max(1)
            }
            "--shader-condition-only" => options.bench.shader_condition_only = true,
            "--pipeline-stats" => options.bench.pipeline_stats = true,
            "--memory-cmdbufs" => options.bench.memory_cmdbufs = value("--memory-cmdbufs")?.max(1),
            "--memory-draws" => options.bench.memory_draws = value("--memory-draws")?.max(1),
            "--hang-groups" => {
                let groups = value("--hang-groups")?;
                if !(1..=65535).contains(&groups) {
                    bail!("--hang-groups: {groups} is not in 1..=65535");
                }
                options.fault.hang_groups = groups;
            }
            "--frame" => options.fault.frame = Some(value("--frame")?),
            "--hang-size" => options.fault.hang_size = value("--hang-size")?.clamp(16, 8192),
            "--hang-iterations" => {
                options.fault.hang_iterations = Some(value("--hang-iterations")?.max(1))
            }
            "--hang-seconds" => {
                let given = text("--hang-seconds")?;
                let seconds: f64 = given
                    .parse()
                    .ok()
                    .filter(|s: &f64| (0.01..=600.0).contains(s))
                    .with_context(|| format!("--hang-seconds: `{given}` is not in 0.01..=600"))?;
                options.fault.hang_seconds = Some(seconds);
            }
            "--dynamic" | "--secondary" => {
                let mode = if arg == "--dynamic" {
                    DrawMode::Dynamic
                } else {
                    DrawMode::Secondary
                };
                if ![DrawMode::RenderPass, mode].contains(&options.fault.draw_mode) {
                    bail!("--dynamic and --secondary cannot be combined");
                }
                options.fault.draw_mode = mode;
            }
            "--two-queues" | "--resubmit" | "--simultaneous" => {
                let mode = match arg.as_str() {
                    "--two-queues" => HangMode::TwoQueues,
                    "--resubmit" => HangMode::Resubmit,
                    _ => HangMode::Simultaneous,
                };
                if ![HangMode::OneSubmission, mode].contains(&options.fault.hang_mode) {
                    bail!("--two-queues, --resubmit and --simultaneous cannot be combined");
                }
                options.fault.hang_mode = mode;
            }
            "--bad-address" => {
                let v = text("--bad-address")?;
                let digits = v.strip_prefix("0x").unwrap_or(&v);
                options.fault.bad_address = u64::from_str_radix(digits, 16)
                    .with_context(|| format!("--bad-address: `{v}` is not a hex address"))?;
            }
            "--nan-op" => {
                options.fault.nan_op = match text("--nan-op")?.as_str() {
                    "normalize" => NanOp::Normalize,
                    "pow" => NanOp::Pow,
                    "div" => NanOp::Div,
                    other => bail!("--nan-op: `{other}` is not normalize, pow or div"),
                }
            }
            "--nan-discard" => options.fault.nan_discard = true,
            "--nan-dispatches" => {
                options.fault.nan_dispatches = value("--nan-dispatches")?.clamp(1, 1000)
            }
            "--passes" => options.fault.passes = value("--passes")?.clamp(1, 256),
            "--bad-pass" => options.fault.bad_pass = value("--bad-pass")?,
            "--pass-fault" => {
                options.fault.pass_fault = match text("--pass-fault")?.as_str() {
                    "none" => PassFault::None,
                    "nan" => PassFault::Nan,
                    "hang" => PassFault::Hang,
                    "crash" => PassFault::Crash,
                    other => bail!("--pass-fault: `{other}` is not none, nan, hang or crash"),
                }
            }
            "--loop-wait-ms" => options.fault.loop_wait_ms = value("--loop-wait-ms")?.max(1),
            "--repeat" => options.fault.repeat = value("--repeat")?.max(1),
            "--threads" => options.stress.threads = value("--threads")?.clamp(1, 64),
            "--seconds" => {
                options.stress.seconds = text("--seconds")?
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s > 0.0)
                    .context("--seconds: expected a positive number")?
            }
            "--flood-frames" => options.stress.flood_frames = value("--flood-frames")?.max(1),
            "--spirv" => options.stress.spirv_files.push(text("--spirv")?.into()),
            "--attachment-format" => {
                options.stress.attachment_format = match text("--attachment-format")?.as_str() {
                    "rgba32f" => ash::vk::Format::R32G32B32A32_SFLOAT,
                    "rgba8" => ash::vk::Format::R8G8B8A8_UNORM,
                    "rg8" => ash::vk::Format::R8G8_UNORM,
                    "r8" => ash::vk::Format::R8_UNORM,
                    other => {
                        anyhow::bail!("--attachment-format {other}: one of rgba32f, rgba8, rg8, r8")
                    }
                }
            }
            "--features-via-extensions" => options.stress.features_via_extensions = true,
            "--enable-layer-settings" => ENABLE_LAYER_SETTINGS.store(true, Ordering::Relaxed),
            "--layer-setting" => {
                let setting = text("--layer-setting")?;
                let (key, value) = setting
                    .split_once('=')
                    .context("--layer-setting: expected KEY=VALUE")?;
                LAYER_SETTINGS
                    .lock()
                    .expect("settings")
                    .push((key.to_owned(), value.to_owned()));
            }
            "--frames-count" => options.frames.count = value("--frames-count")?.max(1),
            "--bad-frame" => options.frames.bad_frame = value("--bad-frame")?,
            "--flash" => options.frames.flash = true,
            "--headless" => options.frames.headless = true,
            "--present-size" => {
                let v = text("--present-size")?;
                let size = v
                    .split_once('x')
                    .and_then(|(w, h)| Some((w.parse::<u32>().ok()?, h.parse::<u32>().ok()?)))
                    .filter(|&(w, h)| (16..=8192).contains(&w) && (16..=8192).contains(&h));
                let Some((w, h)) = size else {
                    bail!("--present-size: `{v}` is not WxH with sides from 16 to 8192");
                };
                (options.frames.width, options.frames.height) = (w, h);
            }
            "--omit" => options
                .omit
                .extend(text("--omit")?.split(',').map(|s| s.trim().to_owned())),
            "--api" => {
                options.api_version = match text("--api")?.as_str() {
                    "1.0" => vk::API_VERSION_1_0,
                    "1.1" => vk::API_VERSION_1_1,
                    "1.2" => vk::API_VERSION_1_2,
                    "1.3" => vk::API_VERSION_1_3,
                    other => bail!("--api {other}: accepted: 1.0, 1.1, 1.2, 1.3"),
                }
            }
            "--shader-debug" => {
                options.fault.shader_debug = match text("--shader-debug")?.as_str() {
                    "opline" => ShaderDebug::OpLine,
                    "nonsemantic" => ShaderDebug::NonSemantic,
                    other => bail!("--shader-debug: `{other}` is not opline or nonsemantic"),
                }
            }
            "all" => options
                .scenarios
                .extend(SCENARIOS.iter().filter(|s| s.in_all).map(|s| s.name)),
            scenarios::bypass_loader::NAME => {
                options.scenarios.push(scenarios::bypass_loader::NAME)
            }
            name if name.starts_with('-') => bail!("unknown option `{name}`"),
            name => match SCENARIOS.iter().find(|s| s.name == name) {
                Some(s) => options.scenarios.push(s.name),
                None => bail!("unknown scenario `{name}` (see --list)"),
            },
        }
    }
    if options.scenarios.is_empty() {
        bail!("no scenario given");
    }
    if options.scenarios.len() > 1 && options.scenarios.contains(&scenarios::bypass_loader::NAME) {
        bail!(
            "bypass-loader runs alone: it creates its instance without the loader the others use"
        );
    }
    Ok(Command::Run(Box::new(options)))
}

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Command::Run(options)) => *options,
        Ok(Command::List) => {
            for s in SCENARIOS {
                println!("{}", s.name);
            }
            println!("{}", scenarios::bypass_loader::NAME);
            return ExitCode::SUCCESS;
        }
        Ok(Command::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("bb-testapp: {e:#}\n{USAGE}");
            return ExitCode::from(2);
        }
    };

    let result = run(&options);
    let messages = DEBUG_MESSAGES.load(Ordering::SeqCst);
    eprintln!("debug-utils messages: {messages}");
    match result {
        Err(e) => {
            eprintln!("bb-testapp: error: {e:#}");
            ExitCode::from(1)
        }
        Ok(_) if messages > 0 => ExitCode::from(3),
        Ok(RunSummary { skipped: true }) => ExitCode::from(4),
        Ok(_) => ExitCode::SUCCESS,
    }
}

struct RunSummary {
    skipped: bool,
}

fn run(options: &Options) -> Result<RunSummary> {
    if options.scenarios == [scenarios::bypass_loader::NAME] {
        scenarios::bypass_loader::run()?;
        return Ok(RunSummary { skipped: false });
    }
    // memory-bench's checkpoints: its baseline is the process before the loader (and any layer) is loaded.
    let memory_bench = options.scenarios.contains(&"memory-bench");
    if memory_bench {
        scenarios::memory_bench::checkpoint("start");
    }
    // SAFETY: loading the system Vulkan loader; nothing else in this process loads a different one.
    let entry =
        unsafe { ash::Entry::load() }.context("cannot load the Vulkan loader (libvulkan.so.1)")?;
    // The crash scenarios' own handler comes before Blackbox's (installed with the first device).
    if options.scenarios.iter().any(|s| s.starts_with("crash-")) {
        scenarios::hostile::install_crash_handler();
    }
    let app_name = if options.scenarios.contains(&"hostile-strings") {
        scenarios::hostile::HOSTILE_APP_NAME
    } else {
        c"bb-testapp"
    };
    let needs = options
        .scenarios
        .iter()
        .filter_map(|&name| SCENARIOS.iter().find(|s| s.name == name))
        .fold(Needs::NONE, |needs, s| needs.union(s.needs));
    let needs = Needs {
        features_via_extensions: options.stress.features_via_extensions,
        pipeline_statistics: options.bench.pipeline_stats,
        ..needs
    };
    let surface = if needs.presentation {
        SurfaceKind::choose(&entry, options.frames.headless)?
    } else {
        None
    };
    let app = AppInstance::create_with(&entry, options.api_version, app_name, surface)?;
    if memory_bench {
        scenarios::memory_bench::checkpoint("instance");
    }
    if app.debug_utils.is_none() {
        eprintln!("bb-testapp: VK_EXT_debug_utils is not available: validation messages cannot be counted");
    }
    let cx = Context::new(&app, options.device_index, needs)?;
    if memory_bench {
        scenarios::memory_bench::checkpoint("device");
        scenarios::memory_bench::use_instance(&app.instance, options.device_index)?;
    }
    eprintln!(
        "bb-testapp: device {}: {}",
        options.device_index, cx.device_name
    );

    let mut summary = RunSummary { skipped: false };
    for &name in &options.scenarios {
        let scenario = SCENARIOS
            .iter()
            .find(|s| s.name == name)
            .expect("validated by parse_args");
        let outcome = match (scenario.run)(&cx, options) {
            Ok(outcome) => outcome,
            Err(e) => {
                let e = e.context(format!("scenario {name}"));
                teardown_after_error(cx, app, &e);
                return Err(e);
            }
        };
        cx.destroy_owned();
        match outcome {
            Outcome::Checksum(sum) => println!("scenario {name} checksum {sum:016x}"),
            Outcome::Skipped(reason) => {
                println!("scenario {name} skipped {reason}");
                summary.skipped = true;
            }
        }
    }

    cx.destroy();
    app.destroy();
    Ok(summary)
}

/// After a failed scenario, destroys everything as the normal path does (a device loss must not keep an app
/// from cleaning up), first waiting for whatever was submitted. Not after a timed-out wait: its GPU work may
/// still be running, and destroying what it uses would be invalid; process exit frees it instead.
fn teardown_after_error(cx: Context, app: AppInstance, error: &anyhow::Error) {
    if vk_result_of(error) == Some(vk::Result::TIMEOUT) {
        eprintln!("bb-testapp: GPU work may still be running: leaving the objects to process exit");
        return;
    }
    // SAFETY: the app's own device; no other thread uses it any more.
    if let Err(r) = unsafe { cx.device.device_wait_idle() } {
        eprintln!(
            "bb-testapp: vkDeviceWaitIdle after the error: {r:?}; destroying the objects anyway"
        );
    }
    cx.destroy_owned();
    cx.destroy();
    app.destroy();
    eprintln!("bb-testapp: objects destroyed after the error");
}

// ---- instance and debug messenger ----

/// Messages received by every messenger this process created (all instances share the count).
static DEBUG_MESSAGES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "system" fn on_debug_message(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    _user_data: *mut c_void,
) -> vk::Bool32 {
    // SAFETY: the loader passes valid callback data for the duration of the call.
    let (id, message) = match unsafe { data.as_ref() } {
        Some(data) => unsafe {
            (
                data.message_id_name_as_c_str()
                    .map(CStr::to_string_lossy)
                    .unwrap_or_default(),
                data.message_as_c_str()
                    .map(CStr::to_string_lossy)
                    .unwrap_or_default(),
            )
        },
        None => Default::default(),
    };
    // writeln! rather than eprintln!: a panic must not unwind out of an extern "system" callback.
    let mut stderr = std::io::stderr();
    if is_env_var_note(severity, types, &id, &message) {
        let _ = writeln!(stderr, "bb-testapp: loader note (not counted): {message}");
    } else if is_debug_utils_note(&id, &message) {
        let _ = writeln!(stderr, "bb-testapp: validation note (not counted): {id}");
    } else {
        DEBUG_MESSAGES.fetch_add(1, Ordering::SeqCst);
        let _ = writeln!(
            stderr,
            "bb-testapp: debug-utils message: [{severity:?}] [{types:?}] {id}: {message}"
        );
    }
    vk::FALSE
}

/// The loader warns (1.3.239: `env var 'VK_INSTANCE_LAYERS' defined and adding layers ...`, `Layer ... forced
/// enabled due to env var ...`) whenever an environment variable selects layers or drivers, which is exactly
/// how the tests enable layers. Those warnings only echo the test setup: they are shown but not counted.
fn is_env_var_note(
    severity: vk::DebugUtilsMessageSeverityFlagsEXT,
    types: vk::DebugUtilsMessageTypeFlagsEXT,
    id: &str,
    message: &str,
) -> bool {
    severity == vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
        && types == vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
        && id == "Loader Message"
        && message.contains("env var '")
}

/// Best practices warns (`...-specialuse-extension-debugging`) that the app enables VK_EXT_debug_utils, a
/// debugging extension: the app does so on purpose, on every instance, to name its objects and count
/// these messages. Shown but not counted.
fn is_debug_utils_note(id: &str, message: &str) -> bool {
    id == "UNASSIGNED-BestPractices-vkCreateInstance-specialuse-extension-debugging"
        && message.contains("VK_EXT_debug_utils")
}

fn messenger_info() -> vk::DebugUtilsMessengerCreateInfoEXT<'static> {
    vk::DebugUtilsMessengerCreateInfoEXT::default()
        .message_severity(
            vk::DebugUtilsMessageSeverityFlagsEXT::WARNING
                | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
        )
        .message_type(
            vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
        )
        .pfn_user_callback(Some(on_debug_message))
}

/// `--enable-layer-settings`.
static ENABLE_LAYER_SETTINGS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// `--layer-setting`s, for every instance the app creates.
static LAYER_SETTINGS: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());

/// A setting's values as `VkLayerSettingEXT` points at them.
enum SettingValues {
    /// The strings, kept alive for the pointers to them.
    Text(
        #[allow(dead_code)] Vec<std::ffi::CString>,
        Vec<*const std::ffi::c_char>,
    ),
    Bool(vk::Bool32),
    U32(u32),
    I32(i32),
}

/// The `--layer-setting`s as `VkLayerSettingEXT` values: `KEY=TEXT`, `KEY:bool=true`, `KEY:u32=N`, `KEY:i32=N`.
fn layer_setting_values() -> Result<Vec<(std::ffi::CString, vk::LayerSettingTypeEXT, SettingValues)>>
{
    let mut out = Vec::new();
    for (key, value) in LAYER_SETTINGS.lock().expect("settings").iter() {
        let (name, ty) = key.split_once(':').unwrap_or((key, "string"));
        let (ty, values) = match ty {
            "string" => {
                let texts = vec![std::ffi::CString::new(value.as_str())?];
                let ptrs = texts.iter().map(|t| t.as_ptr()).collect();
                (
                    vk::LayerSettingTypeEXT::STRING,
                    SettingValues::Text(texts, ptrs),
                )
            }
            "bool" => (
                vk::LayerSettingTypeEXT::BOOL32,
                SettingValues::Bool((value == "true").into()),
            ),
            "u32" => (
                vk::LayerSettingTypeEXT::UINT32,
                SettingValues::U32(value.parse()?),
            ),
            "i32" => (
                vk::LayerSettingTypeEXT::INT32,
                SettingValues::I32(value.parse()?),
            ),
            other => bail!("--layer-setting: type `{other}` is not string, bool, u32 or i32"),
        };
        out.push((std::ffi::CString::new(name)?, ty, values));
    }
    Ok(out)
}

pub struct DebugUtils {
    loader: ash::ext::debug_utils::Instance,
    messenger: vk::DebugUtilsMessengerEXT,
}

/// A Vulkan instance with, when VK_EXT_debug_utils exists, a messenger counting warnings and errors.
pub struct AppInstance {
    pub entry: ash::Entry,
    pub instance: ash::Instance,
    pub debug_utils: Option<DebugUtils>,
    /// The version the instance was created for (`--api`).
    pub api_version: u32,
    /// The surface extension enabled with VK_KHR_surface, for a run that presents.
    pub surface: Option<SurfaceKind>,
}

/// How a presenting scenario gets its surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurfaceKind {
    /// VK_EXT_headless_surface: no window system (a GPU machine without a display).
    Headless,
    /// VK_KHR_xcb_surface: a window on the X server of `DISPLAY` (Xvfb in the tests).
    Xcb,
}

impl SurfaceKind {
    /// The surface a presenting run uses: headless where the instance offers it and there is no `DISPLAY`
    /// (or `headless` asks for it), else an X window; `None` (the scenario then skips) when neither can be.
    pub fn choose(entry: &ash::Entry, headless: bool) -> Result<Option<SurfaceKind>> {
        // SAFETY: a plain query.
        let extensions = unsafe { entry.enumerate_instance_extension_properties(None) }
            .vk_context("vkEnumerateInstanceExtensionProperties")?;
        let has = |name: &CStr| {
            extensions
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(name))
        };
        if !has(ash::khr::surface::NAME) {
            return Ok(None);
        }
        let display = std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty());
        let headless_ok = has(ash::ext::headless_surface::NAME);
        let xcb_ok = has(ash::khr::xcb_surface::NAME) && display;
        Ok(match (headless || !display, headless_ok, xcb_ok) {
            (true, true, _) => Some(SurfaceKind::Headless),
            (_, _, true) => Some(SurfaceKind::Xcb),
            (false, true, false) => Some(SurfaceKind::Headless),
            _ => None,
        })
    }

    fn extension(self) -> &'static CStr {
        match self {
            SurfaceKind::Headless => ash::ext::headless_surface::NAME,
            SurfaceKind::Xcb => ash::khr::xcb_surface::NAME,
        }
    }
}

impl AppInstance {
    pub fn create(entry: &ash::Entry, api_version: u32) -> Result<AppInstance> {
        Self::create_with(entry, api_version, c"bb-testapp", None)
    }

    /// [`AppInstance::create`] with `name` as `pApplicationName`.
    pub fn create_named(entry: &ash::Entry, api_version: u32, name: &CStr) -> Result<AppInstance> {
        Self::create_with(entry, api_version, name, None)
    }

    /// An instance named `name` that also enables VK_KHR_surface and `surface`'s extension, when given.
    pub fn create_with(
        entry: &ash::Entry,
        api_version: u32,
        name: &CStr,
        surface: Option<SurfaceKind>,
    ) -> Result<AppInstance> {
        Self::create_with_layers(entry, api_version, name, surface, &[])
    }

    /// [`AppInstance::create_with`], enabling `layers` too (through `ppEnabledLayerNames`).
    pub fn create_with_layers(
        entry: &ash::Entry,
        api_version: u32,
        name: &CStr,
        surface: Option<SurfaceKind>,
        layers: &[&CStr],
    ) -> Result<AppInstance> {
        // SAFETY (whole function): plain Vulkan calls with create infos that outlive them.
        let extensions = unsafe { entry.enumerate_instance_extension_properties(None) }
            .vk_context("vkEnumerateInstanceExtensionProperties")?;
        let has_debug_utils = extensions
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::debug_utils::NAME));

        let app_info = vk::ApplicationInfo::default()
            .application_name(name)
            .application_version(1)
            .engine_name(c"none")
            .api_version(api_version);
        let mut enabled = Vec::new();
        if has_debug_utils {
            enabled.push(ash::ext::debug_utils::NAME.as_ptr());
        }
        // Blackbox reads the settings struct whether or not the extension is enabled.
        let setting_values = layer_setting_values()?;
        // Offered by the driver or an implicit layer (listed without a layer name), or by Blackbox's
        // manifest when it is enabled explicitly (listed under its name).
        let blackbox_extensions =
            unsafe { entry.enumerate_instance_extension_properties(Some(c"VK_LAYER_blackbox")) }
                .unwrap_or_default();
        let has_layer_settings = extensions
            .iter()
            .chain(&blackbox_extensions)
            .any(|e| e.extension_name_as_c_str() == Ok(ash::ext::layer_settings::NAME));
        if ENABLE_LAYER_SETTINGS.load(Ordering::Relaxed) {
            eprintln!("bb-testapp: VK_EXT_layer_settings offered: {has_layer_settings}");
            enabled.push(ash::ext::layer_settings::NAME.as_ptr());
        }
        let settings: Vec<vk::LayerSettingEXT> = setting_values
            .iter()
            .map(|(name, ty, values)| {
                let (count, ptr): (u32, *const c_void) = match values {
                    SettingValues::Text(_, ptrs) => (ptrs.len() as u32, ptrs.as_ptr().cast()),
                    SettingValues::Bool(b) => (1, (b as *const vk::Bool32).cast()),
                    SettingValues::U32(v) => (1, (v as *const u32).cast()),
                    SettingValues::I32(v) => (1, (v as *const i32).cast()),
                };
                vk::LayerSettingEXT {
                    p_layer_name: c"VK_LAYER_blackbox".as_ptr(),
                    p_setting_name: name.as_ptr(),
                    ty: *ty,
                    value_count: count,
                    p_values: ptr,
                    ..Default::default()
                }
            })
            .collect();
        let mut settings_info = vk::LayerSettingsCreateInfoEXT::default().settings(&settings);
        if let Some(kind) = surface {
            enabled.push(ash::khr::surface::NAME.as_ptr());
            enabled.push(kind.extension().as_ptr());
        }
        // Chained into vkCreateInstance too, so that messages from instance creation and destruction count.
        let mut creation_messenger = messenger_info();
        let layer_names: Vec<*const std::ffi::c_char> = layers.iter().map(|l| l.as_ptr()).collect();
        let mut info = vk::InstanceCreateInfo::default()
            .application_info(&app_info)
            .enabled_layer_names(&layer_names)
            .enabled_extension_names(&enabled);
        if has_debug_utils {
            info = info.push_next(&mut creation_messenger);
        }
        if !settings.is_empty() {
            info = info.push_next(&mut settings_info);
        }
        let instance =
            unsafe { entry.create_instance(&info, None) }.vk_context("vkCreateInstance")?;

        let debug_utils = if has_debug_utils {
            let loader = ash::ext::debug_utils::Instance::new(entry, &instance);
            let messenger = unsafe { loader.create_debug_utils_messenger(&messenger_info(), None) }
                .vk_context("vkCreateDebugUtilsMessengerEXT")?;
            Some(DebugUtils { loader, messenger })
        } else {
            None
        };
        Ok(AppInstance {
            entry: entry.clone(),
            instance,
            debug_utils,
            api_version,
            surface,
        })
    }

    /// Destroys the messenger and the instance; every device created on it must be destroyed already.
    pub fn destroy(self) {
        // SAFETY: no child objects remain.
        unsafe {
            if let Some(debug_utils) = &self.debug_utils {
                debug_utils
                    .loader
                    .destroy_debug_utils_messenger(debug_utils.messenger, None);
            }
            self.instance.destroy_instance(None);
        }
    }
}
