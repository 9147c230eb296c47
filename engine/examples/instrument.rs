//! Instruments one module, for looking at the engine's output by hand:
//!
//! ```sh
//! cargo run -p blackbox-engine --example instrument -- IN.spv OUT.spv [off|outputs|ops] [crash] [keep-debug] \
//!     [loops-report|loops-break] [clock] [int]
//! ```
//!
//! Prints the shader info and the sites. (The `blackbox instrument` CLI command is the user-facing tool.)

use blackbox_engine::{instrument, ClockScope, LoopClock, LoopMode, NanLevel, Options};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!(
            "usage: instrument IN.spv OUT.spv [off|outputs|ops] [crash] [keep-debug] \
             [loops-report|loops-break] [clock] [int]"
        );
        std::process::exit(2);
    }
    let bytes = std::fs::read(&args[0]).unwrap_or_else(|e| panic!("{}: {e}", args[0]));
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let flag = |f: &str| args[2..].iter().any(|a| a == f);
    let nan = if flag("ops") {
        NanLevel::Ops
    } else if flag("outputs") {
        NanLevel::Outputs
    } else {
        NanLevel::Off
    };
    let options = Options {
        error_buffer_address: 0x0000_7f00_0000_1000,
        nan,
        assert_crash: flag("crash"),
        strip_non_semantic: !flag("keep-debug"),
        loops: if flag("loops-break") {
            LoopMode::Break
        } else if flag("loops-report") {
            LoopMode::Report
        } else {
            LoopMode::Off
        },
        loop_clock: flag("clock").then_some(LoopClock {
            scope: ClockScope::Device,
            budget_ticks: 2_000_000_000,
        }),
        int_checks: flag("int"),
        ..Options::default()
    };
    match instrument(&words, &options) {
        Ok(out) => {
            let bytes: Vec<u8> = out.words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(&args[1], bytes).unwrap_or_else(|e| panic!("{}: {e}", args[1]));
            let info = &out.info;
            println!(
                "shader {} SPIR-V {}.{}",
                info.id, info.spirv_version.0, info.spirv_version.1
            );
            for e in &info.entry_points {
                println!("  entry point {} ({})", e.name, e.stage);
            }
            for s in &info.sources {
                println!(
                    "  source {:?} {:?} {} text: {}",
                    s.name,
                    s.language,
                    s.version,
                    s.text.is_some()
                );
            }
            for s in &info.sites {
                let at = s
                    .location
                    .as_ref()
                    .map_or("?".to_string(), |l| l.to_string());
                let values: Vec<String> = s
                    .values
                    .iter()
                    .map(|v| format!("{} {}x{}", v.name, v.scalar.name(), v.components))
                    .collect();
                println!(
                    "  site {} {:?} at {at} [{}] {:?}",
                    s.local_index,
                    s.kind,
                    values.join(", "),
                    s.format
                );
            }
        }
        Err(e) => {
            eprintln!("not instrumented: {e}");
            std::process::exit(1);
        }
    }
}
