//! `docs/report.schema.json` follows the model: the version it describes is [`SCHEMA_VERSION`], and its
//! enums hold exactly the model's values (the integration tests validate every report the suite writes).

use blackbox_report::{CommandClass, Kind, State, SCHEMA_VERSION};

fn schema() -> serde_json::Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/report.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("docs/report.schema.json"))
        .expect("JSON")
}

fn words<T: serde::Serialize>(values: &[T]) -> Vec<serde_json::Value> {
    values
        .iter()
        .map(|v| serde_json::to_value(v).unwrap())
        .collect()
}

#[test]
fn the_schema_describes_this_version() {
    let s = schema();
    assert_eq!(s["properties"]["version"]["const"], SCHEMA_VERSION);
    assert!(
        s["title"]
            .as_str()
            .unwrap()
            .ends_with(&format!("schema version {SCHEMA_VERSION}")),
        "{}",
        s["title"]
    );
}

/// A variant added to the model stops the build here, so that the schema's enum gets it too.
#[allow(dead_code)]
fn listed_below(kind: Kind, state: State, class: CommandClass) {
    match kind {
        Kind::DeviceLost | Kind::Hang | Kind::Signal | Kind::Assert | Kind::Frame => {}
    }
    match state {
        State::Finished | State::InFlight | State::NotStarted | State::Unknown => {}
    }
    match class {
        CommandClass::Action | CommandClass::State | CommandClass::Sync | CommandClass::Other => {}
    }
}

#[test]
fn the_schemas_enums_are_the_models() {
    let s = schema();
    let defs = &s["$defs"];
    assert_eq!(
        defs["kind"]["enum"].as_array().unwrap(),
        &words(&[
            Kind::DeviceLost,
            Kind::Hang,
            Kind::Signal,
            Kind::Assert,
            Kind::Frame
        ])
    );
    assert_eq!(
        defs["state"]["enum"].as_array().unwrap(),
        &words(&[
            State::Finished,
            State::InFlight,
            State::NotStarted,
            State::Unknown
        ])
    );
    assert_eq!(
        defs["command_class"]["enum"].as_array().unwrap(),
        &words(&[
            CommandClass::Action,
            CommandClass::State,
            CommandClass::Sync,
            CommandClass::Other
        ])
    );
}
