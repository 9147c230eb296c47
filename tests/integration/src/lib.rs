//! Helpers for the end-to-end tests: they run real programs (the test app, `vulkaninfo`, `vkcube`, the
//! `blackbox` CLI) through the real Vulkan loader on lavapipe, with the Khronos validation layer below
//! Blackbox, and look at what came out.
//!
//! The programs are built by `cargo build --workspace` (which `scripts/test.sh` runs before the tests).
//!
//! Every command made by [`vulkan_command`] carries the validation settings of [`validation`]: wherever a
//! test enables the validation layer, it runs with synchronization validation and best practices, and its
//! messages are read back by [`Run::validation`] and judged by [`Run::assert_no_validation_messages`]
//! (none at all) or [`Run::assert_validation_messages_unchanged`] (every id as often as without Blackbox).

pub mod validation;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

/// lavapipe's ICD manifest on Debian 12: the tests use lavapipe alone, whatever else is installed.
pub const LAVAPIPE_ICD: &str = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json";
/// The Khronos validation layer.
pub const VALIDATION: &str = "VK_LAYER_KHRONOS_validation";
/// Where Debian 12 installs its manifest (vulkan-validationlayers).
pub const VALIDATION_MANIFEST_DIR: &str = "/usr/share/vulkan/explicit_layer.d";
/// What the layer logs once per device when it is active.
pub const START_UP_LINE: &str = "[blackbox] info: Blackbox ";
/// Every shader check and the finest breadcrumbs at once: NaN `ops`, integer checks, loop `break`,
/// `command` breadcrumbs.
pub const EVERYTHING: &[(&str, &str)] = &[
    ("VK_BLACKBOX_NAN", "ops"),
    ("VK_BLACKBOX_INT", "on"),
    ("VK_BLACKBOX_LOOPS", "break"),
    ("VK_BLACKBOX_BREADCRUMBS", "command"),
];

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Where cargo put the workspace's binaries for this profile.
pub fn bin_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    // Tests are built in the same profile as the binaries they drive.
    target.join(if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    })
}

fn built(name: &str) -> PathBuf {
    let path = bin_dir().join(name);
    assert!(
        path.exists(),
        "{} is not built: run scripts/test.sh (it builds the workspace first)",
        path.display()
    );
    path
}

/// `libVkLayer_blackbox.so`.
pub fn layer_library() -> PathBuf {
    built("libVkLayer_blackbox.so")
}
/// `libVkLayer_blackbox_fault.so`, the test-only layer that injects device losses (tests/fault-layer).
pub fn fault_layer_library() -> PathBuf {
    built("libVkLayer_blackbox_fault.so")
}
/// The test app.
pub fn testapp() -> PathBuf {
    built("bb-testapp")
}
/// The CLI.
pub fn blackbox() -> PathBuf {
    built("blackbox")
}

/// A fresh folder under the target dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `target/e2e/<label>-<pid>-<n>`.
    pub fn new(label: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = bin_dir()
            .join("e2e")
            .join(format!("{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create temp dir");
        Self(dir)
    }
    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Writes `contents` to `path` through a temporary file renamed over it: tests that run programs at once
/// may rewrite a manifest or settings file another program is reading.
pub fn write_atomically(path: &Path, contents: impl AsRef<[u8]>) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}-{n}.tmp", std::process::id()));
    std::fs::write(&temporary, contents)
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    std::fs::rename(&temporary, path)
        .unwrap_or_else(|e| panic!("renaming to {}: {e}", path.display()));
}

/// Writes `manifest/<template>` into `dir` with `library_path` set to the built layer's absolute path.
pub fn write_manifest(dir: &Path, template: &str) -> PathBuf {
    let text = std::fs::read_to_string(workspace_root().join("manifest").join(template))
        .expect("manifest template");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    json["layer"]["library_path"] = layer_library().to_string_lossy().into_owned().into();
    std::fs::create_dir_all(dir).expect("manifest dir");
    let path = dir.join("VkLayer_blackbox.json");
    write_atomically(&path, serde_json::to_string_pretty(&json).unwrap());
    path
}

/// The fault layer's name in its manifest.
pub const FAULT_LAYER: &str = "VK_LAYER_BLACKBOX_fault";

