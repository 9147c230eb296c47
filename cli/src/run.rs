//! `blackbox run`: runs an app with the layer enabled through a manifest in a temporary folder.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use anyhow::{Context, Result};

use crate::layer_lib;
use crate::manifest::{self, ManifestKind, DISABLE_ENV, ENABLE_ENV, LAYER_NAME, MANIFEST_FILE};

pub const VALIDATION_LAYER: &str = "VK_LAYER_KHRONOS_validation";

/// The file the layer appends `instance <pid> <app name>` to for each instance created through it, in any
/// process of the app's tree (`layer/src/run_status.rs`). `run` creates it empty in its temporary folder.
pub const RUN_STATUS_ENV: &str = "VK_BLACKBOX_RUN_STATUS";
const RUN_STATUS_FILE: &str = "run-status";

/// The variables through which an app may load a driver itself, bypassing the loader and its layers.
const DRIVER_FILE_VARIABLES: [&str; 2] = ["VK_DRIVER_FILES", "VK_ICD_FILENAMES"];

/// What `blackbox run` was asked (its options and their help).
#[derive(Debug, clap::Args)]
#[command(override_usage = "blackbox run [OPTIONS] [--] <APP> [ARGS]...")]
pub struct RunOptions {
    /// Enable the layer as an explicit layer (VK_INSTANCE_LAYERS, VK_ADD_LAYER_PATH) instead of an
    /// implicit one (VK_BLACKBOX_ENABLE=1, XDG_DATA_DIRS)
    #[arg(long)]
    pub explicit: bool,
    /// The layer library to use (a file, or a folder holding libVkLayer_blackbox.so)
    #[arg(long, value_name = "PATH")]
    pub layer: Option<PathBuf>,
    /// Also enable VK_LAYER_KHRONOS_validation, below Blackbox
    #[arg(long)]
    pub validation: bool,
    /// Say on stderr which layer library and manifest are used
    #[arg(short, long)]
    pub verbose: bool,
    /// APP and its arguments: the first argument that is not an option is APP, and everything after it is
    /// passed to APP unchanged
    // One positional that takes the rest: once APP is seen, nothing is an option of blackbox's.
    #[arg(value_name = "APP", required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// Changes to the child's environment: variables to set, then variables to remove.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct EnvPlan {
    pub set: Vec<(String, OsString)>,
    pub remove: Vec<String>,
}

impl EnvPlan {
    pub fn apply(&self, cmd: &mut Command) {
        for (k, v) in &self.set {
            cmd.env(k, v);
        }
        for k in &self.remove {
            cmd.env_remove(k);
        }
    }
}

/// Where the manifest goes inside the run's temporary folder.
pub fn manifest_dir(tmp: &Path, kind: ManifestKind) -> PathBuf {
    match kind {
        ManifestKind::Implicit => tmp.join("vulkan").join("implicit_layer.d"),
        ManifestKind::Explicit => tmp.join("explicit"),
    }
}

/// `a:b` with `b` left out when empty (an empty search-path entry can mean "current directory").
fn join_path_list(first: &OsStr, rest: Option<&OsStr>) -> OsString {
    let mut out = first.to_os_string();
    if let Some(rest) = rest.filter(|r| !r.is_empty()) {
        out.push(":");
        out.push(rest);
    }
    out
}

