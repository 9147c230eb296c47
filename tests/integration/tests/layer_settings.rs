//! Blackbox's settings as layer settings (issue 14, part 1): from `vk_layer_settings.txt` (`blackbox.<key>`)
//! and from the app's `VkLayerSettingsCreateInfoEXT` (layer `VK_LAYER_blackbox`), with the environment
//! first, the file next, the app last; bad values warned about with their source; the start-up line naming
//! where each value other than its default came from. The test app chains the struct with
//! `--layer-setting`.

use blackbox_integration::*;

/// The NaN line nan-compute's shader makes at `VK_BLACKBOX_NAN=ops`.
const NAN_LINE: &str = "NaN from normalize() at nan.comp:";

/// bb-testapp nan-compute through Blackbox, the test's validation settings file extended by `file_lines`,
/// and `args` (`--layer-setting ...`). The validation layer is below Blackbox unless the app chains its
/// settings struct: Debian 12's validation layer (1.3.239) predates `VkLayerSettingsCreateInfoEXT` and reports
/// it as an unknown structure (`VUID-VkInstanceCreateInfo-pNext-pNext`), with or without Blackbox.
fn nan_compute(home: &TempDir, file_lines: &str, args: &[&str], vars: &[(&str, &str)]) -> Run {
    let mut all = vec!["nan-compute"];
    all.extend_from_slice(args);
    let mut cmd = if args.is_empty() {
        testapp_with_blackbox(home, &all, vars)
    } else {
        let manifests = home.path().join("manifests");
        write_manifest(&manifests, "VkLayer_blackbox.json");
        let mut cmd = vulkan_command(testapp(), home.path());
        cmd.args(&all)
            .envs(vars.iter().copied())
            .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
            .env("VK_ADD_LAYER_PATH", &manifests)
            .env("VK_INSTANCE_LAYERS", "VK_LAYER_blackbox");
        cmd
    };
    let settings = home.path().join("vk_layer_settings.txt");
    let mut text = std::fs::read_to_string(&settings).expect("the validation settings file");
    text.push_str(file_lines);
    std::fs::write(&settings, text).expect("write settings");
    run(&mut cmd)
}

fn start_up_line(run: &Run) -> &str {
    let lines = run.start_ups();
    assert_eq!(lines.len(), 1, "one start-up line\n{}", run.dump());
    lines[0]
}

#[test]
fn the_settings_file_sets_blackbox_settings() {
    let home = TempDir::new("settings-file");
    let run = nan_compute(
        &home,
        "blackbox.nan = ops\nblackbox.breadcrumbs = pass\n",
        &[],
        &[],
    );
    run.assert_success().assert_no_validation_messages();
    assert!(run.stderr.contains(NAN_LINE), "{}", run.dump());
    let file = home.path().join("vk_layer_settings.txt");
    let line = start_up_line(&run);
    assert!(
        line.contains("breadcrumbs pass (")
            && line.contains(&format!(
                "settings: output={} (environment), nan=ops ({f}), breadcrumbs=pass ({f})",
                home.path().join("reports").display(),
                f = file.display()
            )),
        "{line}"
    );
}

#[test]
fn the_apps_layer_settings_struct_sets_blackbox_settings() {
    let home = TempDir::new("settings-app");
    let run = nan_compute(
        &home,
        "",
        &[
            "--layer-setting",
            "nan=ops",
            "--layer-setting",
            "watchdog_ms:u32=0",
            "--layer-setting",
            "printf:bool=false",
        ],
        &[],
    );
    run.assert_success();
    assert!(run.stderr.contains(NAN_LINE), "{}", run.dump());
    let line = start_up_line(&run);
    let app = "(the app's VkLayerSettingsCreateInfoEXT)";
    assert!(
        line.contains("watchdog off")
            && line.contains("shaders: asserts log, NaN ops;")
            && line.contains(&format!(
                "printf=false {app}, nan=ops {app}, watchdog_ms=0 {app}"
            )),
        "{line}"
    );
}

#[test]
fn the_environment_wins_over_the_file_which_wins_over_the_app() {
    let home = TempDir::new("settings-precedence");
    let run = nan_compute(
        &home,
        "blackbox.nan = ops\nblackbox.breadcrumbs = pass\n",
        &[
            "--layer-setting",
            "nan=outputs",
            "--layer-setting",
            "breadcrumbs=submit",
            "--layer-setting",
            "assert=off",
        ],
        &[("VK_BLACKBOX_NAN", "off")],
    );
    run.assert_success();
    assert!(!run.stderr.contains("NaN from"), "{}", run.dump());
    let line = start_up_line(&run);
    assert!(
        line.contains("breadcrumbs pass (")
            && !line.contains("NaN")
            && !line.contains("asserts")
            && line.contains("assert=off (the app's VkLayerSettingsCreateInfoEXT)")
            && !line.contains("nan="),
        "{line}"
    );
}

