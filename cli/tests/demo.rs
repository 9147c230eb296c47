//! `blackbox demo` end to end on lavapipe: the layer and bb-testapp built beside `blackbox`
//! (`cargo build --workspace`, which scripts/test.sh runs first); without them the test fails, saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

const LAVAPIPE: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The layer and the test app beside the binary under test, or a failure that says how to build them.
fn built_beside_blackbox() {
    let dir = Path::new(env!("CARGO_BIN_EXE_blackbox")).parent().unwrap();
    for name in ["libVkLayer_blackbox.so", "bb-testapp"] {
        let path = dir.join(name);
        assert!(
            path.is_file(),
            "{} is not built: run `cargo build --workspace` (scripts/test.sh does) before the tests",
            path.display()
        );
    }
    assert!(
        Path::new(LAVAPIPE).is_file(),
        "{LAVAPIPE} is missing: run scripts/setup.sh, which installs lavapipe"
    );
}

/// A fresh folder, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let path =
            std::env::temp_dir().join(format!("blackbox-demo-{name}-{}", std::process::id()));
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

#[test]
fn demo_shows_a_nan_an_assert_and_a_hang() {
    built_beside_blackbox();
    let runtime = TempDir::new("runtime");
    let keep = TempDir::new("keep");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_blackbox"));
    cmd.arg("demo")
        .arg("--keep")
        .arg(&keep.0)
        .env("VK_DRIVER_FILES", LAVAPIPE)
        .env("XDG_RUNTIME_DIR", &runtime.0)
        // The demo sets its own settings: the environment's are not passed on.
        .env("VK_BLACKBOX_NAN", "off")
        .env("VK_BLACKBOX_WATCHDOG_MS", "0")
        .env("NO_COLOR", "1");
    let out = cmd.output().unwrap();
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    let both = format!("stdout:\n{stdout}\nstderr:\n{stderr}");
    assert_eq!(out.status.code(), Some(0), "{both}");

    // The rare flash: the NaN's origin.
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("[blackbox] warn: NaN from normalize()")),
        "{both}"
    );
    // The assert: the app stopped, the report printed.
    assert!(stdout.contains("stopped by SIGABRT, as expected"), "{both}");
    assert!(stdout.contains("Blackbox report: shader assert"), "{both}");
    // The hang: the report names the dispatch in flight inside its labels.
    assert!(stdout.contains("Blackbox report: GPU hang"), "{both}");
    assert!(stdout.contains("dispatch 3"), "{both}");
    assert!(
        stdout.contains("a GPU hang report naming frame > dispatch 3 > vkCmdDispatch in flight"),
        "{both}"
    );
    // The summary, and progress on stderr.
    let summary = &stdout[stdout.find("\nSummary").expect("no summary")..];
    assert_eq!(summary.matches("\n  ok ").count(), 3, "{summary}");
    assert!(!summary.contains("MISSING"), "{summary}");
    assert!(
        stderr.contains("running the hang demo (about 5 s on lavapipe)..."),
        "{stderr}"
    );

    // The reports were kept, one folder per demo.
    for (demo, count) in [("nan", 0), ("assert", 1), ("hang", 1)] {
        let reports = std::fs::read_dir(keep.0.join(demo))
            .unwrap_or_else(|e| panic!("{demo}: {e}"))
            .filter(|e| e.as_ref().unwrap().path().join("report.json").is_file())
            .count();
        assert_eq!(reports, count, "{demo}: {both}");
    }

    // A second run into the same folder refuses rather than mixing reports.
    let again = Command::new(env!("CARGO_BIN_EXE_blackbox"))
        .arg("demo")
        .arg("--keep")
        .arg(&keep.0)
        .env("VK_DRIVER_FILES", LAVAPIPE)
        .env("XDG_RUNTIME_DIR", &runtime.0)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already holds files"),
        "{}",
        text(&again.stderr)
    );
}