/// Writes the fault layer's manifest (`tests/fault-layer/VkLayer_blackbox_fault.json`) into `dir` with
/// `library_path` set to the built library's absolute path (the template's is relative).
pub fn write_fault_manifest(dir: &Path) -> PathBuf {
    let template = workspace_root().join("tests/fault-layer/VkLayer_blackbox_fault.json");
    let text = std::fs::read_to_string(&template).expect("fault-layer manifest");
    let mut json: serde_json::Value = serde_json::from_str(&text).expect("manifest is JSON");
    json["layer"]["library_path"] = fault_layer_library().to_string_lossy().into_owned().into();
    std::fs::create_dir_all(dir).expect("manifest dir");
    let path = dir.join("VkLayer_blackbox_fault.json");
    write_atomically(&path, serde_json::to_string_pretty(&json).unwrap());
    path
}

/// A command with a controlled Vulkan environment: lavapipe only, no layer variables inherited from the
/// caller, reports and state in `home`, and the validation layer's settings
/// ([`validation::SETTINGS`]: synchronization validation and best practices) in
/// `home/vk_layer_settings.txt`, for whenever the validation layer is enabled.
pub fn vulkan_command(program: impl AsRef<Path>, home: &Path) -> Command {
    let mut cmd = Command::new(program.as_ref());
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if key.starts_with("VK_") || key.starts_with("XDG_") || key == "DISPLAY" {
            cmd.env_remove(&key);
        }
    }
    let runtime = home.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let settings = validation::write_settings(home);
    cmd.env("VK_DRIVER_FILES", LAVAPIPE_ICD)
        .env("VK_LAYER_SETTINGS_PATH", settings)
        .env("XDG_RUNTIME_DIR", &runtime)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_STATE_HOME", home.join("state"))
        .stdin(Stdio::null());
    cmd
}

/// Compiles `source` (relative to `dir`, or absolute) into `out` with glslangValidator and `args` (`-V`, the
/// target environment, ...); panics with the compiler's output when it fails.
pub fn glslang(dir: &Path, args: &[&str], source: impl AsRef<std::ffi::OsStr>, out: &Path) {
    let source = source.as_ref();
    let output = Command::new("glslangValidator")
        .current_dir(dir)
        .args(args)
        .arg("-o")
        .arg(out)
        .arg(source)
        .output()
        .expect("glslangValidator (scripts/setup.sh installs it)");
    assert!(
        output.status.success(),
        "glslangValidator {} {}: {}",
        args.join(" "),
        source.to_string_lossy(),
        String::from_utf8_lossy(&output.stdout)
    );
}

/// Points `cmd` at the validation settings ([`validation::SETTINGS`]) unless it has them already (every
/// [`vulkan_command`] has): written into `dir` then.
pub fn ensure_validation_settings(cmd: &mut Command, dir: &Path) {
    if !cmd
        .get_envs()
        .any(|(key, value)| key == "VK_LAYER_SETTINGS_PATH" && value.is_some())
    {
        cmd.env("VK_LAYER_SETTINGS_PATH", validation::write_settings(dir));
    }
}

/// Enables Blackbox through its explicit manifest, with the validation layer below it (synchronization
/// validation and best practices on, [`ensure_validation_settings`]).
pub fn enable_explicit(cmd: &mut Command, manifest_dir: &Path) {
    ensure_validation_settings(cmd, manifest_dir);
    cmd.env("VK_ADD_LAYER_PATH", manifest_dir).env(
        "VK_INSTANCE_LAYERS",
        format!("VK_LAYER_blackbox:{VALIDATION}"),
    );
}

/// A third-party program's `cmd` with the validation layer alone (`blackbox` is `None`: the reference run),
/// or through Blackbox's explicit manifest (written under `home`) with `vars`, the validation layer below
/// it and reports in `home/reports`.
pub fn validation_alone_or_through_blackbox(
    cmd: &mut Command,
    home: &TempDir,
    blackbox: Option<&[(&str, &str)]>,
) {
    match blackbox {
        None => {
            cmd.env("VK_INSTANCE_LAYERS", VALIDATION);
        }
        Some(vars) => {
            let manifests = home.path().join("manifests");
            write_manifest(&manifests, "VkLayer_blackbox.json");
            cmd.envs(vars.iter().copied())
                .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"));
            enable_explicit(cmd, &manifests);
        }
    }
}

