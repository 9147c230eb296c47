//! `blackbox demo`: runs three scenarios of the test app `bb-testapp` under the layer (a NaN, an assert, a
//! hang) on whatever Vulkan device is present and prints what Blackbox reported.
//!
//! The layer is enabled the way `blackbox run` enables it (implicit manifest in a temporary folder), with
//! the Khronos validation layer below it when it is installed. Each scenario gets a fresh report folder
//! (`VK_BLACKBOX_OUTPUT`), a time limit, and its own `VK_BLACKBOX_*` settings; the user's are not passed on.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use blackbox_report::{Kind, Report};

use crate::layer_lib;
use crate::manifest::ManifestKind;
use crate::reports::{self, ColorWhen, REPORT_JSON};
use crate::run::{self, TempDir, VALIDATION_LAYER};

/// The test app's file name, beside the blackbox executable.
pub const TESTAPP: &str = "bb-testapp";

/// How long one scenario may run before it is killed.
const TIME_LIMIT: Duration = Duration::from_secs(120);

/// What `blackbox demo` was asked (its options and their help).
#[derive(Debug, clap::Args)]
pub struct DemoOptions {
    /// Keep the reports in DIR/nan, DIR/assert and DIR/hang (new or empty folders) instead of a temporary
    /// folder
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
}

/// What a scenario must produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A log line naming `NaN from normalize()`.
    NanLine,
    /// A report of this kind.
    Report(Kind),
}

/// One demo.
struct Demo {
    /// The folder name of its reports, and its short name in progress lines.
    key: &'static str,
    title: &'static str,
    /// The story, in one sentence.
    story: &'static str,
    scenario: &'static str,
    env: &'static [(&'static str, &'static str)],
    /// How long it takes, for the progress line.
    duration: &'static str,
    /// The signal that stops the app on purpose.
    expected_signal: Option<i32>,
    /// Log lines to show: those starting with this.
    log_prefix: Option<&'static str>,
    expect: Expect,
}

const DEMOS: [Demo; 3] = [
    Demo {
        key: "nan",
        title: "The rare flash",
        story: "one invocation of one dispatch among 100 normalizes a zero vector, and with \
                VK_BLACKBOX_NAN=ops Blackbox logs where the NaN first appeared: operation, source line, \
                operands, invocation.",
        scenario: "nan-compute",
        env: &[("VK_BLACKBOX_NAN", "ops")],
        duration: "about 1 s on lavapipe",
        expected_signal: None,
        log_prefix: Some("[blackbox] warn:"),
        expect: Expect::NanLine,
    },
    Demo {
        key: "assert",
        title: "The assert",
        story: "a shader assert (id 7, size < 0.25) fails in one invocation, and with \
                VK_BLACKBOX_ASSERT=abort Blackbox logs it, writes a report and stops the app there, \
                like a CPU assert.",
        scenario: "assert-compute",
        env: &[("VK_BLACKBOX_ASSERT", "abort")],
        duration: "about 1 s on lavapipe",
        expected_signal: Some(libc::SIGABRT),
        log_prefix: Some("[blackbox] warn:"),
        expect: Expect::Report(Kind::Assert),
    },
    Demo {
        key: "hang",
        title: "The hang",
        story: "the 3rd of 5 labelled dispatches runs far too long, and Blackbox's watchdog \
                (VK_BLACKBOX_WATCHDOG_MS=1000) writes a report naming the dispatch in flight inside its \
                labels; when the dispatch ends after all, the report is written again to say so (resumed).",
        scenario: "hang",
        env: &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
        duration: "about 5 s on lavapipe",
        expected_signal: None,
        log_prefix: None,
        expect: Expect::Report(Kind::Hang),
    },
];

/// How a scenario's run ended.
struct Outcome {
    status: Option<ExitStatus>,
    timed_out: bool,
    stderr: String,
    reports: Vec<(PathBuf, Report)>,
    unreadable: Vec<String>,
}

/// Where the test app is: beside this executable.
fn testapp_path() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the blackbox executable's path")?;
    let path = exe
        .parent()
        .context("the blackbox executable has no parent directory")?
        .join(TESTAPP);
    if !path.is_file() {
        bail!(
            "{TESTAPP} not found beside blackbox: build the workspace (cargo build --workspace); looked for {}",
            path.display()
        );
    }
    Ok(path)
}

