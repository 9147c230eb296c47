//! `blackbox triage`: groups the reports under folders by crash signature, one line per bug.
//!
//! The reports are read as [`crate::reports`] reads them (untrusted: no link followed below a folder given,
//! each file capped, skips said). What a group keeps of a report's strings is cut to
//! [`untrusted::KEEP_BYTES`] each, at most [`MAX_NAMES`] app and device names per group, and the groups
//! together at most [`MEMORY_BUDGET`] bytes: past it, reports of signatures not seen yet are counted, not
//! grouped, and the summary says so. Everything printed is escaped ([`untrusted::shown`]); `--json` prints
//! the kept text exactly.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use blackbox_report::untrusted::{self, shown};
use blackbox_report::{Location, Report};

use crate::reports::{self, path_shown, Scan};
use crate::walk::{Dir, Skip};

/// App and device names kept per group; more are counted as "N+".
pub const MAX_NAMES: usize = 100;
/// Bytes the groups may keep in all (a guess of each group's size: its strings and some overhead).
pub const MEMORY_BUDGET: usize = 256 << 20;

/// What `blackbox triage` was asked (its options and their help).
#[derive(Debug, clap::Args)]
pub struct TriageOptions {
    /// Folders to read reports from (and below), or report.json files
    #[arg(value_name = "DIR", required = true)]
    pub dirs: Vec<OsString>,
    /// Print the groups as a JSON array (the summary line goes to stderr)
    #[arg(long)]
    pub json: bool,
    /// Only show signatures with at least N reports
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub min_count: u64,
}

/// The reports of one signature.
#[derive(Debug)]
struct Group {
    signature: String,
    signature_text: String,
    kind: String,
    count: u64,
    /// Hang reports whose work moved again (`resumed`): slow work rather than hangs.
    resumed: u64,
    first_ms: u64,
    first_seen: String,
    last_ms: u64,
    last_seen: String,
    apps: Names,
    devices: Names,
    /// From the newest report.
    in_flight: String,
    /// The newest report's folder.
    sample: PathBuf,
}

impl Group {
    fn new(report: &Report, file: &Path) -> Group {
        Group {
            signature: kept(&report.signature),
            signature_text: kept(&report.signature_text),
            kind: kind_word(report),
            count: 0,
            resumed: 0,
            first_ms: u64::MAX,
            first_seen: String::new(),
            last_ms: 0,
            last_seen: String::new(),
            apps: Names::default(),
            devices: Names::default(),
            in_flight: String::new(),
            sample: folder_of(file),
        }
    }

    fn add(&mut self, report: &Report, file: &Path) {
        self.count += 1;
        self.resumed += u64::from(report.resumed.is_some());
        let time = if report.time.is_empty() {
            blackbox_report::rfc3339(report.unix_ms)
        } else {
            report.time.clone()
        };
        if report.unix_ms < self.first_ms {
            self.first_ms = report.unix_ms;
            self.first_seen = time.clone();
        }
        if self.count == 1 || report.unix_ms >= self.last_ms {
            self.last_ms = report.unix_ms;
            self.last_seen = time;
            self.sample = folder_of(file);
            self.kind = kind_word(report);
            self.signature_text = kept(&report.signature_text);
            self.in_flight = kept(&in_flight_summary(report));
        }
        self.apps.insert(&report.app.name);
        self.devices.insert(&report.device.name);
    }

    /// A guess of the bytes the group keeps.
    fn size(&self) -> usize {
        512 + self.signature.len()
            + self.signature_text.len()
            + self.in_flight.len()
            + self.first_seen.len()
            + self.last_seen.len()
            + self.sample.as_os_str().len()
            + self.apps.bytes
            + self.devices.bytes
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count,
            "signature": self.signature,
            "signature_text": self.signature_text,
            "kind": self.kind,
            "resumed": self.resumed,
            "first_seen": self.first_seen,
            "first_seen_unix_ms": self.first_ms,
            "last_seen": self.last_seen,
            "last_seen_unix_ms": self.last_ms,
            "apps": self.apps.names.len(),
            "devices": self.devices.names.len(),
            "app_names": self.apps.names,
            "device_names": self.devices.names,
            "names_capped": self.apps.capped || self.devices.capped,
            "in_flight": self.in_flight,
            "sample": self.sample.display().to_string(),
        })
    }
}

/// A string of a report as a group keeps it: at most [`untrusted::KEEP_BYTES`], the cut said.
fn kept(text: &str) -> String {
    untrusted::keep(text.to_owned())
}

/// The distinct names of a group, at most [`MAX_NAMES`].
#[derive(Debug, Default)]
struct Names {
    names: BTreeSet<String>,
    /// More names were seen than kept.
    capped: bool,
    bytes: usize,
}

impl Names {
    fn insert(&mut self, name: &str) {
        if self.names.contains(name) {
            return;
        }
        if self.names.len() >= MAX_NAMES {
            self.capped = true;
            return;
        }
        let name = kept(name);
        self.bytes += name.len() + 48;
        self.names.insert(name);
    }

    /// The count as shown: `100+` when capped.
    fn count(&self) -> String {
        let plus = if self.capped { "+" } else { "" };
        format!("{}{plus}", self.names.len())
    }
}

