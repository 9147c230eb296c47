//! End-to-end tests of `blackbox instrument` and `blackbox shader-info` on a shader compiled here.
//!
//! They need `glslangValidator` (scripts/setup.sh installs it) and SPIRV-Tools 2025.5's `spirv-val` in the
//! checkout's `.venv/` (scripts/setup.sh too); without them they fail, saying which.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn blackbox() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blackbox"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path =
            std::env::temp_dir().join(format!("blackbox-shader-cli-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

const SHADER: &str = r#"#version 450
#extension GL_EXT_debug_printf : require

layout(local_size_x = 64) in;

layout(std430, binding = 0) buffer Data {
    vec4 v[];
};

void main() {
    uint i = gl_GlobalInvocationID.x;
    vec3 n = normalize(v[i].xyz);
    if (i == 12u) debugPrintfEXT("n = %v3f at %u", n, i);
    v[i] = vec4(n, 1.0);
}
"#;

/// `particles.comp` compiled with `glslangValidator -V -g` into `dir`; its path.
fn compile(dir: &Path) -> PathBuf {
    compile_with(dir, &["-g"], "particles.spv")
}

/// `particles.comp` compiled with `glslangValidator -V` and `flags` into `dir/name`; its path.
fn compile_with(dir: &Path, flags: &[&str], name: &str) -> PathBuf {
    let source = dir.join("particles.comp");
    std::fs::write(&source, SHADER).unwrap();
    let spv = dir.join(name);
    // Run in `dir` so that the module names the file `particles.comp`, as a build system would.
    let out = Command::new("glslangValidator")
        .current_dir(dir)
        .arg("-V")
        .args(flags)
        .args(["-o", name, "particles.comp"])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run glslangValidator ({e}): run scripts/setup.sh, which installs it")
        });
    assert!(
        out.status.success(),
        "glslangValidator failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    spv
}

fn spirv_val() -> PathBuf {
    venv_tool("spirv-val")
}

/// A SPIRV-Tools 2025.5 tool in the checkout's `.venv/bin`.
fn venv_tool(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join(".venv/bin")
        .join(name);
    assert!(
        path.is_file(),
        "{} is missing: run scripts/setup.sh, which installs SPIRV-Tools 2025.5 there",
        path.display()
    );
    path
}

fn instrument(args: &[&str], input: &Path, output: &Path) -> Output {
    blackbox()
        .arg("instrument")
        .arg(input)
        .arg("-o")
        .arg(output)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn instrument_writes_a_valid_module_and_lists_its_sites() {
    let dir = TempDir::new("instrument");
    let spv = compile(&dir.0);
    let out_spv = dir.0.join("out.spv");
    let out = instrument(&["--nan", "ops", "--sites"], &spv, &out_spv);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(out_spv.is_file());

    let val = Command::new(spirv_val())
        .args(["--target-env", "vulkan1.2"])
        .arg(&out_spv)
        .output()
        .unwrap();
    assert!(
        val.status.success(),
        "spirv-val rejects the instrumented module: {}{}",
        text(&val.stdout),
        text(&val.stderr)
    );

    // The summary line.
    let original = std::fs::metadata(&spv).unwrap().len();
    let instrumented = std::fs::metadata(&out_spv).unwrap().len();
    let summary = stderr.lines().next().unwrap_or_default();
    assert!(
        summary.starts_with(&format!(
            "blackbox: instrumented {} -> {}: shader ",
            spv.display(),
            out_spv.display()
        )),
        "{stderr}"
    );
    assert!(
        summary.contains("(0 asserts, 1 printf, 1 NaN ops, 1 NaN outputs)"),
        "{summary}"
    );
    assert!(
        summary.ends_with(&format!(", {original} -> {instrumented} bytes")),
        "{summary}"
    );

    // The site table: `site N:` from 0, kinds, source lines, function and entry point, values.
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    let normalize = lines
        .iter()
        .find(|l| l.contains(": nan-op normalize at "))
        .unwrap_or_else(|| panic!("no nan-op normalize site: {stdout}"));
    assert!(
        normalize.contains(
            ": nan-op normalize at particles.comp:12 in entry point main (comp); values "
        ) && normalize.contains("f32x3"),
        "{normalize}"
    );
    let printf = lines
        .iter()
        .find(|l| l.contains(": printf \"n = %v3f at %u\" at "))
        .unwrap_or_else(|| panic!("no printf site: {stdout}"));
    assert!(printf.contains(" at particles.comp:13 "), "{printf}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(": nan-output storage buffer store at particles.comp:14 ")),
        "{stdout}"
    );
    let mut indexes: Vec<&str> = lines.iter().map(|l| l.split(':').next().unwrap()).collect();
    indexes.sort();
    assert_eq!(indexes, ["site 0", "site 1", "site 2"]);

    // --site-base shifts the global indexes; asserts/printf off leave the NaN sites only.
    let out_spv2 = dir.0.join("out2.spv");
    let out = instrument(
        &[
            "--nan=ops",
            "--sites",
            "--site-base",
            "100",
            "--no-printf",
            "--address",
            "0xdead0000",
        ],
        &spv,
        &out_spv2,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.lines().all(|l| l.starts_with("site 10")), "{stdout}");
    assert!(!stdout.contains("printf"), "{stdout}");
    assert_eq!(stdout.lines().count(), 2, "{stdout}");

    // `-o -` writes the module to stdout; the same settings give the same module.
    let again = blackbox()
        .arg("instrument")
        .arg(&spv)
        .args(["-o", "-", "--nan", "ops"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(again.stdout, std::fs::read(&out_spv).unwrap());
    assert!(text(&again.stderr).contains("-> stdout:"));
}

/// `--nan-records end` (the default) adds the end-of-invocation flush, a loop marked DontUnroll;
/// `fired` writes where checks fire and has no loop; both validate.
#[test]
fn nan_records_choose_the_flush_or_writers_where_checks_fire() {
    let dir = TempDir::new("nan-records");
    let spv = compile(&dir.0);
    let mut loops = Vec::new();
    for records in ["end", "fired"] {
        let out_spv = dir.0.join(format!("{records}.spv"));
        let out = instrument(&["--nan", "ops", "--nan-records", records], &spv, &out_spv);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let val = Command::new(spirv_val())
            .args(["--target-env", "vulkan1.2"])
            .arg(&out_spv)
            .output()
            .unwrap();
        assert!(val.status.success(), "{records}: {}", text(&val.stderr));
        let dis = Command::new(venv_tool("spirv-dis"))
            .arg(&out_spv)
            .output()
            .unwrap();
        assert!(dis.status.success(), "{}", text(&dis.stderr));
        loops.push(text(&dis.stdout).matches("DontUnroll").count());
    }
    assert!(loops[0] > 0, "end: a flush loop");
    assert_eq!(loops[1], 0, "fired: no flush");
    let bad = instrument(&["--nan-records", "later"], &spv, &dir.0.join("bad.spv"));
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("possible values: end, fired"));
}

#[test]
fn shader_info_prints_entry_points_and_sources() {
    let dir = TempDir::new("info");
    let spv = compile(&dir.0);
    let out = blackbox().arg("shader-info").arg(&spv).output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.lines().any(|l| l == "entry point  main (compute)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("particles.comp: GLSL 450, text embedded"),
        "{stdout}"
    );
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("shader       "))
        .unwrap_or_else(|| panic!("no shader id: {stdout}"));
    assert_eq!(id.len(), 16);

    let out = blackbox()
        .args(["shader-info", "--json"])
        .arg(&spv)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&out.stdout)));
    assert_eq!(json["shader"], id);
    assert_eq!(json["entry_points"][0]["name"], "main");
    assert_eq!(json["entry_points"][0]["stage"], "compute");
    assert_eq!(json["sources"][0]["name"], "particles.comp");
    assert_eq!(json["sources"][0]["text_embedded"], true);
    // glslang puts its own comment lines (`// OpModuleProcessed ...`) before the text.
    let lines = json["sources"][0]["lines"].as_u64().unwrap_or(0);
    assert!(lines >= SHADER.lines().count() as u64, "{json}");
}

