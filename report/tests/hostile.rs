//! Reports holding hostile text, as an app (labels, names, printf output) or a forged report file could
//! make them: the text form shows every string escaped, JSON keeps it exactly and prints safely, and the
//! real reports in `tests/reports/` (written by the layer on lavapipe) read and render.

use blackbox_report::untrusted::{is_unsafe, KEEP_BYTES};
use blackbox_report::{text, Report};
use serde_json::Value;
use std::path::Path;

/// The real reports kept as fixtures (and fuzzing seeds).
fn fixtures() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reports");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/reports")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| (f.display().to_string(), std::fs::read(&f).unwrap()))
        .collect()
}

/// What a hostile app puts in its strings: a screen clear, a title change, a colour, a carriage return
/// and a newline that would forge a line, NUL, DEL, a C1 CSI, a right-to-left override.
const HOSTILE: &str = "\x1b[2J\x1b]0;pwned\x07\x1b[31mred\rback\n[blackbox] error: forged\0nul\x7f\u{9b}6n\u{202e}txt";

/// Appends [`HOSTILE`] to every string of a report's JSON but the enums' (which would not parse).
fn poison(value: &mut Value, key: &str) {
    match value {
        Value::String(s) if !matches!(key, "kind" | "state" | "class") => s.push_str(HOSTILE),
        Value::Array(items) => items.iter_mut().for_each(|v| poison(v, key)),
        Value::Object(map) => map.iter_mut().for_each(|(k, v)| poison(v, k)),
        _ => {}
    }
}

fn poisoned(json: &[u8]) -> Report {
    let mut value: Value = serde_json::from_slice(json).unwrap();
    poison(&mut value, "");
    Report::from_json(&value.to_string()).expect("a poisoned report still parses")
}

/// The characters of `text` a terminal would act on, less newlines (and colour codes when `colour`).
fn unsafe_chars(text: &str, colour: bool) -> Vec<char> {
    let mut plain = text.to_owned();
    if colour {
        for code in [
            "\x1b[0m",
            "\x1b[1m",
            "\x1b[1;31m",
            "\x1b[1;33m",
            "\x1b[2m",
            "\x1b[32m",
            "\x1b[36m",
        ] {
            plain = plain.replace(code, "");
        }
    }
    plain
        .chars()
        .filter(|&c| is_unsafe(c) && c != '\n')
        .collect()
}

