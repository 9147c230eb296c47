//! Trust (issue 17), end to end on lavapipe: reports are private whatever the umask; a per-user temp folder
//! another user could have planted is never used; what the app put in its strings reaches the log, the
//! text report and the CLI escaped, and the JSON exactly; a fatal signal while the faulting thread holds a
//! lock the report needs still ends the process in time, with its log line, and the app's own crash
//! handler runs after Blackbox's.
//!
//! The tests run one at a time (`serial`): each keeps lavapipe busy for a few seconds.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use blackbox_integration::*;
use blackbox_report::untrusted::is_unsafe;
use blackbox_report::{Kind, Report};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the signal path waits for the report at most (`layer/src/signals.rs`).
const REPORT_SECONDS: u64 = 10;
/// The app's own crash handler's line (`tests/app/src/scenarios/hostile.rs`).
const CRASH_HANDLER_LINE: &str = "bb-testapp: the app's own crash handler ran for signal ";

/// Runs `cmd` with the process umask set to `mask` in the child.
fn with_umask(cmd: &mut Command, mask: libc::mode_t) -> &mut Command {
    // SAFETY: umask is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(mask);
            Ok(())
        })
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .mode()
        & 0o7777
}

/// The characters of `text` a terminal would act on, newlines aside.
fn unsafe_chars(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| is_unsafe(c) && c != '\n')
        .collect()
}

/// The report folders directly in `dir`.
fn folders(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|e| e.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
}

