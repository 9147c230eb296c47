//! Engine throughput over a directory of modules (default: the shared corpus), as MB/s of input SPIR-V:
//!
//! ```sh
//! cargo run --release -p blackbox-engine --example throughput -- [DIR] [ROUNDS] [ONLY]
//! ```
//!
//! `ONLY` runs just the measures whose name contains it (`printf`, `nan ops`, ...), e.g. under a profiler;
//! `=NAME` runs only the measure named exactly that (`=instrument, nan ops`), for counting one measure's
//! instructions (callgrind) where its name is part of others' names.
//!
//! A benchmark, not a test: it prints figures and asserts nothing.

use std::time::Instant;

use blackbox_engine::module::Module;
use blackbox_engine::{instrument, instrument_with_id, shader_info, NanLevel, Options, ShaderId};

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus/spv").to_string()
    });
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let only = args.next().unwrap_or_default();
    let mut modules = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let path = entry.expect("directory entry").path();
        if path.extension().is_some_and(|e| e == "spv") {
            let bytes = std::fs::read(&path).expect("reading a module");
            modules.push(
                bytes
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect::<Vec<u32>>(),
            );
        }
    }
    let bytes: usize = modules.iter().map(|m| m.len() * 4).sum();
    println!(
        "{} modules, {:.2} MB, {rounds} rounds",
        modules.len(),
        bytes as f64 / 1e6
    );
    let measure = |name: &str, f: &dyn Fn(&[u32])| {
        let wanted = match only.strip_prefix('=') {
            Some(exact) => name == exact,
            None => name.contains(only.as_str()),
        };
        if !wanted {
            return;
        }
        let start = Instant::now();
        for _ in 0..rounds {
            for m in &modules {
                f(m);
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "{name:>50}: {:8.1} MB/s",
            (bytes * rounds) as f64 / 1e6 / secs
        );
    };
    // The id alone (FNV-1a over every byte): what `instrument` pays for it at least, though it hashes
    // while parsing, where the processor overlaps the two.
    measure("shader id", &|m| {
        std::hint::black_box(ShaderId::of(m));
    });
    measure("parse + write back", &|m| {
        let _ = Module::parse(m).map(|m| m.to_words());
    });
    measure("shader_info", &|m| {
        let _ = shader_info(m);
    });
    // NaN records are kept until the invocation ends on CPU devices (the engine's default) and written where
    // a check fires on GPUs (the layer's choice there): the GPU rows build no flush.
    for (name, nan, at_end) in [
        ("instrument, asserts+printf", NanLevel::Off, true),
        ("instrument, nan outputs", NanLevel::Outputs, true),
        ("instrument, nan ops", NanLevel::Ops, true),
        ("instrument, nan outputs, GPU", NanLevel::Outputs, false),
        ("instrument, nan ops, GPU", NanLevel::Ops, false),
    ] {
        let options = Options {
            nan,
            error_buffer_address: 0x7f00_0000_1000,
            records_at_end: at_end,
            ..Options::default()
        };
        measure(name, &|m| {
            let _ = instrument(m, &options);
        });
        // What the layer pays for a new module: it takes the id first, for its cache, and gives it to the
        // engine rather than have it hash the words again.
        measure(&format!("id + {name} with id"), &|m| {
            let _ = instrument_with_id(m, ShaderId::of(m), &options);
        });
    }
}
