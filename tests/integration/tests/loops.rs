//! Hangs located inside the shader (issue 16), end to end on lavapipe: loop budgets
//! (`VK_BLACKBOX_LOOPS=report|break`, `VK_BLACKBOX_LOOP_LIMIT`, `VK_BLACKBOX_LOOP_MS`) and integer checks
//! (`VK_BLACKBOX_INT=on`). Lavapipe cuts every loop at 65,535 iterations, so a "loop that never ends" is a
//! loop far longer than the limit these tests set; the genuinely infinite loop runs on the GPU machine
//! (`scripts/gpu-check.sh`).

use blackbox_integration::*;
use blackbox_report::Kind;

/// `file:line` of the first line of the test app's shader `file` that contains `needle`.
fn line_of(file: &str, needle: &str) -> String {
    let path = workspace_root().join("shaders/testapp").join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("{needle:?} not in {}", path.display()));
    format!("{file}:{}", line + 1)
}

/// Blackbox's warnings that contain `text`.
fn lines_with<'a>(run: &'a Run, text: &str) -> Vec<&'a str> {
    run.warnings()
        .into_iter()
        .filter(|l| l.contains(text))
        .collect()
}

#[test]
fn report_mode_names_the_loop_a_hung_dispatch_is_still_in() {
    let home = TempDir::new("loop-report");
    // Dispatch 3 of `hang` runs 172,000 multiply-adds per invocation in one loop: far past a limit of 1000,
    // and long enough for a 1 s watchdog: lavapipe runs this loop about 25 times slower with the counter
    // (likely because llvmpipe runs the branch to the record under a mask every iteration: a hand-written
    // counter with such a branch ran 8 times slower), 100 workgroups 7.7 s on 2 CPUs
    // (0.3 s without Blackbox; 300 workgroups took 22 s).
    let args = ["hang", "--hang-groups", "100"];
    let reference = run(&mut testapp_with_validation_only(&home, &args));
    reference.assert_success();
    let run = run(&mut testapp_with_blackbox(
        &home,
        &args,
        &[
            ("VK_BLACKBOX_LOOPS", "report"),
            ("VK_BLACKBOX_LOOP_LIMIT", "1000"),
            ("VK_BLACKBOX_WATCHDOG_MS", "1000"),
        ],
    ));
    run.assert_success()
        .assert_validation_messages_unchanged(&reference);
    // At `report` the loops go on: the results are the plain run's.
    assert_eq!(run.checksums(), reference.checksums(), "{}", run.dump());

    let loop_line = line_of("hang.comp", "for (uint k = 0u; k < iterations; ++k)");
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "one hang report\n{}", run.dump());
    let (dir, report) = &reports[0];
    assert_eq!(report.kind, Kind::Hang);
    let in_flight = &report.in_flight[0];
    assert_eq!(in_flight.labels, ["frame", "dispatch 3"]);
    let looping: Vec<_> = report
        .shader_errors
        .iter()
        .filter(|e| e.kind == "loop")
        .collect();
    assert_eq!(looping.len(), 1, "{:?}", report.shader_errors);
    let looping = looping[0];
    let shader = &in_flight.pipeline.as_ref().unwrap().shaders[0].id;
    assert_eq!(&looping.shader, shader, "the in-flight dispatch's shader");
    assert_eq!(looping.location.as_deref(), Some(loop_line.as_str()));
    assert!(looping.count >= 1, "{looping:?}");
    // The first record: the line, the iterations, the induction variable and the invocation.
    for part in [
        format!("loop at {loop_line} passed its budget: 1000 iterations"),
        "(k = 1000".to_owned(),
        ", invocation (".to_owned(),
        "it went on (VK_BLACKBOX_LOOPS=report)".to_owned(),
    ] {
        assert!(looping.message.contains(&part), "{part:?} in {looping:?}");
    }
    // The text lists it under the command in flight.
    let text = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    let after_in_flight = text
        .split_once("In flight\n")
        .map(|(_, rest)| rest.split("\nLast finished").next().unwrap_or(""))
        .unwrap_or_default();
    assert!(
        after_in_flight.contains("still looping (")
            && after_in_flight.contains(&format!("loop at {loop_line}")),
        "{text}"
    );
    assert!(
        report
            .blackbox
            .settings
            .contains(&"VK_BLACKBOX_LOOPS=report".to_owned()),
        "{:?}",
        report.blackbox.settings
    );
}

