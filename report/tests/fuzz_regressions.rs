//! Inputs kept so that bugs of the report reader stay fixed, replayed with the properties the fuzz target
//! (`fuzz/fuzz_targets/report.rs`, `scripts/fuzz.sh SECONDS report`) checks: any bytes are read as a
//! report or refused, never a panic; what is read renders (both colours) with no character a terminal
//! acts on but Blackbox's own newlines and colour codes, in size linear in the input; its JSON prints
//! safely and reads back to the same report.
//!
//! `tests/fuzz/` holds the fuzzer's findings (named after what they broke) and inputs found by review
//! (`review-*`): command indices at `u32::MAX` overflowed the renderer's context window, and indices out
//! of range must not index anything. The real reports of `tests/reports/` are replayed too.

use blackbox_report::{signature, text, untrusted, Report};
use std::path::Path;

fn without_colour_codes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find(|c: char| !(c.is_ascii_digit() || c == ';')) {
            Some(e) if after[e..].starts_with('m') => rest = &after[e + 1..],
            _ => {
                out.push('\x1b');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The fuzz target's checks on one input; `Err` says which failed.
fn check(data: &[u8]) -> Result<bool, String> {
    let Ok(report) = Report::from_json_bytes(data) else {
        return Ok(false);
    };
    for colour in [false, true] {
        let text = text::render(&report, colour);
        let plain = if colour {
            without_colour_codes(&text)
        } else {
            text.clone()
        };
        if let Some(c) = plain
            .chars()
            .find(|&c| untrusted::is_unsafe(c) && c != '\n')
        {
            return Err(format!("{c:?} reaches the terminal"));
        }
        if text.len() > 200 * data.len() + 65_536 {
            return Err(format!("{} bytes of text from {}", text.len(), data.len()));
        }
    }
    let json = report.to_json();
    if let Some(c) = json.chars().find(|&c| untrusted::is_unsafe(c) && c != '\n') {
        return Err(format!("{c:?} in the JSON written back"));
    }
    let back = Report::from_json(&json).map_err(|e| format!("written back, unreadable: {e}"))?;
    if back.to_json() != json {
        return Err("written back, read as another report".into());
    }
    let _ = signature::compute(&report);
    Ok(true)
}

#[test]
fn every_kept_input_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files = Vec::new();
    for dir in ["fuzz", "reports"] {
        files.extend(
            std::fs::read_dir(root.join(dir))
                .expect(dir)
                .flatten()
                .map(|e| e.path()),
        );
    }
    files.sort();
    assert!(
        files.iter().any(|f| f.starts_with(root.join("fuzz"))),
        "no kept inputs"
    );
    for file in &files {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        match outcome {
            Err(_) => panic!("{} panics", file.display()),
            Ok(Err(why)) => panic!("{}: {why}", file.display()),
            Ok(Ok(read)) => println!(
                "{}: {}",
                file.display(),
                if read { "read" } else { "refused" }
            ),
        }
    }
}
