//! Finding and reading the reports the layer writes, and `blackbox report`, which prints one.
//!
//! The layer writes each report into a folder `<output>/<app>-<pid>-<n>/` holding `report.json` and
//! `report.txt`; this module finds `report.json` files under folders (following symbolic links, each folder
//! and file once), reads them back with [`Report::from_json`] and renders them with
//! [`blackbox_report::text::render`].

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use blackbox_report::Report;

/// The file name of a report's JSON form.
pub const REPORT_JSON: &str = "report.json";

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

/// Reads a report; the error is the reason alone (the caller names the file).
pub fn load(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|e| io_reason(&e))?;
    Report::from_json(&text).map_err(|e| one_line(&e.to_string()))
}

/// An I/O error in words, without Rust's `(os error N)` suffix.
pub fn io_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_lowercase(),
        None => text,
    }
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
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{}: no such file or folder", path.display())
        }
        Err(e) => bail!("cannot read {}: {}", path.display(), io_reason(&e)),
    };
    let direct = if meta.is_dir() {
        let json = path.join(REPORT_JSON);
        json.is_file().then_some(json)
    } else {
        Some(path.to_path_buf())
    };
    if let Some(file) = direct {
        return match load(&file) {
            Ok(r) => Ok((r, file)),
            Err(why) => bail!("{}: {why}", file.display()),
        };
    }

    // A folder of report folders: the newest readable report.
    let mut newest: Option<(u64, PathBuf, Report)> = None;
    let (mut found, mut unreadable) = (0u64, Vec::new());
    let mut walk = Walk::new();
    walk.dir(path, &mut |file, _progress| {
        found += 1;
        match load(file) {
            Ok(r) => {
                let better = newest
                    .as_ref()
                    .is_none_or(|(ms, p, _)| (r.unix_ms, file) > (*ms, p.as_path()));
                if better {
                    newest = Some((r.unix_ms, file.to_path_buf(), r));
                }
            }
            Err(why) => unreadable.push((file.to_path_buf(), why)),
        }
    })
    .map_err(|e| anyhow::anyhow!("cannot read {}: {}", path.display(), io_reason(&e)))?;
    walk.progress.finish();

    let Some((_, file, report)) = newest else {
        match unreadable.as_slice() {
            [] => bail!(
                "no Blackbox report in {} (no {REPORT_JSON} in it or in any folder below it)",
                path.display()
            ),
            [(file, why)] => bail!("{}: {why}", file.display()),
            [(file, why), ..] => bail!(
                "no readable Blackbox report in {}: all {} {REPORT_JSON} files are unreadable, e.g. {}: {why}",
                path.display(),
                unreadable.len(),
                file.display()
            ),
        }
    };
    let folder = file.parent().unwrap_or(&file);
    let others = found - 1;
    let unreadable_note = match unreadable.len() {
        0 => String::new(),
        n => format!(", {n} of them unreadable"),
    };
    eprintln!(
        "blackbox: showing the newest report in {}: {} ({}); {others} other report(s) there{unreadable_note}",
        path.display(),
        folder.display(),
        report.time
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

/// A recursive walk for `report.json` files, following symbolic links but reading each folder (and
/// reporting each file) once, so link loops end and overlapping arguments do not count twice.
pub struct Walk {
    seen: HashSet<(u64, u64)>,
    pub progress: Progress,
}

impl Walk {
    pub fn new() -> Walk {
        Walk {
            seen: HashSet::new(),
            progress: Progress::new(),
        }
    }

    /// Calls `found` for each `report.json` in `dir` and below, in name order. An error reading `dir`
    /// itself is returned; folders below it that cannot be read are warned about on stderr.
    pub fn dir(
        &mut self,
        dir: &Path,
        found: &mut dyn FnMut(&Path, &mut Progress),
    ) -> std::io::Result<()> {
        let mut stack = vec![dir.to_path_buf()];
        let mut top = true;
        while let Some(folder) = stack.pop() {
            let entries = std::fs::metadata(&folder).and_then(|meta| {
                if !self.seen.insert((meta.dev(), meta.ino())) {
                    return Ok(Vec::new());
                }
                let mut entries = std::fs::read_dir(&folder)?
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .collect::<Vec<_>>();
                entries.sort();
                Ok(entries)
            });
            let entries = match entries {
                Ok(e) => e,
                Err(e) if top => return Err(e),
                Err(e) => {
                    self.progress.message(&format!(
                        "blackbox: warning: cannot read folder {}: {}",
                        folder.display(),
                        io_reason(&e)
                    ));
                    continue;
                }
            };
            top = false;
            let mut folders = Vec::new();
            for path in entries {
                self.progress.tick();
                // Follows symbolic links; a dangling one is skipped.
                let Ok(meta) = std::fs::metadata(&path) else {
                    continue;
                };
                if meta.is_dir() {
                    folders.push(path);
                } else if path.file_name().is_some_and(|n| n == REPORT_JSON)
                    && meta.is_file()
                    && self.seen.insert((meta.dev(), meta.ino()))
                {
                    self.progress.reports += 1;
                    found(&path, &mut self.progress);
                }
            }
            stack.extend(folders.into_iter().rev());
        }
        Ok(())
    }

    /// Calls `found` for a file named on the command line, unless it was already seen.
    pub fn file(&mut self, file: &Path, found: &mut dyn FnMut(&Path, &mut Progress)) {
        let new = std::fs::metadata(file)
            .map(|m| self.seen.insert((m.dev(), m.ino())))
            .unwrap_or(true);
        if new {
            self.progress.reports += 1;
            found(file, &mut self.progress);
        }
    }
}
