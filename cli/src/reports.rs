//! Finding and reading the reports the layer writes, and `blackbox report`, which prints one.
//!
//! The layer writes each report into a folder `<output>/<app>-<pid>-<n>/` holding `report.json` and
//! `report.txt`. Reports travel between machines and users, so this module reads them as untrusted
//! ([`crate::walk`]): below a folder given on the command line no link is followed, a file is read only
//! if it is a regular file of at most [`walk::MAX_REPORT_BYTES`], and each file skipped is said on stderr
//! with its reason (the first [`MAX_SKIPS_SHOWN`], then a count by reason). What is read is parsed by
//! [`Report::from_json_bytes`] and printed by [`blackbox_report::text::render`], which shows every
//! string escaped; paths and reasons printed here are escaped the same way.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use blackbox_report::untrusted::shown;
use blackbox_report::Report;

pub use crate::walk::io_reason;
use crate::walk::{self, Dir, Found, Skip};

/// The file name of a report's JSON form.
pub const REPORT_JSON: &str = "report.json";

/// Skipped files and unreadable reports named one by one on stderr; the rest are counted.
pub const MAX_SKIPS_SHOWN: u64 = 20;

/// When `report` colours its text (`--color`; the variants' docs are its help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// When stdout is a terminal and NO_COLOR is not set
    Auto,
    Always,
    Never,
}

impl ColorWhen {
    pub fn enabled(self) -> bool {
        match self {
            ColorWhen::Always => true,
            ColorWhen::Never => false,
            ColorWhen::Auto => {
                // SAFETY: isatty only inspects the descriptor.
                let tty = unsafe { libc::isatty(1) } == 1;
                tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}

/// What `blackbox report` was asked (its options and their help).
#[derive(Debug, clap::Args)]
pub struct ReportOptions {
    /// A report folder, its report.json, or a folder of report folders (then the newest report in it)
    #[arg(value_name = "PATH")]
    pub path: PathBuf,
    /// Print the report as JSON (read and written again: normalised, unknown fields dropped)
    #[arg(long)]
    pub json: bool,
    /// Colour the text
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorWhen::Auto)]
    pub color: ColorWhen,
}

/// Reads a report named by its path (a link there is followed: the caller chose the file); the error is
/// the reason alone (the caller names the file).
pub fn load(path: &Path) -> Result<Report, String> {
    parse(walk::read_path(path).map_err(|why| why.to_string())?)
}

/// Parses a report's bytes; the error is the reason on one line.
pub fn parse(bytes: Vec<u8>) -> Result<Report, String> {
    Report::from_json_bytes(&bytes).map_err(|e| one_line(&e.to_string()))
}

/// A path as printed: escaped (folder names may come from anyone).
pub fn path_shown(path: &Path) -> String {
    shown(&path.display().to_string()).to_string()
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Writes `text` to stdout; a closed pipe (`blackbox report x | head`) is not an error.
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to stdout")
        }
        _ => Ok(()),
    }
}

/// `blackbox report`.
pub fn report(opts: &ReportOptions) -> anyhow::Result<i32> {
    let (report, file) = find(&opts.path)?;
    let text = if opts.json {
        let mut json = report.to_json();
        json.push('\n');
        json
    } else {
        // Files beside the report (a frame's images) are shown by their paths.
        let folder = file.parent().filter(|p| !p.as_os_str().is_empty());
        blackbox_report::text::render_in(&report, opts.color.enabled(), folder)
    };
    print_stdout(&text)?;
    Ok(0)
}

