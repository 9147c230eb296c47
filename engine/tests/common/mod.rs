//! Shared helpers of the engine's integration tests: finding the tools, reading modules, running spirv-val
//! on many modules in parallel.
#![allow(dead_code)]

pub mod generate;
pub mod shaders;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// The workspace root (the engine crate's parent directory).
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("engine/ has a parent")
        .to_path_buf()
}

/// spirv-val 2025.5: `$BLACKBOX_SPIRV_VAL`, else `<workspace>/.venv/bin/spirv-val`. Panics with a clear
/// message when it is missing: these tests never pass by skipping.
pub fn spirv_val() -> PathBuf {
    let path = match std::env::var_os("BLACKBOX_SPIRV_VAL") {
        Some(p) => PathBuf::from(p),
        None => workspace().join(".venv/bin/spirv-val"),
    };
    assert!(
        path.is_file(),
        "spirv-val not found at {}: run scripts/setup.sh (it installs SPIRV-Tools 2025.5 into .venv/) or set \
         BLACKBOX_SPIRV_VAL",
        path.display()
    );
    path
}

/// A tool next to spirv-val in the venv (spirv-opt, spirv-dis), or panics.
pub fn venv_tool(name: &str) -> PathBuf {
    let val = spirv_val();
    let path = val.with_file_name(name);
    assert!(
        path.is_file(),
        "{name} not found at {} (next to spirv-val)",
        path.display()
    );
    path
}

/// Reads a .spv file as words.
pub fn read_words(path: &Path) -> Vec<u32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    assert!(
        bytes.len() % 4 == 0,
        "{} is not a whole number of words",
        path.display()
    );
    bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Writes words as a .spv file, creating its directory (a clean checkout has none under target/tmp).
pub fn write_words(path: &Path, words: &[u32]) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    }
    let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

/// The spirv-val target environment for a SPIR-V version, when the caller has no better knowledge.
pub fn env_for_version(words: &[u32]) -> &'static str {
    match words.get(1).map(|v| (v >> 8) & 0xFF) {
        Some(0) => "vulkan1.0",
        Some(1..=3) => "vulkan1.1",
        Some(4) => "vulkan1.1spv1.4",
        Some(5) => "vulkan1.2",
        _ => "vulkan1.3",
    }
}

/// One validation job: a module file and the target environment.
pub struct ValJob {
    pub path: PathBuf,
    pub env: String,
}

/// Writes `words` to `name` in the tests' scratch folder and checks the file with spirv-val for `env`;
/// panics with spirv-val's message, the file kept, where it fails, and removes it otherwise. Each caller
/// names its file apart (tests running at once instrument the same module alike).
pub fn assert_valid(words: &[u32], name: &str, env: &str) {
    let job = ValJob {
        path: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name),
        env: env.into(),
    };
    write_words(&job.path, words);
    if let Some(e) = &validate_all(std::slice::from_ref(&job))[0] {
        panic!("{name} fails spirv-val ({} kept): {e}", job.path.display());
    }
    let _ = std::fs::remove_file(&job.path);
}

/// Runs spirv-val over the jobs on all CPUs; returns, per job, `None` when valid or the error text.
pub fn validate_all(jobs: &[ValJob]) -> Vec<Option<String>> {
    let val = spirv_val();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<String>>> = Mutex::new(vec![None; jobs.len()]);
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let out = Command::new(&val)
                    .arg("--target-env")
                    .arg(&job.env)
                    .arg(&job.path)
                    .output()
                    .unwrap_or_else(|e| panic!("running {}: {e}", val.display()));
                let result = if out.status.success() {
                    None
                } else {
                    let mut text = String::from_utf8_lossy(&out.stderr).into_owned();
                    text.push_str(&String::from_utf8_lossy(&out.stdout));
                    Some(text)
                };
                results.lock().unwrap()[i] = result;
            });
        }
    });
    results.into_inner().unwrap()
}

/// `spirv-dis --raw-id` of each module file (on all CPUs), as a set of its lines without the indentation:
/// what a site's `instruction` must be one of. `None` where spirv-dis cannot read the module (a few of the
/// shared corpus use capabilities newer than SPIRV-Tools 2025.5).
pub fn raw_disassembly_lines(paths: &[PathBuf]) -> Vec<Option<std::collections::HashSet<String>>> {
    let dis = venv_tool("spirv-dis");
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<std::collections::HashSet<String>>>> =
        Mutex::new(vec![None; paths.len()]);
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(1, 8);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = paths.get(i) else { break };
                let out = Command::new(&dis)
                    .args(["--raw-id", "--no-color", "--no-header"])
                    .arg(path)
                    .output()
                    .unwrap_or_else(|e| panic!("running {}: {e}", dis.display()));
                if !out.status.success() {
                    continue;
                }
                let lines = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(|l| l.trim().to_string())
                    .collect();
                results.lock().unwrap()[i] = Some(lines);
            });
        }
    });
    results.into_inner().unwrap()
}

/// Assembles `tests/asm/<name>` with spirv-as for `env`; the output goes to `CARGO_TARGET_TMPDIR/asm`.
pub fn assemble(name: &str, env: &str) -> Vec<u32> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/asm")
        .join(name);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("asm");
    std::fs::create_dir_all(&dir).expect("creating the output directory");
    // A file of its own for each call, removed once read: tests running at once may assemble the same
    // module, and one would read the file while another rewrote it.
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, Ordering::Relaxed);
    let out = dir.join(format!("{name}.{}.{call}.spv", std::process::id()));
    let status = Command::new(venv_tool("spirv-as"))
        .arg("--target-env")
        .arg(env)
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("running spirv-as");
    assert!(status.success(), "spirv-as {}", src.display());
    let words = read_words(&out);
    let _ = std::fs::remove_file(&out);
    words
}
