//! Compiles the layer's own shader, the flash pass (`src/frames/flash.comp`), to SPIR-V 1.0 with
//! glslangValidator; `src/frames/flash.rs` embeds it with `include_bytes!`. `shaders/glslang_build.rs`
//! (shared with the test app's build) runs the compiler and drops the `BuiltIn WorkgroupSize` decoration
//! that the validation layer's best practices warn about on Vulkan 1.3 devices.

use std::path::PathBuf;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR")).join("flash.comp.spv");
    let src_dir = manifest_dir.join("src/frames");
    println!(
        "cargo:rerun-if-changed={}",
        src_dir.join("flash.comp").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir.join("../shaders/glslang_build.rs").display()
    );
    compile(&src_dir, "flash.comp", &["--target-env", "vulkan1.0"], &out);
}

include!("../shaders/glslang_build.rs");
