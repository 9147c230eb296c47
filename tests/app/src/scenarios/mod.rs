//! The scenarios, one module each (or a small group), and the table the run loop reads.
//!
//! A scenario creates what it needs through the `Context` helpers, submits, waits for its own work,
//! reads the results back into host-visible memory and returns their checksum. The run loop destroys
//! what the helpers created.

pub mod bad_address;
pub mod bypass_loader;
pub mod canary;
pub mod compute;
pub mod debug_labels;
pub mod debug_printf;
pub mod draw;
pub mod frame_bench;
pub mod frames;
pub mod hang;
pub mod hostile;
pub mod instances;
pub mod loops;
pub mod memory_bench;
pub mod nan;
pub mod passes;
pub mod pipeline_bench;
pub mod pipeline_compile;
pub mod program;
pub mod record_bench;
pub mod robustness;
pub mod secondary;
pub mod shader_bench;
pub mod spirv_run;
pub mod threads;
pub mod timeline;
pub mod two_queues;

use anyhow::Result;

use crate::context::{Context, Needs};
use crate::Options;

pub enum Outcome {
    Checksum(u64),
    /// A feature or extension the scenario needs is missing (the app then exits with code 4).
    Skipped(String),
}

pub struct Scenario {
    pub name: &'static str,
    /// Part of `all` (the benchmarks are not: they are slow and measure time, not results; nor are the fault
    /// and shader-error scenarios).
    pub in_all: bool,
    /// What the device gets enabled (where supported) when this scenario is on the command line.
    pub needs: Needs,
    pub run: fn(&Context, &Options) -> Result<Outcome>,
}

/// debugPrintf (and `-gVS` debug info) modules are valid only with VK_KHR_shader_non_semantic_info.
const NON_SEMANTIC: Needs = Needs {
    non_semantic_info: true,
    ..Needs::NONE
};

pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "compute",
        in_all: true,
        needs: Needs::NONE,
        run: compute::run,
    },
    Scenario {
        name: "draw-renderpass",
        in_all: true,
        needs: Needs::NONE,
        run: draw::run_render_pass,
    },
    Scenario {
        name: "draw-dynamic",
        in_all: true,
        needs: Needs::NONE,
        run: draw::run_dynamic,
    },
    Scenario {
        name: "secondary",
        in_all: true,
        needs: Needs::NONE,
        run: secondary::run,
    },
    Scenario {
        name: "threads",
        in_all: true,
        needs: Needs::NONE,
        run: threads::run,
    },
    Scenario {
        name: "timeline",
        in_all: true,
        needs: Needs::NONE,
        run: timeline::run,
    },
    Scenario {
        name: "two-queues",
        in_all: true,
        needs: Needs::NONE,
        run: two_queues::run,
    },
    Scenario {
        name: "instances",
        in_all: true,
        needs: Needs::NONE,
        run: instances::run,
    },
    Scenario {
        name: "debug-labels",
        in_all: true,
        needs: Needs::NONE,
        run: debug_labels::run,
    },
    Scenario {
        name: "record-bench",
        in_all: false,
        needs: Needs::NONE,
        run: record_bench::run,
    },
    Scenario {
        name: "pipeline-bench",
        in_all: false,
        needs: Needs::NONE,
        run: pipeline_bench::run,
    },
    Scenario {
        name: "frame-bench",
        in_all: false,
        needs: Needs::NONE,
        run: frame_bench::run,
    },
    Scenario {
        name: "shader-bench",
        in_all: false,
        needs: NON_SEMANTIC,
        run: shader_bench::run,
    },
    Scenario {
        name: "memory-bench",
        in_all: false,
        needs: Needs::NONE,
        run: memory_bench::run,
    },
    Scenario {
        name: "hang",
        in_all: false,
        needs: Needs::NONE,
        run: hang::run,
    },
    Scenario {
        name: "hang-draw",
        in_all: false,
        needs: Needs::NONE,
        run: hang::run_draw,
    },
    Scenario {
        name: "bad-address",
        in_all: false,
        needs: Needs {
            buffer_device_address: true,
            ..Needs::NONE
        },
        run: bad_address::run,
    },
    Scenario {
        name: "hostile-strings",
        in_all: false,
        needs: NON_SEMANTIC,
        run: hostile::run_hostile_strings,
    },
    Scenario {
        name: "crash-in-malloc",
        in_all: false,
        needs: Needs::NONE,
        run: hostile::run_crash_in_malloc,
    },
    Scenario {
        name: "crash-read-only",
        in_all: false,
        needs: Needs::NONE,
        run: hostile::run_crash_read_only,
    },
    Scenario {
        name: "crash-in-blackbox-lock",
        in_all: false,
        needs: Needs::NONE,
        run: hostile::run_crash_in_blackbox_lock,
    },
    Scenario {
        name: "nan-compute",
        in_all: false,
        needs: NON_SEMANTIC,
        run: nan::run_compute,
    },
    Scenario {
        name: "nan-fragment",
        in_all: false,
        needs: NON_SEMANTIC,
        run: nan::run_fragment,
    },
    Scenario {
        name: "nan-poll",
        in_all: false,
        needs: Needs::NONE,
        run: nan::run_poll,
    },
    Scenario {
        name: "nan-sleep",
        in_all: false,
        needs: Needs::NONE,
        run: nan::run_sleep,
    },
    Scenario {
        name: "nan-signal-array",
        in_all: false,
        needs: Needs::NONE,
        run: nan::run_signal_array,
    },
    Scenario {
        name: "passes",
        in_all: false,
        needs: Needs {
            buffer_device_address: true,
            ..Needs::NONE
        },
        run: passes::run,
    },
    Scenario {
        name: "loop-one",
        in_all: false,
        needs: Needs::NONE,
        run: loops::run_loop_one,
    },
    Scenario {
        name: "loop-forever",
        in_all: false,
        needs: Needs::NONE,
        run: loops::run_loop_forever,
    },
    Scenario {
        name: "int-div",
        in_all: false,
        needs: Needs::NONE,
        run: loops::run_int_div,
    },
    Scenario {
        name: "frames",
        in_all: false,
        needs: Needs {
            presentation: true,
            ..Needs::NONE
        },
        run: frames::run,
    },
    Scenario {
        name: "validation-canary",
        in_all: false,
        needs: Needs::NONE,
        run: canary::run,
    },
    Scenario {
        name: "nan-fp16-fp64",
        in_all: false,
        needs: Needs {
            shader_float16: true,
            shader_float64: true,
            ..Needs::NONE
        },
        run: nan::run_fp16_fp64,
    },
    Scenario {
        name: "assert-compute",
        in_all: false,
        needs: NON_SEMANTIC,
        run: debug_printf::run_assert_compute,
    },
    Scenario {
        name: "assert-fragment",
        in_all: false,
        needs: NON_SEMANTIC,
        run: debug_printf::run_assert_fragment,
    },
    Scenario {
        name: "printf",
        in_all: false,
        needs: Needs {
            shader_int64: true,
            non_semantic_info: true,
            ..Needs::NONE
        },
        run: debug_printf::run_printf,
    },
    Scenario {
        name: "stress",
        in_all: false,
        needs: NON_SEMANTIC,
        run: robustness::run_stress,
    },
    Scenario {
        name: "flood",
        in_all: false,
        needs: NON_SEMANTIC,
        run: robustness::run_flood,
    },
    Scenario {
        name: "malformed-spirv",
        in_all: false,
        needs: Needs::NONE,
        run: robustness::run_malformed_spirv,
    },
    Scenario {
        name: "destroy-early",
        in_all: false,
        needs: Needs::NONE,
        run: robustness::run_destroy_early,
    },
    Scenario {
        name: "fork-child",
        in_all: false,
        needs: Needs::NONE,
        run: robustness::run_fork_child,
    },
    Scenario {
        name: "spirv-run",
        in_all: false,
        needs: Needs {
            shader_float16: true,
            shader_float64: true,
            shader_int64: true,
            non_semantic_info: true,
            arbitrary_shaders: true,
            ..Needs::NONE
        },
        run: spirv_run::run,
    },
    Scenario {
        name: "pipeline-compile",
        in_all: false,
        needs: Needs {
            buffer_device_address: true,
            shader_float16: true,
            shader_float64: true,
            shader_int64: true,
            non_semantic_info: true,
            arbitrary_shaders: true,
            ..Needs::NONE
        },
        run: pipeline_compile::run,
    },
];
