//! Compiles the test app's GLSL shaders (`shaders/testapp/`) to SPIR-V with glslangValidator; `src/shaders.rs`
//! embeds the results with `include_bytes!`. Compiling at build time keeps the SPIR-V in sync with its source
//! and keeps binaries out of the repository.
//!
//! glslangValidator runs in `shaders/testapp/` on the bare file name, so that modules built with debug info
//! (`-g`, `-gVS`) name their source `nan.comp`, not a path that depends on the checkout.
//!
//! The app is to be clean under best practices: `shaders/glslang_build.rs` (shared with the layer's build)
//! drops the deprecated `BuiltIn WorkgroupSize` decoration glslang puts on `gl_WorkGroupSize`.

use std::path::PathBuf;

/// Debug info: none (the original scenarios' shaders, left as they were), OpLine and OpSource with the
/// text, or NonSemantic.Shader.DebugInfo.100.
const NONE: &[&str] = &[];
const G: &[&str] = &["-g"];
const GVS: &[&str] = &["-gVS"];
const G_INT64: &[&str] = &["-g", "-DBB_PRINTF_INT64"];
const G_CONTROL: &[&str] = &["-g", "-DBB_ITERATIONS_FROM_BUFFER"];
const G_STOPPABLE: &[&str] = &["-g", "-DBB_STOPPABLE"];
const G_CONDITION: &[&str] = &["-g", "-DBB_BENCH_CONDITION_ONLY"];

/// For apps of Vulkan 1.0 and 1.1 (`--api`): SPIR-V 1.0.
const G_VK10: &[&str] = &["-g", "--target-env", "vulkan1.0"];

/// (source file in shaders/testapp, output name in OUT_DIR, extra glslangValidator arguments; a
/// `--target-env` among them replaces the default vulkan1.2)
const SHADERS: &[(&str, &str, &[&str])] = &[
    ("compute.comp", "compute.comp.spv", NONE),
    ("draw.vert", "draw.vert.spv", NONE),
    ("draw.frag", "draw.frag.spv", NONE),
    ("fullscreen.vert", "fullscreen.vert.spv", G),
    ("hang.comp", "hang.comp.spv", G),
    ("hang.comp", "hang_stoppable.comp.spv", G_STOPPABLE),
    ("hang.comp", "hang_control.comp.spv", G_CONTROL),
    ("hang.frag", "hang.frag.spv", G),
    ("bad_address.comp", "bad_address.comp.spv", G),
    ("loop_one.comp", "loop_one.comp.spv", G),
    ("passes.comp", "passes.comp.spv", G),
    ("int_div.comp", "int_div.comp.spv", G),
    ("nan.comp", "nan.comp.spv", G),
    ("nan.comp", "nan.comp.gvs.spv", GVS),
    ("nan.comp", "nan.comp.vk10.spv", G_VK10),
    ("nan.frag", "nan.frag.spv", G),
    ("nan.frag", "nan.frag.gvs.spv", GVS),
    ("frames.frag", "frames.frag.spv", G),
    ("nan_fp16_fp64.comp", "nan_fp16_fp64.comp.spv", G),
    ("assert.comp", "assert.comp.spv", G),
    ("assert.comp", "assert.comp.gvs.spv", GVS),
    ("assert.frag", "assert.frag.spv", G),
    ("assert.frag", "assert.frag.gvs.spv", GVS),
    ("printf.comp", "printf.comp.spv", G),
    ("printf.comp", "printf_int64.comp.spv", G_INT64),
    ("hostile_printf.comp", "hostile_printf.comp.spv", G),
    ("flood.comp", "flood.comp.spv", G),
    ("shader_bench.comp", "shader_bench.comp.spv", G),
    ("shader_bench.frag", "shader_bench.frag.spv", G),
    (
        "shader_bench.comp",
        "shader_bench_condition.comp.spv",
        G_CONDITION,
    ),
    (
        "shader_bench.frag",
        "shader_bench_condition.frag.spv",
        G_CONDITION,
    ),
];

/// Files the shaders `#include` (relative to shaders/testapp): cargo has no other way to know them.
const INCLUDES: &[&str] = &["shader_bench.glsl", "../blackbox.glsl"];

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src_dir = manifest_dir.join("../../shaders/testapp");

    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir
            .join("../../shaders/glslang_build.rs")
            .display()
    );
    for include in INCLUDES {
        println!("cargo:rerun-if-changed={}", src_dir.join(include).display());
    }
    for (src, out, args) in SHADERS {
        println!("cargo:rerun-if-changed={}", src_dir.join(src).display());
        let mut all: Vec<&str> = args.to_vec();
        if !args.contains(&"--target-env") {
            all.extend(["--target-env", "vulkan1.2"]);
        }
        compile(&src_dir, src, &all, &out_dir.join(out));
    }
}

include!("../../shaders/glslang_build.rs");