/// The folders the loader searches for explicit layer manifests (loader 1.3.239 on Linux), given the
/// environment.
pub fn explicit_layer_dirs(env: &dyn Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    let home = var("HOME").map(PathBuf::from);
    let split = |v: OsString| -> Vec<PathBuf> {
        std::env::split_paths(&v)
            .filter(|p| !p.as_os_str().is_empty())
            .collect()
    };
    let mut dirs = Vec::new();
    for k in ["VK_LAYER_PATH", "VK_ADD_LAYER_PATH"] {
        dirs.extend(var(k).map(split).unwrap_or_default());
    }
    let sub = Path::new("vulkan").join("explicit_layer.d");
    let mut bases: Vec<PathBuf> = Vec::new();
    match var("XDG_CONFIG_HOME") {
        Some(v) => bases.push(v.into()),
        None => bases.extend(home.as_ref().map(|h| h.join(".config"))),
    }
    bases.extend(split(
        var("XDG_CONFIG_DIRS").unwrap_or_else(|| "/etc/xdg".into()),
    ));
    bases.push("/etc".into());
    match var("XDG_DATA_HOME") {
        Some(v) => bases.push(v.into()),
        None => bases.extend(home.as_ref().map(|h| h.join(".local/share"))),
    }
    bases.extend(split(
        var("XDG_DATA_DIRS").unwrap_or_else(|| crate::manifest::DEFAULT_XDG_DATA_DIRS.into()),
    ));
    dirs.extend(bases.into_iter().map(|b| b.join(&sub)));
    dirs
}

/// Whether the Khronos validation layer's manifest is installed where the loader looks.
fn validation_installed() -> bool {
    explicit_layer_dirs(&|k| std::env::var_os(k))
        .iter()
        .any(|d| d.join("VkLayer_khronos_validation.json").is_file())
}

/// A folder for one demo's reports: created, and empty.
fn fresh_folder(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut entries =
        std::fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))?;
    if entries.next().is_some() {
        bail!(
            "{} already holds files: give --keep a new or empty folder",
            path.display()
        );
    }
    Ok(())
}

/// The reports under `output`: `<output>/*/report.json`, oldest first; and those that cannot be read.
fn read_reports(output: &Path) -> (Vec<(PathBuf, Report)>, Vec<String>) {
    let mut reports = Vec::new();
    let mut unreadable = Vec::new();
    let Ok(entries) = std::fs::read_dir(output) else {
        return (reports, unreadable);
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(REPORT_JSON))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    for path in paths {
        match reports::load(&path) {
            Ok(r) => reports.push((path, r)),
            Err(why) => unreadable.push(format!("{}: {why}", path.display())),
        }
    }
    reports.sort_by_key(|(_, r)| r.unix_ms);
    (reports, unreadable)
}

