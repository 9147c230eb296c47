//! The Khronos validation layer's settings for every end-to-end run, and its messages read back.
//!
//! [`vulkan_command`](crate::vulkan_command) writes [`SETTINGS`] into the test's temp folder and points
//! `VK_LAYER_SETTINGS_PATH` at it, so that wherever a test puts the validation layer in the chain (below
//! Blackbox, below the fault layer, or alone for a reference run), it runs with synchronization validation
//! and best practices on, logs every message of every severity to stdout, and never drops repeats. The
//! layer confirms the settings once per instance with its status message (`Khronos Validation Layer
//! Active: ... Current Enables: ...`), which [`ValidationLog::assert_enabled`] looks for.
//!
//! [`ValidationLog::parse`] reads those messages back from a run's stdout (the layer 1.3.239's log format:
//! `<id>(<SEVERITY> / <TYPE>): msgNum: <n> - <text>`, then indented lines). Errors and warnings (best
//! practices' performance warnings included) count; information messages (the status message, and best
//! practices' `NonSuccess-Result` for a poll that found work still pending) are read but never fail a test.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `vk_layer_settings.txt` for the Khronos validation layer 1.3.239 (keys as its manifest lists them).
pub const SETTINGS: &str = "\
# Written by the Blackbox end-to-end tests (tests/integration/src/validation.rs).
khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT
khronos_validation.report_flags = error,warn,perf,info
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.log_filename = stdout
khronos_validation.enable_message_limit = false
";

/// The message id of the validation layer's status message, logged once per instance.
pub const STATUS_ID: &str = "UNASSIGNED-khronos-validation-createinstance-status-message";

/// What the status message says when [`SETTINGS`] took effect.
pub const STATUS_ENABLES: &str =
    "Current Enables: VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT, \
                                  VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION";

/// Best practices' warning for an instance that enables a debugging extension. The test app enables
/// VK_EXT_debug_utils on every instance it makes (to name objects and count messages), so this one is its
/// own; [`ValidationLog::unexpected`] lets it pass once per instance when it names that extension.
pub const DEBUG_UTILS_SPECIAL_USE: &str =
    "UNASSIGNED-BestPractices-vkCreateInstance-specialuse-extension-debugging";

/// Writes [`SETTINGS`] as `dir/vk_layer_settings.txt`; returns its path.
pub fn write_settings(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).expect("settings dir");
    let path = dir.join("vk_layer_settings.txt");
    crate::write_atomically(&path, SETTINGS);
    path
}

/// Writes [`SETTINGS`] logging to `dir/<name>.validation.log` rather than stdout, as
/// `dir/<name>.vk_layer_settings.txt`: for programs that print lines of their own a test reads, which
/// the layer's messages would split where both write to stdout. Returns the settings' path and the log's.
pub fn write_settings_logging_to_file(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).expect("settings dir");
    let log = dir.join(format!("{name}.validation.log"));
    let path = dir.join(format!("{name}.vk_layer_settings.txt"));
    let settings = SETTINGS.replace(
        "log_filename = stdout",
        &format!("log_filename = {}", log.display()),
    );
    crate::write_atomically(&path, settings);
    (path, log)
}

/// A message's severity, as the layer's log names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Info,
    Verbose,
}

impl Severity {
    fn parse(word: &str) -> Option<Severity> {
        Some(match word {
            "ERROR" => Severity::Error,
            "WARN" => Severity::Warning,
            "INFO" => Severity::Info,
            "VERBOSE" => Severity::Verbose,
            _ => return None,
        })
    }

    /// Errors and warnings fail a test; information does not.
    pub fn counts(self) -> bool {
        matches!(self, Severity::Error | Severity::Warning)
    }
}

/// One message of the layer's log.
#[derive(Clone, Debug)]
pub struct Message {
    /// Its id: a VUID, `SYNC-HAZARD-...`, `UNASSIGNED-BestPractices-...`.
    pub id: String,
    pub severity: Severity,
    /// `SPEC`, `PERF` or `GENERAL`.
    pub kind: String,
    /// The whole message as logged: the first line and its indented continuation (objects included).
    pub text: String,
}

/// The validation layer's messages in a run's stdout, in order.
#[derive(Clone, Debug, Default)]
pub struct ValidationLog {
    pub messages: Vec<Message>,
    /// Lines outside any parsed message that still look like validation output (another format, or a
    /// message the parser did not recognise): never silently ignored.
    pub stray: Vec<String>,
}

/// Words that mark validation output in any of its formats.
const NEEDLES: &[&str] = &[
    "Validation Error",
    "Validation Warning",
    "Validation Performance",
    "VUID-",
    "SYNC-HAZARD",
    "BestPractices",
];

/// Whether `line` looks like validation output.
pub fn looks_like_validation(line: &str) -> bool {
    NEEDLES.iter().any(|n| line.contains(n))
}

