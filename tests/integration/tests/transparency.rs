//! Blackbox must be invisible to the app and to the validation layer below it (issue 10): this file holds
//! the checks of that which need a scenario of their own.
//!
//! - The validation settings every end-to-end test runs with (synchronization validation and best
//!   practices, every message, no repeat dropped) take effect: a deliberate hazard and a deliberate
//!   best-practices case are reported, as often as they happen.
//! - shader-bench's shaders with the assert checked by hand compute what its asserting shaders compute.
//! - An app that learns of completion only by polling a timeline semaphore (as wgpu does), or that makes
//!   no Vulkan call at all for a while, still gets its NaN reported before it reads its results.

use blackbox_integration::*;

#[test]
fn validation_settings_take_effect_hazards_and_best_practices_are_reported_every_time() {
    let home = TempDir::new("canary");
    let run = run(&mut testapp_with_validation_only(
        &home,
        &["validation-canary"],
    ));
    assert_eq!(
        run.status.code(),
        Some(3),
        "the app's messenger received the messages\n{}",
        run.dump()
    );
    run.assert_validation_on();
    let log = run.validation();
    let counts = log.counts();
    // 12 fills with no barrier between them: 11 hazards, over the layer's default limit of 10 repeats.
    assert_eq!(
        counts.get("SYNC-HAZARD-WRITE-AFTER-WRITE"),
        Some(&11),
        "synchronization validation, no repeat dropped\n{}",
        run.dump()
    );
    assert_eq!(
        counts.get("UNASSIGNED-BestPractices-pipeline-stage-flags"),
        Some(&1),
        "best practices\n{}",
        run.dump()
    );
    let hazard = log.first("SYNC-HAZARD-WRITE-AFTER-WRITE").unwrap();
    assert!(
        hazard.text.contains("vkCmdFillBuffer") && hazard.text.contains("Objects: 1"),
        "the whole message is kept\n{}",
        hazard.text
    );
    // The strict check sees them; nothing else is in the log.
    let unexpected = log.unexpected();
    assert_eq!(unexpected.len(), 12, "{}", run.dump());
    assert!(log.stray.is_empty(), "{:#?}", log.stray);
}

/// The index of the first line of `run`'s stderr for which `pred` holds.
fn line_of(run: &Run, pred: impl Fn(&str) -> bool) -> Option<usize> {
    run.stderr.lines().position(pred)
}

/// Runs `scenario` (nan-poll or nan-sleep) through Blackbox at NaN `outputs` and asserts that its NaN
/// line comes before the app's `reading results` line.
fn nan_before_reading(scenario: &str) {
    let home = TempDir::new(scenario);
    let reference = run(&mut testapp_with_validation_only(&home, &[scenario]));
    reference.assert_success().assert_no_validation_messages();
    let started = std::time::Instant::now();
    let run = run(&mut testapp_with_blackbox(
        &home,
        &[scenario],
        &[("VK_BLACKBOX_NAN", "outputs")],
    ));
    let took = started.elapsed();
    // The order first; the validation messages (exit code 3) after.
    run.assert_testapp_finished();
    assert_eq!(run.checksums(), reference.checksums(), "{}", run.dump());
    let pipeline = format!("[pipeline \"{scenario}\"]");
    let nan = line_of(&run, |l| {
        l.starts_with("[blackbox] warn: NaN") && l.contains(&pipeline)
    });
    let reading = line_of(&run, |l| {
        l.starts_with(&format!("bb-testapp: {scenario}: reading results"))
    })
    .unwrap_or_else(|| panic!("no `reading results` line\n{}", run.dump()));
    let teardown = line_of(&run, |l| {
        l == format!("bb-testapp: {scenario}: tearing down")
    })
    .unwrap_or_else(|| panic!("no `tearing down` line\n{}", run.dump()));
    let when = match nan {
        None => "never".to_owned(),
        Some(n) if n < reading => "before the app read its results".to_owned(),
        Some(n) if n < teardown => "after the app read its results (late)".to_owned(),
        Some(_) => "only when the app tore the device down".to_owned(),
    };
    assert!(
        nan.is_some_and(|n| n < reading),
        "the NaN line {pipeline} must come before `{scenario}: reading results`; it came {when} \
         (run took {took:?})\n{}",
        run.dump()
    );
    run.assert_success().assert_no_validation_messages();
}

#[test]
fn nan_is_reported_before_an_app_that_polls_a_timeline_semaphore_reads_its_results() {
    nan_before_reading("nan-poll");
}

/// `nan-sleep` makes no Vulkan call for 500 ms after submitting (its one small dispatch completes within
/// milliseconds): Blackbox must notice the completion by itself, within a bounded time (under those
/// 500 ms), not wait for the app's next call.
#[test]
fn nan_is_reported_within_a_bounded_time_while_the_app_makes_no_vulkan_call() {
    nan_before_reading("nan-sleep");
}