#[test]
fn every_real_report_reads_renders_and_round_trips() {
    let fixtures = fixtures();
    assert!(fixtures.len() >= 8, "{}", fixtures.len());
    for (name, bytes) in fixtures {
        let report = Report::from_json_bytes(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let text = text::render(&report, false);
        assert!(text.starts_with("Blackbox report: "), "{name}");
        assert!(unsafe_chars(&text, false).is_empty(), "{name}");
        let back = Report::from_json(&report.to_json()).unwrap();
        assert_eq!(back.to_json(), report.to_json(), "{name}");
    }
}

#[test]
fn hostile_strings_are_escaped_in_text_and_exact_in_json() {
    for (name, bytes) in fixtures() {
        let report = poisoned(&bytes);
        for colour in [false, true] {
            let text = text::render(&report, colour);
            assert_eq!(
                unsafe_chars(&text, colour),
                Vec::<char>::new(),
                "{name}\n{text}"
            );
            // Shown, visibly: the app's text is there, escaped.
            assert!(
                text.contains(r"\x1b[2J\x1b]0;pwned\x07\x1b[31mred\rback\n[blackbox] error: forged\x00nul\x7f\u{9b}6n\u{202e}txt"),
                "{name}\n{text}"
            );
            // No line of the text starts with the forged one.
            assert!(
                !text
                    .lines()
                    .any(|l| l.starts_with("[blackbox] error: forged")),
                "{name}"
            );
        }
        // The app name, labels and pipeline name in particular (the strings an app controls).
        let text = text::render(&report, false);
        let app_line = text.lines().find(|l| l.starts_with("  app  ")).unwrap();
        assert!(app_line.contains(r"bb-testapp\x1b[2J"), "{app_line}");
        // JSON: the exact text, and nothing a terminal acts on.
        let json = report.to_json();
        assert_eq!(unsafe_chars(&json, false), Vec::<char>::new(), "{name}");
        let back = Report::from_json(&json).unwrap();
        assert!(back.app.name.ends_with(HOSTILE));
        assert_eq!(back.to_json(), json);
    }
}

#[test]
fn long_strings_are_cut_in_text_with_the_cut_said() {
    let (_, bytes) = &fixtures()[0];
    let mut value: Value = serde_json::from_slice(bytes).unwrap();
    value["app"]["name"] = Value::String("A".repeat(1_000_000));
    let report = Report::from_json(&value.to_string()).unwrap();
    let text = text::render(&report, false);
    let app_line = text.lines().find(|l| l.starts_with("  app  ")).unwrap();
    assert!(app_line.len() < 2 * KEEP_BYTES + 200, "{}", app_line.len());
    assert!(
        app_line.contains("… [997952 more bytes not shown]"),
        "{app_line}"
    );
    // JSON keeps it whole: it is the file's, not the app's straight from the layer (which keeps KEEP_BYTES).
    assert!(report.to_json().contains(&"A".repeat(1_000_000)));
}

#[test]
fn deep_wide_and_wrongly_typed_files_are_refused_or_read_never_panic() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_in_report = {
        let (_, bytes) = &fixtures()[0];
        let text = String::from_utf8(bytes.clone()).unwrap();
        text.replacen(
            "\"notes\": [",
            &format!("\"notes\": [{}", "[".repeat(10_000)),
            1,
        )
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("deeply nested", deep.into_bytes()),
        ("deeply nested inside a report", deep_in_report.into_bytes()),
        ("not an object", b"[1, 2, 3]".to_vec()),
        ("version as text", br#"{"version": "1"}"#.to_vec()),
        (
            "version too big",
            br#"{"version": 18446744073709551616}"#.to_vec(),
        ),
        ("negative version", br#"{"version": -1}"#.to_vec()),
        (
            "invalid UTF-8",
            b"{\"version\": 1, \"reason\": \"\xff\"}".to_vec(),
        ),
        (
            "lone surrogate",
            br#"{"version": 1, "reason": "\ud800"}"#.to_vec(),
        ),
        ("NUL bytes", vec![0u8; 4096]),
    ];
    for (what, bytes) in cases {
        assert!(Report::from_json_bytes(&bytes).is_err(), "{what}");
    }
    // Wrong types in a real report: each field given a value of another type is refused.
    let (_, bytes) = &fixtures()[0];
    let value: Value = serde_json::from_slice(bytes).unwrap();
    let Value::Object(map) = &value else { panic!() };
    for key in map.keys() {
        for wrong in [
            Value::Bool(true),
            serde_json::json!({"x": [1]}),
            Value::String("x".into()),
        ] {
            let mut broken = value.clone();
            let same_type = std::mem::discriminant(&broken[key]) == std::mem::discriminant(&wrong);
            broken[key] = wrong;
            let result = Report::from_json(&broken.to_string());
            if !same_type && !broken[key].is_null() {
                // Optional fields accept null only; every other change of type is an error.
                assert!(result.is_err(), "{key} as {}", broken[key]);
            }
        }
    }
}

#[test]
fn a_report_made_to_blow_up_its_text_renders_in_bounded_size() {
    // Many scopes all open at once, many executes sharing one range of secondaries, long parameter lists:
    // the text stays linear in the file's size.
    let bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reports/hang.json"))
            .unwrap();
    let mut value: Value = serde_json::from_slice(&bytes).unwrap();
    let cb = &mut value["queues"][0]["submissions"][0]["command_buffers"][0];
    let command = cb["commands"][0].clone();
    let n = 3000;
    cb["scopes"] = Value::Array(
        (0..n)
            .map(|i| {
                serde_json::json!({"name": format!("s{i}"), "parent": null, "first_command": 0,
                    "end_command": n, "inserted": false, "state": "in-flight"})
            })
            .collect(),
    );
    let secondary = cb.clone();
    cb["secondaries"] = Value::Array(vec![secondary; 50]);
    cb["commands"] = Value::Array(
        (0..n)
            .map(|i| {
                let mut c = command.clone();
                c["index"] = i.into();
                c["name"] = "vkCmdExecuteCommands".into();
                c["params"] = Value::Array(vec![50.into(); 1000]);
                c["secondaries_from"] = 0.into();
                c["state"] = "in-flight".into();
                c
            })
            .collect(),
    );
    let json = value.to_string();
    let report = Report::from_json(&json).unwrap();
    let started = std::time::Instant::now();
    let text = text::render(&report, false);
    println!(
        "{} bytes of JSON: {} bytes of text in {:?}",
        json.len(),
        text.len(),
        started.elapsed()
    );
    assert!(
        text.len() < 20 * json.len(),
        "{} bytes from {}",
        text.len(),
        json.len()
    );
}