/// A layer list (`VK_INSTANCE_LAYERS`) as names, empty entries dropped.
fn layer_list(value: Option<&OsStr>) -> Vec<String> {
    value
        .map(|v| {
            v.to_string_lossy()
                .split(':')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The child's environment changes for `kind`, given the manifest folder `tmp` and the current environment.
///
/// Implicit: the run's folder goes LAST in `XDG_DATA_DIRS`. With two implicit manifests of the same layer
/// name, loader 1.3.239 inserts the one found last (checked with `VK_LOADER_DEBUG=layer`; the search order is
/// `$XDG_CONFIG_DIRS`, `/etc`, `$XDG_DATA_HOME`, then `$XDG_DATA_DIRS` in order), so being last makes the
/// layer built with this `blackbox` win over an installed copy, system-wide ones included.
///
/// Explicit: an explicit layer named in `VK_INSTANCE_LAYERS` is inserted instead of an enabled implicit one of
/// the same name (checked the same way); `VK_BLACKBOX_ENABLE` is removed anyway so an installed copy stays off.
pub fn compose_env(
    kind: ManifestKind,
    tmp: &Path,
    validation: bool,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> EnvPlan {
    let mut plan = EnvPlan::default();
    let dir = manifest_dir(tmp, kind);
    let existing_layers = layer_list(env("VK_INSTANCE_LAYERS").as_deref());
    match kind {
        ManifestKind::Implicit => {
            let existing = env("XDG_DATA_DIRS").filter(|v| !v.is_empty());
            let base = existing.unwrap_or_else(|| OsString::from(manifest::DEFAULT_XDG_DATA_DIRS));
            let mut dirs = base;
            dirs.push(":");
            dirs.push(tmp.as_os_str());
            plan.set.push(("XDG_DATA_DIRS".into(), dirs));
            plan.set.push((ENABLE_ENV.into(), "1".into()));
            plan.remove.push(DISABLE_ENV.into());
            if validation && !existing_layers.iter().any(|l| l == VALIDATION_LAYER) {
                let mut layers = existing_layers;
                layers.push(VALIDATION_LAYER.to_string());
                plan.set
                    .push(("VK_INSTANCE_LAYERS".into(), layers.join(":").into()));
            }
        }
        ManifestKind::Explicit => {
            let add = join_path_list(dir.as_os_str(), env("VK_ADD_LAYER_PATH").as_deref());
            plan.set.push(("VK_ADD_LAYER_PATH".into(), add));
            let mut layers = vec![LAYER_NAME.to_string()];
            layers.extend(existing_layers.into_iter().filter(|l| l != LAYER_NAME));
            if validation && !layers.iter().any(|l| l == VALIDATION_LAYER) {
                layers.push(VALIDATION_LAYER.to_string());
            }
            plan.set
                .push(("VK_INSTANCE_LAYERS".into(), layers.join(":").into()));
            plan.remove.push(ENABLE_ENV.into());
        }
    }
    plan
}

/// A fresh private folder `<temp>/<prefix>-<pid>-<n>`, removed (with its content) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> Result<TempDir> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let base = std::env::temp_dir();
        loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!("{prefix}-{}-{n}", std::process::id()));
            match std::fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => return Ok(TempDir(path)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(e).with_context(|| format!("cannot create {}", path.display()))
                }
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes the manifest for `library` of `kind` under `tmp`; returns its path.
pub fn write_temp_manifest(tmp: &Path, library: &Path, kind: ManifestKind) -> Result<PathBuf> {
    let dir = manifest_dir(tmp, kind);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(MANIFEST_FILE);
    std::fs::write(&path, manifest::manifest_json(library, kind))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        s if (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&s) => "real-time signal",
        _ => "unknown signal",
    }
}

static CHILD_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_signal(sig: libc::c_int) {
    let pid = CHILD_PID.load(Ordering::Relaxed);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// While the child runs: terminal signals (INT, QUIT), which reach the child too, are ignored here, and
/// TERM/HUP sent to blackbox alone are passed on, so blackbox outlives the child and cleans up.
/// Installed after the spawn, so the child starts with its own default dispositions.
pub struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl SignalGuard {
    pub fn install(child: u32) -> SignalGuard {
        CHILD_PID.store(child as i32, Ordering::Relaxed);
        let mut old = Vec::new();
        for (sig, forward) in [
            (libc::SIGINT, false),
            (libc::SIGQUIT, false),
            (libc::SIGTERM, true),
            (libc::SIGHUP, true),
        ] {
            // SAFETY: plain sigaction calls with zeroed, then filled-in structures.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = if forward {
                    forward_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
                } else {
                    libc::SIG_IGN
                };
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, &action, &mut prev) == 0 {
                    old.push((sig, prev));
                }
            }
        }
        SignalGuard { old }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores what sigaction handed back.
            unsafe {
                libc::sigaction(*sig, prev, std::ptr::null_mut());
            }
        }
        CHILD_PID.store(0, Ordering::Relaxed);
    }
}