/// `nan-signal-array` passes a signal array with a count of 0 in its batch, as libplacebo does: the
/// validation layer must report it through Blackbox as without (Blackbox's timeline signal goes in a batch
/// of its own then), and that signal must still tell Blackbox of the completion while the app makes no
/// Vulkan call. With a watchdog of 200 ms, shorter than the app's 500 ms without a call, a submission whose
/// completion Blackbox did not see would get a hang report.
#[test]
fn a_batch_with_a_signal_array_and_no_count_keeps_its_report_and_its_completion_is_seen() {
    let scenario = "nan-signal-array";
    let home = TempDir::new(scenario);
    let reference = run(&mut testapp_with_validation_only(&home, &[scenario]));
    reference.assert_testapp_finished();
    let log = reference.validation();
    assert_eq!(
        log.counts().get("UNASSIGNED-BestPractices-SemaphoreCount"),
        Some(&1),
        "the report this test is about\n{}",
        reference.dump()
    );
    let run = run(&mut testapp_with_blackbox(
        &home,
        &[scenario],
        &[
            ("VK_BLACKBOX_NAN", "outputs"),
            ("VK_BLACKBOX_WATCHDOG_MS", "200"),
        ],
    ));
    run.assert_testapp_finished()
        .assert_validation_messages_unchanged(&reference);
    let reports = reports_in(&home.path().join("reports"));
    assert!(
        reports.is_empty(),
        "no report: the work finished ({} written)\n{}",
        reports.len(),
        run.dump()
    );
    assert_eq!(run.checksums(), reference.checksums(), "{}", run.dump());
    let nan = line_of(&run, |l| {
        l.starts_with("[blackbox] warn: NaN") && l.contains("[pipeline \"nan-signal-array\"]")
    });
    let waiting = line_of(&run, |l| {
        l == "bb-testapp: nan-signal-array: waiting for the fence"
    })
    .unwrap_or_else(|| panic!("no `waiting for the fence` line\n{}", run.dump()));
    assert!(
        nan.is_some_and(|n| n < waiting),
        "the NaN line must come before the app waits for its fence (line {nan:?}, the wait at {waiting})\n{}",
        run.dump()
    );
}

/// A Vulkan 1.0 or 1.1 app keeps its version: Blackbox reaches buffer device address and timeline
/// semaphores through their KHR extensions (logged at debug level), its NaN checks work, the results are
/// the app's, and the validation layer says nothing it would not say without Blackbox (a raised version
/// made it report the app's KHR extensions as deprecated).
#[test]
fn apps_of_vulkan_1_0_and_1_1_keep_their_version_and_get_instrumentation_through_khr_extensions() {
    for (api, extra) in [
        ("1.0", &[][..]),
        ("1.1", &["--features-via-extensions"][..]),
    ] {
        let home = TempDir::new(&format!("api-{api}"));
        let mut args = vec!["--api", api];
        args.extend_from_slice(extra);
        args.push("nan-compute");
        let reference = run(&mut testapp_with_validation_only(&home, &args));
        reference.assert_testapp_finished();
        let run = run(&mut testapp_with_blackbox(
            &home,
            &args,
            &[("VK_BLACKBOX_NAN", "ops"), ("VK_BLACKBOX_LOG", "debug")],
        ));
        run.assert_testapp_finished();
        run.assert_validation_messages_unchanged(&reference);
        assert_eq!(
            run.checksums(),
            reference.checksums(),
            "--api {api}\n{}",
            run.dump()
        );
        assert_eq!(run.start_up_lines(), 1, "--api {api}\n{}", run.dump());
        let enabled = run
            .stderr
            .lines()
            .find(|l| l.contains("Blackbox enabled"))
            .unwrap_or_else(|| {
                panic!(
                    "--api {api}: no line of what Blackbox enabled\n{}",
                    run.dump()
                )
            });
        assert!(
            enabled.contains(&format!("used at Vulkan {api}.")),
            "--api {api}: the device is used at the app's version: {enabled}"
        );
        // The app enables them itself at 1.1 (--features-via-extensions); at 1.0 Blackbox does.
        if api == "1.0" {
            for ext in [
                "VK_KHR_buffer_device_address",
                "VK_KHR_device_group",
                "VK_KHR_timeline_semaphore",
            ] {
                assert!(enabled.contains(ext), "--api 1.0: {ext} in: {enabled}");
            }
        }
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with("[blackbox] warn: NaN from normalize()")),
            "--api {api}: the NaN check works through the KHR path\n{}",
            run.dump()
        );
        assert!(
            !run.stderr.contains("instrumentation off")
                && !run.stderr.contains("does not support bufferDeviceAddress"),
            "--api {api}\n{}",
            run.dump()
        );
    }
}