/// The report at `path`: a `report.json` file (or any file holding one), a report folder, or a folder of
/// report folders (the newest report in it, by its time, with a note on stderr); with the file it was read
/// from.
fn find(path: &Path) -> anyhow::Result<(Report, PathBuf)> {
    let shown_path = path_shown(path);
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{shown_path}: no such file or folder")
        }
        Err(e) => bail!("cannot read {shown_path}: {}", io_reason(&e)),
    };
    if !meta.is_dir() {
        return load(path)
            .map(|r| (r, path.to_path_buf()))
            .map_err(|why| anyhow::anyhow!("{shown_path}: {why}"));
    }
    let dir = Dir::open(path)
        .map_err(|e| anyhow::anyhow!("cannot read {shown_path}: {}", io_reason(&e)))?;
    // A report folder: its own report.json (not through a link).
    let json = path.join(REPORT_JSON);
    match dir.kind_of(c"report.json") {
        Ok(libc::S_IFREG) => {
            let bytes = dir.read_file(c"report.json");
            return bytes
                .map_err(|why| why.to_string())
                .and_then(parse)
                .map(|r| (r, json.clone()))
                .map_err(|why| anyhow::anyhow!("{}: {why}", path_shown(&json)));
        }
        Ok(libc::S_IFLNK) => bail!("{}: {}", path_shown(&json), Skip::Link),
        Ok(libc::S_IFDIR) | Err(_) => {}
        Ok(_) => bail!("{}: {}", path_shown(&json), Skip::NotAFile),
    }

    // A folder of report folders: the newest readable report.
    let mut newest: Option<(u64, PathBuf, Report)> = None;
    let (mut found, mut unreadable) = (0u64, 0u64);
    let mut first_unreadable: Option<(PathBuf, String)> = None;
    let mut scan = Scan::new();
    scan.dir(dir, path, &mut |file, bytes, parts| {
        found += 1;
        match bytes.map_err(|why| why.to_string()).and_then(parse) {
            Ok(r) => {
                let better = newest
                    .as_ref()
                    .is_none_or(|(ms, p, _)| (r.unix_ms, file) > (*ms, p.as_path()));
                if better {
                    newest = Some((r.unix_ms, file.to_path_buf(), r));
                }
            }
            Err(why) => {
                unreadable += 1;
                parts.unreadable(file, &why);
                first_unreadable.get_or_insert((file.to_path_buf(), why));
            }
        }
    });
    scan.finish();

    let Some((_, file, report)) = newest else {
        match (unreadable, first_unreadable) {
            (0, _) | (_, None) => bail!(
                "no Blackbox report in {shown_path} (no {REPORT_JSON} in it or in any folder below it that \
                 could be read)"
            ),
            (1, Some((file, why))) => bail!("{}: {}", path_shown(&file), shown(&why)),
            (n, Some((file, why))) => bail!(
                "no readable Blackbox report in {shown_path}: all {n} {REPORT_JSON} files are unreadable, e.g. \
                 {}: {}",
                path_shown(&file),
                shown(&why)
            ),
        }
    };
    let folder = file.parent().unwrap_or(&file);
    let others = found - 1;
    let unreadable_note = match unreadable {
        0 => String::new(),
        n => format!(", {n} of them unreadable"),
    };
    eprintln!(
        "blackbox: showing the newest report in {shown_path}: {} ({}); {others} other report(s) \
         there{unreadable_note}",
        path_shown(folder),
        shown(&report.time)
    );
    Ok((report, file))
}

/// A counter line on stderr while many files are scanned, only when stderr is a terminal.
pub struct Progress {
    tty: bool,
    last: Option<Instant>,
    shown: bool,
    /// Directory entries looked at.
    pub files: u64,
    /// `report.json` files found.
    pub reports: u64,
}

/// Files scanned before the counter appears.
const PROGRESS_AFTER: u64 = 1000;

impl Progress {
    fn new() -> Progress {
        Progress {
            // SAFETY: isatty only inspects the descriptor.
            tty: unsafe { libc::isatty(2) } == 1,
            last: None,
            shown: false,
            files: 0,
            reports: 0,
        }
    }

    fn tick(&mut self) {
        self.files += 1;
        if !self.tty || self.files <= PROGRESS_AFTER {
            return;
        }
        if self
            .last
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return;
        }
        self.last = Some(Instant::now());
        self.shown = true;
        eprint!(
            "\r\x1b[Kblackbox: scanned {} files, {} reports...",
            self.files, self.reports
        );
    }

    /// Prints a line on stderr, clearing the counter first.
    pub fn message(&mut self, line: &str) {
        self.finish();
        eprintln!("{line}");
    }

    /// Clears the counter line, if shown.
    pub fn finish(&mut self) {
        if self.shown {
            eprint!("\r\x1b[K");
            self.shown = false;
        }
    }
}