/// Runs an OpenGL program's `cmd` (a [`vulkan_command`] with its arguments) on Vulkan through Mesa's zink,
/// on the only Vulkan device here (lavapipe), with the validation layer alone or through Blackbox with
/// `vars` ([`validation_alone_or_through_blackbox`]). The validation layer logs to a file of its own,
/// named by `name` under `home`, so that its messages never split the program's lines: returns the run,
/// with that log as its stdout, and the program's own stdout.
pub fn run_on_zink(
    mut cmd: Command,
    home: &TempDir,
    name: &str,
    blackbox: Option<&[(&str, &str)]>,
) -> (Run, String) {
    let (settings, log) = validation::write_settings_logging_to_file(home.path(), name);
    cmd.env("LIBGL_ALWAYS_SOFTWARE", "1")
        .env("GALLIUM_DRIVER", "zink")
        .env("VK_LAYER_SETTINGS_PATH", &settings);
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    run(&mut cmd).with_validation_log(&log)
}

/// bb-testapp with `args` and `vars` through Blackbox's explicit manifest (written under `home`), the
/// validation layer below it, and reports in `home/reports`.
pub fn testapp_with_blackbox(home: &TempDir, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.args(args)
        .envs(vars.iter().copied())
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"));
    enable_explicit(&mut cmd, &manifests);
    cmd
}

/// bb-testapp with `args` and the validation layer alone (the test settings, no Blackbox): the reference
/// run that [`Run::assert_validation_messages_unchanged`] compares a run through Blackbox with.
pub fn testapp_with_validation_only(home: &TempDir, args: &[&str]) -> Command {
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.args(args).env("VK_INSTANCE_LAYERS", VALIDATION);
    cmd
}

/// Enables Blackbox (explicit manifest in `manifest_dir`) with the fault layer (manifest in `fault_dir`)
/// right below it and the validation layer below both: the fault layer's injected losses reach Blackbox
/// as the driver's would, and validation (synchronization validation and best practices on) checks what
/// actually reaches the driver.
pub fn enable_with_fault_layer(cmd: &mut Command, manifest_dir: &Path, fault_dir: &Path) {
    ensure_validation_settings(cmd, manifest_dir);
    let mut paths = std::ffi::OsString::from(manifest_dir);
    paths.push(":");
    paths.push(fault_dir);
    cmd.env("VK_ADD_LAYER_PATH", paths).env(
        "VK_INSTANCE_LAYERS",
        format!("VK_LAYER_blackbox:{FAULT_LAYER}:{VALIDATION}"),
    );
}

/// A finished run, with its output as text.
pub struct Run {
    /// How it ended.
    pub status: std::process::ExitStatus,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr.
    pub stderr: String,
    /// Whether its command enabled the Khronos validation layer through `VK_INSTANCE_LAYERS`: its status
    /// message, with the test settings, must then be in stdout.
    pub validation: bool,
}

