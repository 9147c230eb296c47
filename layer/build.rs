//! Compiles the layer's own shader, the flash pass (`src/frames/flash.comp`), to SPIR-V 1.0 with
//! glslangValidator; `src/frames/flash.rs` embeds it with `include_bytes!`.
//!
//! glslang decorates the constant `gl_WorkGroupSize` `BuiltIn WorkgroupSize` even when the shader never
//! reads it, and the validation layer's best practices warn about that decoration on Vulkan 1.3 devices: the
//! build drops it from the plain `OpConstantComposite` it marks (the `LocalSize` execution mode, which says
//! the same, stays), as the test app's build does for its shaders.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("flash.comp.spv");
    let src = manifest_dir.join("src/frames/flash.comp");
    println!("cargo:rerun-if-changed={}", src.display());
    let output = match Command::new("glslangValidator")
        .args(["-V", "--target-env", "vulkan1.0"])
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .output()
    {
        Ok(output) => output,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("glslangValidator not found: run scripts/setup.sh (installs glslang-tools)")
        }
        Err(e) => panic!("failed to run glslangValidator: {e}"),
    };
    if !output.status.success() {
        panic!(
            "glslangValidator failed on {}:\n{}{}",
            src.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let bytes = std::fs::read(&out).expect("read compiled SPIR-V");
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let stripped = strip_workgroup_size_decoration(&words);
    let bytes: Vec<u8> = stripped.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(&out, bytes).expect("write SPIR-V");
}

const OP_DECORATE: u32 = 71;
const OP_CONSTANT_COMPOSITE: u32 = 44;
const DECORATION_BUILT_IN: u32 = 11;
const BUILT_IN_WORKGROUP_SIZE: u32 = 25;

/// `words` without `OpDecorate %c BuiltIn WorkgroupSize` where `%c` is an `OpConstantComposite`.
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
    for r in instructions() {
        let w = &words[r.clone()];
        let drop = w.len() == 4
            && w[0] & 0xffff == OP_DECORATE
            && w[2] == DECORATION_BUILT_IN
            && w[3] == BUILT_IN_WORKGROUP_SIZE
            && constants.contains(&w[1]);
        if !drop {
            out.extend_from_slice(w);
        }
    }
    out
}
