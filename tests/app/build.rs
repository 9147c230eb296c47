//! Compiles the test app's GLSL shaders (`shaders/testapp/`) to SPIR-V with glslangValidator; `src/shaders.rs`
//! embeds the results with `include_bytes!`. Compiling at build time keeps the SPIR-V in sync with its source
//! and keeps binaries out of the repository.
//!
//! glslangValidator runs in `shaders/testapp/` on the bare file name, so that modules built with debug info
//! (`-g`, `-gVS`) name their source `nan.comp`, not a path that depends on the checkout.
//!
//! glslang (Debian 12's, for SPIR-V below 1.6) decorates the constant `gl_WorkGroupSize` of every compute
//! shader `BuiltIn WorkgroupSize`, which SPIR-V 1.6 deprecates and the validation layer's best practices
//! report on a Vulkan 1.3 device; the app is to be clean under best practices, so the build drops that
//! decoration where it marks a plain `OpConstantComposite` (its value is the `LocalSize` execution mode's,
//! which stays: nothing changes for the driver).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Debug info: none (the original scenarios' shaders, left as they were), OpLine and OpSource with the
/// text, or NonSemantic.Shader.DebugInfo.100.
const NONE: &[&str] = &[];
const G: &[&str] = &["-g"];
const GVS: &[&str] = &["-gVS"];
const G_INT64: &[&str] = &["-g", "-DBB_PRINTF_INT64"];
const G_CONTROL: &[&str] = &["-g", "-DBB_ITERATIONS_FROM_BUFFER"];

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
];

/// Files the shaders `#include` (relative to shaders/testapp): cargo has no other way to know them.
const INCLUDES: &[&str] = &["shader_bench.glsl", "../blackbox.glsl"];

const TOOL: &str = "glslangValidator";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src_dir = manifest_dir.join("../../shaders/testapp");

    for include in INCLUDES {
        println!("cargo:rerun-if-changed={}", src_dir.join(include).display());
    }
    for (src, out, args) in SHADERS {
        println!("cargo:rerun-if-changed={}", src_dir.join(src).display());
        compile(&src_dir, src, args, &out_dir.join(out));
    }
}

fn compile(src_dir: &Path, src: &str, args: &[&str], out: &Path) {
    let result = Command::new(TOOL)
        .current_dir(src_dir)
        .arg("-V")
        .args(if args.contains(&"--target-env") {
            &[][..]
        } else {
            &["--target-env", "vulkan1.2"][..]
        })
        .args(args)
        .arg(src)
        .arg("-o")
        .arg(out)
        .output();
    let output = match result {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("glslangValidator not found: run scripts/setup.sh (installs glslang-tools)")
        }
        Err(e) => panic!("failed to run {TOOL}: {e}"),
    };
    if !output.status.success() {
        // glslangValidator reports compile errors on stdout.
        panic!(
            "{TOOL} failed on {}:\n{}{}",
            src_dir.join(src).display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let bytes = std::fs::read(out).expect("read compiled SPIR-V");
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let stripped = strip_workgroup_size_decoration(&words);
    if stripped.len() != words.len() {
        let bytes: Vec<u8> = stripped.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(out, bytes).expect("write SPIR-V");
    }
}

const OP_DECORATE: u32 = 71;
const OP_CONSTANT_COMPOSITE: u32 = 44;
const DECORATION_BUILT_IN: u32 = 11;
const BUILT_IN_WORKGROUP_SIZE: u32 = 25;

/// `words` (a little-endian SPIR-V module) without `OpDecorate %c BuiltIn WorkgroupSize` where `%c` is
/// an `OpConstantComposite` (a spec-constant composite keeps it: there it means something).
fn strip_workgroup_size_decoration(words: &[u32]) -> Vec<u32> {
    const HEADER: usize = 5;
    let instructions = || {
        let mut at = HEADER;
        std::iter::from_fn(move || {
            let count = (*words.get(at)? >> 16) as usize;
            if count == 0 || at + count > words.len() {
                return None;
            }
            let range = at..at + count;
            at += count;
            Some(range)
        })
    };
    let constants: Vec<u32> = instructions()
        .filter(|r| words[r.start] & 0xffff == OP_CONSTANT_COMPOSITE && r.len() > 2)
        .map(|r| words[r.start + 2])
        .collect();
    let mut out = words[..HEADER.min(words.len())].to_vec();
    let mut dropped = 0;
    for r in instructions() {
        let w = &words[r.clone()];
        let drop = w.len() == 4
            && w[0] & 0xffff == OP_DECORATE
            && w[2] == DECORATION_BUILT_IN
            && w[3] == BUILT_IN_WORKGROUP_SIZE
            && constants.contains(&w[1]);
        if drop {
            dropped += w.len();
        } else {
            out.extend_from_slice(w);
        }
    }
    if out.len() + dropped != words.len() {
        // Not a module this walk understands: leave it alone.
        return words.to_vec();
    }
    out
}
