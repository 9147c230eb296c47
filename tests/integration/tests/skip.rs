//! `VK_BLACKBOX_SKIP` (issue 12): work Blackbox does not pass to the driver, by label, pipeline, shader or
//! command index. Each selector is checked against the test app leaving the same work out itself
//! (`--omit`): the results must be exactly those, the validation layer below must add nothing, and the
//! start-up line must say what is skipped.

use blackbox_integration::*;

/// The debug-labels scenario's checksum with Blackbox skipping `selectors`, and the run.
fn skipping(home: &TempDir, selectors: &str, log: &str) -> Run {
    let run = run(&mut testapp_with_blackbox(
        home,
        &["debug-labels"],
        &[("VK_BLACKBOX_SKIP", selectors), ("VK_BLACKBOX_LOG", log)],
    ));
    run.assert_success();
    run
}

/// The scenario without Blackbox, the app leaving out `omit` itself.
fn omitting(home: &TempDir, omit: &str) -> Run {
    let mut args = vec!["debug-labels"];
    if !omit.is_empty() {
        args.extend(["--omit", omit]);
    }
    let run = run(&mut testapp_with_validation_only(home, &args));
    run.assert_success();
    run
}

#[test]
fn each_selector_skips_exactly_the_work_it_names() {
    let home = TempDir::new("skip");
    let full = omitting(&home, "");
    // The compute shader's id: every module the app creates is dumped, and shader-info says which is it.
    let dump = home.path().join("dump");
    let dumped = run(&mut testapp_with_blackbox(
        &home,
        &["debug-labels"],
        &[("VK_BLACKBOX_DUMP_SHADERS", dump.to_str().unwrap())],
    ));
    dumped.assert_success();
    assert!(
        dumped
            .stderr
            .contains("VK_BLACKBOX_DUMP_SHADERS: writing every shader module into"),
        "{}",
        dumped.dump()
    );
    let compute_id = std::fs::read_dir(&dump)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| {
            let info = run(std::process::Command::new(blackbox())
                .arg("shader-info")
                .arg(p));
            info.stdout.contains("compute")
        })
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .expect("a dumped compute module");

    let cases = [
        ("label:Glow", "Glow"),
        ("label:Simulate", "Simulate"),
        ("pipeline:AdditiveDraw", "Glow,Corner"),
        ("pipeline:ParticleSim", "ParticleSim"),
        (
            &format!("shader:{}", &compute_id[..8]) as &str,
            "ParticleSim",
        ),
    ];
    for (selectors, omit) in cases {
        let reference = omitting(&home, omit);
        assert_ne!(
            reference.checksums(),
            full.checksums(),
            "--omit {omit} changes the results"
        );
        let run = skipping(&home, selectors, "info");
        assert_eq!(
            run.checksums(),
            reference.checksums(),
            "VK_BLACKBOX_SKIP={selectors} against --omit {omit}\n{}",
            run.dump()
        );
        run.assert_validation_messages_unchanged(&reference);
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with(START_UP_LINE)
                    && l.contains(&format!("skipping {selectors}"))),
            "the start-up line says what is skipped\n{}",
            run.dump()
        );
        assert!(run.warnings().is_empty(), "{}", run.dump());
    }

    // command:N takes the index a report (or the debug log) shows: the Glow draw's, found by skipping it by label.
    let by_label = skipping(&home, "label:Glow", "debug");
    let index = by_label
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("[blackbox] debug: VK_BLACKBOX_SKIP: ["))
        .and_then(|l| l.split(']').next())
        .expect("the skipped command's index in the debug log")
        .to_owned();
    let run = skipping(&home, &format!("command:{index}"), "info");
    assert_eq!(
        run.checksums(),
        omitting(&home, "Glow").checksums(),
        "command:{index}\n{}",
        run.dump()
    );
}

#[test]
fn a_bad_selector_warns_and_skips_nothing() {
    let home = TempDir::new("skip-bad");
    let full = omitting(&home, "");
    let run = skipping(&home, "glow, command:9-3, label:", "info");
    assert_eq!(run.checksums(), full.checksums(), "{}", run.dump());
    let warnings = run.warnings();
    assert_eq!(warnings.len(), 3, "{}", run.dump());
    for (warning, selector) in warnings.iter().zip(["`glow`", "`command:9-3`", "`label:`"]) {
        assert!(
            warning.contains("VK_BLACKBOX_SKIP")
                && warning.contains(selector)
                && warning.contains("nothing is skipped for it"),
            "{warning}"
        );
    }
}

#[test]
fn a_selector_that_matches_nothing_is_said_so_when_the_device_goes() {
    // A pipeline name typed in the wrong case matches nothing: a run that still fails would seem to clear
    // that pipeline. The label beside it matches, and is not named.
    let home = TempDir::new("skip-unmatched");
    let run = skipping(&home, "pipeline:additivedraw, label:Glow", "info");
    assert_eq!(
        run.checksums(),
        omitting(&home, "Glow").checksums(),
        "{}",
        run.dump()
    );
    let warnings = run.warnings();
    assert_eq!(warnings.len(), 1, "{}", run.dump());
    assert!(
        warnings[0].contains(
            "VK_BLACKBOX_SKIP: pipeline:additivedraw matched nothing the app recorded, so nothing was \
             skipped for it"
        ) && !warnings[0].contains("label:Glow"),
        "{}",
        warnings[0]
    );
}