#[test]
fn hostile_app_strings_are_escaped_in_the_log_the_text_and_the_cli_and_exact_in_json() {
    let home = TempDir::new("hostile");
    // Reports in a folder that does not exist yet, two levels deep; umask 000, which would make
    // everything world-writable if Blackbox left modes to it.
    let output = home.path().join("reports/deep");
    let log = home.path().join("blackbox.log");
    let mut cmd = testapp_with_blackbox(
        &home,
        &["hostile-strings", "--hang-groups", "3000"],
        &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
    );
    cmd.env("VK_BLACKBOX_OUTPUT", &output)
        .env("VK_BLACKBOX_LOG_FILE", &log);
    with_umask(&mut cmd, 0o000);
    let run = {
        let _serial = serial();
        run(&mut cmd)
    };
    run.assert_success().assert_no_validation_messages();
    let log = std::fs::read(&log).expect("the log file");
    let log = String::from_utf8(log).expect("the log is UTF-8 (invalid bytes replaced)");

    // Private: the folders Blackbox made, the report folder, its files, the log file.
    let reports = reports_in(&output);
    assert_eq!(reports.len(), 1, "one hang report\n{log}\n{}", run.dump());
    let (dir, report) = &reports[0];
    for folder in [home.path().join("reports"), output.clone(), dir.clone()] {
        assert_eq!(mode(&folder), 0o700, "{}", folder.display());
    }
    for file in ["report.json", "report.txt"] {
        assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
    }
    assert_eq!(mode(&home.path().join("blackbox.log")), 0o600);

    // The log: nothing a terminal acts on, the app's text visibly escaped, no forged line.
    assert_eq!(unsafe_chars(&log), Vec::<char>::new(), "{log}");
    assert_eq!(
        unsafe_chars(&run.stderr),
        Vec::<char>::new(),
        "{}",
        run.dump()
    );
    assert!(
        log.contains(r#"active in "bb\x1b[31m-testapp\r"#),
        "the app's name, escaped\n{log}"
    );
    assert!(
        log.contains(
            r"bb-hostile \x1b[31m|\x00|\r|\n|\u{9b}|\u{202e} end [invocation (0, 0, 0), site 0] [pipeline"
        ),
        "the printf line, escaped\n{log}"
    );
    assert!(
        !log.lines()
            .any(|l| l.starts_with("[blackbox] error: forged")),
        "{log}"
    );
    println!("log:\n{log}");

    // The JSON: the app's exact text (invalid UTF-8 replaced), the long label kept at 1 KiB with the cut said.
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
    assert_eq!(
        unsafe_chars(&json),
        Vec::<char>::new(),
        "the JSON prints safely"
    );
    assert_eq!(report.app.name, "bb\x1b[31m-testapp\r\u{fffd}");
    let cb = &report.queues[0].submissions[0].command_buffers[0];
    let names: Vec<&str> = cb.scopes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names[..2],
        [
            "frame\x1b[2J\x1b]0;pwned\x07\r\n[blackbox] error: forged line \u{fffd}\u{fffd}",
            "marker\u{9b}6n\u{202e}evil",
        ]
    );
    assert!(
        names[2].starts_with(&"L".repeat(1024))
            && names[2].ends_with("… [98976 more bytes cut by Blackbox]")
            && names[2].len() < 1100,
        "{} bytes: {}",
        names[2].len(),
        &names[2][1000..]
    );
    let name = cb.name.as_deref().unwrap_or_default();
    assert!(
        name.starts_with("cmd\x1b[5mxxx") && name.ends_with("… [3976 more bytes cut by Blackbox]"),
        "{name}"
    );
    let pipeline = report.in_flight[0].pipeline.as_ref().unwrap();
    assert_eq!(pipeline.name.as_deref(), Some("pipe\x1b[1;31mline\rname"));
    let printf = &report.shader_errors[0].message;
    assert!(
        printf.contains("bb-hostile \x1b[31m|\0|\r|\n|\u{9b}|\u{202e} end"),
        "{printf:?}"
    );

    // The text report, and the CLI's output: escaped.
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    assert_eq!(unsafe_chars(&text), Vec::<char>::new(), "{text}");
    for escaped in [
        r"frame\x1b[2J\x1b]0;pwned\x07\r\n[blackbox] error: forged line ��",
        r"marker\u{9b}6n\u{202e}evil",
        r#"pipeline "pipe\x1b[1;31mline\rname""#,
        r"bb-hostile \x1b[31m|\x00|\r|\n|\u{9b}|\u{202e} end",
        r"app        bb\x1b[31m-testapp\r�",
    ] {
        assert!(text.contains(escaped), "{escaped}\n{text}");
    }
    for args in [
        vec!["report".into(), dir.clone().into_os_string()],
        vec!["report".into(), output.clone().into_os_string()],
        vec!["triage".into(), output.clone().into_os_string()],
        vec![
            "report".into(),
            "--color=always".into(),
            dir.clone().into_os_string(),
        ],
    ] {
        let o = Command::new(blackbox()).args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {o:?}");
        let (stdout, stderr) = (
            String::from_utf8(o.stdout).unwrap(),
            String::from_utf8(o.stderr).unwrap(),
        );
        let colour = args.iter().any(|a| a == "--color=always");
        let plain = if colour {
            [
                "\x1b[0m",
                "\x1b[1m",
                "\x1b[1;31m",
                "\x1b[1;33m",
                "\x1b[2m",
                "\x1b[32m",
                "\x1b[36m",
            ]
            .iter()
            .fold(stdout.clone(), |t, code| t.replace(code, ""))
        } else {
            stdout.clone()
        };
        assert_eq!(
            unsafe_chars(&plain),
            Vec::<char>::new(),
            "{args:?}\n{stdout}"
        );
        assert_eq!(
            unsafe_chars(&stderr),
            Vec::<char>::new(),
            "{args:?}\n{stderr}"
        );
        if args[0] == "triage" {
            assert!(stdout.contains(r"frame\x1b[2J"), "{stdout}");
            println!("triage:\n{stdout}");
        } else {
            assert!(
                stdout.contains(r#"pipeline "pipe\x1b[1;31mline\rname""#),
                "{stdout}"
            );
        }
    }
    let o = Command::new(blackbox())
        .args(["report", "--json"])
        .arg(dir)
        .output()
        .unwrap();
    let printed = String::from_utf8(o.stdout).unwrap();
    assert_eq!(unsafe_chars(&printed), Vec::<char>::new());
    assert_eq!(
        Report::from_json(&printed).unwrap().to_json(),
        report.to_json(),
        "--json prints the exact text"
    );
}

/// Runs the `hang` scenario with an output folder that cannot be created, so reports fall back to the
/// temp dir `home/tmp`, where `plant` has put something as `blackbox-<uid>` first; returns the run and
/// the temp dir.
fn hang_with_planted_fallback(home: &TempDir, plant: impl FnOnce(&Path)) -> (Run, PathBuf) {
    let tmp = home.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    plant(&tmp.join(format!("blackbox-{uid}")));
    std::fs::write(home.path().join("a-file"), b"").unwrap();
    let mut cmd = testapp_with_blackbox(
        home,
        &["hang", "--hang-groups", "3000"],
        &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
    );
    cmd.env("VK_BLACKBOX_OUTPUT", home.path().join("a-file/reports"))
        .env("TMPDIR", &tmp);
    let run = {
        let _serial = serial();
        run(&mut cmd)
    };
    run.assert_success().assert_no_validation_messages();
    (run, tmp)
}

/// The one report of a fallback run: in a fresh private `blackbox-<uid>-<random>` folder under `tmp`,
/// named by the warning along with `why`.
fn assert_report_in_fresh_private_folder(run: &Run, tmp: &Path, why: &str) {
    // SAFETY: getuid has no preconditions.
    let uid = unsafe { libc::getuid() };
    let fresh: Vec<PathBuf> = folders(tmp)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&format!("blackbox-{uid}-")))
        })
        .collect();
    assert_eq!(fresh.len(), 1, "{fresh:?}\n{}", run.dump());
    let fresh = &fresh[0];
    let meta = std::fs::symlink_metadata(fresh).unwrap();
    assert!(meta.is_dir() && !meta.file_type().is_symlink());
    assert_eq!(meta.mode() & 0o7777, 0o700);
    assert_eq!(
        reports_in(fresh).len(),
        1,
        "the report is there\n{}",
        run.dump()
    );
    let warnings = run.warnings().join("\n");
    let per_user = tmp.join(format!("blackbox-{uid}"));
    assert!(
        warnings.contains(&format!(
            "{} {why}, so another user may read or plant reports there: reports go to the new private folder {} \
             instead",
            per_user.display(),
            fresh.display()
        )),
        "{warnings}"
    );
    assert!(
        run.stderr
            .contains(&format!("report written to {}", fresh.display())),
        "{}",
        run.dump()
    );
    println!("{warnings}");
}

