//! `blackbox report` and `blackbox triage` on report folders written here the way the layer writes them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use blackbox_report as model;
use blackbox_report::{Kind, Report, State};

fn blackbox() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blackbox"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(args: &[&Path]) -> Output {
    blackbox().args(args).output().unwrap()
}

/// A fresh folder under the temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "blackbox-report-test-{}-{name}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What a test report differs in.
struct Spec<'a> {
    kind: Kind,
    labels: &'a [&'a str],
    command: &'a str,
    pipeline: &'a str,
    unix_ms: u64,
    app: &'a str,
    device: &'a str,
}

impl Default for Spec<'_> {
    fn default() -> Self {
        Spec {
            kind: Kind::Hang,
            labels: &["frame 8112", "particles"],
            command: "vkCmdDispatch",
            pipeline: "ParticleSim",
            unix_ms: 1_796_015_553_123,
            app: "bb-testapp",
            device: "llvmpipe (LLVM 15.0.6, 256 bits)",
        }
    }
}

fn pipeline(name: &str) -> model::Pipeline {
    model::Pipeline {
        handle: "0x55d3a0b1c2d0".into(),
        name: Some(name.into()),
        shaders: vec![model::Shader {
            id: "9f1c2b3a4d5e6f70".into(),
            entry_points: vec!["main (compute)".into()],
            sources: vec!["particles.comp".into()],
            name: None,
        }],
    }
}

/// A plausible report: one submission of three dispatches in the labels, the 2nd in flight.
fn make(spec: &Spec) -> Report {
    let labels: Vec<String> = spec.labels.iter().map(|s| s.to_string()).collect();
    let location = |index: u32, command: &str| model::Location {
        queue: "0.0".into(),
        submission: 7,
        command_buffer: "0x55d3a0b1d000 \"main\"".into(),
        command_index: index,
        command: command.into(),
        params: vec![64, 1, 1],
        labels: labels.clone(),
        pipeline: Some(pipeline(spec.pipeline)),
    };
    let command = |index: u32, name: &str, state: State| model::Command {
        index,
        name: name.into(),
        class: model::CommandClass::Action,
        params: vec![64, 1, 1],
        state,
        scope: Some(1),
        pipeline: Some(pipeline(spec.pipeline)),
        secondaries_from: None,
        last_finished: index == 0,
        first_unfinished: index == 1,
        skipped: false,
    };
    let scope = |name: &str, parent: Option<u32>, state: State| model::Scope {
        name: name.into(),
        parent,
        first_command: 0,
        end_command: 3,
        inserted: false,
        state,
    };
    let mut scopes = Vec::new();
    for (i, l) in spec.labels.iter().enumerate() {
        scopes.push(scope(
            l,
            i.checked_sub(1).map(|p| p as u32),
            State::InFlight,
        ));
    }
    let mut report = Report {
        version: model::SCHEMA_VERSION,
        kind: spec.kind,
        reason: "pending GPU work made no progress for 10.0 s (VK_BLACKBOX_WATCHDOG_MS=10000)"
            .into(),
        time: model::rfc3339(spec.unix_ms),
        unix_ms: spec.unix_ms,
        app: model::App {
            name: spec.app.into(),
            pid: 4242,
            executable: format!("/usr/bin/{}", spec.app),
        },
        device: model::Device {
            name: spec.device.into(),
            driver: "llvmpipe Mesa 22.3.6".into(),
            api_version: "1.3.230".into(),
        },
        blackbox: model::Blackbox {
            version: "0.1.0".into(),
            settings: vec!["VK_BLACKBOX_BREADCRUMBS=command".into()],
        },
        progress: model::Progress {
            granularity: "command".into(),
            markers: "fill-buffer writes".into(),
            coverage:
                "each dispatch, copy and clear outside render passes; each render pass as a whole"
                    .into(),
            timeline_semaphores: true,
        },
        notes: Vec::new(),
        queues: vec![model::Queue {
            family: 0,
            index: 0,
            completed: 6,
            submissions: vec![model::Submission {
                seq: 7,
                command: "vkQueueSubmit".into(),
                age_ms: 10_012,
                state: State::InFlight,
                command_buffers: vec![model::CommandBuffer {
                    handle: "0x55d3a0b1d000".into(),
                    name: Some("main".into()),
                    level: "primary".into(),
                    state: State::InFlight,
                    units: Some(model::Units {
                        started: 2,
                        finished: 1,
                        total: 3,
                    }),
                    commands: vec![
                        command(0, spec.command, State::Finished),
                        command(1, spec.command, State::InFlight),
                        command(2, spec.command, State::NotStarted),
                    ],
                    scopes,
                    secondaries: Vec::new(),
                    unlogged_commands: 0,
                    note: None,
                }],
            }],
        }],
        in_flight: vec![location(1, spec.command)],
        last_finished: Some(location(0, spec.command)),
        shader_errors: Vec::new(),
        device_fault: None,
        checkpoints: Vec::new(),
        signal: None,
        frame: None,
        resumed: None,
        signature: String::new(),
        signature_text: String::new(),
    };
    let (text, hash) = model::signature::compute(&report);
    report.signature = hash;
    report.signature_text = text;
    report
}

