//! End-to-end tests of the `blackbox` binary.
//!
//! The tests that load the layer need `libVkLayer_blackbox.so` beside the binary (`scripts/test.sh` builds
//! the workspace first) and `vulkaninfo` (`scripts/setup.sh`); without them they fail, saying which.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use blackbox_integration::{run as run_to_end, testapp, vulkan_command, TempDir, LAVAPIPE_ICD};

fn blackbox() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blackbox"))
}

/// What `blackbox run` says at exit when the app created no Vulkan instance through the layer.
const NO_INSTANCE_NOTE: &str = "created no Vulkan instance through the Blackbox layer";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A file that exists, for `--layer` where the app never loads Vulkan.
fn any_file() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_blackbox"))
}

fn layer_library() -> PathBuf {
    let lib = Path::new(env!("CARGO_BIN_EXE_blackbox"))
        .parent()
        .unwrap()
        .join("libVkLayer_blackbox.so");
    let has_vulkaninfo = Command::new("vulkaninfo").arg("--help").output().is_ok();
    if lib.is_file() && has_vulkaninfo {
        return lib;
    }
    let why = if lib.is_file() {
        "vulkaninfo is not installed".to_string()
    } else {
        format!("{} is not built", lib.display())
    };
    panic!("{why}: run scripts/test.sh, which sets up and builds everything first");
}

fn lists_blackbox_layer(out: &Output) -> bool {
    let stdout = text(&out.stdout);
    let Some(start) = stdout.find("Instance Layers") else {
        return false;
    };
    let section = &stdout[start..];
    let end = section.find("Devices:").unwrap_or(section.len());
    section[..end].contains("VK_LAYER_blackbox")
}