#[test]
fn a_symbolic_link_planted_as_the_fallback_folder_is_not_followed() {
    let home = TempDir::new("planted-link");
    let attacker = home.path().join("attacker");
    std::fs::create_dir(&attacker).unwrap();
    std::fs::set_permissions(&attacker, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (run, tmp) =
        hang_with_planted_fallback(&home, |p| std::os::unix::fs::symlink(&attacker, p).unwrap());
    assert_report_in_fresh_private_folder(&run, &tmp, "is a symbolic link");
    assert!(
        folders(&attacker).is_empty(),
        "nothing written through the link"
    );
}

#[test]
fn a_fallback_folder_others_can_write_is_not_used() {
    let home = TempDir::new("planted-mode");
    let mut planted = None;
    let (run, tmp) = hang_with_planted_fallback(&home, |p| {
        std::fs::create_dir(p).unwrap();
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777)).unwrap();
        planted = Some(p.to_path_buf());
    });
    assert_report_in_fresh_private_folder(&run, &tmp, "can be written by other users (mode 777)");
    assert!(
        folders(&planted.unwrap()).is_empty(),
        "nothing written into it"
    );
}

#[test]
fn a_safe_fallback_folder_is_used() {
    let home = TempDir::new("fallback-safe");
    let (run, tmp) = hang_with_planted_fallback(&home, |_| {});
    // SAFETY: getuid has no preconditions.
    let per_user = tmp.join(format!("blackbox-{}", unsafe { libc::getuid() }));
    assert_eq!(mode(&per_user), 0o700);
    assert_eq!(reports_in(&per_user).len(), 1, "{}", run.dump());
    // (The validation layer keeps a cache file there too.)
    let ours: Vec<PathBuf> = folders(&tmp)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("blackbox-"))
        })
        .collect();
    assert_eq!(ours, std::slice::from_ref(&per_user));
    assert!(
        run.warnings()
            .iter()
            .any(|w| w.contains(&format!("reports go to {} instead", per_user.display()))),
        "{}",
        run.dump()
    );
}

/// Runs a crash scenario under Blackbox; returns the run, how long it took, and its reports.
fn crash(label: &str, scenario: &str) -> (Run, Duration, Vec<(PathBuf, Report)>, TempDir) {
    let home = TempDir::new(label);
    let mut cmd = testapp_with_blackbox(&home, &[scenario, "--hang-groups", "2000"], &[]);
    let (run, took) = {
        let _serial = serial();
        let started = Instant::now();
        let run = run(&mut cmd);
        (run, started.elapsed())
    };
    let reports = reports_in(&home.path().join("reports"));
    (run, took, reports, home)
}