#[test]
fn break_mode_ends_the_one_long_loop_and_names_its_line() {
    let home = TempDir::new("loop-break");
    let reference = run(&mut testapp_with_validation_only(&home, &["loop-one"]));
    reference.assert_success();
    assert!(
        reference
            .stderr
            .contains("loop-one: 0 invocation(s) ran another count than their own"),
        "{}",
        reference.dump()
    );
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["loop-one"],
        &[
            ("VK_BLACKBOX_LOOPS", "break"),
            ("VK_BLACKBOX_LOOP_LIMIT", "1000"),
        ],
    ));
    run.assert_success()
        .assert_validation_messages_unchanged(&reference);
    // The dispatch completed; only invocation 1234 ran short, and every other result is the plain run's.
    assert!(
        run.stderr.contains(
            "loop-one: 1 invocation(s) ran another count than their own: invocation 1234 ran 1000 of 60000"
        ),
        "{}",
        run.dump()
    );
    assert_eq!(run.checksums(), reference.checksums(), "{}", run.dump());
    let loop_line = line_of("loop_one.comp", "while (");
    let warnings = lines_with(&run, "passed its budget");
    assert_eq!(warnings.len(), 1, "{}", run.dump());
    for part in [
        format!("[blackbox] warn: loop at {loop_line} passed its budget: 1000 iterations (VK_BLACKBOX_LOOP_LIMIT=1000)"),
        "invocation (1234, 0, 0)".to_owned(),
        "the invocation left it (VK_BLACKBOX_LOOPS=break) x1".to_owned(),
        "[pipeline \"loop-one\"]".to_owned(),
    ] {
        assert!(warnings[0].contains(&part), "{part:?} in {}", warnings[0]);
    }
    assert!(
        run.stderr
            .contains("shaders: asserts log, printf, loops break at 1000 iterations"),
        "the start-up line\n{}",
        run.dump()
    );
    assert!(reports_in(&home.path().join("reports")).is_empty());
}

#[test]
fn a_time_budget_breaks_the_loop_by_the_shader_clock() {
    let home = TempDir::new("loop-time");
    // No iteration limit: only the clock can stop invocation 1234 (lavapipe has VK_KHR_shader_clock). Its
    // 60,000 iterations take well over 1 ms on lavapipe; the 10 of every other invocation do not.
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["loop-one"],
        &[
            ("VK_BLACKBOX_LOOPS", "break"),
            ("VK_BLACKBOX_LOOP_LIMIT", "0"),
            ("VK_BLACKBOX_LOOP_MS", "1"),
        ],
    ));
    run.assert_success();
    assert!(
        run.stderr.contains("loops break at 1 ms"),
        "the start-up line names the time budget\n{}",
        run.dump()
    );
    let warnings = lines_with(&run, "passed its budget");
    assert_eq!(warnings.len(), 1, "{}", run.dump());
    assert!(
        warnings[0].contains("ms in loops (VK_BLACKBOX_LOOP_MS=1;")
            && warnings[0].contains("invocation (1234, 0, 0)"),
        "{}",
        warnings[0]
    );
    assert!(
        run.stderr.contains(
            "loop-one: 1 invocation(s) ran another count than their own: invocation 1234 ran"
        ),
        "{}",
        run.dump()
    );
}

/// Integer records wait until the invocation ends on lavapipe (`VK_BLACKBOX_NAN_RECORDS=auto`); `fired`
/// writes them where the check fires, as on GPUs. Both give the same line.
#[test]
fn integer_division_by_zero_in_one_invocation_is_reported_with_operands_and_line() {
    let home = TempDir::new("int-div");
    let reference = run(&mut testapp_with_validation_only(&home, &["int-div"]));
    reference.assert_success();
    let line = line_of("int_div.comp", "numerator / divisors[i]");
    for records in ["auto", "fired"] {
        let run = run(&mut testapp_with_blackbox(
            &home,
            &["int-div"],
            &[
                ("VK_BLACKBOX_INT", "on"),
                ("VK_BLACKBOX_NAN_RECORDS", records),
            ],
        ));
        run.assert_success()
            .assert_validation_messages_unchanged(&reference);
        assert_eq!(run.checksums(), reference.checksums(), "{}", run.dump());
        // 4095 invocations divide by 1; invocation 2345 divides 7 * 2345 + 3 = 16418 by 0.
        let warnings = lines_with(&run, "integer");
        assert_eq!(warnings.len(), 1, "records {records}: {}", run.dump());
        assert!(
            warnings[0].starts_with(&format!(
                "[blackbox] warn: integer division by zero at {line}: SDiv dividend 16418, divisor 0, \
                 invocation (2345, 0, 0) in shader "
            )) && warnings[0].ends_with(" x1 [pipeline \"int-div\"]"),
            "records {records}: {}",
            warnings[0]
        );
    }
    // Off by default: the same run without the variable reports nothing.
    let off = run_plain(&home);
    assert!(lines_with(&off, "integer").is_empty(), "{}", off.dump());
}

fn run_plain(home: &TempDir) -> Run {
    let run = run(&mut testapp_with_blackbox(home, &["int-div"], &[]));
    run.assert_success();
    run
}
