//! Any input to the engine either comes out instrumented or comes back with a reason; never a panic, an
//! endless loop or unbounded memory (libFuzzer's timeout and RSS limit watch the last two). The same input
//! and options always give the same output.
#![no_main]

use blackbox_engine::{instrument, needs_instrumentation, shader_info, NanLevel, Options};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options; the rest is the module.
    let Some((&pick, rest)) = data.split_first() else { return };
    let words: Vec<u32> = rest.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    let options = Options {
        error_buffer_address: 0x1_0000_0000,
        site_base: u32::from(pick >> 4),
        asserts: pick & 1 != 0,
        printf: pick & 2 != 0,
        nan: [NanLevel::Off, NanLevel::Outputs, NanLevel::Ops, NanLevel::Ops][usize::from((pick >> 2) & 3)],
        assert_crash: pick & 0x80 != 0,
        strip_non_semantic: pick & 0x40 == 0,
        ..Options::default()
    };
    let _ = shader_info(&words);
    let _ = needs_instrumentation(&words, &options);
    let first = instrument(&words, &options);
    if let Ok(out) = &first {
        assert_eq!(instrument(&words, &options).ok().as_ref(), Some(out), "deterministic");
        // What the engine wrote, it can read again.
        let _ = shader_info(&out.words).expect("instrumented output parses");
    }
});