/// The report's folder, as the layer writes it.
fn folder_of(file: &Path) -> PathBuf {
    match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `device-lost`, `hang`, `signal` or `assert`: the JSON's word.
fn kind_word(report: &Report) -> String {
    match serde_json::to_value(report.kind) {
        Ok(serde_json::Value::String(s)) => s,
        _ => report.kind.describe().to_owned(),
    }
}

/// `labels > command [pipeline name]` of the first command in flight.
pub fn in_flight_summary(report: &Report) -> String {
    match report.in_flight.first() {
        Some(l) => location_summary(l),
        None => "none known".to_owned(),
    }
}

fn location_summary(l: &Location) -> String {
    let mut out = String::new();
    for label in &l.labels {
        let _ = write!(out, "{label} > ");
    }
    out.push_str(&l.command);
    if let Some(name) = l.pipeline.as_ref().and_then(|p| p.name.as_deref()) {
        let _ = write!(out, " [{name}]");
    }
    out
}

/// `blackbox triage`.
pub fn triage(opts: &TriageOptions) -> anyhow::Result<i32> {
    let mut groups: HashMap<String, Group> = HashMap::new();
    let (mut reports, mut unreadable, mut missing, mut ungrouped) = (0u64, 0u64, 0u64, 0u64);
    let mut kept_bytes = 0usize;
    let mut scan = Scan::new();
    let mut take = |file: &Path, bytes: Result<Vec<u8>, Skip>, parts: &mut reports::ScanParts| {
        let parsed = match bytes {
            Ok(bytes) => reports::parse(bytes),
            Err(why) => Err(why.to_string()),
        };
        match parsed {
            Ok(report) => {
                reports += 1;
                let key = kept(&report.signature);
                if let Some(group) = groups.get_mut(&key) {
                    let before = group.size();
                    group.add(&report, file);
                    kept_bytes = kept_bytes + group.size() - before;
                } else if kept_bytes < MEMORY_BUDGET {
                    let mut group = Group::new(&report, file);
                    group.add(&report, file);
                    kept_bytes += group.size() + key.len();
                    groups.insert(key, group);
                } else {
                    ungrouped += 1;
                }
            }
            Err(why) => {
                unreadable += 1;
                parts.unreadable(file, &why);
            }
        }
    };
    for dir in &opts.dirs {
        let path = Path::new(dir);
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                missing += 1;
                let why = if e.kind() == std::io::ErrorKind::NotFound {
                    "no such folder".to_owned()
                } else {
                    reports::io_reason(&e)
                };
                scan.parts
                    .progress
                    .message(&format!("blackbox: error: {}: {why}", path_shown(path)));
                continue;
            }
        };
        if !meta.is_dir() {
            scan.file(path, &mut take);
            continue;
        }
        match Dir::open(path) {
            Ok(top) => scan.dir(top, path, &mut take),
            Err(e) => {
                missing += 1;
                scan.parts.progress.message(&format!(
                    "blackbox: error: cannot read {}: {}",
                    path_shown(path),
                    reports::io_reason(&e)
                ));
            }
        }
    }
    scan.finish();

    let mut groups: Vec<Group> = groups.into_values().collect();
    let signatures = groups.len();
    groups.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(b.last_ms.cmp(&a.last_ms))
            .then_with(|| a.signature.cmp(&b.signature))
    });
    groups.retain(|g| g.count >= opts.min_count);

    let mut summary =
        format!("{reports} reports, {signatures} signatures ({unreadable} unreadable)");
    if ungrouped > 0 {
        let _ = write!(
            summary,
            "; {ungrouped} reports of further signatures counted but not grouped (the groups reached {} MiB)",
            MEMORY_BUDGET >> 20
        );
    }
    if opts.min_count > 1 {
        let _ = write!(
            summary,
            "; {} with at least {} reports shown",
            groups.len(),
            opts.min_count
        );
    }
    if opts.json {
        let array: Vec<serde_json::Value> = groups.iter().map(Group::to_json).collect();
        let mut text = untrusted::to_json_pretty(&array)?;
        text.push('\n');
        reports::print_stdout(&text)?;
        eprintln!("blackbox: {summary}");
    } else {
        let mut text = String::new();
        if reports == 0 {
            let dirs: Vec<String> = opts.dirs.iter().map(|d| path_shown(Path::new(d))).collect();
            let what = if unreadable > 0 { "no readable" } else { "no" };
            let _ = writeln!(text, "{what} Blackbox reports found in {}", dirs.join(", "));
        } else if groups.is_empty() {
            let _ = writeln!(text, "no signature has at least {} reports", opts.min_count);
        } else {
            table(&mut text, &groups);
        }
        let _ = writeln!(text, "{summary}");
        reports::print_stdout(&text)?;
    }
    Ok(if missing > 0 { 1 } else { 0 })
}

/// The header and one line per group, columns aligned; the sample path comes last, unpadded.
fn table(out: &mut String, groups: &[Group]) {
    let header = [
        "COUNT",
        "SIGNATURE",
        "KIND",
        "FIRST SEEN",
        "LAST SEEN",
        "APPS",
        "DEVICES",
        "IN FLIGHT",
        "SAMPLE",
    ];
    let rows: Vec<[String; 9]> = groups
        .iter()
        .map(|g| {
            [
                g.count.to_string(),
                shown(&g.signature).to_string(),
                match g.resumed {
                    0 => shown(&g.kind).to_string(),
                    n => format!("{} ({n} resumed)", shown(&g.kind)),
                },
                shown(&g.first_seen).to_string(),
                shown(&g.last_seen).to_string(),
                g.apps.count(),
                g.devices.count(),
                shown(&g.in_flight).to_string(),
                path_shown(&g.sample),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Numbers right-aligned, text left-aligned.
    let numeric = [true, false, false, false, false, true, true, false, false];
    let mut line = |cells: [&str; 9]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            let pad = widths[i].saturating_sub(cell.chars().count());
            if i == cells.len() - 1 {
                text.push_str(cell);
            } else if numeric[i] {
                text.push_str(&" ".repeat(pad));
                text.push_str(cell);
            } else {
                text.push_str(cell);
                text.push_str(&" ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", text.trim_end());
    };
    line(header);
    for row in &rows {
        line(row.each_ref().map(String::as_str));
    }
}