/// Blackbox sees the validation layer below it (it reports itself as a tool) and what it was asked to do
/// (here through `VK_LAYER_SETTINGS_PATH`, as every test sets it), so that on devices with special-use
/// extensions it leaves them off under best practices, and gives each marker write its own word under
/// synchronization validation; without the validation layer it sees none.
#[test]
fn the_validation_layer_below_and_its_enables_are_seen() {
    let home = TempDir::new("validation-below");
    let with = run(&mut testapp_with_blackbox(
        &home,
        &["compute"],
        &[("VK_BLACKBOX_LOG", "debug")],
    ));
    with.assert_success();
    assert!(
        with.stderr
            .contains("a validation layer below, synchronization validation on, best practices on"),
        "{}",
        with.dump()
    );
    let manifests = home.path().join("manifests");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("compute")
        .env("VK_BLACKBOX_LOG", "debug")
        .env("VK_ADD_LAYER_PATH", &manifests)
        .env("VK_INSTANCE_LAYERS", "VK_LAYER_blackbox");
    let without = run(&mut cmd);
    without.assert_success();
    assert!(
        without.stderr.contains("no validation layer below"),
        "{}",
        without.dump()
    );
}

/// shader-bench's shaders with the assert's condition checked by hand (`--shader-condition-only`) compute
/// the same bits as its shaders with the assert, without a layer and through Blackbox's asserts, so that the
/// benchmark's "no layer, condition only" row times the same work. The asserting run also asks for the
/// driver's pipeline statistics, which lavapipe does not have (the H200's are in the README).
#[test]
fn shader_bench_hand_check_computes_what_the_asserting_shaders_compute() {
    let home = TempDir::new("shader-bench-hand-check");
    let small = [
        "--shader-invocations",
        "256",
        "--shader-size",
        "16",
        "--shader-iterations",
        "8",
        "--frames",
        "2",
        "shader-bench",
    ];
    let reference = run(&mut testapp_with_validation_only(&home, &small));
    reference.assert_success().assert_no_validation_messages();
    let hand_check_args: Vec<&str> = std::iter::once("--shader-condition-only")
        .chain(small)
        .collect();
    let hand_check = run(&mut testapp_with_validation_only(&home, &hand_check_args));
    hand_check.assert_success().assert_no_validation_messages();
    // With the driver's pipeline statistics asked for (`--pipeline-stats`, what the H200 answers with
    // registers and binary sizes): lavapipe has no VK_KHR_pipeline_executable_properties, and the run
    // says so and goes on.
    let stats_args: Vec<&str> = std::iter::once("--pipeline-stats").chain(small).collect();
    let asserts = run(&mut testapp_with_blackbox(
        &home,
        &stats_args,
        &[("VK_BLACKBOX_ASSERT", "log")],
    ));
    asserts.assert_success().assert_no_validation_messages();
    assert!(
        asserts.stdout.contains(
            "shader-bench stats none: the device has no VK_KHR_pipeline_executable_properties"
        ),
        "{}",
        asserts.dump()
    );
    assert!(!reference.checksums().is_empty(), "{}", reference.dump());
    assert_eq!(
        hand_check.checksums(),
        reference.checksums(),
        "{}",
        hand_check.dump()
    );
    assert_eq!(
        asserts.checksums(),
        reference.checksums(),
        "{}",
        asserts.dump()
    );
}