impl Run {
    /// Everything it printed, for assertion messages, after a summary of its validation errors and
    /// warnings by id (when there are any; less the test app's own note, as
    /// [`validation::ValidationLog::unexpected`]).
    pub fn dump(&self) -> String {
        let log = self.validation();
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in log.unexpected() {
            *counts.entry(&m.id).or_insert(0) += 1;
        }
        let summary = if counts.is_empty() {
            String::new()
        } else {
            let lines: Vec<String> = counts
                .iter()
                .map(|(id, n)| format!("  {id}: {n}"))
                .collect();
            format!(
                "validation errors and warnings (less the test app's VK_EXT_debug_utils note):\n{}\n",
                lines.join("\n")
            )
        };
        format!(
            "{summary}status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }

    /// Asserts a zero exit status.
    pub fn assert_success(&self) -> &Self {
        assert!(self.status.success(), "expected success\n{}", self.dump());
        self
    }

    /// The validation layer's messages (it logs to stdout, [`validation::SETTINGS`]).
    pub fn validation(&self) -> validation::ValidationLog {
        validation::ValidationLog::parse(&self.stdout)
    }

    /// Asserts that the validation layer ran with the test settings (synchronization validation and best
    /// practices): its status message says so, once per instance.
    pub fn assert_validation_on(&self) -> &Self {
        if let Err(e) = self.validation().assert_enabled() {
            panic!("{e}\n{}", self.dump());
        }
        self
    }

    /// The lines of stderr that carry validation output a program received itself: the test app's
    /// counted `debug-utils message:` lines, or anything else that looks like validation output, less the
    /// test app's notes that it does not count (`(not counted)`).
    fn validation_on_stderr(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.contains("debug-utils message:") || validation::looks_like_validation(l))
            .filter(|l| !(l.starts_with("bb-testapp: ") && l.contains("(not counted)")))
            .collect()
    }

    /// Asserts that the validation layer said nothing, in any of the ways it speaks: no error or warning
    /// in its log (synchronization hazards and best practices included), none received by the app's own
    /// messenger, no stray validation output. Information messages do not count, nor the test app's own
    /// best-practices note for enabling VK_EXT_debug_utils (once per instance). When the command enabled
    /// the layer, its status message must show the test settings.
    pub fn assert_no_validation_messages(&self) -> &Self {
        if self.validation {
            self.assert_validation_on();
        }
        let log = self.validation();
        let unexpected = log.unexpected();
        assert!(
            unexpected.is_empty() && log.stray.is_empty(),
            "validation messages:\n{}stray: {:#?}\n{}",
            validation::ValidationLog::describe(&unexpected),
            log.stray,
            self.dump()
        );
        let stderr = self.validation_on_stderr();
        assert!(
            stderr.is_empty(),
            "validation messages on stderr: {stderr:#?}\n{}",
            self.dump()
        );
        self
    }

    /// Asserts that this run (with Blackbox) has every validation error and warning id exactly as often
    /// as `reference` (the same program, arguments and validation settings, without Blackbox): none added,
    /// none lost. Also no stray validation output, and as many validation lines on stderr; both ran with
    /// the test settings. Fails with the changed ids, their counts and the first full text of each.
    pub fn assert_validation_messages_unchanged(&self, reference: &Run) -> &Self {
        if let Err(e) = self.validation_messages_changed(reference) {
            panic!("{e}\n{}", self.dump());
        }
        self
    }

    /// What [`Run::assert_validation_messages_unchanged`] checks, as a result: `Err` with the readable
    /// list (changed ids, counts with and without Blackbox, first full text of each), without the dump.
    pub fn validation_messages_changed(&self, reference: &Run) -> Result<(), String> {
        self.validation_messages_changed_beyond(reference, &[])
    }

    /// [`Run::validation_messages_changed`] where a third-party program's own calls vary between runs:
    /// each `(id, n)` of `app_varies` lets that id's count differ from `reference`'s by up to `n`, either
    /// way. Only for ids that fire once per call the program makes, where the variation was seen without
    /// Blackbox, or with the validation layer *above* Blackbox (which sees the program's calls and nothing
    /// of Blackbox's).
    pub fn validation_messages_changed_beyond(
        &self,
        reference: &Run,
        app_varies: &[(&str, usize)],
    ) -> Result<(), String> {
        if reference.start_up_lines() != 0 {
            return Err("the reference run must be without Blackbox".into());
        }
        reference
            .validation()
            .assert_enabled()
            .map_err(|e| format!("reference run: {e}"))?;
        self.validation().assert_enabled()?;
        let (log, before) = (self.validation(), reference.validation());
        let mut changed = log.changed_since(&before);
        changed.retain(|c| {
            let varies = app_varies
                .iter()
                .find(|(id, _)| *id == c.id)
                .map_or(0, |&(_, n)| n);
            c.difference() > varies
        });
        if !changed.is_empty() || !log.stray.is_empty() {
            return Err(format!(
                "validation messages changed by Blackbox:\n{}stray: {:#?}",
                validation::describe_changed(&changed),
                log.stray
            ));
        }
        let (with, without) = (
            self.validation_on_stderr(),
            reference.validation_on_stderr(),
        );
        if with.len() != without.len() {
            return Err(format!(
                "validation lines on stderr: {} with Blackbox, {} without: {with:#?} against {without:#?}",
                with.len(),
                without.len()
            ));
        }
        Ok(())
    }

    /// Asserts that the test app finished its work: exit code 0, or 3 (its messenger received validation
    /// messages, which the caller judges), and no error.
    pub fn assert_testapp_finished(&self) -> &Self {
        assert!(
            matches!(self.status.code(), Some(0 | 3)) && !self.stderr.contains("bb-testapp: error"),
            "expected the app to finish (exit 0, or 3 for validation messages)\n{}",
            self.dump()
        );
        self
    }

    /// Asserts that this run ended as `reference` did (the same exit code, or both killed by a signal).
    pub fn assert_same_exit(&self, reference: &Run) -> &Self {
        assert_eq!(
            self.status.code(),
            reference.status.code(),
            "exit status differs from the run without Blackbox ({:?})\n{}",
            reference.status,
            self.dump()
        );
        self
    }

    /// The run with the validation layer's log file (see [`validation::write_settings_logging_to_file`])
    /// as its stdout, which [`Run::validation`] reads, and the program's own stdout beside it.
    pub fn with_validation_log(mut self, log: &Path) -> (Run, String) {
        let log = std::fs::read_to_string(log).unwrap_or_default();
        let program = std::mem::replace(&mut self.stdout, log);
        (self, program)
    }

    /// What is wrong with this run of a program through Blackbox, where the program must end as without
    /// it: an exit other than success, or other than one Blackbox start-up line (Blackbox active, once for
    /// the one device). Each problem starts with `name`, the run's setting.
    pub fn problems_through_blackbox(&self, name: &str) -> Vec<String> {
        let mut problems = Vec::new();
        if !self.status.success() {
            problems.push(format!("{name}: exit status {:?}", self.status));
        }
        if self.start_up_lines() != 1 {
            problems.push(format!(
                "{name}: {} Blackbox start-up lines, expected 1 (active, once for the one device)",
                self.start_up_lines()
            ));
        }
        problems
    }

    /// What is wrong with this run of a program through Blackbox against `reference`, the same program
    /// without it: [`Run::problems_through_blackbox`], a Blackbox warning (unless `may_warn`), and a
    /// validation id counted more or less often ([`Run::validation_messages_changed`]). Each problem starts
    /// with `name`, the run's setting.
    pub fn problems_against(&self, reference: &Run, name: &str, may_warn: bool) -> Vec<String> {
        let mut problems = self.problems_through_blackbox(name);
        if !may_warn && !self.warnings().is_empty() {
            problems.push(format!("{name}: Blackbox warned: {:#?}", self.warnings()));
        }
        if let Err(e) = self.validation_messages_changed(reference) {
            problems.push(format!("{name}: {e}"));
        }
        problems
    }

    /// The lines of its standard output that start with `prefix` (an app's results: `spirv `, ...).
    pub fn stdout_lines(&self, prefix: &str) -> Vec<&str> {
        self.stdout
            .lines()
            .filter(|l| l.starts_with(prefix))
            .collect()
    }

    /// Blackbox's warning lines.
    pub fn warnings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with("[blackbox] warn:"))
            .collect()
    }

    /// Blackbox's start-up lines (one per device).
    pub fn start_ups(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with(START_UP_LINE))
            .collect()
    }

    /// How many start-up lines Blackbox logged (one per device).
    pub fn start_up_lines(&self) -> usize {
        self.start_ups().len()
    }

    /// The `scenario NAME checksum HEX` lines of the test app.
    pub fn checksums(&self) -> BTreeMap<String, String> {
        self.stdout
            .lines()
            .filter_map(
                |line| match line.split_whitespace().collect::<Vec<_>>()[..] {
                    ["scenario", name, "checksum", sum] => Some((name.to_owned(), sum.to_owned())),
                    _ => None,
                },
            )
            .collect()
    }
}

