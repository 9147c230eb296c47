// What the engine's fuzz target (`fuzz/fuzz_targets/instrument.rs`) takes, read the one way both it and the
// regression test (`tests/fuzz_regressions.rs`) read it: two bytes of options, then the module's bytes.
// Included by both with `include!`: the fuzz target is its own workspace and cannot import a test module.
//
// Byte 0: bit 0 asserts, bit 1 printf, bits 2-3 the NaN level (off, outputs, ops, ops), bit 6 keep
// `NonSemantic.*` instructions, bit 7 crash on a failing assert, bits 4-7 the site base as well.
// Byte 1: bits 0-1 loop counters (off, report, break, report with a clock budget), bit 2 integer checks,
// bit 3 NaN records written where a check fires and values checked as they are (what the layer builds for
// GPUs) rather than records written when the invocation ends and values checked through a select (what it
// builds for CPUs), bits 4-5 the fragment outputs' kept components (every one; one component of location
// 0; three of location 0 and none of location 1; all of 0 and two of 1), bit 6 a loop limit of 1
// iteration, bit 7 one full record per site. A byte 1 of 0 is the engine's defaults for everything it
// picks but the select.

/// The options and the module's words that `data` stands for; `None` when it is shorter than the two
/// option bytes.
fn fuzz_input(data: &[u8]) -> Option<(blackbox_engine::Options, Vec<u32>)> {
    use blackbox_engine::{ClockScope, LoopClock, LoopMode, NanLevel, Options};
    let [pick, more, rest @ ..] = data else {
        return None;
    };
    let (pick, more) = (*pick, *more);
    let words = rest
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let defaults = Options::default();
    let options = Options {
        error_buffer_address: 0x1_0000_0000,
        site_base: u32::from(pick >> 4),
        asserts: pick & 1 != 0,
        printf: pick & 2 != 0,
        nan: [
            NanLevel::Off,
            NanLevel::Outputs,
            NanLevel::Ops,
            NanLevel::Ops,
        ][usize::from((pick >> 2) & 3)],
        assert_crash: pick & 0x80 != 0,
        strip_non_semantic: pick & 0x40 == 0,
        loops: [
            LoopMode::Off,
            LoopMode::Report,
            LoopMode::Break,
            LoopMode::Report,
        ][usize::from(more & 3)],
        loop_clock: (more & 3 == 3).then_some(LoopClock {
            scope: ClockScope::Subgroup,
            budget_ticks: 1 << 20,
        }),
        int_checks: more & 4 != 0,
        records_at_end: more & 8 == 0,
        nan_values_through_select: more & 8 == 0,
        fragment_output_components: match (more >> 4) & 3 {
            0 => Vec::new(),
            1 => vec![0b0001],
            2 => vec![0b0111, 0],
            _ => vec![0b1111, 0b0011],
        },
        loop_limit: if more & 0x40 != 0 {
            1
        } else {
            defaults.loop_limit
        },
        full_records_per_site: if more & 0x80 != 0 {
            1
        } else {
            defaults.full_records_per_site
        },
        ..defaults
    };
    Some((options, words))
}
