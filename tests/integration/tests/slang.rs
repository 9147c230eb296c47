//! Blackbox's Slang header (`shaders/blackbox.slang`, issue 14 part 3): a Slang compute shader compiled by the
//! pinned slangc (`.venv/bin/slangc`, scripts/setup.sh) runs through the layer, and its asserts and printf
//! come out as log lines with their values and source lines.

use blackbox_integration::*;
use std::process::Command;

#[test]
fn slang_asserts_and_printf_reach_the_log_with_their_lines() {
    let home = TempDir::new("slang");
    let shaders = workspace_root().join("shaders");
    let source = shaders.join("testapp/asserts.slang");
    let spv = home.path().join("asserts.slang.spv");
    // -g2: NonSemantic.Shader.DebugInfo.100 lines. -O0: slangtorch's wheel ships no glslang module, through
    // which slangc would run spirv-opt.
    let out = Command::new(workspace_root().join(".venv/bin/slangc"))
        .arg(&source)
        .args([
            "-target", "spirv", "-entry", "main", "-stage", "compute", "-g2", "-O0", "-I",
        ])
        .arg(&shaders)
        .arg("-o")
        .arg(&spv)
        .output()
        .expect(".venv/bin/slangc (scripts/setup.sh installs it)");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "slangc: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // No validation layer: Debian 12's (1.3.239) rejects slangc 2026's SPIR-V with or without Blackbox
    // (UNASSIGNED-CoreValidation-Shader-InconsistentSpirv). SPIRV-Tools 2025.5 validates Blackbox's
    // instrumented module instead, dumped by VK_BLACKBOX_DUMP_SHADERS.
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let dump = home.path().join("dump");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.args(["spirv-run", "--spirv"])
        .arg(&spv)
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
        .env("VK_BLACKBOX_DUMP_SHADERS", &dump)
        .env("VK_ADD_LAYER_PATH", &manifests)
        .env("VK_INSTANCE_LAYERS", "VK_LAYER_blackbox");
    let run = run(&mut cmd);
    run.assert_success();
    let instrumented: Vec<_> = std::fs::read_dir(&dump)
        .expect("the dump folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".instrumented.spv"))
        .collect();
    assert_eq!(instrumented.len(), 1, "{}", run.dump());
    let val = Command::new(workspace_root().join(".venv/bin/spirv-val"))
        .args(["--target-env", "vulkan1.3"])
        .arg(&instrumented[0])
        .output()
        .expect(".venv/bin/spirv-val");
    assert!(
        val.status.success(),
        "spirv-val: {}",
        String::from_utf8_lossy(&val.stderr)
    );
    let file = source.display().to_string();
    let header = shaders.join("blackbox.slang").display().to_string();
    let line = |needle: &str| -> String {
        run.stderr
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?}\n{}", run.dump()))
            .to_owned()
    };
    // Invocations from 25 on fail the first assert, from 50 on the second; which one's record comes first
    // depends on how the driver's threads run the workgroups, so the line shows one of them, with its value.
    let invocation_and_value = |text: &str, before_value: &str, after_value: &str| -> (u32, f64) {
        let invocation = text
            .split("invocation (")
            .nth(1)
            .and_then(|t| t.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no invocation in {text}"));
        let value = text
            .split(before_value)
            .nth(1)
            .and_then(|t| t.split(after_value).next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no value in {text}"));
        (invocation, value)
    };
    let first = line("assert 7 failed at ");
    // slangc writes the code a macro expands to at the macro's own line: the header's.
    assert!(
        first.starts_with(&format!("[blackbox] warn: assert 7 failed at {header}:")),
        "{first}"
    );
    let (invocation, value) = invocation_and_value(&first, "values ", ", invocation");
    assert!(
        invocation >= 25 && (value - f64::from(invocation) * 0.01).abs() < 1e-3,
        "{first}"
    );
    let second = line("assert 8 failed at ");
    assert!(
        second.starts_with(&format!("[blackbox] warn: assert 8 failed at {file}:12:")),
        "{second}"
    );
    let (invocation, value) = invocation_and_value(&second, "size ", " too big");
    assert!(
        invocation >= 50 && (value - f64::from(invocation) * 0.01).abs() < 1e-3,
        "{second}"
    );
    let printf = line("slang printf");
    assert!(
        printf.starts_with(&format!("[blackbox] info: printf at {file}:14:"))
            && printf.contains("slang printf at invocation 3"),
        "{printf}"
    );
}