/// On a CPU device a buffer's device address is a host pointer, which moves from run to run, and the error
/// buffer's address is baked into every instrumented module: each run's modules differed, so the driver's
/// shader cache (Mesa's, on disk) never found them, and llvmpipe compiled every shader again each run
/// (minutes, for some of libplacebo's). Blackbox imports host memory at a fixed address there: two runs
/// instrument every module to the same bytes, and the validation layer has nothing to say about the import.
#[test]
fn instrumented_modules_are_the_same_bytes_from_run_to_run_on_a_cpu_device() {
    let home = TempDir::new("same-modules");
    let dumps: Vec<std::path::PathBuf> =
        (0..2)
            .map(|i| {
                let dump = home.path().join(format!("dump-{i}"));
                let run = run(&mut testapp_with_blackbox(
                    &home,
                    &["nan-compute", "assert-fragment", "printf"],
                    &[
                        ("VK_BLACKBOX_NAN", "ops"),
                        ("VK_BLACKBOX_LOG", "debug"),
                        ("VK_BLACKBOX_DUMP_SHADERS", dump.to_str().unwrap()),
                    ],
                ));
                run.assert_success().assert_no_validation_messages();
                assert!(
                    run.stderr.lines().any(|l| l.contains("Blackbox enabled")
                        && l.contains("VK_EXT_external_memory_host")),
                    "{}",
                    run.dump()
                );
                assert!(
                    !run.stderr.contains("error buffer at a fixed address"),
                    "the fixed address was refused\n{}",
                    run.dump()
                );
                dump
            })
            .collect();
    let (first, second) = (
        instrumented_modules(&dumps[0]),
        instrumented_modules(&dumps[1]),
    );
    assert!(
        first.len() >= 3,
        "{:?}",
        first.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert_eq!(
        first.iter().map(|f| &f.0).collect::<Vec<_>>(),
        second.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for ((name, a), (_, b)) in first.iter().zip(&second) {
        assert!(a == b, "{name} differs between two runs");
    }
}

/// The instrumented modules `VK_BLACKBOX_DUMP_SHADERS` wrote to `dir`, by file name.
fn instrumented_modules(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".instrumented.spv"))
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// Each module's first site number is baked into it too, and sites were numbered in the order modules
/// came: an app that creates its modules in another order from run to run (from several threads) got
/// other bytes and missed the driver's cache. Blackbox keeps each module's range between runs (in
/// `~/.cache/blackbox/sites`): two runs creating the same two modules in opposite orders instrument them to
/// the same bytes, with the validation layer silent. The second order with nothing kept (another cache
/// folder) gives other bytes: what the kept ranges change.
#[test]
fn instrumented_modules_are_the_same_bytes_whatever_order_the_app_creates_them_in() {
    let home = TempDir::new("module-order");
    let shaders = workspace_root().join("tests/integration/shaders");
    // `tests/integration/shaders/kept_components.frag`: NaN green, or NaN red with -DRED_NAN.
    let [green, red] =
        [("green_nan", "-DGREEN_NAN"), ("red_nan", "-DRED_NAN")].map(|(name, define)| {
            let out = home.path().join(format!("{name}.spv"));
            let args = ["-V", "--target-env", "vulkan1.2", "-g", define];
            glslang(&shaders, &args, "kept_components.frag", &out);
            out
        });
    let kept = home.path().join("cache");
    let run_in_order = |first: &std::path::Path, second: &std::path::Path, cache, dump: &str| {
        let dump = home.path().join(dump);
        let args = [
            "spirv-run",
            "--spirv",
            first.to_str().unwrap(),
            "--spirv",
            second.to_str().unwrap(),
        ];
        let vars = [
            ("VK_BLACKBOX_NAN", "outputs"),
            ("VK_BLACKBOX_DUMP_SHADERS", dump.to_str().unwrap()),
            ("XDG_CACHE_HOME", cache),
        ];
        let run = run(&mut testapp_with_blackbox(&home, &args, &vars));
        run.assert_success().assert_no_validation_messages();
        instrumented_modules(&dump)
    };
    let forward = run_in_order(&green, &red, kept.to_str().unwrap(), "dump-forward");
    let backward = run_in_order(&red, &green, kept.to_str().unwrap(), "dump-backward");
    let names = |files: &[(String, Vec<u8>)]| files.iter().map(|f| f.0.clone()).collect::<Vec<_>>();
    // The two fragment shaders and the vertex shader spirv-run draws them with.
    assert_eq!(names(&forward).len(), 3, "{:?}", names(&forward));
    assert_eq!(names(&forward), names(&backward));
    for ((name, a), (_, b)) in forward.iter().zip(&backward) {
        assert!(a == b, "{name} differs between the two orders");
    }
    let fresh = home.path().join("fresh-cache");
    let unkept = run_in_order(&red, &green, fresh.to_str().unwrap(), "dump-unkept");
    assert_eq!(names(&forward), names(&unkept));
    assert!(
        forward.iter().zip(&unkept).any(|(a, b)| a.1 != b.1),
        "with nothing kept the other order gave the same bytes: the test shows nothing"
    );
    // What is kept: one private file, a line per module.
    let files: Vec<_> = std::fs::read_dir(kept.join("blackbox/sites"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("bb-testapp-") && name.ends_with(".txt"),
        "{name}"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(&files[0].metadata().unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(
        text.lines().count(),
        4,
        "a header and three modules:\n{text}"
    );
    // An app none of whose modules the engine changes (the test app's `compute` at the defaults) leaves
    // no file: the ranges are read when the first module is instrumented, not when the device is made.
    let untouched = home.path().join("untouched-cache");
    let run = run(&mut testapp_with_blackbox(
        &home,
        &["compute"],
        &[("XDG_CACHE_HOME", untouched.to_str().unwrap())],
    ));
    run.assert_success().assert_no_validation_messages();
    assert!(!untouched.join("blackbox").exists(), "{}", run.dump());
}