/// `<id>(<SEVERITY> / <TYPE>): msgNum: <n> - <text>` split into (id, severity, type).
fn header(line: &str) -> Option<(String, Severity, String)> {
    let (prefix, _) = line.split_once("): msgNum: ")?;
    let open = prefix.rfind('(')?;
    let (id, kinds) = (&prefix[..open], &prefix[open + 1..]);
    let (severity, kind) = kinds.split_once(" / ")?;
    if id.is_empty() || id.contains(char::is_whitespace) {
        return None;
    }
    Some((id.to_owned(), Severity::parse(severity)?, kind.to_owned()))
}

impl ValidationLog {
    /// Parses the layer's log out of `stdout` (where [`SETTINGS`] sends it; the program's own lines may
    /// be interleaved). A message's text runs on over the indented and empty lines that follow it.
    pub fn parse(stdout: &str) -> ValidationLog {
        let mut log = ValidationLog::default();
        let mut current: Option<Message> = None;
        for line in stdout.lines() {
            if let Some((id, severity, kind)) = header(line) {
                log.messages.extend(current.take());
                current = Some(Message {
                    id,
                    severity,
                    kind,
                    text: line.to_owned(),
                });
                continue;
            }
            let continues = line.is_empty() || line.starts_with(char::is_whitespace);
            match &mut current {
                Some(message) if continues => {
                    message.text.push('\n');
                    message.text.push_str(line);
                }
                _ => {
                    log.messages.extend(current.take());
                    if looks_like_validation(line) {
                        log.stray.push(line.to_owned());
                    }
                }
            }
        }
        log.messages.extend(current);
        log
    }

    /// Errors and warnings, by id, with their counts.
    pub fn counts(&self) -> BTreeMap<&str, usize> {
        let mut counts = BTreeMap::new();
        for m in self.messages.iter().filter(|m| m.severity.counts()) {
            *counts.entry(m.id.as_str()).or_insert(0) += 1;
        }
        counts
    }

    /// The first message with `id`.
    pub fn first(&self, id: &str) -> Option<&Message> {
        self.messages.iter().find(|m| m.id == id)
    }

    /// The layer's status messages (one per instance).
    pub fn status_messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(|m| m.id == STATUS_ID)
    }

    /// `Ok` when the layer ran with [`SETTINGS`]: at least one status message, each naming both enables
    /// and the settings file it read.
    pub fn assert_enabled(&self) -> Result<(), String> {
        let statuses: Vec<&Message> = self.status_messages().collect();
        if statuses.is_empty() {
            return Err(format!(
                "no `{STATUS_ID}` in stdout: the validation layer is not loaded, or its settings \
                 (VK_LAYER_SETTINGS_PATH) did not reach it, or it does not log to stdout"
            ));
        }
        for s in statuses {
            let text = s.text.split_whitespace().collect::<Vec<_>>().join(" ");
            let enables = STATUS_ENABLES
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            if !text.contains(&enables) || !text.contains("vk_layer_settings.txt") {
                return Err(format!(
                    "the validation layer did not take the test settings:\n{}",
                    s.text
                ));
            }
        }
        Ok(())
    }

    /// The errors and warnings of an app that should make none, less the test app's own note for
    /// VK_EXT_debug_utils (at most once per instance, and only when it names that extension).
    pub fn unexpected(&self) -> Vec<&Message> {
        let mut allowed = self.status_messages().count();
        self.messages
            .iter()
            .filter(|m| m.severity.counts())
            .filter(|m| {
                let own = m.id == DEBUG_UTILS_SPECIAL_USE
                    && m.text.contains("VK_EXT_debug_utils")
                    && allowed > 0;
                if own {
                    allowed -= 1;
                }
                !own
            })
            .collect()
    }

    /// A readable list of `messages`: each id with its count, then the first full text of each id.
    pub fn describe(messages: &[&Message]) -> String {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for m in messages {
            *counts.entry(&m.id).or_insert(0) += 1;
        }
        let mut out = String::new();
        for (id, n) in &counts {
            out.push_str(&format!("  {id}: {n}\n"));
        }
        for id in counts.keys() {
            if let Some(m) = messages.iter().find(|m| m.id == *id) {
                out.push_str(&format!("--- first {id} ---\n{}\n", m.text));
            }
        }
        out
    }

    /// The ids whose error-and-warning count differs here from `reference`, added or gone, each with both
    /// counts and its first message (from this log, or from the reference where this one has none); empty
    /// when every count is the same.
    pub fn changed_since<'a>(&'a self, reference: &'a ValidationLog) -> Vec<Changed<'a>> {
        let (after, before) = (self.counts(), reference.counts());
        let ids: std::collections::BTreeSet<&str> =
            after.keys().chain(before.keys()).copied().collect();
        ids.into_iter()
            .filter_map(|id| {
                let with = after.get(id).copied().unwrap_or(0);
                let without = before.get(id).copied().unwrap_or(0);
                (with != without).then(|| Changed {
                    id,
                    with,
                    without,
                    first: self
                        .first(id)
                        .or_else(|| reference.first(id))
                        .expect("counted, so present"),
                })
            })
            .collect()
    }
}