/// Creates the empty run-status file in `tmp`; returns its path.
fn create_run_status(tmp: &Path) -> Result<PathBuf> {
    let path = tmp.join(RUN_STATUS_FILE);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    Ok(path)
}

/// The instances the run-status file records; `None` if it cannot be read (then nothing is claimed).
fn instances_noted(status: &Path) -> Option<usize> {
    let text = std::fs::read(status).ok()?;
    Some(
        text.split(|b| *b == b'\n')
            .filter(|line| line.starts_with(b"instance "))
            .count(),
    )
}

/// `'*lvp*'` for `.../lvp_icd.x86_64.json`: a `VK_LOADER_DRIVERS_SELECT` pattern for the first driver
/// manifest a `VK_DRIVER_FILES`-style list names (the loader matches it against manifest file names).
fn drivers_select_pattern(list: &OsStr) -> Option<String> {
    let first = list
        .to_string_lossy()
        .split(':')
        .find(|s| !s.is_empty())?
        .to_owned();
    let name = Path::new(&first)
        .file_name()?
        .to_string_lossy()
        .into_owned();
    let stem = name.split(['_', '.']).next().filter(|s| !s.is_empty())?;
    Some(format!("'*{stem}*'"))
}

/// What `run` says at exit when `app` created no Vulkan instance through the layer: the likely causes,
/// the driver-file variables that are set among them. One `blackbox: ` line each.
pub fn no_instance_note(app: &OsStr, env: &dyn Fn(&str) -> Option<OsString>) -> String {
    let mut out = format!(
        "blackbox: note: {} created no Vulkan instance through the Blackbox layer, so nothing it did was \
         watched. Likely causes:\n",
        app.to_string_lossy()
    );
    for var in DRIVER_FILE_VARIABLES {
        let Some(value) = env(var).filter(|v| !v.is_empty()) else {
            continue;
        };
        let pattern = drivers_select_pattern(&value).unwrap_or_else(|| "'*lvp*'".to_owned());
        out.push_str(&format!(
            "blackbox:   - {var} is set ({}): some apps (ncnn's pip wheel, for one) load the driver it \
             names themselves, bypassing the Vulkan loader and every layer. Select the driver with \
             VK_LOADER_DRIVERS_SELECT instead, e.g. VK_LOADER_DRIVERS_SELECT={pattern}, and unset {var}.\n",
            value.to_string_lossy()
        ));
    }
    out.push_str(
        "blackbox:   - the app links the Vulkan loader statically (or brings its own), which does not see \
         the layer's manifest\n\
         blackbox:   - the loader did not load the layer (VK_LOADER_DEBUG=layer says why)\n\
         blackbox:   - the app does not use Vulkan at all\n",
    );
    out
}

/// The exit code blackbox passes on for the child's status (128+N for a signal, with a line on stderr).
fn exit_code_for(app: &OsStr, status: ExitStatus) -> i32 {
    if let Some(code) = status.code() {
        return code;
    }
    if let Some(sig) = status.signal() {
        let core = if status.core_dumped() {
            ", core dumped"
        } else {
            ""
        };
        eprintln!(
            "blackbox: {} killed by signal {sig} ({}{core})",
            app.to_string_lossy(),
            signal_name(sig)
        );
        return 128 + sig;
    }
    1
}