/// Whether `cmd` enables the Khronos validation layer through `VK_INSTANCE_LAYERS`.
pub fn enables_validation(cmd: &Command) -> bool {
    cmd.get_envs().any(|(key, value)| {
        key == "VK_INSTANCE_LAYERS"
            && value.is_some_and(|v| v.to_string_lossy().split(':').any(|l| l == VALIDATION))
    })
}

/// Runs `cmd` to completion.
pub fn run(cmd: &mut Command) -> Run {
    let validation = enables_validation(cmd);
    let Output {
        status,
        stdout,
        stderr,
    } = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    Run {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        validation,
    }
}

/// Panics with every one of `problems` and the dump of each run (by its setting's name), when there are
/// any: so that one failure does not hide the others.
pub fn fail_on_problems(problems: &[String], runs: &[(&str, Run)]) {
    if problems.is_empty() {
        return;
    }
    let dumps: Vec<String> = runs
        .iter()
        .map(|(name, run)| format!("=== {name} ===\n{}", run.dump()))
        .collect();
    panic!("{}\n\n{}", problems.join("\n\n"), dumps.join("\n"));
}

/// One setting a third-party program runs at through Blackbox: its name, Blackbox's variables, and whether
/// Blackbox may warn (at NaN `ops`, where the warnings are the program's own values).
pub type Setting<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);

