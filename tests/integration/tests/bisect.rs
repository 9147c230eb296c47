//! `blackbox bisect` (issue 12) on lavapipe: it finds the crashing pass, the hanging pass and the
//! NaN-making pipeline among the test app's `passes`, says a flaky symptom is flaky, and its reproduce
//! line really makes the symptom go.

use blackbox_integration::*;
use std::path::Path;

/// `blackbox bisect ARGS -- bb-testapp APP_ARGS` with `vars`, its logs under `home/logs`.
fn bisect(home: &TempDir, args: &[&str], app: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut cmd = vulkan_command(blackbox(), home.path());
    cmd.arg("bisect")
        .args(args)
        .arg("--logs")
        .arg(home.path().join("logs"))
        .arg("--")
        .arg(testapp())
        .args(app)
        .envs(vars.iter().copied());
    run(&mut cmd)
}

/// The `passes` scenario with pass 6 of 12 going wrong as `fault` says.
fn passes_args(fault: &str) -> Vec<&str> {
    vec![
        "passes",
        "--passes",
        "12",
        "--bad-pass",
        "6",
        "--pass-fault",
        fault,
    ]
}

/// The line of stdout that starts with `prefix`.
fn line<'a>(run: &'a Run, prefix: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no `{prefix}` line\n{}", run.dump()))
}

/// Runs the reproduce line's skip selector against the app: the symptom must be gone.
fn reproduce(home: &TempDir, run: &Run, app: &[&str], vars: &[(&str, &str)]) -> Run {
    let repro = line(run, "reproduce without it: ");
    let selector = repro
        .strip_prefix("reproduce without it: VK_BLACKBOX_SKIP=")
        .and_then(|r| r.split(" blackbox run -- ").next())
        .map(|s| s.trim_matches('\''))
        .unwrap_or_else(|| panic!("{repro}"));
    let mut vars = vars.to_vec();
    vars.push(("VK_BLACKBOX_SKIP", selector));
    blackbox_integration::run(&mut testapp_with_blackbox(home, app, &vars))
}

#[test]
fn bisect_finds_the_crashing_pass_by_label() {
    let home = TempDir::new("bisect-crash");
    let app = passes_args("crash");
    let run = bisect(&home, &["--until", "crash", "--confirm", "2"], &app, &[]);
    assert_eq!(run.status.code(), Some(0), "{}", run.dump());
    let culprit = line(&run, "culprit: ");
    assert!(
        culprit.starts_with(
            "culprit: label=pass 6 (frame > pass 6 > [6] vkCmdDispatch, pipeline \"pass-6\" [shaders: "
        ) && culprit.contains("(bad_address.comp)]): skipping it makes a crash (fatal signal) go away"),
        "{culprit}"
    );
    assert!(
        line(&run, "check: ").contains("it still brings a crash"),
        "{}",
        run.dump()
    );
    // Progress on stderr, one log per run.
    assert!(
        run.stderr.contains("blackbox bisect: run 4 of about "),
        "{}",
        run.dump()
    );
    let logs = home.path().join("logs");
    assert!(logs.join("run-1/app.log").is_file() && logs.join("suspects.jsonl").is_file());
    let fixed = reproduce(&home, &run, &app, &[]);
    fixed.assert_success();
}

#[test]
fn bisect_finds_the_hanging_pass() {
    let home = TempDir::new("bisect-hang");
    let mut app = passes_args("hang");
    app.extend(["--hang-groups", "1500"]);
    let vars = [("VK_BLACKBOX_WATCHDOG_MS", "1000")];
    let run = bisect(&home, &["--until", "hang", "--confirm", "2"], &app, &vars);
    assert_eq!(run.status.code(), Some(0), "{}", run.dump());
    assert!(
        line(&run, "culprit: ")
            .starts_with("culprit: label=pass 6 (frame > pass 6 > [6] vkCmdDispatch"),
        "{}",
        run.dump()
    );
    let fixed = reproduce(&home, &run, &app, &vars);
    fixed.assert_success();
    assert!(
        reports_in(&home.path().join("reports")).is_empty(),
        "{}",
        fixed.dump()
    );
}

#[test]
fn bisect_finds_the_pipeline_that_makes_a_nan() {
    let home = TempDir::new("bisect-nan");
    let app = passes_args("nan");
    let vars = [("VK_BLACKBOX_NAN", "ops")];
    // Every pass runs the same shader: the NaN's log line cannot tell the pipelines apart, the bisection can.
    let run = bisect(
        &home,
        &["--until", "nan", "--by", "pipeline", "--confirm", "2"],
        &app,
        &vars,
    );
    assert_eq!(run.status.code(), Some(0), "{}", run.dump());
    assert!(
        line(&run, "culprit: ").starts_with(
            "culprit: pipeline:pass-6 (frame > pass 6 > [6] vkCmdDispatch, pipeline \"pass-6\""
        ),
        "{}",
        run.dump()
    );
    let fixed = reproduce(&home, &run, &app, &vars);
    fixed.assert_success();
    assert!(
        !fixed.stderr.contains("] warn: NaN"),
        "skipping the culprit removes the NaN\n{}",
        fixed.dump()
    );
}

#[test]
fn a_flaky_symptom_is_said_so_and_not_bisected() {
    let home = TempDir::new("bisect-flaky");
    // A test script that fails every other run (a counter in a file): 2 of 3 full runs show the symptom.
    let script = home.path().join("flaky.sh");
    let counter = home.path().join("counter");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0)\necho $((n + 1)) > {c}\n\
             {app} passes --pass-fault none --passes 2 && [ $((n % 2)) = 1 ]\n",
            c = counter.display(),
            app = testapp().display()
        ),
    )
    .unwrap();
    make_executable(&script);
    let mut cmd = vulkan_command(blackbox(), home.path());
    cmd.args(["bisect", "--until", "exit", "--logs"])
        .arg(home.path().join("logs"))
        .arg("--")
        .arg(&script);
    let run = run(&mut cmd);
    assert_eq!(run.status.code(), Some(1), "{}", run.dump());
    assert!(
        run.stderr.contains(
            "a non-zero exit status showed in 2 of 3 full runs (67%): the symptom is flaky"
        ),
        "{}",
        run.dump()
    );
    assert!(
        !run.stderr.contains("suspect(s)"),
        "not bisected\n{}",
        run.dump()
    );
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}
