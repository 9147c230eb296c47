//! The layer's log: `[blackbox] level: message` lines on stderr or in `VK_BLACKBOX_LOG_FILE`.
//!
//! The layer has its own copy of the `log` crate (it is a `cdylib`), so this logger never meets the host
//! app's, Rust or not. Every message uses the target `blackbox`, which `VK_BLACKBOX_LOG` filters.
//!
//! Messages carry app strings (labels, names, printf output): each call site shows them through
//! [`blackbox_report::untrusted::shown`], and the logger escapes any control character left but the
//! newline, so nothing reaching the log can drive the terminal that shows it. A log file Blackbox creates
//! is mode 600. The fatal-signal path, which must not allocate or lock, writes its first line straight to
//! the log's file descriptor ([`signal_safe_fd`]).

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicI32, Ordering};

use blackbox_report::untrusted;

use crate::config::Config;

/// The log's file descriptor for the fatal-signal path, or -1 when errors are not logged.
static SIGNAL_SAFE_FD: AtomicI32 = AtomicI32::new(libc::STDERR_FILENO);

/// Sets the logger up from `config`. Returns a warning when the log file cannot be opened (stderr is used).
/// Calling it again (the library loaded twice without being unloaded) keeps the first logger.
pub fn init(config: &Config) -> Option<String> {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(&config.log_filter);
    builder.format(|buf, record| {
        writeln!(buf, "{}", line(record.level(), &record.args().to_string()))
    });
    let mut warning = None;
    let mut fd = libc::STDERR_FILENO;
    if let Some(path) = &config.log_file {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(crate::output::FILE_MODE)
            .open(path)
        {
            Ok(file) => {
                fd = file.as_raw_fd();
                builder.target(env_logger::Target::Pipe(Box::new(file)));
            }
            Err(e) => {
                warning = Some(format!(
                    "VK_BLACKBOX_LOG_FILE={}: cannot open it for appending ({e}); accepted: a writable file path; \
                     logging to stderr instead",
                    path.display()
                ));
            }
        }
    }
    // The logger owns the file from here on; its descriptor stays open as long as the logger, which is
    // never dropped. A logger already set (a second load) keeps its own descriptor, unknown here: stderr.
    let installed = builder.try_init().is_ok();
    let errors_logged = log::log_enabled!(target: "blackbox", log::Level::Error);
    let fd = match (errors_logged, installed) {
        (false, _) => -1,
        (true, true) => fd,
        (true, false) => libc::STDERR_FILENO,
    };
    SIGNAL_SAFE_FD.store(fd, Ordering::Release);
    warning
}

/// A log line: `[blackbox] level: message`, with any control character left in the message escaped but
/// the newline (the last line of defence: call sites escape the app's strings themselves).
fn line(level: log::Level, message: &str) -> String {
    let level = level.as_str().to_ascii_lowercase();
    format!("[blackbox] {level}: {}", untrusted::shown_lines(message))
}

/// Where the fatal-signal path writes its lines with `write(2)`: the log's descriptor, or `None` when
/// `VK_BLACKBOX_LOG` turns errors off.
pub fn signal_safe_fd() -> Option<i32> {
    let fd = SIGNAL_SAFE_FD.load(Ordering::Acquire);
    (fd >= 0).then_some(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_left_in_a_message_are_escaped_but_newlines() {
        assert_eq!(
            line(log::Level::Warn, "label \x1b[2J\r, report text:\n  line 2"),
            "[blackbox] warn: label \\x1b[2J\\r, report text:\n  line 2"
        );
    }
}
