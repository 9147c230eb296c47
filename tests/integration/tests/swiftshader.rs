//! A second Vulkan driver: SwiftShader, Google's CPU implementation of Vulkan 1.3 (its Subzero backend), as
//! Debian 12's `chromium` package ships it (`/usr/lib/chromium/libvk_swiftshader.so`, which
//! `scripts/setup.sh` installs with chromium). It shares no code with Mesa, has no `shaderInt64`, and
//! runs command buffers on threads of its own. Through the system loader, with SwiftShader the only driver
//! and the validation layer below Blackbox:
//!
//! - every scenario of bb-testapp's `all` computes the same checksums through Blackbox with everything on
//!   as without it, with the same exit, every validation id as often and no Blackbox warning;
//! - NaN `ops`, asserts, integer checks and printf name what they name on lavapipe, line for line (printf's
//!   64-bit formats aside: bb-testapp leaves them out without `shaderInt64`), with the same checksums,
//!   exit and validation ids as without Blackbox (bb-testapp enables `VK_KHR_shader_non_semantic_info`,
//!   which lavapipe lacks, and best practices warns that Vulkan 1.3 deprecates it, with or without
//!   Blackbox);
//! - a dispatch that runs past the watchdog gets a hang report that names it in flight, and one that writes
//!   through a bad address (SwiftShader's thread faults) a fatal-signal report that names it in flight;
//! - vkcube, a Vulkan 1.0 app, on SwiftShader, which has buffer device addresses only in Vulkan 1.2: one line
//!   says its shaders are not instrumented, and breadcrumbs stay on.

use blackbox_integration::*;

/// SwiftShader's driver manifest, as chromium installs it.
const SWIFTSHADER_ICD: &str = "/usr/lib/chromium/vk_swiftshader_icd.json";

/// `cmd` on SwiftShader alone (a [`vulkan_command`] chooses lavapipe).
fn on_swiftshader(mut cmd: std::process::Command) -> std::process::Command {
    assert!(
        std::path::Path::new(SWIFTSHADER_ICD).exists(),
        "{SWIFTSHADER_ICD} is missing: run scripts/setup.sh (it installs Debian's chromium, which ships it)"
    );
    cmd.env("VK_DRIVER_FILES", SWIFTSHADER_ICD);
    cmd
}

/// Blackbox's lines about shader sites: its warnings and its printf lines, what follows `[blackbox] ...:`.
fn site_lines(run: &Run) -> Vec<String> {
    run.stderr
        .lines()
        .filter(|l| {
            l.starts_with("[blackbox] warn:") || l.starts_with("[blackbox] info: printf at ")
        })
        .map(|l| l.split_once(": ").map_or(l, |(_, rest)| rest).to_owned())
        .collect()
}

#[test]
fn every_scenario_computes_the_same_on_swiftshader_through_blackbox() {
    let home = TempDir::new("swiftshader-all");
    let reference = run(&mut on_swiftshader(testapp_with_validation_only(
        &home,
        &["all"],
    )));
    reference.assert_testapp_finished();
    assert!(
        reference.stderr.contains("device 0: SwiftShader Device"),
        "not on SwiftShader:\n{}",
        reference.dump()
    );
    let through = run(&mut on_swiftshader(testapp_with_blackbox(
        &home,
        &["all"],
        EVERYTHING,
    )));
    // `all` makes a device in several scenarios: one start-up line each, every one on SwiftShader.
    let mut problems = Vec::new();
    if through.status.code() != reference.status.code() {
        problems.push(format!(
            "exit {:?}, without Blackbox {:?}",
            through.status, reference.status
        ));
    }
    let start_up = through.start_ups();
    if start_up.is_empty()
        || start_up
            .iter()
            .any(|l| !l.contains("active in \"bb-testapp\" on SwiftShader Device"))
    {
        problems.push(format!(
            "start-up lines not all on SwiftShader: {start_up:#?}"
        ));
    }
    if !through.warnings().is_empty() {
        problems.push(format!("Blackbox warned: {:#?}", through.warnings()));
    }
    if let Err(e) = through.validation_messages_changed(&reference) {
        problems.push(e);
    }
    if through.checksums() != reference.checksums() || reference.checksums().len() < 8 {
        problems.push(format!(
            "checksums {:#?}, without Blackbox {:#?}",
            through.checksums(),
            reference.checksums()
        ));
    }
    fail_on_problems(
        &problems,
        &[("reference", reference), ("everything", through)],
    );
}

#[test]
fn shader_errors_are_named_on_swiftshader_as_on_lavapipe() {
    let cases: [(&str, &[(&str, &str)]); 6] = [
        ("nan-compute", &[("VK_BLACKBOX_NAN", "ops")]),
        ("nan-fragment", &[("VK_BLACKBOX_NAN", "ops")]),
        ("assert-compute", &[]),
        ("assert-fragment", &[]),
        ("int-div", &[("VK_BLACKBOX_INT", "on")]),
        ("printf", &[]),
    ];
    for (scenario, vars) in cases {
        let home = TempDir::new(&format!("swiftshader-{scenario}"));
        let without = run(&mut on_swiftshader(testapp_with_validation_only(
            &home,
            &[scenario],
        )));
        without.assert_testapp_finished();
        let swiftshader = run(&mut on_swiftshader(testapp_with_blackbox(
            &home,
            &[scenario],
            vars,
        )));
        swiftshader
            .assert_same_exit(&without)
            .assert_validation_messages_unchanged(&without);
        assert_eq!(
            swiftshader.checksums(),
            without.checksums(),
            "{scenario}: {}",
            swiftshader.dump()
        );
        let lavapipe = run(&mut testapp_with_blackbox(&home, &[scenario], vars));
        lavapipe.assert_success();
        let expected: Vec<String> = site_lines(&lavapipe)
            .into_iter()
            .filter(|l| !l.contains("bb-printf lu=") && !l.contains("bb-printf lx="))
            .collect();
        assert!(!expected.is_empty(), "{scenario}: {}", lavapipe.dump());
        assert_eq!(
            site_lines(&swiftshader),
            expected,
            "{scenario} on SwiftShader against lavapipe:\n{}",
            swiftshader.dump()
        );
    }
}

