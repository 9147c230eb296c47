//! `VK_BLACKBOX_SUSPECTS=FILE` (set by `blackbox bisect`): every label, pipeline, shader and command index
//! under which a command buffer records work is appended to FILE once, as a JSON line
//! ([`blackbox_report::suspects::Suspect`]), so that the bisection can skip each by its selector.
//!
//! Only work commands are noted (what `VK_BLACKBOX_SKIP` can skip), at record time, and at most
//! [`MAX_SUSPECTS`] of them: a real app records thousands of command indices.

use blackbox_report::suspects::{Suspect, SuspectKind};
use parking_lot::Mutex;
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

/// The most suspects written per process.
const MAX_SUSPECTS: usize = 10_000;

/// Selectors already written.
static WRITTEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// The work being recorded, as [`note`] needs it.
pub struct Work<'a> {
    /// The open label scopes, outermost first.
    pub labels: Vec<&'a str>,
    /// `[12] vkCmdDispatch`.
    pub command: String,
    /// Its index in the command buffer.
    pub index: u32,
    /// The bound pipeline: the name `pipeline:` matches (debug name, else stages and shader ids) and how
    /// log lines show it.
    pub pipeline: Option<(String, String)>,
    /// The pipeline's shaders: id and sources.
    pub shaders: Vec<(String, Vec<String>)>,
}

/// Appends to `file` every suspect of `work` not written before.
pub fn note(file: &Path, work: Work<'_>) {
    let mut written = WRITTEN.lock();
    let written = written.get_or_insert_with(HashSet::new);
    if written.len() >= MAX_SUSPECTS {
        return;
    }
    let labels: Vec<String> = work.labels.iter().map(|l| l.to_string()).collect();
    let shaders: Vec<String> = work
        .shaders
        .iter()
        .map(|(id, sources)| {
            if sources.is_empty() {
                id.clone()
            } else {
                format!("{id} ({})", sources.join(", "))
            }
        })
        .collect();
    let suspect = |kind, selector: String| Suspect {
        kind,
        selector,
        labels: labels.clone(),
        command: work.command.clone(),
        pipeline: work.pipeline.as_ref().map(|(_, shown)| shown.clone()),
        shaders: shaders.clone(),
    };
    let mut new = Vec::new();
    if let Some(innermost) = work.labels.last() {
        new.push(suspect(SuspectKind::Label, format!("label={innermost}")));
    }
    if let Some((matched, _)) = &work.pipeline {
        new.push(suspect(
            SuspectKind::Pipeline,
            format!("pipeline:{matched}"),
        ));
    }
    for (id, _) in &work.shaders {
        new.push(suspect(SuspectKind::Shader, format!("shader:{id}")));
    }
    new.push(suspect(
        SuspectKind::Command,
        format!("command:{}", work.index),
    ));
    let mut lines = String::new();
    for s in new {
        if written.len() < MAX_SUSPECTS && written.insert(s.selector.clone()) {
            lines.push_str(&s.to_json_line());
            lines.push('\n');
        }
    }
    if lines.is_empty() {
        return;
    }
    let appended = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(file)
        .and_then(|mut f| f.write_all(lines.as_bytes()));
    if let Err(e) = appended {
        warn!(
            "VK_BLACKBOX_SUSPECTS={}: cannot append ({e}); blackbox bisect will see fewer suspects",
            file.display()
        );
    }
}
