#!/usr/bin/env bash
# Memory Blackbox adds, per device and per command buffer, at each setting, against no layer, measured in the
# same run: bb-testapp's memory-bench (resident memory from /proc/self/status at checkpoints, and device heap
# usage from VK_EXT_memory_budget where the device has it; see tests/app/src/scenarios/memory_bench.rs) runs
# with each setting in turn, interleaved, REPS times. Per instance+device is what the process holds after
# vkCreateDevice minus what it held before the loader was loaded (so it includes loading the layer's code);
# per command buffer is the growth over recording, submitting and waiting for N command buffers (default
# 1000 of 100 draws), divided by N. The table shows the no-layer run's medians, then each setting's medians
# minus those. "host" is RssAnon + RssShmem, "code" is RssFile (mapped files, shared with other processes).
# On a CPU driver (lavapipe) device memory is host memory: it shows in "host", and "device" is "-" (no
# VK_EXT_memory_budget in Mesa 22.3's lavapipe). The last row enables NV diagnostic checkpoints where the
# device has them (VK_BLACKBOX_CHECKPOINTS=on; by default they are only where VK_AMD_buffer_marker is
# missing): on the H200 it shows what they cost NVIDIA's driver per command buffer; lavapipe has none.
#   scripts/bench-memory.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-memory.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out)
# MEMORY_ARGS (default empty) goes to bb-testapp, e.g. MEMORY_ARGS="--memory-cmdbufs 200 --memory-draws 500".
# Uses VK_DRIVER_FILES if set, else lavapipe's; with BIN and without VK_DRIVER_FILES, the loader's own choice
# of driver. Writes files only under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
memory_args=${MEMORY_ARGS:-}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-memory
# Each row sets every variable it depends on; "everything on" leaves the watchdog at its default.
unset VK_INSTANCE_LAYERS VK_BLACKBOX_WATCHDOG_MS
blackbox="VK_ADD_LAYER_PATH=$tmp/manifests VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_OUTPUT=$tmp/reports"
blackbox="$blackbox VK_BLACKBOX_LOG=warn"
off="VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off VK_BLACKBOX_WATCHDOG_MS=0"
names=("no layer" "layer, all off" "breadcrumbs submit" "breadcrumbs pass" "breadcrumbs command" "everything on"
  "command, checkpoints on")
envs=(""
  "$blackbox $off VK_BLACKBOX_BREADCRUMBS=off"
  "$blackbox $off VK_BLACKBOX_BREADCRUMBS=submit"
  "$blackbox $off VK_BLACKBOX_BREADCRUMBS=pass"
  "$blackbox $off VK_BLACKBOX_BREADCRUMBS=command"
  "$blackbox VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_ASSERT=log VK_BLACKBOX_PRINTF=on VK_BLACKBOX_NAN=ops"
  "$blackbox $off VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_CHECKPOINTS=on")
out=$tmp/results
: > "$out"
device=""
shape=""
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    # shellcheck disable=SC2086
    if ! result=$(env ${envs[$i]} "$bin/bb-testapp" $memory_args memory-bench 2> "$tmp/stderr"); then
      echo "bench-memory: bb-testapp failed with setting '${names[$i]}':" >&2
      tail -5 "$tmp/stderr" >&2
      exit 1
    fi
    [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
    [ -n "$shape" ] || shape=$(awk '/^memory-bench cmdbufs/ {print $3, $5, $7}' <<< "$result")
    # Per run: instance+device host, code and device KiB; per command buffer host and device KiB.
    awk -v i="$i" '
      /^memory-bench cmdbufs/ { n = $3 }
      /^memory-bench rss_kib/ { anon[$3] = $4; file[$3] = $5 }
      /^memory-bench device_kib/ { dev[$3] = $4 }
      END {
        cb_dev = (dev["setup"] == "-") ? "-" : (dev["submitted"] - dev["setup"]) / n
        print i, anon["device"] - anon["start"], file["device"] - file["start"], dev["device"],
          (anon["submitted"] - anon["setup"]) / n, cb_dev
      }' <<< "$result" >> "$out"
  done
  echo "bench-memory: round $r of $reps done" >&2
done
# The median of column $2 of the rows of setting $1 ("-" where the device has no VK_EXT_memory_budget).
median() {
  awk -v i="$1" -v col="$2" '$1 == i && $col != "-" {print $col}' "$out" | sort -g | awk '
    { v[NR] = $1 } END { print NR == 0 ? "-" : (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}
read -r count draws commands <<< "$shape"
echo "memory-bench on ${device:-unknown device}, $reps rounds: $count command buffers of $draws draws" \
  "($((commands / count)) commands each), medians; below the first row, KiB added to it"
printf '%-22s %31s   %25s\n' "" "---- per instance+device ----" "--- per command buffer ---"
printf '%-22s %10s %10s %10s   %12s %12s\n' setting "host KiB" "code KiB" "device KiB" "host KiB" "device KiB"
base=("" "$(median 0 2)" "$(median 0 3)" "$(median 0 4)" "$(median 0 5)" "$(median 0 6)")
for i in "${!names[@]}"; do
  row=$(printf '%-22s' "${names[$i]}")
  for col in 2 3 4 5 6; do
    v=$(median "$i" "$col")
    width=10 decimals=0
    [ "$col" -lt 5 ] || { width=12; decimals=2; }
    cell=$(awk -v v="$v" -v b="${base[$((col - 1))]}" -v first="$((i == 0))" -v w="$width" -v d="$decimals" '
      BEGIN {
        if (v == "-" || b == "-") { printf "%*s", w, "-"; exit }
        if (first) printf "%*.*f", w, d, v; else printf "%+*.*f", w, d, v - b
      }')
    [ "$col" -ne 5 ] || row="$row  "
    row="$row $cell"
  done
  echo "$row"
done
