//! Blackbox among the Vulkan ecosystem's tools (issue 14): the layer manifests as Vulkan Configurator reads
//! them.

use blackbox_integration::*;
use std::path::PathBuf;

fn manifests() -> Vec<PathBuf> {
    ["VkLayer_blackbox.json", "VkLayer_blackbox_implicit.json"]
        .iter()
        .map(|m| workspace_root().join("manifest").join(m))
        .collect()
}

fn vkconfig_schema() -> PathBuf {
    workspace_root().join("manifest/schema/vkconfig-layer-manifest.schema.json")
}

#[test]
fn the_manifests_pass_vulkan_configurators_rules() {
    // Which settings they list, with which defaults, is checked against the layer's list of settings by
    // the layer's own test (config::tests::the_manifests_list_every_setting_with_its_default).
    if let Err(e) = validate_json(&vkconfig_schema(), &manifests()) {
        panic!("the manifests break Vulkan Configurator's rules:\n{e}");
    }
}

#[test]
fn the_rules_catch_a_setting_vulkan_configurator_would_refuse() {
    // The schema is not a rubber stamp: each of these breaks of a real manifest is refused.
    let home = TempDir::new("vkconfig-schema");
    let text = std::fs::read_to_string(&manifests()[0]).unwrap();
    type Break = fn(&mut serde_json::Value);
    let breaks: [(&str, Break); 5] = [
        ("an ENUM without its flags", |m| {
            let s = m["layer"]["features"]["settings"].as_array_mut().unwrap();
            let e = s.iter_mut().find(|s| s["type"] == "ENUM").unwrap();
            e.as_object_mut().unwrap().remove("flags");
        }),
        ("a BOOL with a string default", |m| {
            let s = m["layer"]["features"]["settings"].as_array_mut().unwrap();
            s.iter_mut().find(|s| s["type"] == "BOOL").unwrap()["default"] = "on".into();
        }),
        ("a setting without a label", |m| {
            m["layer"]["features"]["settings"][0]
                .as_object_mut()
                .unwrap()
                .remove("label");
        }),
        ("a field Vulkan Configurator does not know", |m| {
            m["layer"]["features"]["settings"][0]["colour"] = "red".into();
        }),
        ("an unknown platform", |m| {
            m["layer"]["platforms"] = serde_json::json!(["LINUX", "BEOS"]);
        }),
    ];
    for (what, break_it) in breaks {
        let mut manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
        break_it(&mut manifest);
        let path = home.path().join("broken.json");
        std::fs::write(&path, manifest.to_string()).unwrap();
        assert!(
            validate_json(&vkconfig_schema(), &[path]).is_err(),
            "{what} passed the schema"
        );
    }
}
