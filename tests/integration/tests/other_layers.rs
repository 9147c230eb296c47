//! Blackbox under other layers people run: MangoHud 0.6.8 (a performance overlay) and vkBasalt 0.3.2.8 (a
//! post-processing layer), Debian 12's packages, both implicit layers enabled by their own variables and
//! so above Blackbox's explicit layer. Each draws with pipelines, shaders, command buffers and submissions
//! of its own on the app's device and queue, which go through Blackbox like the app's. vkcube on Xvfb
//! with both, on lavapipe, with the validation layer below: without Blackbox (the reference), then through
//! it at several settings. The same exit, Blackbox active once, every validation id as often as without
//! it, and no Blackbox warning but at NaN `ops` (vkBasalt's sharpening shader divides by zero on black
//! pixels: its own values).
//!
//! Both layers are built on the loader's sample layer, which asks the layer below for `vkCreateDevice`
//! with a null instance; Blackbox answered that with a null pointer, and vkcube's device creation failed.

use blackbox_integration::*;

use std::process::Command;

/// MangoHud's overlay with text that does not change from frame to frame: with frame rates and times on
/// it, the size of its vertex buffers (and so how many small allocations best practices reports) follows
/// how fast frames come, which the NaN checks change on lavapipe.
const MANGOHUD_CONFIG: &str =
    "cpu_stats=0,gpu_stats=0,fps=0,frame_timing=0,custom_text=Blackbox,version";

/// vkcube for 100 frames on `display` under MangoHud and vkBasalt (contrast-adaptive sharpening), with the
/// validation layer alone or through Blackbox with `vars`.
fn vkcube(home: &TempDir, display: &str, blackbox: Option<&[(&str, &str)]>) -> Command {
    let config = home.path().join("vkBasalt.conf");
    std::fs::write(&config, "effects = cas\ncasSharpness = 0.4\n").expect("vkBasalt.conf");
    let mut cmd = vulkan_command("vkcube", home.path());
    cmd.args(["--c", "100"])
        .env("DISPLAY", display)
        .env("MANGOHUD", "1")
        .env("MANGOHUD_CONFIG", MANGOHUD_CONFIG)
        .env("ENABLE_VKBASALT", "1")
        .env("VKBASALT_CONFIG_FILE", &config)
        .env("VKBASALT_LOG_LEVEL", "info");
    validation_alone_or_through_blackbox(&mut cmd, home, blackbox);
    cmd
}

/// What shows that both layers ran: MangoHud's log lines and vkBasalt's reading of the config.
fn layers_ran(run: &Run) -> Result<(), String> {
    let mangohud = run.stderr.contains("[MANGOHUD]");
    let vkbasalt = run.stderr.contains("vkBasalt info:  effects = cas");
    match (mangohud, vkbasalt) {
        (true, true) => Ok(()),
        _ => Err(format!(
            "the layers above did not run (MangoHud: {mangohud}, vkBasalt: {vkbasalt}): is scripts/setup.sh's \
             mangohud and vkbasalt installed?"
        )),
    }
}

#[test]
fn vkcube_under_mangohud_and_vkbasalt_runs_as_without_blackbox() {
    let xvfb = Xvfb::start();
    let home = TempDir::new("other-layers");
    let reference = run(&mut vkcube(&home, &xvfb.display, None));
    reference.assert_success().assert_validation_on();
    if let Err(e) = layers_ran(&reference) {
        panic!("{e}\n{}", reference.dump());
    }
    let settings: &[Setting] = &[
        ("defaults", &[], false),
        (
            "nan-ops-command",
            &[
                ("VK_BLACKBOX_NAN", "ops"),
                ("VK_BLACKBOX_BREADCRUMBS", "command"),
            ],
            true,
        ),
        (
            "frames-loops-int",
            &[
                ("VK_BLACKBOX_FRAMES", "8"),
                ("VK_BLACKBOX_LOOPS", "break"),
                ("VK_BLACKBOX_INT", "on"),
            ],
            false,
        ),
    ];
    compare_settings(reference, settings, |_, vars| {
        let run = run(&mut vkcube(&home, &xvfb.display, Some(vars)));
        let ran = layers_ran(&run).err();
        (run, ran.into_iter().collect())
    });
}

/// Mesa's overlay (mesa-vulkan-drivers' `VK_LAYER_MESA_overlay`, an explicit layer, MangoHud's ancestor)
/// above Blackbox and below it, by the order of `VK_INSTANCE_LAYERS`, with the validation layer lowest:
/// vkcube runs as with the overlay and the validation layer alone.
#[test]
fn vkcube_with_mesas_overlay_above_and_below_blackbox_runs_as_without_it() {
    const OVERLAY: &str = "VK_LAYER_MESA_overlay";
    let xvfb = Xvfb::start();
    let home = TempDir::new("mesa-overlay");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let vkcube = |name: &str, layers: String| {
        // The overlay's statistics file, which it creates when it starts, shows that it ran (the loader
        // leaves out a layer it cannot find). Its rows come every half second, which 100 frames may not
        // last.
        let stats = home.path().join(format!("{name}.overlay.csv"));
        let mut cmd = vulkan_command("vkcube", home.path());
        cmd.args(["--c", "100"])
            .env("DISPLAY", &xvfb.display)
            .env("VK_ADD_LAYER_PATH", &manifests)
            .env("VK_INSTANCE_LAYERS", layers)
            .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
            .env("VK_BLACKBOX_NAN", "ops")
            .env(
                "VK_LAYER_MESA_OVERLAY_CONFIG",
                format!("output_file={}", stats.display()),
            );
        let run = run(&mut cmd);
        let ran = stats.exists();
        (run, ran)
    };
    let (reference, ran) = vkcube("reference", format!("{OVERLAY}:{VALIDATION}"));
    reference.assert_success().assert_validation_on();
    assert!(ran, "the overlay did not run:\n{}", reference.dump());
    let mut problems = Vec::new();
    let mut runs = Vec::new();
    for (name, layers) in [
        (
            "overlay-above",
            format!("{OVERLAY}:VK_LAYER_blackbox:{VALIDATION}"),
        ),
        (
            "overlay-below",
            format!("VK_LAYER_blackbox:{OVERLAY}:{VALIDATION}"),
        ),
    ] {
        let (run, ran) = vkcube(name, layers);
        problems.extend(run.problems_against(&reference, name, false));
        if !ran {
            problems.push(format!("{name}: the overlay did not run"));
        }
        runs.push((name, run));
    }
    runs.insert(0, ("reference", reference));
    fail_on_problems(&problems, &runs);
}