#[test]
fn a_long_dispatch_on_swiftshader_gets_a_hang_report_that_names_it() {
    let home = TempDir::new("swiftshader-hang");
    let run = run(&mut on_swiftshader(testapp_with_blackbox(
        &home,
        &["hang", "--hang-groups", "1500"],
        &[("VK_BLACKBOX_WATCHDOG_MS", "1000")],
    )));
    run.assert_success().assert_no_validation_messages();
    assert!(
        run.stderr
            .contains("[blackbox] error: GPU hang suspected on SwiftShader Device"),
        "{}",
        run.dump()
    );
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let text = std::fs::read_to_string(reports[0].0.join("report.txt")).expect("report.txt");
    for expected in [
        "Blackbox report: GPU hang",
        "device     SwiftShader Device",
        "vkCmdDispatch(1500, 1, 1)  in flight  pipeline \"long-pipeline\"",
        "<- first unfinished",
        "[5] vkCmdDispatch(8, 8, 1)  finished",
    ] {
        assert!(text.contains(expected), "`{expected}` not in\n{text}");
    }
}

#[test]
fn a_write_through_a_bad_address_on_swiftshader_gets_a_signal_report_that_names_the_dispatch() {
    use std::os::unix::process::ExitStatusExt as _;
    let home = TempDir::new("swiftshader-bad-address");
    let mut cmd = on_swiftshader(testapp_with_blackbox(&home, &["bad-address"], &[]));
    let run = run(without_core_dumps(&mut cmd));
    // SwiftShader's worker thread faults; Blackbox reports, then the process dies of the SIGSEGV.
    assert_eq!(run.status.signal(), Some(11), "SIGSEGV\n{}", run.dump());
    run.assert_no_validation_messages();
    let reports = reports_in(&home.path().join("reports"));
    assert_eq!(reports.len(), 1, "{}", run.dump());
    let (dir, report) = &reports[0];
    let text = std::fs::read_to_string(dir.join("report.txt")).expect("report.txt");
    let signal = report.signal.as_ref().expect("a signal report");
    let address = signal
        .address
        .as_deref()
        .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok());
    assert!(
        signal.name == "SIGSEGV"
            && address.is_some_and(|a| (0xdead_0000..0xdead_0100).contains(&a)),
        "{text}"
    );
    for expected in [
        "device     SwiftShader Device",
        "[0] vkCmdDispatch(1, 1, 1)  finished  pipeline \"address-writer\"",
        "[2] vkCmdDispatch(1, 1, 1)  in flight  pipeline \"address-writer\"",
        "<- first unfinished",
        "[4] vkCmdDispatch(1, 1, 1)  not started",
    ] {
        assert!(text.contains(expected), "`{expected}` not in\n{text}");
    }
}

/// vkcube asks for Vulkan 1.0, and SwiftShader has buffer device addresses only as Vulkan 1.2's feature (no
/// `VK_KHR_buffer_device_address`, which lavapipe has): Blackbox, which never raises an app's Vulkan
/// version, cannot give its shaders the error buffer there. It says so in one line, keeps its breadcrumbs,
/// and vkcube runs as without it.
#[test]
fn a_vulkan_1_0_app_on_swiftshader_keeps_breadcrumbs_and_is_told_its_shaders_are_not_instrumented()
{
    let xvfb = Xvfb::start();
    let home = TempDir::new("swiftshader-vkcube");
    let vkcube = |blackbox: Option<&[(&str, &str)]>| {
        let mut cmd = on_swiftshader(vulkan_command("vkcube", home.path()));
        cmd.args(["--c", "30"]).env("DISPLAY", &xvfb.display);
        validation_alone_or_through_blackbox(&mut cmd, &home, blackbox);
        cmd
    };
    let reference = run(&mut vkcube(None));
    reference.assert_success().assert_validation_on();
    assert!(
        reference
            .stdout
            .contains("Selected GPU 0: SwiftShader Device")
            || reference
                .stderr
                .contains("Selected GPU 0: SwiftShader Device"),
        "not on SwiftShader:\n{}",
        reference.dump()
    );
    let through = run(&mut vkcube(Some(&[("VK_BLACKBOX_NAN", "ops")])));
    through
        .assert_success()
        .assert_validation_messages_unchanged(&reference);
    assert_eq!(
        through.warnings(),
        [
            "[blackbox] warn: SwiftShader Device (Subzero) does not support bufferDeviceAddress (Vulkan 1.2): \
             shader instrumentation (asserts, printf, NaN checks) is off on this device"
        ],
        "{}",
        through.dump()
    );
    let start_up = through.start_ups();
    assert!(
        start_up.len() == 1
            && start_up[0].contains("features: breadcrumbs command (fill-buffer)")
            && start_up[0].contains("shader instrumentation off"),
        "{}",
        through.dump()
    );
    assert!(
        reports_in(&home.path().join("reports")).is_empty(),
        "{}",
        through.dump()
    );
}