/// Runs a program through Blackbox at each of `settings` (`run_setting` makes the run and says what else is
/// wrong with it) and panics with every problem against `reference`, the run without Blackbox
/// ([`Run::problems_against`]), and the dump of every run.
pub fn compare_settings(
    reference: Run,
    settings: &[Setting],
    mut run_setting: impl FnMut(&str, &[(&str, &str)]) -> (Run, Vec<String>),
) {
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    for &(name, vars, may_warn) in settings {
        let (run, more) = run_setting(name, vars);
        problems.extend(run.problems_against(&reference, name, may_warn));
        problems.extend(more.into_iter().map(|p| format!("{name}: {p}")));
        runs.push((name, run));
    }
    runs.insert(0, ("reference", reference));
    fail_on_problems(&problems, &runs);
}

/// Runs `cmd` as [`run`] does, but kills it when it has not finished after `limit`: `Err` then, with
/// what it had written. For programs that wait on the GPU in loops of their own (a lost signal leaves them
/// waiting for ever, where a test must fail instead).
pub fn run_within(cmd: &mut Command, limit: std::time::Duration) -> Result<Run, String> {
    use std::io::Read;
    let validation = enables_validation(cmd);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    // Read on threads of their own: a program blocks once a pipe it writes to is full.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped")));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the program") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    match status {
        Some(status) => Ok(Run {
            status,
            stdout,
            stderr,
            validation,
        }),
        None => Err(format!(
            "{cmd:?} had not finished after {limit:?}: killed\n--- stdout (last 4000 bytes) ---\n{}\n--- stderr ---\n{stderr}",
            {
                let from = stdout.len().saturating_sub(4000);
                &stdout[(from..=stdout.len())
                    .find(|&i| stdout.is_char_boundary(i))
                    .unwrap_or(0)..]
            }
        )),
    }
}

/// An Xvfb server on a free display, stopped when dropped.
pub struct Xvfb {
    child: std::process::Child,
    /// `:N`.
    pub display: String,
}

impl Xvfb {
    /// Starts Xvfb and waits until it announces its display.
    pub fn start() -> Self {
        use std::io::Read;
        let mut child = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "640x480x24",
                "-nolisten",
                "tcp",
                // Without it the server resets whenever its last client disconnects, and a client that
                // connects during the reset is refused (ECONNRESET in the handshake): Mesa's WSI probes
                // the display with two short connections before GStreamer's own, which then failed
                // "to open XCB display connection" in 7 of 16 runs on a loaded 2-core machine (0 of 16
                // with it).
                "-noreset",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb (scripts/setup.sh installs it)");
        let mut out = child.stdout.take().unwrap();
        let mut number = String::new();
        let mut byte = [0u8; 1];
        while out.read(&mut byte).map(|n| n == 1).unwrap_or(false) && byte[0] != b'\n' {
            number.push(byte[0] as char);
        }
        assert!(!number.trim().is_empty(), "Xvfb did not report a display");
        // Announced means ready; still, wait until the server's socket takes a connection.
        let socket = format!("/tmp/.X11-unix/X{}", number.trim());
        let start = std::time::Instant::now();
        while std::os::unix::net::UnixStream::connect(&socket).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "Xvfb :{} exited ({status}) after announcing its display",
                    number.trim()
                );
            }
            assert!(
                start.elapsed() < std::time::Duration::from_secs(10),
                "Xvfb :{} takes no connection on {socket}",
                number.trim()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Self {
            child,
            display: format!(":{}", number.trim()),
        }
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Makes `cmd` write no core file if it (or a child it forks) crashes: the crash tests' programs end by
/// SIGSEGV or SIGABRT on purpose.
pub fn without_core_dumps(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: setrlimit is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            let none = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &none);
            Ok(())
        })
    }
}