/// The order of `needles` in `haystack` (each must be there).
fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut at = 0;
    for needle in needles {
        match haystack[at..].find(needle) {
            Some(i) => at += i + needle.len(),
            None => panic!("`{needle}` missing or out of order in\n{haystack}"),
        }
    }
}

#[test]
fn a_fault_while_glibc_holds_its_allocator_lock_ends_in_time_and_the_apps_handler_runs_after() {
    let (run, took, reports, _home) = crash("malloc-lock", "crash-in-malloc");
    println!(
        "crash-in-malloc: {took:?}, {} report(s)\n{}",
        reports.len(),
        run.stderr
    );
    // glibc found the double free with its lock held and aborted.
    assert!(
        run.stderr.contains("double free or corruption"),
        "{}",
        run.dump()
    );
    assert_eq!(run.status.signal(), Some(libc::SIGABRT), "{}", run.dump());
    assert!(
        took < Duration::from_secs(REPORT_SECONDS + 5),
        "{took:?}\n{}",
        run.dump()
    );
    // At least the first line, written before anything that allocates; then the report or the line saying
    // it was not written in time; then the app's own handler.
    let outcome = if reports.is_empty() {
        "[blackbox] error: the report was not written within 10 s"
    } else {
        "[blackbox] error: fatal signal report written to "
    };
    assert_in_order(
        &run.stderr,
        &[
            "[blackbox] error: SIGABRT in thread bb-testapp (",
            outcome,
            &format!("{CRASH_HANDLER_LINE}{}", libc::SIGABRT),
        ],
    );
    if let Some((_, report)) = reports.first() {
        assert_eq!(report.kind, Kind::Signal);
        assert_eq!(report.reason, "the process received SIGABRT");
    }
}

#[test]
fn a_fault_inside_blackboxs_own_lock_is_reported_and_the_apps_handler_runs_after() {
    let (run, took, reports, _home) = crash("blackbox-lock", "crash-in-blackbox-lock");
    println!("crash-in-blackbox-lock: {took:?}\n{}", run.stderr);
    assert_eq!(run.status.signal(), Some(libc::SIGSEGV), "{}", run.dump());
    assert!(took < Duration::from_secs(REPORT_SECONDS + 5), "{took:?}");
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let (dir, report) = &reports[0];
    assert_in_order(
        &run.stderr,
        &[
            "[blackbox] error: SIGSEGV in thread bb-testapp (",
            &format!(
                "[blackbox] error: fatal signal report written to {}",
                dir.join("report.txt").display()
            ),
            &format!("{CRASH_HANDLER_LINE}{}", libc::SIGSEGV),
        ],
    );
    // The faulting thread held the debug names' lock: the report waited for it a bounded time, said so,
    // and still names the dispatch in flight.
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.starts_with("debug names could not be read (a lock was held)")),
        "{:?}",
        report.notes
    );
    assert_eq!(
        report.signal.as_ref().unwrap().address.as_deref(),
        Some("0x1")
    );
    assert_eq!(report.in_flight[0].labels, ["crash frame"]);
    assert_eq!(report.in_flight[0].command, "vkCmdDispatch");
}

#[test]
fn dumped_shaders_are_private_whatever_the_umask() {
    let home = TempDir::new("dump-private");
    let dump = home.path().join("dump/shaders");
    let mut cmd = testapp_with_blackbox(
        &home,
        &["nan-compute"],
        &[
            ("VK_BLACKBOX_NAN", "ops"),
            ("VK_BLACKBOX_DUMP_SHADERS", dump.to_str().unwrap()),
        ],
    );
    with_umask(&mut cmd, 0o000);
    let run = {
        let _serial = serial();
        run(&mut cmd)
    };
    run.assert_success().assert_no_validation_messages();
    assert_eq!(mode(&home.path().join("dump")), 0o700);
    assert_eq!(mode(&dump), 0o700);
    let files = folders(&dump);
    assert!(files.len() >= 3, "{files:?}");
    for file in files {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
}
