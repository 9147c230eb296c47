#!/usr/bin/env bash
# Fuzzes the SPIR-V engine with cargo fuzz (libFuzzer) for SECONDS (default 600), seeded with the engine's
# own test corpus (compiled by its tests into target/tmp/corpus) and, when present, the shared corpus.
# Needs a nightly toolchain, cargo-fuzz (cargo install cargo-fuzz) and scripts/setup.sh's SPIRV-Tools (the target
# links its validator: every valid input must come out valid). Findings land in
# fuzz/artifacts/instrument/: keep each as a regression test (engine/tests/fuzz_regressions.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
corpus=fuzz/corpus/instrument
mkdir -p "$corpus"
# Seeds: one byte of options (0x0b: asserts, printf, NaN ops, debug info stripped) in front of each real module.
seed() { for f in "$@"; do [ -f "$f" ] && { printf '\x0b'; cat "$f"; } > "$corpus/seed-$(basename "$f")"; done; }
seed target/tmp/corpus/*.spv
[ -d ../shared/corpus/spv ] && seed ../shared/corpus/spv/*.spv
cargo +nightly fuzz run instrument --fuzz-dir fuzz "$corpus" -- \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1
