#!/usr/bin/env bash
# Fuzzes with cargo fuzz (libFuzzer) for SECONDS (default 600): TARGET `instrument` (the default) or `report`.
#
# instrument: the SPIR-V engine, seeded with the engine's own test corpus (compiled by its tests into
#   target/tmp/corpus) and, when present, the shared corpus. The target links SPIRV-Tools' validator (every
#   valid input must come out valid): it needs scripts/setup.sh's SPIRV-Tools. Findings: keep each as a
#   regression test (engine/tests/fuzz/, replayed by engine/tests/fuzz_regressions.rs).
# report: the report reader (`blackbox report` and `triage`'s parse, text rendering and JSON writing),
#   seeded with the real reports in report/tests/reports/. Findings: keep each in report/tests/fuzz/
#   (replayed by report/tests/fuzz_regressions.rs).
#
# Needs a nightly toolchain and cargo-fuzz (cargo install cargo-fuzz). Run it niced on a shared machine:
# `nice -n 19 scripts/fuzz.sh 1200 report`. libFuzzer's final statistics (executions, coverage) are printed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
target=${2:-instrument}
corpus=fuzz/corpus/$target
mkdir -p "$corpus"
case "$target" in
  instrument)
    # Seeds: two bytes of options (engine/tests/common/fuzz_input.rs) in front of each real module, twice:
    # 0x0b 0x00 (asserts, printf, NaN ops, debug info stripped, the rest the defaults) and 0x0b 0x0e (the
    # same with loops `break`, integer checks and NaN records written where they fire, as for GPUs).
    seed() {
      for f in "$@"; do
        [ -f "$f" ] || continue
        { printf '\x0b\x00'; cat "$f"; } > "$corpus/seed-$(basename "$f")"
        { printf '\x0b\x0e'; cat "$f"; } > "$corpus/seed-gpu-$(basename "$f")"
      done
    }
    seed target/tmp/corpus/*.spv
    [ -d ../shared/corpus/spv ] && seed ../shared/corpus/spv/*.spv
    max_len=262144
    # Any single allocation over 256 MB is a finding: an input of at most 256 KB needs at most a few tens
    # of MB (the tables sized by its id bound: 16 MB at SPIR-V's 4 M ids), and the regression test holds the
    # engine to 64 bytes per input byte plus 64 MB.
    extra=(-malloc_limit_mb=256)
    ;;
  report)
    for f in report/tests/reports/*.json report/tests/fuzz/*; do
      [ -f "$f" ] && cp "$f" "$corpus/seed-$(basename "$f")"
    done
    max_len=1048576
    # JSON tokens and the schema's field names: mutations that keep the input a report reach further.
    extra=(-dict=fuzz/report.dict)
    ;;
  *) echo "usage: scripts/fuzz.sh [SECONDS] [instrument|report]" >&2; exit 2 ;;
esac
cargo +nightly fuzz run "$target" --fuzz-dir fuzz "$corpus" -- \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="$max_len" -print_final_stats=1 "${extra[@]}"
