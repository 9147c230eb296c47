//! `blackbox bisect -- APP ARGS`: finds, by running the app again and again under the layer with
//! `VK_BLACKBOX_SKIP`, the one label, pipeline, shader or command whose work brings a symptom (a crash, a
//! device loss, a hang, a failing assert, a NaN, a failing exit status, or any report).
//!
//! A first run with `VK_BLACKBOX_SUSPECTS` lists what can be skipped ([`blackbox_report::suspects`]); more
//! full runs check that the symptom is steady (a flaky one is said so, not bisected); then each run skips
//! half of the suspects left ([`search`]), and two last runs check the answer: skipping the culprit alone
//! makes the symptom go (not run again when the last halving skipped it alone), and keeping it alone
//! (skipping every other suspect) brings it back or not. Every run's output goes to a log of its own.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use blackbox_report::suspects::{Suspect, SuspectKind};
use blackbox_report::{Kind, Report};

use crate::layer_lib;
use crate::manifest::ManifestKind;
use crate::run::{compose_env, write_temp_manifest, TempDir};

/// What `blackbox bisect` was asked.
#[derive(Debug, clap::Args)]
#[command(override_usage = "blackbox bisect [OPTIONS] [--] <APP> [ARGS]...")]
pub struct BisectOptions {
    /// The symptom: crash (a fatal signal), lost (device lost), hang (a watchdog hang report, or the run
    /// timed out), assert (a failing shader assert), nan (a NaN or Inf line: set VK_BLACKBOX_NAN), exit (a
    /// non-zero exit status, for an app or a script that checks its own output), report (any report)
    #[arg(long, value_enum, default_value_t = Symptom::Report)]
    pub until: Symptom,
    /// What to search among: label (the innermost debug label around the work), pipeline, shader or
    /// command (its index in its command buffer); default: labels if the app has two or more, else
    /// pipelines, else commands
    #[arg(long, value_enum)]
    pub by: Option<By>,
    /// Seconds each run may take before it is killed (a kill counts as a hang); default: the first run's
    /// time x3, at least 10 s (the first run itself gets 600 s)
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Full runs that must all show the symptom before bisecting (fewer: it is flaky, and said so)
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub confirm: u32,
    /// The folder for the runs' logs and reports (created; default: a new folder blackbox-bisect-<pid>-<n>
    /// in the temporary folder, kept)
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
    /// The layer library to use (a file, or a folder holding libVkLayer_blackbox.so)
    #[arg(long, value_name = "PATH")]
    pub layer: Option<PathBuf>,
    /// APP and its arguments: everything after APP is passed to it unchanged
    #[arg(value_name = "APP", required = true, trailing_var_arg = true)]
    pub command: Vec<OsString>,
}

/// `--until`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Symptom {
    Crash,
    Lost,
    Hang,
    Assert,
    Nan,
    Exit,
    Report,
}

impl Symptom {
    fn describe(self) -> &'static str {
        match self {
            Symptom::Crash => "a crash (fatal signal)",
            Symptom::Lost => "a device loss",
            Symptom::Hang => "a GPU hang",
            Symptom::Assert => "a failing shader assert",
            Symptom::Nan => "a NaN or Inf",
            Symptom::Exit => "a non-zero exit status",
            Symptom::Report => "a Blackbox report",
        }
    }
}

/// `--by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum By {
    Label,
    Pipeline,
    Shader,
    Command,
}

impl By {
    fn kind(self) -> SuspectKind {
        match self {
            By::Label => SuspectKind::Label,
            By::Pipeline => SuspectKind::Pipeline,
            By::Shader => SuspectKind::Shader,
            By::Command => SuspectKind::Command,
        }
    }
}

/// What one run of the app showed.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    /// Its exit code, or the signal that killed it (not counting the kill at the timeout).
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// Killed at the time limit.
    pub timed_out: bool,
    /// The kinds of the reports it wrote.
    pub reports: Vec<Kind>,
    /// Blackbox logged a failing assert, or a NaN or Inf.
    pub assert_line: bool,
    pub nan_line: bool,
    /// How long it took.
    pub seconds: f64,
}

