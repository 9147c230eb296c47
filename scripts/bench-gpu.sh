#!/usr/bin/env bash
# GPU time of Blackbox's breadcrumbs, against no layer, measured in the same run: bb-testapp's frame-bench (a
# frame of N one-triangle draws in a render pass, then N 1x1x1 dispatches, timed with timestamp queries, and
# submit + fence wait timed on the CPU) runs with each setting in turn, interleaved, REPS times; the table
# shows the medians of the runs' medians and the ratios to no layer. Only breadcrumbs differ between the layer
# settings: the watchdog, asserts, printf and NaN checks are off in all of them.
#   scripts/bench-gpu.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-gpu.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out; no build)
# FRAME_ARGS (default empty) goes to bb-testapp, e.g. FRAME_ARGS="--frame-draws 500 --frame-dispatches 500
# --frames 5" (defaults 10000, 10000, 20). Uses VK_DRIVER_FILES if set, else lavapipe's; with BIN and without
# VK_DRIVER_FILES, the loader's own choice of driver (the GPU machine's). Writes files only under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
frame_args=${FRAME_ARGS:-}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-gpu
# N and K as bb-testapp will use them (its defaults unless FRAME_ARGS says otherwise).
read -r draws dispatches frames <<< "$(echo "$frame_args" | awk '
  BEGIN { d = 10000; p = 10000; k = 20 }
  { for (i = 1; i < NF; i++) { if ($i == "--frame-draws") d = $(i+1); if ($i == "--frame-dispatches") p = $(i+1)
                               if ($i == "--frames") k = $(i+1) } }
  END { print d, p, k }')"
common="VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off VK_BLACKBOX_LOG=warn"
names=("no layer" "layer, breadcrumbs off" "breadcrumbs submit" "breadcrumbs pass" "breadcrumbs command")
envs=("" "VK_BLACKBOX_BREADCRUMBS=off" "VK_BLACKBOX_BREADCRUMBS=submit" "VK_BLACKBOX_BREADCRUMBS=pass"
  "VK_BLACKBOX_BREADCRUMBS=command")
out=$tmp/results
: > "$out"
device=""
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    if [ "$i" -eq 0 ]; then
      layer=()
    else
      # shellcheck disable=SC2206
      layer=(VK_ADD_LAYER_PATH="$tmp/manifests" VK_INSTANCE_LAYERS=VK_LAYER_blackbox
        VK_BLACKBOX_OUTPUT="$tmp/reports" $common ${envs[$i]})
    fi
    # shellcheck disable=SC2086
    if ! result=$(env "${layer[@]}" "$bin/bb-testapp" $frame_args frame-bench 2> "$tmp/stderr"); then
      echo "bench-gpu: bb-testapp failed with setting '${names[$i]}':" >&2
      tail -5 "$tmp/stderr" >&2
      exit 1
    fi
    [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
    awk -v i="$i" '/draws_gpu_us/ {d=$3} /dispatches_gpu_us/ {p=$3} /frame_cpu_us/ {c=$3}
      END { print i, (d == "" ? "-" : d), (p == "" ? "-" : p), c }' <<< "$result" >> "$out"
  done
  echo "bench-gpu: round $r of $reps done" >&2
done
# The median of column $2 of the rows of setting $1 ("-" where the device has no timestamps).
median() {
  awk -v i="$1" -v col="$2" '$1 == i && $col != "-" {print $col}' "$out" | sort -g | awk '
    { v[NR] = $1 } END { print NR == 0 ? "-" : (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}
echo "frame-bench on ${device:-unknown device}, $reps rounds of $frames frames (first one a warm-up) of $draws draws" \
  "and $dispatches dispatches, medians"
printf '%-24s %14s %8s %18s %8s %14s %8s\n' setting "draws GPU us" ratio "dispatches GPU us" ratio "frame CPU us" ratio
base_d=$(median 0 2); base_p=$(median 0 3); base_c=$(median 0 4)
for i in "${!names[@]}"; do
  awk -v n="${names[$i]}" -v d="$(median "$i" 2)" -v p="$(median "$i" 3)" -v c="$(median "$i" 4)" \
    -v bd="$base_d" -v bp="$base_p" -v bc="$base_c" '
    function cell(v, b) {
      if (v == "-") return sprintf(" %14s %8s", "-", "-")
      return sprintf(" %14.1f %7.3fx", v, b > 0 ? v / b : 0)
    }
    BEGIN {
      row = sprintf("%-24s", n) cell(d, bd)
      row = row (p == "-" ? sprintf(" %18s %8s", "-", "-") : sprintf(" %18.1f %7.3fx", p, bp > 0 ? p / bp : 0))
      print row cell(c, bc)
    }'
done
