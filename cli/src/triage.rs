//! `blackbox triage`: groups the reports under folders by crash signature, one line per bug.

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fmt::Write;
use std::path::{Path, PathBuf};

use blackbox_report::{Location, Report};

use crate::reports::{self, Walk};

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
    first_ms: u64,
    first_seen: String,
    last_ms: u64,
    last_seen: String,
    apps: BTreeSet<String>,
    devices: BTreeSet<String>,
    /// From the newest report.
    in_flight: String,
    /// The newest report's folder.
    sample: PathBuf,
}

impl Group {
    fn new(report: &Report, file: &Path) -> Group {
        Group {
            signature: report.signature.clone(),
            signature_text: report.signature_text.clone(),
            kind: kind_word(report),
            count: 0,
            first_ms: u64::MAX,
            first_seen: String::new(),
            last_ms: 0,
            last_seen: String::new(),
            apps: BTreeSet::new(),
            devices: BTreeSet::new(),
            in_flight: String::new(),
            sample: folder_of(file),
        }
    }

    fn add(&mut self, report: &Report, file: &Path) {
        self.count += 1;
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
            self.signature_text = report.signature_text.clone();
            self.in_flight = in_flight_summary(report);
        }
        self.apps.insert(report.app.name.clone());
        self.devices.insert(report.device.name.clone());
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "count": self.count,
            "signature": self.signature,
            "signature_text": self.signature_text,
            "kind": self.kind,
            "first_seen": self.first_seen,
            "first_seen_unix_ms": self.first_ms,
            "last_seen": self.last_seen,
            "last_seen_unix_ms": self.last_ms,
            "apps": self.apps.len(),
            "devices": self.devices.len(),
            "app_names": self.apps,
            "device_names": self.devices,
            "in_flight": self.in_flight,
            "sample": self.sample.display().to_string(),
        })
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
    let (mut reports, mut unreadable, mut missing) = (0u64, 0u64, 0u64);
    let mut walk = Walk::new();
    let mut take = |file: &Path, progress: &mut reports::Progress| match reports::load(file) {
        Ok(report) => {
            reports += 1;
            groups
                .entry(report.signature.clone())
                .or_insert_with(|| Group::new(&report, file))
                .add(&report, file);
        }
        Err(why) => {
            unreadable += 1;
            progress.message(&format!(
                "blackbox: unreadable report {}: {why}",
                file.display()
            ));
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
                walk.progress
                    .message(&format!("blackbox: error: {}: {why}", path.display()));
                continue;
            }
        };
        if !meta.is_dir() {
            walk.file(path, &mut take);
            continue;
        }
        if let Err(e) = walk.dir(path, &mut take) {
            missing += 1;
            walk.progress.message(&format!(
                "blackbox: error: cannot read {}: {}",
                path.display(),
                reports::io_reason(&e)
            ));
        }
    }
    walk.progress.finish();

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
        let mut text = serde_json::to_string_pretty(&array)?;
        text.push('\n');
        reports::print_stdout(&text)?;
        eprintln!("blackbox: {summary}");
    } else {
        let mut text = String::new();
        if reports == 0 {
            let dirs: Vec<String> = opts
                .dirs
                .iter()
                .map(|d| Path::new(d).display().to_string())
                .collect();
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
                g.signature.clone(),
                g.kind.clone(),
                g.first_seen.clone(),
                g.last_seen.clone(),
                g.apps.len().to_string(),
                g.devices.len().to_string(),
                g.in_flight.clone(),
                g.sample.display().to_string(),
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