impl Outcome {
    /// Whether it shows `symptom`.
    pub fn shows(&self, symptom: Symptom) -> bool {
        let report = |k: Kind| self.reports.contains(&k);
        match symptom {
            Symptom::Crash => self.signal.is_some() || report(Kind::Signal),
            Symptom::Lost => report(Kind::DeviceLost),
            Symptom::Hang => self.timed_out || report(Kind::Hang),
            Symptom::Assert => self.assert_line || report(Kind::Assert),
            Symptom::Nan => self.nan_line,
            Symptom::Exit => self.signal.is_some() || self.code.is_some_and(|c| c != 0),
            Symptom::Report => !self.reports.is_empty(),
        }
    }

    /// `exit 0, 1 hang report`, `killed by signal 11, 1 signal report`, `timed out`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if self.timed_out {
            parts.push("timed out".to_owned());
        } else if let Some(s) = self.signal {
            parts.push(format!(
                "killed by signal {s} ({})",
                crate::run::signal_name(s)
            ));
        } else if let Some(c) = self.code {
            parts.push(format!("exit {c}"));
        }
        for kind in [Kind::Signal, Kind::DeviceLost, Kind::Hang, Kind::Assert] {
            let n = self.reports.iter().filter(|k| **k == kind).count();
            if n > 0 {
                parts.push(format!("{n} {} report(s)", kind.describe()));
            }
        }
        let others = self
            .reports
            .iter()
            .filter(|k| ![Kind::Signal, Kind::DeviceLost, Kind::Hang, Kind::Assert].contains(k))
            .count();
        if others > 0 {
            parts.push(format!("{others} other report(s)"));
        }
        if self.assert_line {
            parts.push("assert lines".to_owned());
        }
        if self.nan_line {
            parts.push("NaN/Inf lines".to_owned());
        }
        parts.join(", ")
    }
}

/// What [`search`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// Skipping every suspect still shows the symptom: its cause is not among them.
    NotAmongSuspects,
    /// This suspect: skipping it alone makes the symptom go.
    Culprit(usize),
    /// The halving ended at this suspect, but skipping it alone still shows the symptom: more than one
    /// suspect brings it.
    NotAlone(usize),
}

/// Bisects `n` suspects (indices 0..n): `shows(skipped)` runs the app skipping those suspects and says
/// whether the symptom shows. Skipping everything is tried first; then each step skips the first half of
/// the candidates left: the symptom goes → the culprit is in that half, else in the other; the last one is
/// checked by skipping it alone, unless the last step did just that.
pub fn search(n: usize, mut shows: impl FnMut(&[usize]) -> Result<bool>) -> Result<Found> {
    let all: Vec<usize> = (0..n).collect();
    if n == 0 || shows(&all)? {
        return Ok(Found::NotAmongSuspects);
    }
    let mut candidates = all;
    // The suspect whose skipping alone made the symptom go, when the last step skipped only it.
    let mut gone_without = None;
    while candidates.len() > 1 {
        let half = candidates.len() / 2;
        let (first, second) = candidates.split_at(half);
        candidates = if shows(first)? {
            gone_without = None;
            second.to_vec()
        } else {
            gone_without = (first.len() == 1).then(|| first[0]);
            first.to_vec()
        };
    }
    let culprit = candidates[0];
    if n > 1 && gone_without != Some(culprit) && shows(&[culprit])? {
        return Ok(Found::NotAlone(culprit));
    }
    Ok(Found::Culprit(culprit))
}

/// About how many runs [`search`] makes for `n` suspects: one with all skipped, log2(n) halvings, one check.
fn expected_runs(n: usize) -> usize {
    let halvings = usize::BITS - n.saturating_sub(1).leading_zeros();
    2 + halvings as usize
}