/// Asserts that `run` left exactly one report under `output`, of the fatal signal `name` at `address`.
pub fn assert_one_signal_report(output: &Path, run: &Run, name: &str, address: &str) {
    let reports = reports_in(output);
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let signal = reports[0].1.signal.as_ref().expect("a signal report");
    assert_eq!(
        (signal.name.as_str(), signal.address.as_deref()),
        (name, Some(address)),
        "{}",
        run.dump()
    );
}

/// The reports written under `output`, oldest first (by folder name order of creation time).
pub fn reports_in(output: &Path) -> Vec<(PathBuf, blackbox_report::Report)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(output) else {
        return found;
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let json = entry.path().join("report.json");
        if let Ok(text) = std::fs::read_to_string(&json) {
            files.push(json.clone());
            let report = blackbox_report::Report::from_json(&text)
                .unwrap_or_else(|e| panic!("{}: {e}\n{text}", json.display()));
            assert!(
                entry.path().join("report.txt").is_file(),
                "report.txt beside {}",
                json.display()
            );
            found.push((entry.path(), report));
        }
    }
    // Every report the suite reads is checked against the published schema.
    if !files.is_empty() {
        if let Err(e) = validate_json(&report_schema(), &files) {
            panic!("reports do not match docs/report.schema.json:\n{e}");
        }
    }
    found.sort_by_key(|(_, r)| r.unix_ms);
    found
}

/// `docs/report.schema.json`, the JSON Schema of `report.json`.
pub fn report_schema() -> PathBuf {
    workspace_root().join("docs/report.schema.json")
}

/// The commands of a report's command buffers, flattened with their label paths: `(labels, command, state)`.
pub fn commands_with_labels(
    cb: &blackbox_report::CommandBuffer,
) -> Vec<(Vec<String>, String, blackbox_report::State)> {
    cb.commands
        .iter()
        .map(|c| {
            let mut path = Vec::new();
            let mut scope = c.scope;
            while let Some(s) = scope.and_then(|s| cb.scopes.get(s as usize)) {
                path.push(s.name.clone());
                scope = s.parent;
            }
            path.reverse();
            (path, c.name.clone(), c.state)
        })
        .collect()
}

/// The Python of `.venv/` (scripts/setup.sh), which has the pinned JSON Schema validator (`jsonschema`).
pub fn venv_python() -> PathBuf {
    installed_by_setup(".venv/bin/python", "the pinned SPIRV-Tools and jsonschema")
}

/// `path` under the workspace, which scripts/setup.sh installs (`what` it installs there): a test that
/// needs it fails saying so where it is missing, never skips.
pub fn installed_by_setup(path: &str, what: &str) -> PathBuf {
    let tool = workspace_root().join(path);
    assert!(
        tool.exists(),
        "{} is missing: run scripts/setup.sh (it installs {what})",
        tool.display()
    );
    tool
}

/// Checks each of `documents` against the JSON Schema at `schema` (its `$schema` says which draft) with the
/// pinned `jsonschema`: `Err` lists every violation, by document and place.
pub fn validate_json(schema: &Path, documents: &[PathBuf]) -> Result<(), String> {
    const CHECK: &str = r#"
import json, sys
from jsonschema.validators import validator_for
schema = json.load(open(sys.argv[1]))
cls = validator_for(schema)
cls.check_schema(schema)
validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
bad = 0
for path in sys.argv[2:]:
    for e in sorted(validator.iter_errors(json.load(open(path))), key=lambda e: list(e.absolute_path)):
        bad += 1
        where = "/".join(str(p) for p in e.absolute_path)
        print(f"{path}: /{where}: {e.message}")
sys.exit(1 if bad else 0)
"#;
    let output = Command::new(venv_python())
        .arg("-c")
        .arg(CHECK)
        .arg(schema)
        .args(documents)
        .output()
        .expect("run the JSON Schema validator");
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
