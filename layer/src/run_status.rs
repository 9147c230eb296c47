//! `VK_BLACKBOX_RUN_STATUS`: how `blackbox run` learns whether the app it ran went through the layer.
//!
//! Some apps never reach the layer: ncnn's pip wheel, for one, loads the driver that `VK_DRIVER_FILES`
//! names itself, bypassing the loader and every layer, and then nothing at all is logged. So `blackbox run`
//! sets this variable to an empty file in its own temporary folder, and [`note_instance`] appends one line
//! to it for each `vkCreateInstance` that went through the layer, in any process of the app's tree:
//!
//! ```text
//! instance <pid> <app name>
//! ```
//!
//! When the app has exited and the file holds no line, `blackbox run` says so, with the likely causes.
//!
//! Each line is one `write(2)` to a file opened with `O_APPEND`, so the lines of processes creating
//! instances at once do not mix. The file is never created here: a variable left over from a finished run
//! points into a removed folder and writes nothing. A failure is logged at debug level and otherwise
//! ignored: this must never disturb the app.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::Path;

/// The variable `blackbox run` sets.
pub const VARIABLE: &str = "VK_BLACKBOX_RUN_STATUS";

/// Appends this process's line for a new instance of `app_name` to the run-status file, if
/// `VK_BLACKBOX_RUN_STATUS` names one.
pub fn note_instance(app_name: &str) {
    let Some(path) = std::env::var_os(VARIABLE).filter(|p| !p.is_empty()) else {
        return;
    };
    let line = status_line(std::process::id(), app_name);
    if let Err(e) = append_line(Path::new(&path), &line) {
        debug!(
            "{VARIABLE}={}: cannot note the instance ({e})",
            path.to_string_lossy()
        );
    }
}

/// `instance <pid> <app name>\n`, on one line whatever the name holds.
fn status_line(pid: u32, app_name: &str) -> String {
    let name: String = app_name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("instance {pid} {name}\n")
}

/// Appends `line` to the existing file `path` in one write.
fn append_line(path: &Path, line: &str) -> io::Result<()> {
    // Rust opens with O_CLOEXEC: the descriptor does not leak into the app's children.
    let mut file = OpenOptions::new().append(true).open(path)?;
    let written = file.write(line.as_bytes())?;
    if written != line.len() {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("wrote {written} of {} bytes", line.len()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_instance_whatever_the_name() {
        assert_eq!(status_line(42, "vkcube"), "instance 42 vkcube\n");
        assert_eq!(
            status_line(7, "two\nlines\tand a tab"),
            "instance 7 two lines and a tab\n"
        );
        assert_eq!(status_line(7, ""), "instance 7 \n");
    }

    #[test]
    fn appends_to_the_file_and_never_creates_one() {
        let dir = std::env::temp_dir().join(format!("blackbox-run-status-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("status");

        assert!(append_line(&path, "instance 1 a\n").is_err());
        assert!(!path.exists(), "a missing file must stay missing");

        std::fs::write(&path, "").unwrap();
        append_line(&path, "instance 1 a\n").unwrap();
        append_line(&path, "instance 2 b\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "instance 1 a\ninstance 2 b\n"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