/// The suspects to search among: `by`'s, else labels if there are two or more, else pipelines, else
/// commands.
fn pick_suspects(all: &[Suspect], by: Option<By>) -> (SuspectKind, Vec<Suspect>) {
    let of = |kind: SuspectKind| -> Vec<Suspect> {
        all.iter().filter(|s| s.kind == kind).cloned().collect()
    };
    if let Some(by) = by {
        return (by.kind(), of(by.kind()));
    }
    for kind in [SuspectKind::Label, SuspectKind::Pipeline] {
        let found = of(kind);
        if found.len() >= 2 {
            return (kind, found);
        }
    }
    (SuspectKind::Command, of(SuspectKind::Command))
}

/// Quotes `s` for a POSIX shell where it needs it.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
    if plain {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Runs the app for the bisection, each run in a folder of its own under the logs folder.
struct Runner<'a> {
    opts: &'a BisectOptions,
    logs: PathBuf,
    /// The manifest's folder (the environment points the loader at it).
    _manifest: TempDir,
    env: crate::run::EnvPlan,
    runs: u32,
    /// About how many runs in all, once the suspects are known.
    expected: Option<u32>,
    timeout: Duration,
    /// Each run (what was skipped, whether the symptom showed, its folder), for the summary.
    history: Vec<(String, bool, PathBuf)>,
}

impl Runner<'_> {
    /// Runs the app once, skipping `skip` (selectors) and, for the first run, listing suspects into
    /// `suspects`. `what` says what was skipped, for the log.
    fn run(&mut self, skip: &[String], suspects: Option<&Path>, what: &str) -> Result<Outcome> {
        self.runs += 1;
        let dir = self.logs.join(format!("run-{}", self.runs));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let log_path = dir.join("app.log");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let reports = dir.join("reports");
        let app = &self.opts.command[0];
        let mut cmd = Command::new(app);
        cmd.args(&self.opts.command[1..])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .env("VK_BLACKBOX_OUTPUT", &reports)
            .env_remove("VK_BLACKBOX_SKIP")
            .env_remove("VK_BLACKBOX_SUSPECTS")
            // Its own process group, so that a kill at the timeout reaches what the app started too.
            .process_group(0);
        self.env.apply(&mut cmd);
        if !skip.is_empty() {
            let file = dir.join("skip.txt");
            std::fs::write(&file, skip.join("\n") + "\n")
                .with_context(|| format!("cannot write {}", file.display()))?;
            let mut value = OsString::from("@");
            value.push(&file);
            cmd.env("VK_BLACKBOX_SKIP", value);
        }
        if let Some(file) = suspects {
            cmd.env("VK_BLACKBOX_SUSPECTS", file);
        }
        let started = Instant::now();
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot run {}", app.to_string_lossy()))?;
        let limit = self.timeout;
        let mut timed_out = false;
        let status: ExitStatus = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if started.elapsed() > limit {
                timed_out = true;
                // SAFETY: kill has no memory effects; the group is the child's own.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                break child.wait()?;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let seconds = started.elapsed().as_secs_f64();
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let mut outcome = Outcome {
            code: status.code(),
            signal: if timed_out { None } else { status.signal() },
            timed_out,
            reports: report_kinds(&reports),
            assert_line: text.lines().any(is_assert_line),
            nan_line: text.lines().any(is_nan_line),
            seconds,
        };
        if timed_out {
            outcome.code = None;
        }
        let shows = outcome.shows(self.opts.until);
        let of = self
            .expected
            .map(|n| format!(" of about {}", n.max(self.runs)))
            .unwrap_or_default();
        eprintln!(
            "blackbox bisect: run {}{of} ({what}): {} in {:.1} s: {}",
            self.runs,
            if outcome.summary().is_empty() {
                "nothing".to_owned()
            } else {
                outcome.summary()
            },
            seconds,
            if shows {
                "symptom seen"
            } else {
                "symptom gone"
            }
        );
        self.history.push((what.to_owned(), shows, dir));
        Ok(outcome)
    }
}