/// Runs the app; returns the exit code blackbox should exit with.
pub fn run(opts: &RunOptions) -> Result<i32> {
    let library = layer_lib::resolve(opts.layer.as_deref())?;
    let kind = if opts.explicit {
        ManifestKind::Explicit
    } else {
        ManifestKind::Implicit
    };
    let tmp = TempDir::new("blackbox-run")?;
    let manifest_path = write_temp_manifest(tmp.path(), &library, kind)?;
    let plan = compose_env(kind, tmp.path(), opts.validation, &|k| std::env::var_os(k));

    let app = &opts.command[0];
    if opts.verbose {
        eprintln!(
            "blackbox: running {} with {LAYER_NAME} ({}{}) from {}, manifest {}",
            app.to_string_lossy(),
            if opts.explicit {
                "explicit"
            } else {
                "implicit"
            },
            if opts.validation {
                format!(", {VALIDATION_LAYER} below it")
            } else {
                String::new()
            },
            library.display(),
            manifest_path.display()
        );
    }

    let run_status = create_run_status(tmp.path())?;
    let mut cmd = Command::new(app);
    cmd.args(&opts.command[1..]);
    plan.apply(&mut cmd);
    cmd.env(RUN_STATUS_ENV, &run_status);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            let code = match e.kind() {
                io::ErrorKind::NotFound => 127,
                _ => 126,
            };
            let what = match e.kind() {
                io::ErrorKind::NotFound if app.to_string_lossy().contains('/') => {
                    "no such file".to_string()
                }
                io::ErrorKind::NotFound => "command not found".to_string(),
                io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                _ => e.to_string(),
            };
            eprintln!("blackbox: cannot run {}: {what}", app.to_string_lossy());
            return Ok(code);
        }
    };
    let status = {
        let _signals = SignalGuard::install(child.id());
        child.wait().context("waiting for the app failed")?
    };
    let code = exit_code_for(app, status);
    match instances_noted(&run_status) {
        Some(0) => eprint!("{}", no_instance_note(app, &|k| std::env::var_os(k))),
        Some(n) if opts.verbose => {
            eprintln!("blackbox: {n} Vulkan instance(s) created through the layer")
        }
        _ => {}
    }
    drop(tmp);
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_env::env_of;

    fn get<'a>(plan: &'a EnvPlan, key: &str) -> Option<&'a str> {
        plan.set
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.to_str().unwrap())
    }

    #[test]
    fn implicit_adds_run_folder_to_xdg_data_dirs() {
        let tmp = Path::new("/tmp/blackbox-run-1-0");
        let plan = compose_env(ManifestKind::Implicit, tmp, false, &env_of(&[]));
        assert_eq!(
            get(&plan, "XDG_DATA_DIRS"),
            Some("/usr/local/share:/usr/share:/tmp/blackbox-run-1-0")
        );
        assert_eq!(get(&plan, ENABLE_ENV), Some("1"));
        assert_eq!(plan.remove, vec![DISABLE_ENV.to_string()]);
        assert_eq!(get(&plan, "VK_INSTANCE_LAYERS"), None);
        assert_eq!(get(&plan, "VK_ADD_LAYER_PATH"), None);

        let env = env_of(&[("XDG_DATA_DIRS", "/opt/share:/usr/share")]);
        let plan = compose_env(ManifestKind::Implicit, tmp, false, &env);
        assert_eq!(
            get(&plan, "XDG_DATA_DIRS"),
            Some("/opt/share:/usr/share:/tmp/blackbox-run-1-0")
        );
        // The manifest folder is what the loader derives from the XDG entry.
        assert_eq!(
            manifest_dir(tmp, ManifestKind::Implicit),
            Path::new("/tmp/blackbox-run-1-0/vulkan/implicit_layer.d")
        );

        let env = env_of(&[("XDG_DATA_DIRS", "")]);
        let plan = compose_env(ManifestKind::Implicit, tmp, false, &env);
        assert_eq!(
            get(&plan, "XDG_DATA_DIRS"),
            Some("/usr/local/share:/usr/share:/tmp/blackbox-run-1-0")
        );
    }

    #[test]
    fn implicit_validation_appends_to_instance_layers() {
        let tmp = Path::new("/t");
        let plan = compose_env(ManifestKind::Implicit, tmp, true, &env_of(&[]));
        assert_eq!(get(&plan, "VK_INSTANCE_LAYERS"), Some(VALIDATION_LAYER));
        let env = env_of(&[("VK_INSTANCE_LAYERS", "VK_LAYER_a")]);
        let plan = compose_env(ManifestKind::Implicit, tmp, true, &env);
        assert_eq!(
            get(&plan, "VK_INSTANCE_LAYERS"),
            Some("VK_LAYER_a:VK_LAYER_KHRONOS_validation")
        );
        let env = env_of(&[("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation")]);
        let plan = compose_env(ManifestKind::Implicit, tmp, true, &env);
        assert_eq!(get(&plan, "VK_INSTANCE_LAYERS"), None);
    }

    #[test]
    fn explicit_prepends_layer_and_path() {
        let tmp = Path::new("/t");
        let plan = compose_env(ManifestKind::Explicit, tmp, false, &env_of(&[]));
        assert_eq!(get(&plan, "VK_ADD_LAYER_PATH"), Some("/t/explicit"));
        assert_eq!(get(&plan, "VK_INSTANCE_LAYERS"), Some(LAYER_NAME));
        assert_eq!(get(&plan, "XDG_DATA_DIRS"), None);
        assert_eq!(get(&plan, ENABLE_ENV), None);
        assert_eq!(plan.remove, vec![ENABLE_ENV.to_string()]);

        let env = env_of(&[
            ("VK_ADD_LAYER_PATH", "/mine"),
            (
                "VK_INSTANCE_LAYERS",
                "VK_LAYER_a:VK_LAYER_blackbox::VK_LAYER_b",
            ),
        ]);
        let plan = compose_env(ManifestKind::Explicit, tmp, true, &env);
        assert_eq!(get(&plan, "VK_ADD_LAYER_PATH"), Some("/t/explicit:/mine"));
        assert_eq!(
            get(&plan, "VK_INSTANCE_LAYERS"),
            Some("VK_LAYER_blackbox:VK_LAYER_a:VK_LAYER_b:VK_LAYER_KHRONOS_validation")
        );
    }

    #[test]
    fn temp_dirs_are_fresh_and_removed() {
        let a = TempDir::new("blackbox-test").unwrap();
        let b = TempDir::new("blackbox-test").unwrap();
        assert_ne!(a.path(), b.path());
        let manifest = write_temp_manifest(
            a.path(),
            Path::new("/x/libVkLayer_blackbox.so"),
            ManifestKind::Implicit,
        )
        .unwrap();
        assert!(manifest.ends_with("vulkan/implicit_layer.d/VkLayer_blackbox.json"));
        let path = a.path().to_path_buf();
        drop(a);
        assert!(!path.exists());
    }

    #[test]
    fn run_status_counts_instance_lines() {
        let tmp = TempDir::new("blackbox-test").unwrap();
        let status = create_run_status(tmp.path()).unwrap();
        assert_eq!(instances_noted(&status), Some(0));
        std::fs::write(&status, "instance 12 vkcube\ninstance 13 \n").unwrap();
        assert_eq!(instances_noted(&status), Some(2));
        assert!(
            create_run_status(tmp.path()).is_err(),
            "created afresh, never reused"
        );
        assert_eq!(instances_noted(&tmp.path().join("missing")), None);
    }

    #[test]
    fn the_note_names_the_driver_variables_that_are_set() {
        let note = no_instance_note(OsStr::new("app"), &env_of(&[]));
        assert!(note.starts_with("blackbox: note: app created no Vulkan instance"));
        assert!(note.contains("statically") && note.contains("does not use Vulkan"));
        assert!(!note.contains("VK_DRIVER_FILES") && !note.contains("VK_ICD_FILENAMES"));
        assert!(note.lines().all(|l| l.starts_with("blackbox: ")), "{note}");

        let env = env_of(&[(
            "VK_ICD_FILENAMES",
            "/usr/share/vulkan/icd.d/nvidia_icd.json:/x/lvp_icd.x86_64.json",
        )]);
        let note = no_instance_note(OsStr::new("app"), &env);
        assert!(note.contains("VK_ICD_FILENAMES is set (/usr/share/vulkan/icd.d/nvidia_icd.json:"));
        assert!(
            note.contains("VK_LOADER_DRIVERS_SELECT='*nvidia*'"),
            "{note}"
        );
        assert!(!note.contains("VK_DRIVER_FILES"));
    }

    #[test]
    fn drivers_select_patterns() {
        let p = |s: &str| drivers_select_pattern(OsStr::new(s));
        assert_eq!(
            p("/usr/share/vulkan/icd.d/lvp_icd.x86_64.json").as_deref(),
            Some("'*lvp*'")
        );
        assert_eq!(p(":radeon_icd.json").as_deref(), Some("'*radeon*'"));
        assert_eq!(p(""), None);
        assert_eq!(p("/x/_icd.json"), None);
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(libc::SIGABRT), "SIGABRT");
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    }
}