/// Without line information, each site is named by its instruction as `spirv-dis --raw-id` writes it,
/// so that the user finds it there; `shader-info --sites` lists the same lines as `instrument --sites`.
#[test]
fn sites_without_line_information_name_their_instruction() {
    let dir = TempDir::new("no-lines");
    let spv = compile_with(&dir.0, &[], "plain.spv");
    let out_spv = dir.0.join("out.spv");
    let out = instrument(&["--nan", "ops", "--sites"], &spv, &out_spv);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let dis = Command::new(venv_tool("spirv-dis"))
        .args(["--raw-id", "--no-color"])
        .arg(&spv)
        .output()
        .unwrap();
    assert!(dis.status.success());
    let disassembly: Vec<String> = text(&dis.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    for line in &lines {
        let (_, rest) = line
            .split_once(" at instruction ")
            .unwrap_or_else(|| panic!("{line}"));
        let (instruction, scope) = rest
            .split_once(" in entry point main (comp); values ")
            .unwrap_or_else(|| panic!("{line}"));
        assert!(
            disassembly.iter().any(|l| l == instruction),
            "{instruction:?} is not a line of spirv-dis --raw-id"
        );
        assert!(!scope.is_empty(), "{line}");
    }
    let normalize = lines
        .iter()
        .find(|l| l.contains(": nan-op normalize at "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        normalize.contains(" OpExtInst %") && normalize.contains(" Normalize %"),
        "{normalize}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(": nan-output storage buffer store at instruction OpStore %")),
        "{table}"
    );

    // shader-info --sites: the same lines after the module's description.
    let info = blackbox()
        .args(["shader-info", "--sites"])
        .arg(&spv)
        .output()
        .unwrap();
    assert_eq!(info.status.code(), Some(0), "{}", text(&info.stderr));
    let info_text = text(&info.stdout);
    assert!(
        info_text.contains("\nsites        3 at NaN ops, asserts and printf\n"),
        "{info_text}"
    );
    assert!(info_text.ends_with(&table), "{info_text}\n---\n{table}");
    // At NaN outputs, only the store (and the printf) remain; --site-base numbers them as instrument does.
    let info = blackbox()
        .args([
            "shader-info",
            "--sites",
            "--nan",
            "outputs",
            "--site-base",
            "7",
        ])
        .arg(&spv)
        .output()
        .unwrap();
    let info_text = text(&info.stdout);
    let site_lines: Vec<&str> = info_text
        .lines()
        .filter(|l| l.starts_with("site "))
        .collect();
    assert_eq!(site_lines.len(), 2, "{info_text}");
    assert!(site_lines[0].starts_with("site 7: "), "{info_text}");
    assert!(!info_text.contains("nan-op"), "{info_text}");

    // As JSON, each site's parts.
    let info = blackbox()
        .args(["shader-info", "--sites", "--json"])
        .arg(&spv)
        .output()
        .unwrap();
    assert_eq!(info.status.code(), Some(0), "{}", text(&info.stderr));
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let sites = json["sites"].as_array().expect("a sites array");
    assert_eq!(sites.len(), 3, "{json}");
    let normalize = sites
        .iter()
        .find(|s| s["kind"] == "nan-op normalize")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(normalize["location"], serde_json::Value::Null);
    assert_eq!(normalize["entry_points"], serde_json::json!(["main"]));
    assert_eq!(normalize["stage"], "compute");
    let instruction = normalize["instruction"].as_str().unwrap();
    assert_eq!(normalize["place"], format!("instruction {instruction}"));
    assert!(
        disassembly.iter().any(|l| l == instruction),
        "{instruction}"
    );
    assert_eq!(normalize["values"][1]["type"], "f32x3");
    assert!(lines.iter().any(|l| l.ends_with(&format!(
        "{}; values operand 0: f32x3, result: f32x3",
        normalize["description"].as_str().unwrap()
    ))));
    assert_eq!(json["not_instrumented"], serde_json::Value::Null);
    // Without --sites there is no sites key.
    let info = blackbox()
        .args(["shader-info", "--json"])
        .arg(&spv)
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    assert!(json.get("sites").is_none(), "{json}");
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = TempDir::new("errors");
    let spv = compile(&dir.0);
    let out_spv = dir.0.join("out.spv");

    // Not SPIR-V (a size that is a multiple of 4), an odd size, a missing file: exit 1, one clear line.
    let glsl = dir.0.join("shader.glsl.spv");
    std::fs::write(&glsl, "#version 450\nvoid main() {}\n\n\n\n\n").unwrap();
    let odd = dir.0.join("odd.spv");
    let mut bytes = std::fs::read(&spv).unwrap();
    bytes.pop();
    std::fs::write(&odd, &bytes).unwrap();
    for (input, why) in [
        (&glsl, "not a SPIR-V module: it starts with 0x72657623, not the SPIR-V magic number 0x07230203"),
        (&odd, "not a SPIR-V module: its size"),
        (&dir.0.join("missing.spv"), "cannot read"),
    ] {
        for args in [&["instrument"][..], &["shader-info"]] {
            let mut cmd = blackbox();
            cmd.args(args).arg(input);
            if args[0] == "instrument" {
                cmd.arg("-o").arg(&out_spv);
            }
            let out = cmd.output().unwrap();
            let stderr = text(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?} {input:?}: {stderr}");
            assert!(stderr.contains(why), "{args:?} {input:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{stderr}");
            assert!(out.stdout.is_empty());
            assert!(!out_spv.exists());
        }
    }

    // The byte-swapped module reads as the same shader.
    let swapped: Vec<u8> = std::fs::read(&spv)
        .unwrap()
        .chunks(4)
        .flat_map(|c| c.iter().rev().copied().collect::<Vec<u8>>())
        .collect();
    let swapped_path = dir.0.join("swapped.spv");
    std::fs::write(&swapped_path, swapped).unwrap();
    let a = blackbox().arg("shader-info").arg(&spv).output().unwrap();
    let b = blackbox()
        .arg("shader-info")
        .arg(&swapped_path)
        .output()
        .unwrap();
    assert_eq!(b.status.code(), Some(0), "{}", text(&b.stderr));
    assert_eq!(a.stdout, b.stdout);

    // A module the engine does not take (SPIR-V 1.7): not instrumented, nothing written.
    let mut bytes = std::fs::read(&spv).unwrap();
    bytes[4..8].copy_from_slice(&0x0001_0700u32.to_le_bytes());
    let v17 = dir.0.join("v17.spv");
    std::fs::write(&v17, bytes).unwrap();
    let out = instrument(&[], &v17, &out_spv);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr).trim_end(),
        format!(
            "blackbox: {} is not instrumented: unsupported module: SPIR-V version 1.7",
            v17.display()
        )
    );
    assert!(!out_spv.exists());

    // Usage errors: exit 2 with the synopsis.
    for args in [
        &["instrument"][..],
        &["instrument", "--nan", "ops"],
        &["instrument", "--nan", "sometimes", "-o", "x.spv"],
        &["shader-info"],
        &["shader-info", "--nan", "ops"],
    ] {
        let mut cmd = blackbox();
        cmd.args(args);
        if args.len() != 1 || args[0] != "shader-info" {
            cmd.arg(&spv);
        }
        let out = cmd.output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("Usage: blackbox "), "{stderr}");
    }
    // Without -o the error names the missing output.
    let out = blackbox().arg("instrument").arg(&spv).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("required arguments were not provided")
            && stderr.contains("--output <OUT.spv>"),
        "{stderr}"
    );
    assert!(!out_spv.exists());
}