/// `[blackbox] warn: assert 7 failed at ...`.
fn is_assert_line(line: &str) -> bool {
    line.strip_prefix("[blackbox] ")
        .and_then(|l| l.split_once(": "))
        .is_some_and(|(_, m)| {
            m.starts_with("assert ") && m.contains(" failed at ")
                || m.starts_with("stopping the app at the first failing shader assert")
        })
}

/// `[blackbox] warn: NaN from ...`, `... Inf in ...`.
fn is_nan_line(line: &str) -> bool {
    line.strip_prefix("[blackbox] warn: ")
        .is_some_and(|m| m.starts_with("NaN ") || m.starts_with("Inf "))
}

/// The kinds of the reports under `dir`.
fn report_kinds(dir: &Path) -> Vec<Kind> {
    let mut kinds = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return kinds;
    };
    for e in entries.filter_map(Result::ok) {
        let file = e.path().join("report.json");
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Ok(r) = Report::from_json(&text) {
                kinds.push(r.kind);
            }
        }
    }
    kinds
}

/// A fresh folder for the logs: `--logs`, else `<temp>/blackbox-bisect-<pid>-<n>`.
fn logs_folder(opts: &BisectOptions) -> Result<PathBuf> {
    if let Some(dir) = &opts.logs {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        return Ok(dir.clone());
    }
    for n in 0.. {
        let dir = std::env::temp_dir().join(format!("blackbox-bisect-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
        }
    }
    unreachable!()
}

/// The command line that reproduces a run skipping `selector`.
fn reproduce(selector: &str, command: &[OsString]) -> String {
    let mut line = format!("VK_BLACKBOX_SKIP={} blackbox run --", shell_quote(selector));
    for a in command {
        line.push(' ');
        line.push_str(&shell_quote(&a.to_string_lossy()));
    }
    line
}

/// Runs the bisection; returns the exit code (0: a culprit named; 1: none could be).
pub fn bisect(opts: &BisectOptions) -> Result<i32> {
    let library = layer_lib::resolve(opts.layer.as_deref())?;
    let manifest = TempDir::new("blackbox-bisect")?;
    write_temp_manifest(manifest.path(), &library, ManifestKind::Implicit)?;
    let env = compose_env(ManifestKind::Implicit, manifest.path(), false, &|k| {
        std::env::var_os(k)
    });
    let logs = logs_folder(opts)?;
    let first_limit = opts.timeout.unwrap_or(600.0);
    let mut runner = Runner {
        opts,
        logs: logs.clone(),
        _manifest: manifest,
        env,
        runs: 0,
        expected: None,
        timeout: Duration::from_secs_f64(first_limit.max(0.1)),
        history: Vec::new(),
    };
    let symptom = opts.until;
    eprintln!(
        "blackbox bisect: looking for what brings {} in {}; logs in {}",
        symptom.describe(),
        opts.command[0].to_string_lossy(),
        logs.display()
    );

    // The full runs: the symptom must be there every time.
    let suspects_file = logs.join("suspects.jsonl");
    let first = runner.run(
        &[],
        Some(&suspects_file),
        "nothing skipped, listing suspects",
    )?;
    if opts.timeout.is_none() {
        runner.timeout = Duration::from_secs_f64((first.seconds * 3.0).max(10.0));
    }
    let mut seen = u32::from(first.shows(symptom));
    for _ in 1..opts.confirm {
        seen += u32::from(runner.run(&[], None, "nothing skipped")?.shows(symptom))
    }
    if seen == 0 {
        eprintln!(
            "blackbox bisect: {} did not show in {} full run(s): nothing to bisect (see the logs)",
            symptom.describe(),
            opts.confirm
        );
        return Ok(1);
    }
    if seen < opts.confirm {
        eprintln!(
            "blackbox bisect: {} showed in {seen} of {} full runs ({:.0}%): the symptom is flaky, and \
             bisecting it would blame whatever run happened to miss it. Make it steady (a fixed frame, a \
             seed), or raise --confirm to measure the rate.",
            symptom.describe(),
            opts.confirm,
            100.0 * f64::from(seen) / f64::from(opts.confirm)
        );
        return Ok(1);
    }

    let all = Suspect::read_all(&std::fs::read_to_string(&suspects_file).unwrap_or_default());
    let (kind, suspects) = pick_suspects(&all, opts.by);
    if suspects.is_empty() {
        eprintln!(
            "blackbox bisect: the app recorded no work under any {}: nothing to skip (try another --by)",
            kind.word()
        );
        return Ok(1);
    }
    eprintln!(
        "blackbox bisect: {} {} suspect(s); about {} more run(s)",
        suspects.len(),
        kind.word(),
        expected_runs(suspects.len()) + 1
    );
    // The search, and the check that keeps the culprit alone.
    runner.expected = Some(runner.runs + expected_runs(suspects.len()) as u32 + 1);
    let selectors: Vec<String> = suspects.iter().map(|s| s.selector.clone()).collect();
    let found = search(suspects.len(), |skipped| {
        let skip: Vec<String> = skipped.iter().map(|&i| selectors[i].clone()).collect();
        let what = if skipped.len() == 1 {
            format!("skipping {}", selectors[skipped[0]])
        } else {
            format!("skipping {} of {}", skipped.len(), selectors.len())
        };
        Ok(runner.run(&skip, None, &what)?.shows(symptom))
    })?;
    let (culprit, alone) = match found {
        Found::NotAmongSuspects => {
            eprintln!(
                "blackbox bisect: skipping every {} suspect still shows {}: its cause is not work Blackbox \
                 can skip by {} (try --by command, or --by shader)",
                kind.word(),
                symptom.describe(),
                kind.word()
            );
            print_history(&runner.history);
            return Ok(1);
        }
        Found::NotAlone(i) => (i, false),
        Found::Culprit(i) => (i, true),
    };
    let suspect = &suspects[culprit];
    // Its sole presence: skip every other suspect.
    let others: Vec<String> = selectors
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != culprit)
        .map(|(_, s)| s.clone())
        .collect();
    let brings_back = if others.is_empty() {
        true
    } else {
        runner
            .run(&others, None, &format!("keeping only {}", suspect.selector))?
            .shows(symptom)
    };

    let mut out = std::io::stdout().lock();
    writeln!(out, "blackbox bisect: {} runs", runner.runs)?;
    for line in history_lines(&runner.history) {
        writeln!(out, "{line}")?;
    }
    if alone {
        writeln!(
            out,
            "culprit: {} ({}): skipping it makes {} go away",
            suspect.selector,
            suspect.describe(),
            symptom.describe()
        )?;
    } else {
        writeln!(
            out,
            "no single culprit: the halving ended at {} ({}), but skipping it alone still shows {}: more \
             than one {} brings it",
            suspect.selector,
            suspect.describe(),
            symptom.describe(),
            kind.word()
        )?;
    }
    if brings_back {
        writeln!(
            out,
            "check: with every other {} skipped it still brings {}",
            kind.word(),
            symptom.describe()
        )?;
    } else {
        writeln!(
            out,
            "check: with every other {} skipped it does not bring {}: it needs work before it too (an \
             earlier pass's writes, say)",
            kind.word(),
            symptom.describe()
        )?;
    }
    writeln!(
        out,
        "reproduce without it: {}",
        reproduce(&suspect.selector, &opts.command)
    )?;
    writeln!(out, "logs: {}", logs.display())?;
    Ok(if alone { 0 } else { 1 })
}

