//! Links SPIRV-Tools' validator (the shared library `scripts/setup.sh` installs into `.venv/`), so the fuzz
//! target can check that every valid input comes out valid.
use std::path::PathBuf;

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let lib = std::env::var("BLACKBOX_SPIRV_TOOLS_LIB").map(PathBuf::from).unwrap_or_else(|_| {
        root.join(".venv/lib/python3.11/site-packages/cmeel.prefix/lib")
    });
    assert!(
        lib.join("libSPIRV-Tools-shared.so").exists(),
        "libSPIRV-Tools-shared.so not found in {}: run scripts/setup.sh or set BLACKBOX_SPIRV_TOOLS_LIB",
        lib.display()
    );
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=SPIRV-Tools-shared");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    println!("cargo:rerun-if-env-changed=BLACKBOX_SPIRV_TOOLS_LIB");
}