/// Files skipped and reports that could not be read: the first [`MAX_SKIPS_SHOWN`] said one by one on
/// stderr, all counted by kind for the summary.
#[derive(Default)]
pub struct Skipped {
    shown: u64,
    by_kind: BTreeMap<&'static str, u64>,
}

impl Skipped {
    /// Notes one (`line` is already escaped; `kind` is its summary's word).
    pub fn note(&mut self, progress: &mut Progress, line: &str, kind: &'static str) {
        *self.by_kind.entry(kind).or_default() += 1;
        if self.shown < MAX_SKIPS_SHOWN {
            self.shown += 1;
            progress.message(&format!("blackbox: {line}"));
        }
    }

    /// The line that counts what was not said one by one, if anything was left out.
    pub fn summary(&self) -> Option<String> {
        let total: u64 = self.by_kind.values().sum();
        if total <= self.shown {
            return None;
        }
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        Some(format!(
            "blackbox: {total} entries skipped or unreadable in all ({}); the first {} are named above",
            kinds.join(", "),
            self.shown
        ))
    }
}

/// A scan of the folders and files named on a command line for `report.json` files, each folder read
/// once (so overlapping arguments do not count twice), with the progress line and the skipped files.
pub struct Scan {
    seen_dirs: HashSet<(u64, u64)>,
    seen_files: HashSet<(u64, u64)>,
    pub parts: ScanParts,
}

/// What a callback of a [`Scan`] may use while the walk holds the rest: the progress line and the
/// skipped files.
pub struct ScanParts {
    pub progress: Progress,
    pub skipped: Skipped,
}

impl ScanParts {
    /// Says that `file` is not a report Blackbox can read, and why.
    pub fn unreadable(&mut self, file: &Path, why: &str) {
        self.skipped.note(
            &mut self.progress,
            &format!("unreadable report {}: {}", path_shown(file), shown(why)),
            "unreadable reports",
        );
    }
}

/// What a scan hands on for each `report.json`: its path, its bytes (or why they were not read) and the
/// scan's parts, for messages.
pub type Each<'a> = dyn FnMut(&Path, Result<Vec<u8>, Skip>, &mut ScanParts) + 'a;

impl Scan {
    pub fn new() -> Scan {
        Scan {
            seen_dirs: HashSet::new(),
            seen_files: HashSet::new(),
            parts: ScanParts {
                progress: Progress::new(),
                skipped: Skipped::default(),
            },
        }
    }

    /// Calls `each` for every `report.json` in `dir` (opened from `path`) and below; says what it skips.
    pub fn dir(&mut self, dir: Dir, path: &Path, each: &mut Each<'_>) {
        // Both callbacks of the walk use the parts, one at a time.
        let parts = std::cell::RefCell::new(&mut self.parts);
        walk::walk(
            dir,
            path,
            &mut self.seen_dirs,
            &mut || parts.borrow_mut().progress.tick(),
            &mut |found| {
                let parts = &mut **parts.borrow_mut();
                match found {
                    Found::Report(file, bytes) => {
                        parts.progress.reports += 1;
                        each(file, bytes, parts);
                    }
                    Found::Skipped(entry, why) => {
                        let line = format!("skipped {}: {why}", path_shown(entry));
                        parts.skipped.note(&mut parts.progress, &line, why.kind());
                    }
                }
            },
        );
    }

    /// Calls `each` for a file named on the command line, unless it was already seen.
    pub fn file(&mut self, file: &Path, each: &mut Each<'_>) {
        use std::os::unix::fs::MetadataExt;
        let new = std::fs::metadata(file)
            .map(|m| self.seen_files.insert((m.dev(), m.ino())))
            .unwrap_or(true);
        if new {
            self.parts.progress.reports += 1;
            each(file, walk::read_path(file), &mut self.parts);
        }
    }

    /// Clears the progress line and prints the count of what was not named one by one.
    pub fn finish(&mut self) {
        self.parts.progress.finish();
        if let Some(line) = self.parts.skipped.summary() {
            eprintln!("{line}");
        }
    }
}