fn print_history(history: &[(String, bool, PathBuf)]) {
    for line in history_lines(history) {
        eprintln!("{line}");
    }
}

/// `  run  k  what was skipped  seen|gone  (folder)`, the columns as wide as the longest line needs.
fn history_lines(history: &[(String, bool, PathBuf)]) -> Vec<String> {
    let width = history
        .iter()
        .map(|(what, ..)| what.len())
        .max()
        .unwrap_or(0);
    history
        .iter()
        .enumerate()
        .map(|(i, (what, shows, dir))| {
            format!(
                "  run {:>2}  {what:<width$}  {}  ({})",
                i + 1,
                if *shows { "seen" } else { "gone" },
                dir.display()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `search` with one culprit among `n`: the symptom shows unless the culprit is skipped.
    fn one_culprit(n: usize, culprit: usize) -> (Found, usize) {
        let mut runs = 0;
        let found = search(n, |skipped| {
            runs += 1;
            Ok(!skipped.contains(&culprit))
        })
        .unwrap();
        (found, runs)
    }

    #[test]
    fn finds_every_single_culprit_in_about_log2_runs() {
        for n in [1, 2, 3, 7, 16, 17, 100] {
            for culprit in 0..n {
                let (found, runs) = one_culprit(n, culprit);
                assert_eq!(found, Found::Culprit(culprit), "n {n}");
                assert!(runs <= expected_runs(n), "n {n}: {runs} runs");
            }
        }
    }

    #[test]
    fn a_culprit_the_last_halving_skipped_alone_is_not_run_again() {
        // 0 of 4: all, then [0, 1], then [0], where the symptom went: no fourth run of [0].
        let mut skips = Vec::new();
        let found = search(4, |skipped| {
            skips.push(skipped.to_vec());
            Ok(!skipped.contains(&0))
        })
        .unwrap();
        assert_eq!(found, Found::Culprit(0));
        assert_eq!(skips, [vec![0, 1, 2, 3], vec![0, 1], vec![0]]);
        // 1 of 4: [0] showed the symptom, so 1 was never skipped alone: it is checked.
        let (found, runs) = one_culprit(4, 1);
        assert_eq!((found, runs), (Found::Culprit(1), 4));
    }

    #[test]
    fn a_cause_outside_the_suspects_and_two_culprits_are_said_so() {
        assert_eq!(search(8, |_| Ok(true)).unwrap(), Found::NotAmongSuspects);
        // Shows while either 2 or 5 runs.
        let found = search(8, |s| Ok(!(s.contains(&2) && s.contains(&5)))).unwrap();
        assert!(matches!(found, Found::NotAlone(_)), "{found:?}");
    }

    #[test]
    fn outcomes_and_symptoms() {
        let hang = Outcome {
            code: Some(0),
            reports: vec![Kind::Hang],
            ..Default::default()
        };
        assert!(hang.shows(Symptom::Hang) && hang.shows(Symptom::Report));
        assert!(!hang.shows(Symptom::Crash) && !hang.shows(Symptom::Exit));
        let killed = Outcome {
            timed_out: true,
            ..Default::default()
        };
        assert!(killed.shows(Symptom::Hang) && !killed.shows(Symptom::Crash));
        let segv = Outcome {
            signal: Some(11),
            reports: vec![Kind::Signal],
            ..Default::default()
        };
        assert!(segv.shows(Symptom::Crash) && segv.shows(Symptom::Exit));
        assert_eq!(
            segv.summary(),
            "killed by signal 11 (SIGSEGV), 1 fatal signal report(s)"
        );
        assert!(is_nan_line(
            "[blackbox] warn: NaN from sqrt() at a.comp:3: operands -1 -> NaN"
        ));
        assert!(!is_nan_line("bb-testapp: NaN from the app"));
        assert!(is_assert_line(
            "[blackbox] warn: assert 7 failed at a.comp:9: x"
        ));
    }

    #[test]
    fn reproduce_lines_quote_for_the_shell() {
        let cmd: Vec<OsString> = ["./app", "--scene", "it's here"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(
            reproduce("label=pass 3", &cmd),
            r"VK_BLACKBOX_SKIP='label=pass 3' blackbox run -- ./app --scene 'it'\''s here'"
        );
        assert_eq!(shell_quote("pipeline:sky"), "pipeline:sky");
    }
}