#[test]
fn bad_values_warn_with_their_source_and_use_the_default() {
    let home = TempDir::new("settings-bad");
    let run = nan_compute(
        &home,
        "blackbox.breadcrumbs = everything\n",
        &[
            "--layer-setting",
            "nan=all",
            "--layer-setting",
            "watchdog_ms:i32=-5",
        ],
        &[],
    );
    run.assert_success();
    let file = home.path().join("vk_layer_settings.txt");
    for expected in [
        format!(
            "[blackbox] warn: blackbox.breadcrumbs = \"everything\" in {} is not valid; accepted: off, submit, pass, command; using the default `command`",
            file.display()
        ),
        "[blackbox] warn: blackbox.nan = \"all\" in the app's VkLayerSettingsCreateInfoEXT is not valid; accepted: off, outputs, ops; using the default `off`".to_owned(),
        "[blackbox] warn: blackbox.watchdog_ms = \"-5\" in the app's VkLayerSettingsCreateInfoEXT is not valid; accepted: a whole number of milliseconds, 0 turns the watchdog off; using the default `10000`".to_owned(),
    ] {
        assert!(run.stderr.lines().any(|l| l == expected), "{expected}\n{}", run.dump());
    }
    let line = start_up_line(&run);
    assert!(
        line.contains("breadcrumbs command (") && line.contains("watchdog 10000 ms"),
        "{line}"
    );
    assert!(!run.stderr.contains("NaN from"), "{}", run.dump());
}

#[test]
fn the_struct_works_without_the_extension_which_the_manifests_do_not_offer() {
    // Debian 12's loader (1.3.239) refuses instance extensions newer than itself ("not found in list of known
    // instance extensions"), and vulkaninfo enables every instance extension offered: a manifest listing
    // VK_EXT_layer_settings would make vulkaninfo (and any app that enables all it is offered) fail under
    // Blackbox. So the manifests do not list it, and the struct is read whether or not it is enabled.
    for name in ["VkLayer_blackbox.json", "VkLayer_blackbox_implicit.json"] {
        let text = std::fs::read_to_string(workspace_root().join("manifest").join(name)).unwrap();
        assert!(!text.contains("VK_EXT_layer_settings"), "{name} offers it");
    }
    let home = TempDir::new("settings-extension");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.args(["nan-compute", "--layer-setting", "nan=ops"])
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
        .env("VK_ADD_LAYER_PATH", &manifests)
        .env("VK_INSTANCE_LAYERS", "VK_LAYER_blackbox");
    let run = run(&mut cmd);
    run.assert_success();
    assert!(run.stderr.contains(NAN_LINE), "{}", run.dump());
}

#[test]
fn vulkan_configurators_file_wins_over_the_working_directorys() {
    // Where Vulkan Configurator writes it: $XDG_DATA_HOME/vulkan/settings.d. No validation layer: it would
    // read that file too, without the test's validation settings.
    let home = TempDir::new("settings-vkconfig");
    let manifests = home.path().join("manifests");
    write_manifest(&manifests, "VkLayer_blackbox.json");
    let vkconfig = home.path().join("data/vulkan/settings.d");
    std::fs::create_dir_all(&vkconfig).unwrap();
    std::fs::write(
        vkconfig.join("vk_layer_settings.txt"),
        "blackbox.nan = ops\n",
    )
    .unwrap();
    let cwd = home.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(
        cwd.join("vk_layer_settings.txt"),
        "blackbox.nan = off\nblackbox.int = on\n",
    )
    .unwrap();
    let mut cmd = vulkan_command(testapp(), home.path());
    cmd.arg("nan-compute")
        .current_dir(&cwd)
        .env_remove("VK_LAYER_SETTINGS_PATH")
        .env("VK_BLACKBOX_OUTPUT", home.path().join("reports"))
        .env("VK_ADD_LAYER_PATH", &manifests)
        .env("VK_INSTANCE_LAYERS", "VK_LAYER_blackbox");
    let run = run(&mut cmd);
    run.assert_success();
    assert!(run.stderr.contains(NAN_LINE), "{}", run.dump());
    assert!(
        !start_up_line(&run).contains("integer checks"),
        "{}",
        run.dump()
    );

    // Without it, the working directory's file is read.
    std::fs::remove_file(vkconfig.join("vk_layer_settings.txt")).unwrap();
    let run = blackbox_integration::run(&mut cmd);
    run.assert_success();
    assert!(!run.stderr.contains("NaN from"), "{}", run.dump());
    assert!(
        start_up_line(&run).contains("integer checks"),
        "{}",
        run.dump()
    );
}