/// Runs one scenario with `plan` and its settings; its stdout is discarded, its stderr kept.
fn run_scenario(
    testapp: &Path,
    demo: &Demo,
    plan: &run::EnvPlan,
    output: &Path,
) -> Result<Outcome> {
    let mut cmd = Command::new(testapp);
    cmd.arg(demo.scenario)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("VK_BLACKBOX_") {
            cmd.env_remove(k);
        }
    }
    plan.apply(&mut cmd);
    cmd.env("VK_BLACKBOX_OUTPUT", output);
    for (k, v) in demo.env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {}", testapp.display()))?;
    let mut pipe = child.stderr.take().context("no stderr pipe")?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = {
        let _signals = run::SignalGuard::install(child.id());
        loop {
            if let Some(status) = child.try_wait().context("waiting for bb-testapp failed")? {
                break Some(status);
            }
            if start.elapsed() >= TIME_LIMIT {
                timed_out = true;
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let stderr = reader.join().unwrap_or_default();
    let (reports, unreadable) = read_reports(output);
    Ok(Outcome {
        status,
        timed_out,
        stderr,
        reports,
        unreadable,
    })
}

/// How the app ended, in words.
fn ending(outcome: &Outcome) -> String {
    match outcome.status {
        None => format!(
            "{TESTAPP} did not finish within {} s: killed it",
            TIME_LIMIT.as_secs()
        ),
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("{TESTAPP} exited with code {code}"),
            (_, Some(sig)) => format!(
                "{TESTAPP} was killed by signal {sig} ({})",
                run::signal_name(sig)
            ),
            _ => format!("{TESTAPP} ended: {s}"),
        },
    }
}

/// What the scenario showed: `Ok(what)` when it produced what it should, else `Err(what is missing)`.
fn verdict(demo: &Demo, outcome: &Outcome) -> Result<String, String> {
    match demo.expect {
        Expect::NanLine => match outcome
            .stderr
            .lines()
            .find(|l| l.contains("NaN from normalize()"))
        {
            Some(line) => {
                let what = line.find("NaN from").map_or(line, |i| &line[i..]);
                let what = what.find(", invocation").map_or(what, |i| &what[..i]);
                let what = what.split(": operand").next().unwrap_or(what);
                Ok(format!("the NaN's origin logged: {what}"))
            }
            None => Err("no `NaN from normalize()` line in bb-testapp's log".into()),
        },
        Expect::Report(kind) => {
            let Some((_, report)) = outcome.reports.iter().find(|(_, r)| r.kind == kind) else {
                return Err(format!("no {} report", kind.describe()));
            };
            let mut what = format!("a {} report", kind.describe());
            if let Some(l) = report.in_flight.first() {
                let mut path = l.labels.clone();
                path.push(l.command.clone());
                what.push_str(&format!(" naming {} in flight", path.join(" > ")));
            }
            if let (Some(sig), Some(status)) = (demo.expected_signal, outcome.status) {
                if status.signal() == Some(sig) {
                    what.push_str(&format!(
                        "; the app was stopped by {}, as it should be",
                        run::signal_name(sig)
                    ));
                }
            }
            Ok(what)
        }
    }
}

/// The command a user would type to see the same: `VAR=value blackbox run -- bb-testapp SCENARIO`.
fn command_line(demo: &Demo, validation: bool) -> String {
    let vars: Vec<String> = demo.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!(
        "{} blackbox run{} -- {TESTAPP} {}",
        vars.join(" "),
        if validation { " --validation" } else { "" },
        demo.scenario
    )
}

/// `blackbox demo`: returns the exit code.
pub fn demo(opts: &DemoOptions) -> Result<i32> {
    let testapp = testapp_path()?;
    let library = layer_lib::resolve(None)?;
    let validation = validation_installed();
    let tmp = TempDir::new("blackbox-demo")?;
    run::write_temp_manifest(tmp.path(), &library, ManifestKind::Implicit)?;
    let plan = run::compose_env(ManifestKind::Implicit, tmp.path(), validation, &|k| {
        std::env::var_os(k)
    });
    let base = match &opts.keep {
        Some(dir) => {
            for demo in &DEMOS {
                fresh_folder(&dir.join(demo.key))?;
            }
            dir.canonicalize()
                .with_context(|| format!("cannot resolve {}", dir.display()))?
        }
        None => tmp.path().join("reports"),
    };
    let color = ColorWhen::Auto.enabled();

    let mut out = String::new();
    out.push_str(&format!(
        "Blackbox demo: three scenarios of {TESTAPP}, run under the layer {}{}.\n",
        library.display(),
        if validation {
            format!(", with {VALIDATION_LAYER} below it")
        } else {
            " (the Khronos validation layer is not installed: running without it)".to_string()
        }
    ));
    reports::print_stdout(&out)?;

    let mut results: Vec<(&Demo, Result<String, String>)> = Vec::new();
    let mut device: Option<String> = None;
    for (i, demo) in DEMOS.iter().enumerate() {
        let output = base.join(demo.key);
        fresh_folder(&output)?;
        eprintln!(
            "blackbox: running the {} demo ({})...",
            demo.key, demo.duration
        );
        let outcome = run_scenario(&testapp, demo, &plan, &output)?;
        if let Some(status) = outcome.status {
            let sig = status.signal();
            if sig.is_some() && sig != demo.expected_signal {
                let sig = sig.unwrap_or_default();
                if [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT].contains(&sig) {
                    eprintln!(
                        "blackbox: demo interrupted ({} stopped by {})",
                        TESTAPP,
                        run::signal_name(sig)
                    );
                    return Ok(128 + sig);
                }
            }
        }
        if device.is_none() {
            device = outcome
                .stderr
                .lines()
                .find_map(|l| l.strip_prefix("bb-testapp: device 0: "))
                .map(str::to_string);
        }

        let mut out = String::new();
        out.push_str(&format!(
            "\n== {}/{} {}: {}\n   $ {}\n",
            i + 1,
            DEMOS.len(),
            demo.title,
            demo.story,
            command_line(demo, validation)
        ));
        let verdict = verdict(demo, &outcome);
        let mut lines = String::new();
        match (demo.expected_signal, outcome.status.and_then(|s| s.signal())) {
            (Some(want), Some(got)) if want == got => lines.push_str(&format!(
                "{TESTAPP} was stopped by {}, as expected: that is what VK_BLACKBOX_ASSERT=abort does.\n",
                run::signal_name(got)
            )),
            (Some(want), _) => lines.push_str(&format!(
                "{}; expected it to be stopped by {}.\n",
                ending(&outcome),
                run::signal_name(want)
            )),
            (None, _) if outcome.timed_out || outcome.status.is_some_and(|s| !s.success()) => {
                lines.push_str(&format!("{}.\n", ending(&outcome)));
            }
            (None, _) => {}
        }
        if let Some(prefix) = demo.log_prefix {
            for line in outcome.stderr.lines().filter(|l| l.starts_with(prefix)) {
                lines.push_str(line);
                lines.push('\n');
            }
        }
        if !lines.is_empty() {
            out.push('\n');
            out.push_str(&lines);
        }
        for (path, report) in &outcome.reports {
            out.push('\n');
            if opts.keep.is_some() {
                let folder = path.parent().unwrap_or(path);
                out.push_str(&format!("Report {}:\n", folder.display()));
            }
            out.push_str(&blackbox_report::text::render(report, color));
        }
        for u in &outcome.unreadable {
            out.push_str(&format!("unreadable report {u}\n"));
        }
        if let Err(missing) = &verdict {
            out.push_str(&format!("\nMissing: {missing}.\n"));
            if !outcome.stderr.contains("[blackbox] ") {
                out.push_str(
                    "The layer wrote nothing to bb-testapp's log: it was probably not loaded \
                     (`blackbox doctor` checks why).\n",
                );
            }
            out.push_str(&format!("{TESTAPP}'s stderr (last lines):\n"));
            let tail: Vec<&str> = outcome.stderr.lines().collect();
            for line in &tail[tail.len().saturating_sub(30)..] {
                out.push_str(&format!("  | {line}\n"));
            }
        }
        reports::print_stdout(&out)?;
        results.push((demo, verdict));
    }

    let mut out = String::new();
    out.push_str(&format!(
        "\nSummary{}\n",
        device.map(|d| format!(" (on {d})")).unwrap_or_default()
    ));
    let width = DEMOS.iter().map(|d| d.title.len()).max().unwrap_or(0);
    for (demo, verdict) in &results {
        let (word, text) = match verdict {
            Ok(t) => ("ok     ", t),
            Err(t) => ("MISSING", t),
        };
        out.push_str(&format!("  {word}  {:<width$}  {text}\n", demo.title));
    }
    let failed = results.iter().filter(|(_, v)| v.is_err()).count();
    if failed == 0 {
        out.push_str(
            "All three demos produced what Blackbox is for. Try it on your app: blackbox run -- APP\n",
        );
    } else {
        out.push_str(&format!(
            "{failed} of {} demos did not produce what they should (see MISSING above).\n",
            DEMOS.len()
        ));
    }
    if let Some(dir) = &opts.keep {
        out.push_str(&format!(
            "Reports kept in {}: blackbox report {}/hang, blackbox triage {}\n",
            base.display(),
            dir.display(),
            dir.display()
        ));
    }
    reports::print_stdout(&out)?;
    drop(tmp);
    Ok(if failed == 0 { 0 } else { 1 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn explicit_layer_dirs_follow_the_loader() {
        let map: HashMap<&str, &str> = [("HOME", "/h"), ("VK_ADD_LAYER_PATH", "/add1:/add2")]
            .into_iter()
            .collect();
        let dirs = explicit_layer_dirs(&|k| map.get(k).map(OsString::from));
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(
            dirs,
            [
                "/add1",
                "/add2",
                "/h/.config/vulkan/explicit_layer.d",
                "/etc/xdg/vulkan/explicit_layer.d",
                "/etc/vulkan/explicit_layer.d",
                "/h/.local/share/vulkan/explicit_layer.d",
                "/usr/local/share/vulkan/explicit_layer.d",
                "/usr/share/vulkan/explicit_layer.d",
            ]
        );
    }

    #[test]
    fn command_lines_teach_blackbox_run() {
        assert_eq!(
            command_line(&DEMOS[0], true),
            "VK_BLACKBOX_NAN=ops blackbox run --validation -- bb-testapp nan-compute"
        );
        assert_eq!(
            command_line(&DEMOS[2], false),
            "VK_BLACKBOX_WATCHDOG_MS=1000 blackbox run -- bb-testapp hang"
        );
    }

    #[test]
    fn fresh_folders_must_be_empty() {
        let tmp = TempDir::new("blackbox-demo-test").unwrap();
        let dir = tmp.path().join("keep/hang");
        fresh_folder(&dir).unwrap();
        fresh_folder(&dir).unwrap();
        std::fs::write(dir.join("x"), "x").unwrap();
        let e = fresh_folder(&dir).unwrap_err().to_string();
        assert!(e.contains("already holds files"), "{e}");
    }
}
