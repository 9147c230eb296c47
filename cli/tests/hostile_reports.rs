//! `blackbox report` and `blackbox triage` on damaged and hostile report folders: deeply nested, huge and
//! wrongly typed JSON, FIFOs, links out of the folder given and link loops, folder names holding escape
//! sequences, tens of thousands of entries. Neither panics, hangs, follows a link below the folder given
//! or lets a string reach the terminal raw; each says what it skipped and why.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use blackbox_integration::TempDir;
use blackbox_report::untrusted::is_unsafe;
use blackbox_report::Report;

fn blackbox() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blackbox"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A real report (written by the layer on lavapipe), as bytes.
fn real_report() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/reports/hang.json"))
        .unwrap()
}

fn real_value() -> serde_json::Value {
    serde_json::from_slice(&real_report()).unwrap()
}

/// Writes `bytes` as `<dir>/<name>/report.json`.
fn write_report(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("report.json"), bytes).unwrap();
    folder
}

/// Runs the CLI with a time limit (a hang fails the test instead of stalling it).
fn run(args: &[&std::ffi::OsStr]) -> Output {
    let child = blackbox()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || send.send(child.wait_with_output()));
    match receive.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            // SAFETY: kills the child this test started, by its id.
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
            panic!("blackbox {args:?} did not finish in 60 s");
        }
    }
}

fn os<T: AsRef<std::ffi::OsStr> + ?Sized>(s: &T) -> &std::ffi::OsStr {
    s.as_ref()
}

/// Nothing a terminal acts on in either stream (the CLI's output is shown on one).
fn assert_terminal_safe(o: &Output) {
    for (what, bytes) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        let t = text(bytes);
        let bad: Vec<char> = t.chars().filter(|&c| is_unsafe(c) && c != '\n').collect();
        assert!(bad.is_empty(), "{what} holds {bad:?}:\n{t}");
    }
    assert!(
        o.status.code().is_some(),
        "ended by a signal: {:?}",
        o.status
    );
    assert!(!text(&o.stderr).contains("panicked"), "{}", text(&o.stderr));
}

