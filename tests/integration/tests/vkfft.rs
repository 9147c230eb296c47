//! VkFFT (Debian 12's `libvkfft-dev` 1.2.26), a GPU FFT library that writes GLSL for each plan at run time
//! and compiles it with glslang: compute shaders nobody here wrote, of a shape no other test has (radix
//! 2-13 butterflies unrolled over dozens of registers, shared-memory transposes, the four-step algorithm,
//! double precision from tables, the four DCT types), with up to 192 dynamic array indices each.
//! `apps/vkfft_app.c` runs six transforms (see its cases), each checked against a DFT on the CPU, and
//! four DCTs, each checked by its round trip; the test builds it, runs it without
//! Blackbox (the reference), then through it at the defaults, NaN `outputs`, NaN `ops`, integer checks,
//! and everything on at once, with the validation layer below it. Required at each: the same results, bit
//! for bit, every validation id as often as in the reference, one start-up line, and no line from
//! Blackbox at all: the transforms of finite data make no NaN, Inf or integer fault.
//!
//! Integer checks once made llvmpipe compile the largest kernel (192 index checks) for 44.6 s instead of
//! 0.55 s: the watchdog took that dispatch for a hang and the run took 202 s. A hang report, or any
//! other Blackbox line, fails the test.

use blackbox_integration::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The `result <case> ...` lines of a run: each transform's checksum and errors.
fn results(run: &Run) -> Vec<String> {
    run.stdout_lines("result ")
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// Builds `apps/vkfft_app.c` into `dir`. VkFFT 1.2.26 writes `VkCommandBuffer commandBuffer = {};` three
/// times, C++ that C before C23 rejects (gcc 12): a copy of its header reads `= VK_NULL_HANDLE;` there.
/// Nothing else of VkFFT changes.
fn build_app(dir: &Path) -> PathBuf {
    let header = std::fs::read_to_string("/usr/include/vkFFT.h")
        .expect("/usr/include/vkFFT.h: run scripts/setup.sh (it installs libvkfft-dev)");
    let empty = "VkCommandBuffer commandBuffer = {};";
    assert_eq!(
        header.matches(empty).count(),
        3,
        "VkFFT's header is not the 1.2.26 this test was written for"
    );
    let include = dir.join("include");
    std::fs::create_dir_all(&include).expect("include dir");
    write_atomically(
        &include.join("vkFFT.h"),
        header.replace(empty, "VkCommandBuffer commandBuffer = VK_NULL_HANDLE;"),
    );
    let app = dir.join("vkfft_app");
    let mut gcc = Command::new("gcc");
    gcc.args(["-O1", "-w", "-I"])
        .arg(&include)
        .arg(workspace_root().join("tests/integration/apps/vkfft_app.c"))
        .arg("-o")
        .arg(&app)
        .args([
            "-lvulkan",
            "-lglslang",
            "-lMachineIndependent",
            "-lOSDependent",
            "-lGenericCodeGen",
            "-lOGLCompiler",
            "-lSPIRV",
            "-lglslang-default-resource-limits",
            "-lSPIRV-Tools-opt",
            "-lSPIRV-Tools",
            "-lstdc++",
            "-lm",
            "-lpthread",
        ]);
    run(&mut gcc).assert_success();
    app
}

#[test]
fn vkfft_transforms_are_bit_for_bit_the_same_and_blackbox_says_nothing() {
    let home = TempDir::new("vkfft");
    let app = build_app(home.path());
    let program = |blackbox: Option<&[(&str, &str)]>| {
        let mut cmd = vulkan_command(&app, home.path());
        // Mesa's shader cache of its own, not the user's (Mesa finds the home folder through the password
        // database, not HOME): a kernel compiled by an earlier run of the test would take no time.
        cmd.env("MESA_SHADER_CACHE_DIR", home.path().join("mesa-cache"));
        validation_alone_or_through_blackbox(&mut cmd, &home, blackbox);
        cmd
    };
    let reference = run(&mut program(None));
    reference.assert_success().assert_validation_on();
    let expected = results(&reference);
    // Six transforms, each within its precision's bound of the DFT, and four DCTs, each within it of the
    // input after its inverse (the app fails otherwise).
    assert_eq!(expected.len(), 10, "{}", reference.dump());
    let settings: &[Setting] = &[
        ("defaults", &[], false),
        ("NaN outputs", &[("VK_BLACKBOX_NAN", "outputs")], false),
        ("NaN ops", &[("VK_BLACKBOX_NAN", "ops")], false),
        ("integer checks", &[("VK_BLACKBOX_INT", "on")], false),
        ("everything", EVERYTHING, false),
    ];
    compare_settings(reference, settings, |_, vars| {
        let run = run(&mut program(Some(vars)));
        let mut problems = Vec::new();
        if results(&run) != expected {
            problems.push(format!(
                "results {:#?}, without Blackbox {expected:#?}",
                results(&run)
            ));
        }
        // Errors too (a hang report is one), and the start-up line's neighbours: nothing but it.
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.starts_with("[blackbox]") && !l.starts_with(START_UP_LINE))
            .collect();
        if !lines.is_empty() {
            problems.push(format!("Blackbox said {lines:#?}"));
        }
        (run, problems)
    });
}
