//! Any bytes given to `blackbox report` or `blackbox triage` as a `report.json` are read as a report or
//! refused with a reason; never a panic, an endless loop or unbounded memory (libFuzzer's timeout and RSS
//! limit watch the last two). What is read renders to text whose only control characters are Blackbox's
//! own (newlines, and its colour codes when asked for), in work and output bounded by the input's size; it
//! writes back as JSON with no character a terminal acts on, which reads back to the same report.
#![no_main]

use blackbox_report::{signature, text, untrusted, Report};
use libfuzzer_sys::fuzz_target;

/// `text` less Blackbox's own colour codes (`ESC [ digits/; m`).
fn without_colour_codes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after.find(|c: char| !(c.is_ascii_digit() || c == ';'));
        match end {
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

fuzz_target!(|data: &[u8]| {
    let Ok(report) = Report::from_json_bytes(data) else { return };
    for colour in [false, true] {
        let text = text::render(&report, colour);
        let plain = if colour { without_colour_codes(&text) } else { text.clone() };
        if let Some(c) = plain.chars().find(|&c| untrusted::is_unsafe(c) && c != '\n') {
            panic!("{c:?} reaches the terminal");
        }
        // Linear in the input: each command, scope and secondary is shown once, indentation is capped.
        assert!(text.len() <= 200 * data.len() + 65_536, "{} bytes of text from {}", text.len(), data.len());
    }
    let json = report.to_json();
    if let Some(c) = json.chars().find(|&c| untrusted::is_unsafe(c) && c != '\n') {
        panic!("{c:?} in the JSON written back");
    }
    let back = Report::from_json(&json).expect("the JSON written back reads back");
    assert_eq!(back.to_json(), json, "the same report");
    let _ = signature::compute(&report);
});
