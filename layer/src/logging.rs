//! The layer's log: `[blackbox] level: message` lines on stderr or in `VK_BLACKBOX_LOG_FILE`.
//!
//! The layer has its own copy of the `log` crate (it is a `cdylib`), so this logger never meets the host
//! app's, Rust or not. Every message uses the target `blackbox`, which `VK_BLACKBOX_LOG` filters.

use std::io::Write;

use crate::config::Config;

/// Sets the logger up from `config`. Returns a warning when the log file cannot be opened (stderr is used).
/// Calling it again (the library loaded twice without being unloaded) keeps the first logger.
pub fn init(config: &Config) -> Option<String> {
    let mut builder = env_logger::Builder::new();
    builder.parse_filters(&config.log_filter);
    builder.format(|buf, record| {
        let level = record.level().as_str().to_ascii_lowercase();
        writeln!(buf, "[blackbox] {level}: {}", record.args())
    });
    let mut warning = None;
    if let Some(path) = &config.log_file {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(file) => {
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
    let _ = builder.try_init();
    warning
}