/// Writes `report` as the layer does: `<output>/<app>-<pid>-<n>/report.{json,txt}`, through temp names.
fn write(output: &Path, n: u32, report: &Report) -> PathBuf {
    let dir = output.join(format!("{}-{}-{n}", report.app.name, report.app.pid));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, bytes) in [
        ("report.json", report.to_json()),
        ("report.txt", model::text::render(report, false)),
    ] {
        let tmp = dir.join(name).with_extension("tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, dir.join(name)).unwrap();
    }
    dir
}

/// A folder with a `report.json` holding `json`.
fn write_raw(output: &Path, name: &str, json: &str) -> PathBuf {
    let dir = output.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("report.json"), json).unwrap();
    dir
}

#[test]
fn report_prints_a_folder_a_file_and_the_newest_in_a_parent() {
    let tmp = TempDir::new("print");
    let out = tmp.0.join("out");
    let old = make(&Spec {
        unix_ms: 1_796_015_553_123,
        ..Spec::default()
    });
    let newest = make(&Spec {
        unix_ms: 1_796_015_999_000,
        labels: &["frame 9377", "particles"],
        ..Spec::default()
    });
    let older = make(&Spec {
        unix_ms: 1_796_015_000_000,
        command: "vkCmdCopyBuffer",
        ..Spec::default()
    });
    let old_dir = write(&out, 1, &old);
    // The newest is not the last by name: the choice is by time.
    let newest_dir = write(&out, 2, &newest);
    write(&out, 3, &older);

    let expected_old = model::text::render(&old, false);
    for path in [old_dir.clone(), old_dir.join("report.json")] {
        let o = run(&[Path::new("report"), &path]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        // stdout is a pipe: no colour under `auto`.
        assert_eq!(text(&o.stdout), expected_old);
        assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    }

    let o = run(&[Path::new("report"), &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), model::text::render(&newest, false));
    let note = text(&o.stderr);
    assert_eq!(note.lines().count(), 1, "{note}");
    assert!(note.contains(&newest_dir.display().to_string()), "{note}");
    assert!(note.contains("2 other report(s)"), "{note}");
    println!("report PARENT, stderr: {note}");

    let o = run(&[Path::new("report"), Path::new("--color=always"), &old_dir]);
    assert_eq!(text(&o.stdout), model::text::render(&old, true));
    assert!(text(&o.stdout).contains("\x1b["));
    println!(
        "report FOLDER, stdout:\n{}",
        model::text::render(&old, false)
    );
}

#[test]
fn report_json_round_trips() {
    let tmp = TempDir::new("json");
    let report = make(&Spec::default());
    let dir = write(&tmp.0, 1, &report);
    // Unknown fields are dropped: the output is normalised.
    let mut value: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    value["from_the_future"] = serde_json::json!(1);
    std::fs::write(dir.join("report.json"), value.to_string()).unwrap();

    let o = run(&[Path::new("report"), &dir, Path::new("--json")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert_eq!(stdout, format!("{}\n", report.to_json()));
    let back = Report::from_json(&stdout).unwrap();
    assert_eq!(back.to_json(), report.to_json());
    assert_eq!(back.signature, report.signature);
}

#[test]
fn report_errors_are_one_clear_line() {
    let tmp = TempDir::new("errors");
    let bad = write_raw(&tmp.0, "bad-1-1", "{\"version\": 1, \"kind\": ");
    let future = write_raw(
        &tmp.0,
        "future-1-1",
        "{\"version\": 99, \"kind\": \"hang\"}",
    );
    let empty = tmp.0.join("empty");
    std::fs::create_dir_all(empty.join("sub")).unwrap();

    let cases = [
        (
            bad.clone(),
            bad.join("report.json"),
            "not a Blackbox report",
        ),
        (
            future.join("report.json"),
            future.join("report.json"),
            "report schema version 99 is not supported",
        ),
        (
            tmp.0.join("nowhere"),
            tmp.0.join("nowhere"),
            "no such file or folder",
        ),
        (empty.clone(), empty.clone(), "no Blackbox report in"),
    ];
    for (arg, named, why) in cases {
        let o = run(&[Path::new("report"), &arg]);
        assert_eq!(o.status.code(), Some(1), "{arg:?}");
        assert!(o.stdout.is_empty());
        let stderr = text(&o.stderr);
        println!("report {}: {stderr}", arg.display());
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("blackbox: error: "), "{stderr}");
        assert!(stderr.contains(&named.display().to_string()), "{stderr}");
        assert!(stderr.contains(why), "{stderr}");
    }

    // A parent holding only unreadable reports.
    let o = run(&[Path::new("report"), &tmp.0]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("no readable Blackbox report"));

    for args in [
        &["report"][..],
        &["report", "a", "b"],
        &["report", "--color", "sometimes", "a"],
    ] {
        let o = blackbox().args(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).contains("Usage: blackbox report"));
    }
}

/// Triage rows, split into their columns (the in-flight summary holds single spaces only).
fn rows(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .skip(1)
        .filter(|l| !l.contains(" reports, "))
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

#[test]
fn triage_groups_by_signature() {
    let tmp = TempDir::new("triage");
    let (qa1, qa2) = (tmp.0.join("qa1"), tmp.0.join("qa2/nested/deeper"));
    let t = 1_796_015_553_123;
    // One bug three times: different frames, two devices, two apps.
    let a1 = make(&Spec {
        unix_ms: t,
        ..Spec::default()
    });
    let a2 = make(&Spec {
        unix_ms: t + 60_000,
        labels: &["frame 9377", "particles"],
        device: "NVIDIA H200",
        ..Spec::default()
    });
    let mut a3 = make(&Spec {
        unix_ms: t + 30_000,
        labels: &["frame 12", "particles"],
        app: "other-app",
        ..Spec::default()
    });
    // Its work moved again after the report: slow, not hung. The same bug for the signature.
    a3.resumed = Some(model::Resumed {
        after_ms: 24_600,
        time: model::rfc3339(t + 44_600),
    });
    assert_eq!(model::signature::compute(&a3).1, a3.signature);
    // The point of normalisation: frame numbers do not split a bug.
    assert_eq!(a1.signature, a2.signature);
    assert_eq!(a1.signature, a3.signature);
    // Another command is another bug; two singletons, the newer listed first.
    let b = make(&Spec {
        unix_ms: t + 5_000,
        command: "vkCmdCopyBuffer",
        pipeline: "Upload",
        ..Spec::default()
    });
    let c = make(&Spec {
        unix_ms: t + 90_000,
        kind: Kind::DeviceLost,
        ..Spec::default()
    });
    assert_ne!(a1.signature, b.signature);
    assert_ne!(a1.signature, c.signature);
    write(&qa1, 1, &a1);
    let a2_dir = write(&qa2, 2, &a2);
    write(&qa1, 3, &a3);
    let b_dir = write(&qa1, 4, &b);
    let c_dir = write(&qa2, 5, &c);
    // A link back up is not followed (no loop, nothing counted twice), and said.
    std::os::unix::fs::symlink(&tmp.0, qa2.join("loop")).unwrap();

    let o = run(&[Path::new("triage"), &qa1, &tmp.0.join("qa2")]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    println!("triage, stdout:\n{stdout}");
    assert_eq!(
        text(&o.stderr),
        format!(
            "blackbox: skipped {}: a symbolic link (links below the folder given are not followed)\n",
            qa2.join("loop").display()
        )
    );
    let mut lines = stdout.lines();
    assert!(lines.next().unwrap().starts_with("COUNT  SIGNATURE"));
    assert_eq!(
        stdout.lines().last(),
        Some("5 reports, 3 signatures (0 unreadable)")
    );
    let table = rows(&stdout);
    assert_eq!(table.len(), 3, "{stdout}");
    assert_eq!(
        table[0],
        [
            "3",
            a1.signature.as_str(),
            "hang (1 resumed)",
            a1.time.as_str(),
            a2.time.as_str(),
            "2",
            "2",
            "frame 9377 > particles > vkCmdDispatch [ParticleSim]",
            a2_dir.to_str().unwrap(),
        ]
    );
    assert_eq!(table[1][0], "1");
    assert_eq!(table[1][1], c.signature);
    assert_eq!(table[1][2], "device-lost");
    assert_eq!(table[1][8], c_dir.to_str().unwrap());
    assert_eq!(table[2][1], b.signature);
    assert_eq!(
        table[2][7],
        "frame 8112 > particles > vkCmdCopyBuffer [Upload]"
    );
    assert_eq!(table[2][8], b_dir.to_str().unwrap());

    // --min-count keeps the bug seen more than once.
    let o = run(&[
        Path::new("triage"),
        &tmp.0,
        Path::new("--min-count"),
        Path::new("2"),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let stdout = text(&o.stdout);
    assert_eq!(rows(&stdout).len(), 1, "{stdout}");
    assert_eq!(rows(&stdout)[0][1], a1.signature);
    assert!(stdout
        .ends_with("5 reports, 3 signatures (0 unreadable); 1 with at least 2 reports shown\n"));

    // --json: the same groups, in the same order.
    let o = run(&[Path::new("triage"), Path::new("--json"), &tmp.0]);
    assert_eq!(o.status.code(), Some(0));
    let groups: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    println!("triage --json, first group: {:#}", groups[0]);
    let groups = groups.as_array().unwrap();
    assert_eq!(groups.len(), 3);
    let g = &groups[0];
    assert_eq!(g["count"], 3);
    assert_eq!(g["signature"], a1.signature.as_str());
    assert_eq!(g["signature_text"], a2.signature_text.as_str());
    assert_eq!(g["kind"], "hang");
    assert_eq!(g["resumed"], 1);
    assert_eq!(groups[1]["resumed"], 0);
    assert_eq!(g["first_seen"], a1.time.as_str());
    assert_eq!(g["last_seen"], a2.time.as_str());
    assert_eq!(g["first_seen_unix_ms"], a1.unix_ms);
    assert_eq!(g["last_seen_unix_ms"], a2.unix_ms);
    assert_eq!(g["apps"], 2);
    assert_eq!(g["devices"], 2);
    assert_eq!(
        g["in_flight"],
        "frame 9377 > particles > vkCmdDispatch [ParticleSim]"
    );
    assert_eq!(g["sample"], a2_dir.to_str().unwrap());
    assert_eq!(groups[1]["signature"], c.signature.as_str());
    assert_eq!(groups[2]["signature"], b.signature.as_str());
    assert!(text(&o.stderr).contains("5 reports, 3 signatures (0 unreadable)"));
}

#[test]
fn triage_counts_unreadable_reports_and_missing_dirs() {
    let tmp = TempDir::new("unreadable");
    let a = make(&Spec::default());
    write(&tmp.0, 1, &a);
    let bad = write_raw(&tmp.0, "bad-1-2", "not json");
    let future = write_raw(&tmp.0, "future-1-3", "{\"version\": 99}");
    // A file being written (temporary name) is not a report yet.
    std::fs::write(tmp.0.join("bad-1-2/report.tmp"), "{").unwrap();

    let o = run(&[Path::new("triage"), &tmp.0]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    let stderr = text(&o.stderr);
    println!("triage with unreadable reports, stdout:\n{stdout}stderr:\n{stderr}");
    assert!(
        stdout.ends_with("1 reports, 1 signatures (2 unreadable)\n"),
        "{stdout}"
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(stderr.contains(&format!(
        "{}: not a Blackbox report",
        bad.join("report.json").display()
    )));
    assert!(stderr.contains(&format!(
        "{}: report schema version 99 is not supported",
        future.join("report.json").display()
    )));

    // A DIR that does not exist: an error, after the others are triaged.
    let nowhere = tmp.0.join("nowhere");
    let o = run(&[Path::new("triage"), &nowhere, &tmp.0]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).ends_with("1 reports, 1 signatures (2 unreadable)\n"));
    assert!(text(&o.stderr).contains(&format!(
        "blackbox: error: {}: no such folder",
        nowhere.display()
    )));

    // No report at all is not an error.
    let empty = tmp.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let o = run(&[Path::new("triage"), &empty]);
    assert_eq!(o.status.code(), Some(0));
    let stdout = text(&o.stdout);
    println!("triage of an empty folder:\n{stdout}");
    assert_eq!(
        stdout,
        format!(
            "no Blackbox reports found in {}\n0 reports, 0 signatures (0 unreadable)\n",
            empty.display()
        )
    );
    let o = run(&[Path::new("triage"), Path::new("--json"), &empty]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(text(&o.stdout), "[]\n");

    let o = blackbox()
        .args(["triage", "--min-count", "x", "d"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("Usage: blackbox triage"));
}

#[test]
fn report_colours_on_a_terminal_unless_no_color() {
    // A terminal for stdout, through script(1) (util-linux), as a user's shell gives one.
    let tmp = TempDir::new("tty");
    let dir = write(&tmp.0.join("out"), 1, &make(&Spec::default()));
    let on_terminal = |no_color: Option<&str>| {
        let mut cmd = Command::new("script");
        cmd.arg("-qec")
            .arg(format!(
                "{} report '{}'",
                env!("CARGO_BIN_EXE_blackbox"),
                dir.display()
            ))
            .arg("/dev/null")
            .env_remove("NO_COLOR");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let o = cmd.output().expect("script(1)");
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
    };
    assert!(on_terminal(None).contains("\x1b["), "colour on a terminal");
    assert!(
        !on_terminal(Some("1")).contains("\x1b["),
        "NO_COLOR=1: none"
    );
    // An empty NO_COLOR does not count (no-color.org).
    assert!(on_terminal(Some("")).contains("\x1b["), "NO_COLOR empty");
}