#[test]
fn run_implicit_shows_layer_to_vulkaninfo() {
    let lib = layer_library();
    let out = blackbox()
        .args(["run", "--", "vulkaninfo", "--summary"])
        .env("VK_LOADER_DEBUG", "layer")
        .env_remove("VK_INSTANCE_LAYERS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(lists_blackbox_layer(&out), "{}", text(&out.stdout));
    // The library the loader inserted is the one built beside blackbox.
    let expected = format!(
        "Insert instance layer \"VK_LAYER_blackbox\" ({})",
        lib.canonicalize().unwrap().display()
    );
    assert!(
        text(&out.stderr).contains(&expected),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_explicit_with_validation_shows_both_layers() {
    layer_library();
    let out = blackbox()
        .args(["run", "--explicit", "--validation", "--", "sh", "-c"])
        .arg("echo \"$VK_INSTANCE_LAYERS\"; vulkaninfo --summary")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert_eq!(
        stdout.lines().next(),
        Some("VK_LAYER_blackbox:VK_LAYER_KHRONOS_validation")
    );
    assert!(lists_blackbox_layer(&out), "{stdout}");
}

#[test]
fn run_passes_exit_codes_and_output_through() {
    let out = blackbox()
        .arg("run")
        .arg("--layer")
        .arg(any_file())
        .args(["--", "sh", "-c", "echo out; echo err >&2; exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(text(&out.stdout), "out\n");
    // The app's stderr comes through unchanged; after it, only blackbox's own note that sh never created a
    // Vulkan instance through the layer.
    let stderr = text(&out.stderr);
    let after = stderr
        .strip_prefix("err\n")
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(after.contains(NO_INSTANCE_NOTE), "{stderr}");
    assert!(
        after.lines().all(|l| l.starts_with("blackbox: ")),
        "{stderr}"
    );

    let out = blackbox()
        .arg("run")
        .arg("--layer")
        .arg(any_file())
        .args(["--", "sh", "-c", "kill -SEGV $$"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128 + 11));
    assert!(
        text(&out.stderr).contains("blackbox: sh killed by signal 11 (SIGSEGV)"),
        "{}",
        text(&out.stderr)
    );

    let out = blackbox()
        .arg("run")
        .arg("--layer")
        .arg(any_file())
        .args(["--", "blackbox-no-such-app"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(127));
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn run_sets_the_child_environment() {
    let out = blackbox()
        .arg("run")
        .arg("--layer")
        .arg(any_file())
        .args(["--", "sh", "-c"])
        .arg("echo \"$VK_BLACKBOX_ENABLE|${VK_BLACKBOX_DISABLE-unset}|$XDG_DATA_DIRS\"; ls \"${XDG_DATA_DIRS##*:}/vulkan/implicit_layer.d\"")
        .env("VK_BLACKBOX_DISABLE", "1")
        .env("XDG_DATA_DIRS", "/a:/b")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    let first = lines.next().unwrap();
    assert!(first.starts_with("1|unset|/a:/b:"), "{first}");
    let tmp = first.rsplit(':').next().unwrap();
    assert!(
        Path::new(tmp)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("blackbox-run-"),
        "{tmp}"
    );
    assert_eq!(lines.next(), Some("VkLayer_blackbox.json"));
    assert!(!Path::new(tmp).exists(), "{tmp} left behind");
}

#[test]
fn missing_layer_is_a_clear_error() {
    let out = blackbox()
        .args([
            "run",
            "--layer",
            "/nonexistent/libVkLayer_blackbox.so",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("layer library not found at /nonexistent/libVkLayer_blackbox.so"),
        "{stderr}"
    );
    assert!(stderr.contains("cargo build -p blackbox-layer"), "{stderr}");
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["frobnicate"],
        &["report"],
        &["run"],
        &["run", "--nope", "x"],
        &["install", "x"],
        &["doctor", "--system"],
    ] {
        let out = blackbox().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert!(text(&out.stderr).contains("Usage: blackbox"), "{args:?}");
    }
    for args in [
        &["--help"][..],
        &["--version"],
        &["run", "--help"],
        &["report", "--help"],
        &["triage", "--help"],
        &["install", "--help"],
        &["uninstall", "--help"],
        &["doctor", "--help"],
    ] {
        let out = blackbox().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
}

/// Every verb and every flag the CLI has had, each in the help: `blackbox --help` lists the verbs, and
/// `blackbox VERB --help` (the same as `blackbox help VERB`) their flags.
#[test]
fn help_names_every_verb_and_every_flag() {
    const VERBS_AND_FLAGS: &[(&str, &[&str])] = &[
        ("demo", &["--keep <DIR>"]),
        (
            "run",
            &[
                "--explicit",
                "--layer <PATH>",
                "--validation",
                "-v, --verbose",
                "<APP>",
            ],
        ),
        ("report", &["--json", "--color <WHEN>", "<PATH>"]),
        ("triage", &["--json", "--min-count <N>", "<DIR>..."]),
        (
            "instrument",
            &[
                "-o, --output <OUT.spv>",
                "--nan <LEVEL>",
                "--no-asserts",
                "--no-printf",
                "--assert-crash",
                "--keep-debug-info",
                "--address <ADDR>",
                "--site-base <N>",
                "--sites",
                "<IN.spv>",
            ],
        ),
        ("shader-info", &["--json", "<IN.spv>"]),
        ("install", &["--system", "--layer <PATH>"]),
        ("uninstall", &["--system"]),
        ("doctor", &["--layer <PATH>"]),
    ];
    let help = |args: &[&str]| {
        let out = blackbox().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        text(&out.stdout)
    };
    let main = help(&["--help"]);
    for (verb, flags) in VERBS_AND_FLAGS {
        assert!(
            main.lines().any(|l| l.starts_with(&format!("  {verb} "))),
            "{verb} missing:\n{main}"
        );
        let verb_help = help(&[verb, "--help"]);
        assert_eq!(verb_help, help(&["help", verb]), "{verb}");
        for flag in flags.iter().chain(&["-h, --help"]) {
            assert!(
                verb_help.contains(flag),
                "{verb}: {flag} missing:\n{verb_help}"
            );
        }
    }
    assert!(main.contains("-V, --version"), "{main}");
}

/// (a) An app that uses no Vulkan: the note, with the causes; the driver variables only where set.
#[test]
fn run_says_when_the_app_never_reached_the_layer() {
    let home = TempDir::new("run-no-vulkan");
    let mut cmd = vulkan_command(env!("CARGO_BIN_EXE_blackbox"), home.path());
    cmd.args(["run", "--", "true"])
        .env_remove("VK_DRIVER_FILES");
    let out = run_to_end(&mut cmd);
    out.assert_success();
    assert!(out.stdout.is_empty(), "{}", out.dump());
    assert!(
        out.stderr
            .contains(&format!("blackbox: note: true {NO_INSTANCE_NOTE}")),
        "{}",
        out.dump()
    );
    for cause in ["statically", "VK_LOADER_DEBUG=layer", "does not use Vulkan"] {
        assert!(out.stderr.contains(cause), "{cause}: {}", out.dump());
    }
    assert!(!out.stderr.contains("VK_DRIVER_FILES"), "{}", out.dump());
    assert!(!out.stderr.contains("VK_ICD_FILENAMES"), "{}", out.dump());

    let mut cmd = vulkan_command(env!("CARGO_BIN_EXE_blackbox"), home.path());
    cmd.args(["run", "--", "true"])
        .env_remove("VK_DRIVER_FILES")
        .env("VK_ICD_FILENAMES", LAVAPIPE_ICD);
    let out = run_to_end(&mut cmd);
    out.assert_success();
    assert!(
        out.stderr
            .contains(&format!("VK_ICD_FILENAMES is set ({LAVAPIPE_ICD})")),
        "{}",
        out.dump()
    );
    assert!(
        out.stderr.contains("VK_LOADER_DRIVERS_SELECT='*lvp*'"),
        "{}",
        out.dump()
    );
}

/// (b) Apps whose instances go through the layer, directly or from a child process: no note.
#[test]
fn run_says_nothing_when_the_app_reached_the_layer() {
    layer_library();
    let home = TempDir::new("run-vulkaninfo");
    let mut cmd = vulkan_command(env!("CARGO_BIN_EXE_blackbox"), home.path());
    cmd.args(["run", "--", "vulkaninfo", "--summary"]);
    let out = run_to_end(&mut cmd);
    out.assert_success();
    assert!(!out.stderr.contains(NO_INSTANCE_NOTE), "{}", out.dump());

    let mut cmd = vulkan_command(env!("CARGO_BIN_EXE_blackbox"), home.path());
    cmd.args(["run", "-v", "--", "sh", "-c", "vulkaninfo --summary"]);
    let out = run_to_end(&mut cmd);
    out.assert_success();
    assert!(!out.stderr.contains(NO_INSTANCE_NOTE), "{}", out.dump());
    assert!(
        out.stderr
            .contains("Vulkan instance(s) created through the layer"),
        "{}",
        out.dump()
    );
}

/// (c) A real loader bypass, as ncnn's pip wheel does it: the test app opens the driver VK_DRIVER_FILES
/// names and creates its instance there; the note names VK_DRIVER_FILES and what to use instead.
#[test]
fn run_names_vk_driver_files_when_the_app_bypasses_the_loader() {
    layer_library();
    let home = TempDir::new("run-bypass");
    let mut cmd = vulkan_command(env!("CARGO_BIN_EXE_blackbox"), home.path());
    cmd.args(["run", "--"]).arg(testapp()).arg("bypass-loader");
    let out = run_to_end(&mut cmd);
    out.assert_success();
    // The app did use Vulkan, on lavapipe, and the layer never saw it.
    assert!(
        out.checksums().contains_key("bypass-loader"),
        "{}",
        out.dump()
    );
    assert!(out.stderr.contains("llvmpipe"), "{}", out.dump());
    assert_eq!(out.start_up_lines(), 0, "{}", out.dump());
    assert!(out.stderr.contains(NO_INSTANCE_NOTE), "{}", out.dump());
    assert!(
        out.stderr
            .contains(&format!("VK_DRIVER_FILES is set ({LAVAPIPE_ICD})")),
        "{}",
        out.dump()
    );
    assert!(
        out.stderr.contains("VK_LOADER_DRIVERS_SELECT='*lvp*'"),
        "{}",
        out.dump()
    );
}

#[test]
fn install_and_uninstall_per_user() {
    let data = std::env::temp_dir().join(format!("blackbox-cli-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data);
    let source = any_file();

    let out = blackbox()
        .arg("install")
        .arg("--layer")
        .arg(&source)
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("VK_BLACKBOX_ENABLE=1 your-app"));
    let lib = data.join("blackbox/lib/libVkLayer_blackbox.so");
    let manifest = data.join("vulkan/implicit_layer.d/VkLayer_blackbox.json");
    assert_eq!(
        std::fs::read(&lib).unwrap(),
        std::fs::read(&source).unwrap()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(json["layer"]["library_path"], lib.to_str().unwrap());
    assert_eq!(
        json["layer"]["enable_environment"]["VK_BLACKBOX_ENABLE"],
        "1"
    );
    assert_eq!(
        json["layer"]["disable_environment"]["VK_BLACKBOX_DISABLE"],
        "1"
    );

    let out = blackbox()
        .arg("uninstall")
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("removed"));
    assert!(!lib.exists() && !manifest.exists());
    assert!(!data.join("blackbox").exists());

    let out = blackbox()
        .arg("uninstall")
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("not installed"));
    let _ = std::fs::remove_dir_all(&data);
}

#[test]
fn doctor_reports_and_summarises() {
    let out = blackbox()
        .arg("doctor")
        .env(
            "VK_DRIVER_FILES",
            "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json",
        )
        .env("XDG_RUNTIME_DIR", std::env::temp_dir())
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    for section in ["loader", "drivers", "layer"] {
        assert!(stdout.lines().any(|l| l == section), "{stdout}");
    }
    let last = stdout.lines().rfind(|l| l.starts_with("doctor: ")).unwrap();
    // Here (lavapipe, the layer built beside the binary) everything doctor checks must hold.
    layer_library();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(last, "doctor: ok");
    for fact in [
        "load test: ok: vkCreateInstance",
        "llvmpipe",
        "breadcrumbs: fill-buffer fallback",
        "dlopen test: ok",
    ] {
        assert!(stdout.contains(fact), "`{fact}` missing:\n{stdout}");
    }
}
