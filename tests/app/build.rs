//! Compiles the test app's GLSL shaders (`shaders/testapp/`) to SPIR-V with glslangValidator; `src/shaders.rs`
//! embeds the results with `include_bytes!`. Compiling at build time keeps the SPIR-V in sync with its source
//! and keeps binaries out of the repository.

use std::path::{Path, PathBuf};
use std::process::Command;

/// (source file in shaders/testapp, output name in OUT_DIR)
const SHADERS: &[(&str, &str)] = &[
    ("compute.comp", "compute.comp.spv"),
    ("draw.vert", "draw.vert.spv"),
    ("draw.frag", "draw.frag.spv"),
];

const TOOL: &str = "glslangValidator";

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let src_dir = manifest_dir.join("../../shaders/testapp");

    for (src, out) in SHADERS {
        let src_path = src_dir.join(src);
        println!("cargo:rerun-if-changed={}", src_path.display());
        compile(&src_path, &out_dir.join(out));
    }
}

fn compile(src: &Path, out: &Path) {
    let result = Command::new(TOOL)
        .args(["-V", "--target-env", "vulkan1.2"])
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
            src.display(),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