/// An id whose count differs between a run and its reference.
#[derive(Debug)]
pub struct Changed<'a> {
    pub id: &'a str,
    /// Its count in the run, and in the reference.
    pub with: usize,
    pub without: usize,
    pub first: &'a Message,
}

impl Changed<'_> {
    /// How far the two counts are apart.
    pub fn difference(&self) -> usize {
        self.with.abs_diff(self.without)
    }
}

/// A readable list of changed ids: counts first, then the first full text of each.
pub fn describe_changed(changed: &[Changed<'_>]) -> String {
    let mut out = String::new();
    for a in changed {
        out.push_str(&format!(
            "  {}: {} with Blackbox, {} without\n",
            a.id, a.with, a.without
        ));
    }
    for a in changed {
        out.push_str(&format!("--- first {} ---\n{}\n", a.id, a.first.text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
scenario compute checksum 0011
SYNC-HAZARD-WRITE-AFTER-WRITE(ERROR / SPEC): msgNum: 1544472022 - Validation Error: [ SYNC-HAZARD-WRITE-AFTER-WRITE ] Object 0: handle = 0x1, type = VK_OBJECT_TYPE_COMMAND_BUFFER; | MessageID = 0x5c0ec5d6 | vkCmdFillBuffer: Hazard WRITE_AFTER_WRITE
    Objects: 1
        [0] 0x1, type: 6, name: NULL
UNASSIGNED-khronos-validation-createinstance-status-message(INFO / SPEC): msgNum: -671457468 - Validation Information: [ UNASSIGNED-khronos-validation-createinstance-status-message ] Object 0: handle = 0x2, type = VK_OBJECT_TYPE_INSTANCE; | MessageID = 0xd7fa5f44 | Khronos Validation Layer Active:
    Settings File: Found at /x/vk_layer_settings.txt specified by environment variable (VK_LAYER_SETTINGS_PATH).
    Current Enables: VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT, VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION.
    Current Disables: None.

    Objects: 1
        [0] 0x2, type: 1, name: NULL
UNASSIGNED-BestPractices-vkAllocateMemory-small-allocation(WARN / PERF): msgNum: 1 - Validation Performance Warning: small
SYNC-HAZARD-WRITE-AFTER-WRITE(ERROR / SPEC): msgNum: 1544472022 - Validation Error: again
scenario draw checksum 0022
Validation Error: some other format
";

    #[test]
    fn parses_ids_counts_text_and_stray_lines() {
        let log = ValidationLog::parse(LOG);
        assert_eq!(log.messages.len(), 4);
        let counts = log.counts();
        assert_eq!(counts["SYNC-HAZARD-WRITE-AFTER-WRITE"], 2);
        assert_eq!(
            counts["UNASSIGNED-BestPractices-vkAllocateMemory-small-allocation"],
            1
        );
        assert!(
            !counts.contains_key(STATUS_ID),
            "information does not count"
        );
        let first = log.first("SYNC-HAZARD-WRITE-AFTER-WRITE").unwrap();
        assert!(first.text.ends_with("[0] 0x1, type: 6, name: NULL"));
        assert_eq!(log.stray, ["Validation Error: some other format"]);
        assert!(log.assert_enabled().is_ok());
    }

    #[test]
    fn changed_ids_are_those_counted_more_or_less_often() {
        let with = ValidationLog::parse(LOG);
        let without = ValidationLog::parse(
            "UNASSIGNED-BestPractices-vkAllocateMemory-small-allocation(WARN / PERF): msgNum: 1 - x\n\
             UNASSIGNED-BestPractices-SemaphoreCount(WARN / SPEC): msgNum: 2 - y\n",
        );
        let changed = with.changed_since(&without);
        let summary: Vec<_> = changed
            .iter()
            .map(|c| (c.id, c.with, c.without, c.first.text.as_str()))
            .collect();
        assert_eq!(
            summary[0],
            ("SYNC-HAZARD-WRITE-AFTER-WRITE", 2, 0, summary[0].3),
            "an id added"
        );
        // An id gone: the message that was lost comes from the reference.
        assert_eq!(
            summary[1],
            (
                "UNASSIGNED-BestPractices-SemaphoreCount",
                0,
                1,
                "UNASSIGNED-BestPractices-SemaphoreCount(WARN / SPEC): msgNum: 2 - y"
            )
        );
        assert_eq!(changed.len(), 2, "the same count is no change: {summary:?}");
        assert!(with.changed_since(&with).is_empty());
    }

    #[test]
    fn settings_not_taken_are_an_error() {
        assert!(ValidationLog::parse("scenario x checksum 1\n")
            .assert_enabled()
            .is_err());
        let default_settings = LOG.replace("BEST_PRACTICES_EXT, ", "");
        assert!(ValidationLog::parse(&default_settings)
            .assert_enabled()
            .is_err());
    }
}
