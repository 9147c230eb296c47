//! glmark2 (Debian 12's glmark2-x11 2023.01), an OpenGL benchmark, on Vulkan through Mesa's zink, on
//! lavapipe, through Blackbox with the validation layer below it. zink turns every GL draw, state change
//! and GLSL shader into Vulkan and SPIR-V of its own making, so this is an app nobody here wrote that
//! makes hundreds of pipelines. `glmark2 --validate` renders each of its scenes and probes pixels of the
//! result against its expectations (`Validation: Success`, `Failure`, or `Unknown` for a scene it has no
//! probe for). Without Blackbox (the reference), then through it at several settings: the same exit, the
//! same verdict for every scene, every validation id as often as without Blackbox, and no Blackbox warning
//! where no NaN check is on.
//!
//! glmark2 prints a scene's name before rendering it and its verdict after, so the validation layer logs
//! to a file of its own here rather than to stdout, where its messages would split those lines.

use blackbox_integration::*;

/// A setting's variables.
type Vars = &'static [(&'static str, &'static str)];

/// A run of glmark2: the run, with the validation layer's log as its stdout, and each scene's verdict in
/// order (`[scene] options`, `Success` / `Failure` / `Unknown`).
struct Glmark2 {
    run: Run,
    verdicts: Vec<(String, String)>,
}

/// Runs glmark2 through zink with `--validate` on `display`: with the validation layer alone, or
/// through Blackbox with `vars` when `blackbox`. `name` names the validation layer's log.
fn glmark2(
    home: &TempDir,
    display: &str,
    name: &str,
    blackbox: Option<&[(&str, &str)]>,
) -> Glmark2 {
    let mut cmd = vulkan_command("glmark2", home.path());
    cmd.arg("--validate").env("DISPLAY", display);
    let (run, stdout) = run_on_zink(cmd, home, name, blackbox);
    let verdicts = stdout
        .lines()
        .filter_map(|l| l.rsplit_once(": Validation: "))
        .map(|(scene, verdict)| (scene.to_owned(), verdict.to_owned()))
        .collect();
    Glmark2 { run, verdicts }
}

#[test]
fn every_scene_renders_as_without_blackbox_with_the_same_validation() {
    let xvfb = Xvfb::start();
    let home = TempDir::new("glmark2");
    let Glmark2 {
        run: reference,
        verdicts: expected,
    } = glmark2(&home, &xvfb.display, "reference", None);
    reference.assert_success().assert_validation_on();
    // What glmark2 checks: if zink or lavapipe changed and no scene validated any more, a run through
    // Blackbox that rendered nothing right would still match it.
    let succeeded = expected.iter().filter(|(_, v)| *v == "Success").count();
    assert!(
        succeeded >= 20,
        "only {succeeded} of {} scenes validate without Blackbox:\n{}",
        expected.len(),
        reference.dump()
    );
    // (name, variables, whether Blackbox may warn)
    let settings: &[(&str, Vars, bool)] = &[
        ("defaults", &[], false),
        (
            "nan-outputs-command",
            &[
                ("VK_BLACKBOX_NAN", "outputs"),
                ("VK_BLACKBOX_BREADCRUMBS", "command"),
            ],
            false,
        ),
        (
            "loops-int-frames",
            &[
                ("VK_BLACKBOX_LOOPS", "break"),
                ("VK_BLACKBOX_INT", "on"),
                ("VK_BLACKBOX_FRAMES", "8"),
            ],
            false,
        ),
        ("nan-ops", &[("VK_BLACKBOX_NAN", "ops")], true),
    ];
    // The runs through Blackbox at once (glmark2 --validate renders a set number of frames, so its time does
    // not change what it does): each is mostly one thread, and CI has two cores.
    let results: Vec<Glmark2> = std::thread::scope(|scope| {
        let started: Vec<_> = settings
            .iter()
            .map(|&(name, vars, _)| {
                let (home, display) = (&home, &xvfb.display);
                scope.spawn(move || glmark2(home, display, name, Some(vars)))
            })
            .collect();
        started
            .into_iter()
            .map(|run| run.join().expect("glmark2 through Blackbox"))
            .collect()
    });
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    for (&(name, _, may_warn), Glmark2 { run, verdicts }) in settings.iter().zip(results) {
        problems.extend(run.problems_against(&reference, name, may_warn));
        // zink writes `pow(x, y)` as `exp2(y * log2(x))`, whose `log2(0)` is -inf on purpose: checked as one
        // pow, it is no warning (glmark2's lighting takes pow of 0 on every unlit pixel).
        let log2: Vec<&str> = run
            .warnings()
            .into_iter()
            .filter(|w| w.contains("from log2()"))
            .collect();
        if !log2.is_empty() {
            problems.push(format!("{name}: log2 of a pow warned: {log2:#?}"));
        }
        if verdicts != expected {
            problems.push(format!(
                "{name}: verdicts {verdicts:#?}, without Blackbox {expected:#?}"
            ));
        }
        runs.push((name, run));
    }
    runs.insert(0, ("reference", reference));
    fail_on_problems(&problems, &runs);
}
