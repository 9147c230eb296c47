//! One line per module and option set: the size and FNV-1a 64 of the instrumented words and of the shader
//! info, or the reason the module was refused. Diff its output before and after a change that must not
//! change the engine's output (driver pipeline caches key on it):
//!
//! ```sh
//! cargo run --release -p blackbox-engine --example output_digest -- DIR... > after.txt
//! ```
//!
//! A tool, not a test: it prints and asserts nothing.

use blackbox_engine::record::BufferLayout;
use blackbox_engine::{
    fnv1a64, instrument, needs_instrumentation, shader_info, LoopMode, NanLevel, Options,
};

fn main() {
    let base = Options {
        error_buffer_address: 0x0000_7f00_dead_b000,
        site_base: 40,
        ..Options::default()
    };
    let sets: Vec<(&str, Options)> = vec![
        ("off", base.clone()),
        (
            "outputs",
            Options {
                nan: NanLevel::Outputs,
                ..base.clone()
            },
        ),
        (
            "ops",
            Options {
                nan: NanLevel::Ops,
                ..base.clone()
            },
        ),
        (
            "ops-crash",
            Options {
                nan: NanLevel::Ops,
                assert_crash: true,
                ..base.clone()
            },
        ),
        (
            "ops-keep-debug",
            Options {
                nan: NanLevel::Ops,
                strip_non_semantic: false,
                ..base.clone()
            },
        ),
        // What GPUs get: NaN records written where they fire (the layer keeps them to the end on CPU
        // devices only).
        (
            "outputs-fired",
            Options {
                nan: NanLevel::Outputs,
                records_at_end: false,
                ..base.clone()
            },
        ),
        (
            "ops-fired",
            Options {
                nan: NanLevel::Ops,
                records_at_end: false,
                ..base.clone()
            },
        ),
        (
            "nothing",
            Options {
                printf: false,
                asserts: false,
                ..base.clone()
            },
        ),
        // Loop counters and integer checks, as `VK_BLACKBOX_LOOPS` and `VK_BLACKBOX_INT` build them.
        (
            "loops-report-int",
            Options {
                loops: LoopMode::Report,
                int_checks: true,
                ..base.clone()
            },
        ),
        // Integer records where they fire, as GPUs get them.
        (
            "loops-report-int-fired",
            Options {
                loops: LoopMode::Report,
                int_checks: true,
                records_at_end: false,
                ..base.clone()
            },
        ),
        (
            "loops-break",
            Options {
                loops: LoopMode::Break,
                ..base.clone()
            },
        ),
        // The buffer's sizes baked in, as the layer has them on CPU devices, with NaN records where they
        // fire (there `VK_BLACKBOX_NAN_RECORDS=fired`; GPUs get `ops-fired`'s form).
        (
            "ops-fired-layout",
            Options {
                nan: NanLevel::Ops,
                records_at_end: false,
                buffer_layout: Some(BufferLayout {
                    counter_count: 64 * 1024,
                    records_capacity: 1024 * 1024,
                }),
                ..base.clone()
            },
        ),
    ];
    for dir in std::env::args().skip(1) {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "spv"))
            .collect();
        files.sort();
        for path in files {
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let words: Vec<u32> = bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let info = format!("{:?}", shader_info(&words));
            let needs: Vec<bool> = sets
                .iter()
                .map(|(_, o)| needs_instrumentation(&words, o))
                .collect();
            println!(
                "{name} info {:016x} needs {needs:?}",
                fnv1a64(info.as_bytes())
            );
            for (set, options) in &sets {
                match instrument(&words, options) {
                    Ok(out) => {
                        let out_bytes: Vec<u8> =
                            out.words.iter().flat_map(|w| w.to_le_bytes()).collect();
                        let info = format!("{:?}", out.info);
                        println!(
                            "{name} {set} {} words {:016x} info {:016x}",
                            out.words.len(),
                            fnv1a64(&out_bytes),
                            fnv1a64(info.as_bytes())
                        );
                    }
                    Err(e) => println!("{name} {set} refused: {e}"),
                }
            }
        }
    }
}