#[test]
fn damaged_files_are_unreadable_reports_never_a_panic() {
    let tmp = TempDir::new("damaged");
    let good = write_report(tmp.path(), "a-good-1-1", &real_report());
    let mut cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        (
            "nested",
            format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000)).into_bytes(),
        ),
        (
            "nested-in-a-report",
            format!("{{\"version\": 1, \"notes\": {}", "[".repeat(1_000_000)).into_bytes(),
        ),
        (
            "cut-short",
            "{\"version\": 1, \"notes\": ".to_owned().into_bytes(),
        ),
        ("binary", (0..=255u8).cycle().take(100_000).collect()),
        (
            "invalid-utf8",
            b"{\"version\": 1, \"reason\": \"\xff\xfe\"}".to_vec(),
        ),
        (
            "number-for-string",
            br#"{"version": 1, "reason": 42}"#.to_vec(),
        ),
        ("future", br#"{"version": 99}"#.to_vec()),
    ];
    // Secondaries inside secondaries, 200 deep: each level is a valid command buffer.
    let mut nested = real_value();
    let cb = nested["queues"][0]["submissions"][0]["command_buffers"][0].clone();
    let mut inner = cb.clone();
    for _ in 0..200 {
        let mut outer = cb.clone();
        outer["secondaries"] = serde_json::json!([inner]);
        inner = outer;
    }
    nested["queues"][0]["submissions"][0]["command_buffers"][0] = inner;
    cases.push(("secondaries-200-deep", nested.to_string().into_bytes()));
    let mut wrong = real_value();
    wrong["queues"] = serde_json::json!("not a list");
    cases.push(("wrong-type", wrong.to_string().into_bytes()));
    let mut wrong = real_value();
    wrong["unix_ms"] = serde_json::json!(-1);
    cases.push(("negative-time", wrong.to_string().into_bytes()));
    for (name, bytes) in &cases {
        write_report(tmp.path(), &format!("bad-{name}"), bytes);
    }
    // Huge: 17 MiB (sparse), past the 16 MiB a report may be.
    let huge = tmp.path().join("bad-huge");
    std::fs::create_dir(&huge).unwrap();
    std::fs::File::create(huge.join("report.json"))
        .unwrap()
        .set_len(17 << 20)
        .unwrap();

    let o = run(&[os("triage"), tmp.path().as_os_str()]);
    assert_terminal_safe(&o);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    println!("triage of damaged files, stderr:\n{stderr}");
    assert!(
        stdout.ends_with(&format!(
            "1 reports, 1 signatures ({} unreadable)\n",
            cases.len() + 1
        )),
        "{stdout}"
    );
    assert!(
        stderr.contains(&format!(
            "blackbox: unreadable report {}: 17825792 bytes, more than a report can be (16 MiB)",
            huge.join("report.json").display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("recursion limit exceeded"), "{stderr}");
    assert!(
        stderr.contains("report schema version 99 is not supported"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), cases.len() + 1, "{stderr}");

    // `report` of each damaged folder: one clear error line, exit 1.
    for (name, _) in &cases {
        let o = run(&[
            os("report"),
            tmp.path().join(format!("bad-{name}")).as_os_str(),
        ]);
        assert_terminal_safe(&o);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert_eq!(
            text(&o.stderr).lines().count(),
            1,
            "{name}: {}",
            text(&o.stderr)
        );
    }
    // The parent: the one good report, the others counted.
    let o = run(&[os("report"), tmp.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stderr).contains(&format!(
        "showing the newest report in {}: {}",
        tmp.path().display(),
        good.display()
    )));
}

#[test]
fn links_below_the_folder_given_are_never_followed() {
    let tmp = TempDir::new("links");
    let outside = TempDir::new("links-outside");
    // Outside: a report that must not be read, and a folder full of them.
    let secret = write_report(outside.path(), "secret-1-1", &real_report());
    let given = tmp.path().join("given");
    write_report(&given, "mine-1-1", &real_report());
    // report.json as a link to the outside report; a folder link out; a loop; a dangling link.
    let linked = given.join("linked-1-1");
    std::fs::create_dir_all(&linked).unwrap();
    symlink(secret.join("report.json"), linked.join("report.json")).unwrap();
    symlink(outside.path(), given.join("out")).unwrap();
    symlink(&given, given.join("loop")).unwrap();
    symlink("/nonexistent/blackbox", given.join("dangling")).unwrap();

    let o = run(&[os("triage"), given.as_os_str()]);
    assert_terminal_safe(&o);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    println!("triage with links, stderr:\n{stderr}");
    assert!(
        stdout.ends_with("1 reports, 1 signatures (0 unreadable)\n"),
        "{stdout}"
    );
    for link in [
        given.join("dangling"),
        linked.join("report.json"),
        given.join("loop"),
        given.join("out"),
    ] {
        assert!(
            stderr.contains(&format!(
                "blackbox: skipped {}: a symbolic link (links below the folder given are not followed)",
                link.display()
            )),
            "{}\n{stderr}",
            link.display()
        );
    }
    assert_eq!(stderr.lines().count(), 4, "{stderr}");

    // `report` of the folder whose report.json is a link: refused, said.
    let o = run(&[os("report"), linked.as_os_str()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("a symbolic link"),
        "{}",
        text(&o.stderr)
    );
    // A link named on the command line is the user's choice: followed.
    let o = run(&[os("report"), given.join("out").as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = run(&[os("report"), linked.join("report.json").as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn a_fifo_or_a_device_named_report_json_does_not_stall_the_scan() {
    let tmp = TempDir::new("fifo");
    write_report(tmp.path(), "good-1-1", &real_report());
    let fifo = tmp.path().join("fifo-1-1");
    std::fs::create_dir(&fifo).unwrap();
    let path = std::ffi::CString::new(
        fifo.join("report.json")
            .into_os_string()
            .into_encoded_bytes(),
    )
    .unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let o = run(&[os("triage"), tmp.path().as_os_str()]);
    assert_terminal_safe(&o);
    assert!(
        text(&o.stdout).ends_with("1 reports, 1 signatures (1 unreadable)\n"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        text(&o.stderr).contains(&format!(
            "{}: not a regular file",
            fifo.join("report.json").display()
        )),
        "{}",
        text(&o.stderr)
    );
    // Named directly: refused the same way.
    for arg in [fifo.join("report.json"), PathBuf::from("/dev/zero")] {
        let o = run(&[os("report"), arg.as_os_str()]);
        assert_eq!(o.status.code(), Some(1), "{arg:?}");
        assert!(
            text(&o.stderr).contains("not a regular file"),
            "{}",
            text(&o.stderr)
        );
    }
}

#[test]
fn hostile_folder_names_and_strings_are_escaped_in_every_message_and_table() {
    let tmp = TempDir::new("names");
    let hostile = "evil\x1b[2J\x1b]0;pwned\x07\r\u{9b}\u{202e}name";
    let mut value = real_value();
    value["app"]["name"] = hostile.into();
    value["in_flight"][0]["labels"][0] = hostile.into();
    value["signature_text"] = hostile.into();
    value["time"] = hostile.into();
    let folder = write_report(tmp.path(), hostile, value.to_string().as_bytes());
    write_report(tmp.path(), &format!("{hostile}-bad"), b"{");
    symlink("/", tmp.path().join(format!("{hostile}-link"))).unwrap();
    for args in [
        vec![os("triage"), tmp.path().as_os_str()],
        vec![os("triage"), os("--json"), tmp.path().as_os_str()],
        vec![os("report"), tmp.path().as_os_str()],
        vec![os("report"), folder.as_os_str()],
        vec![
            os("report"),
            tmp.path().join(format!("{hostile}-bad")).as_os_str(),
        ],
        vec![os("report"), tmp.path().join("nowhere\x1b[31m").as_os_str()],
        vec![os("triage"), tmp.path().join("nowhere\x1b[31m").as_os_str()],
    ] {
        let o = run(&args);
        println!("{args:?}:\n{}{}", text(&o.stdout), text(&o.stderr));
        assert_terminal_safe(&o);
        let all = format!("{}{}", text(&o.stdout), text(&o.stderr));
        assert!(
            all.contains(r"evil\x1b[2J\x1b]0;pwned\x07\r\u{9b}\u{202e}name")
                || all.contains(r"nowhere\x1b[31m")
                || all.contains(r"evil\u001b[2J"),
            "{all}"
        );
    }
    // --json keeps the exact text.
    let o = run(&[os("triage"), os("--json"), tmp.path().as_os_str()]);
    let groups: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(groups[0]["app_names"][0], hostile);
    assert_eq!(groups[0]["sample"], folder.to_str().unwrap());
}

#[test]
fn folders_nested_past_the_depth_limit_are_skipped_and_said() {
    let tmp = TempDir::new("deep");
    let mut deep = tmp.path().to_path_buf();
    for _ in 0..70 {
        deep.push("d");
    }
    write_report(&deep, "r-1-1", &real_report());
    let mut shallow = tmp.path().to_path_buf();
    for _ in 0..60 {
        shallow.push("s");
    }
    write_report(&shallow, "r-1-1", &real_report());
    let o = run(&[os("triage"), tmp.path().as_os_str()]);
    assert_terminal_safe(&o);
    assert!(
        text(&o.stdout).ends_with("1 reports, 1 signatures (0 unreadable)\n"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        text(&o.stderr).contains("a folder more than 64 levels down"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn tens_of_thousands_of_entries_are_scanned_with_the_skips_counted_not_all_listed() {
    let tmp = TempDir::new("many");
    write_report(tmp.path(), "good-1-1", &real_report());
    let crowd = tmp.path().join("crowd");
    std::fs::create_dir(&crowd).unwrap();
    for i in 0..25_000 {
        std::fs::write(crowd.join(format!("f{i}")), b"").unwrap();
        symlink("/", crowd.join(format!("l{i}"))).unwrap();
    }
    let started = Instant::now();
    let o = run(&[os("triage"), tmp.path().as_os_str()]);
    println!("triage over 50,000 entries: {:?}", started.elapsed());
    assert_terminal_safe(&o);
    let stderr = text(&o.stderr);
    assert!(text(&o.stdout).ends_with("1 reports, 1 signatures (0 unreadable)\n"));
    assert_eq!(stderr.lines().count(), 21, "{stderr}");
    assert!(
        stderr.ends_with(
            "blackbox: 25000 entries skipped or unreadable in all (25000 symbolic links); the first 20 are named above\n"
        ),
        "{stderr}"
    );
}

#[test]
fn what_triage_keeps_of_each_report_is_bounded() {
    // 60 reports of distinct signatures, each with 2 MiB of signature text: 120 MiB of strings, of which
    // a group keeps 1 KiB. The child's peak memory shows what it kept.
    let tmp = TempDir::new("budget");
    let mut value = real_value();
    for i in 0..60 {
        value["signature"] = format!("{i:016x}").into();
        value["signature_text"] = "t".repeat(2 << 20).into();
        write_report(
            tmp.path(),
            &format!("r-{i}-1"),
            value.to_string().as_bytes(),
        );
    }
    let o = run(&[os("triage"), os("--json"), tmp.path().as_os_str()]);
    assert_eq!(o.status.code(), Some(0));
    let groups: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(groups.as_array().unwrap().len(), 60);
    let kept = groups[0]["signature_text"].as_str().unwrap();
    assert!(
        kept.len() < 1100 && kept.ends_with("more bytes cut by Blackbox]"),
        "{}",
        kept.len()
    );
    // SAFETY: getrusage writes the struct it is given.
    let peak_kib = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss
    };
    println!("peak resident memory of the largest child so far: {peak_kib} KiB");
    assert!(peak_kib < 100 * 1024, "{peak_kib} KiB");
}

#[test]
fn the_progress_line_shows_on_a_terminal_only() {
    let tmp = TempDir::new("progress");
    for i in 0..3000 {
        write_report(tmp.path(), &format!("r-{i}-1"), &real_report());
    }
    // On a pipe: no progress line.
    let o = run(&[os("triage"), tmp.path().as_os_str()]);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    // On a terminal (script(1) gives the command one): the counter, then cleared.
    let log = tmp.path().join("typescript");
    let o = Command::new("script")
        .arg("-qec")
        .arg(format!(
            "{} triage {} >/dev/null",
            env!("CARGO_BIN_EXE_blackbox"),
            tmp.path().display()
        ))
        .arg(&log)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let seen = text(&std::fs::read(&log).unwrap());
    assert!(seen.contains("\r\x1b[Kblackbox: scanned "), "{seen:?}");
    assert!(seen.contains(" reports..."), "{seen:?}");
    assert!(seen.contains("\r\x1b[K"), "cleared at the end: {seen:?}");
}

#[test]
fn a_report_read_back_prints_the_same_as_its_text_file() {
    // Sanity for everything above: the real report reads, and `report --json` round-trips it.
    let tmp = TempDir::new("sane");
    let folder = write_report(tmp.path(), "r-1-1", &real_report());
    let o = run(&[os("report"), os("--json"), folder.as_os_str()]);
    assert_eq!(o.status.code(), Some(0));
    let report = Report::from_json(&text(&o.stdout)).unwrap();
    assert_eq!(
        report.to_json(),
        Report::from_json_bytes(&real_report()).unwrap().to_json()
    );
}
