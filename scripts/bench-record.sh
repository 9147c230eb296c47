#!/usr/bin/env bash
# CPU cost of recording and submitting through Blackbox, against no layer, measured in the same run:
# bb-testapp's record-bench (render passes full of draws, binds, push constants, labels, dispatches and
# barriers) runs with each setting in turn, interleaved, REPS times; the table shows medians and ratios.
#   scripts/bench-record.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-record.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out)
# Uses lavapipe unless VK_DRIVER_FILES is set; with BIN and without VK_DRIVER_FILES, the loader's own choice.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-record
manifests=$tmp/manifests
off="VK_BLACKBOX_BREADCRUMBS=off VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off"
names=("no layer" "layer, all off" "breadcrumbs submit" "breadcrumbs pass" "breadcrumbs command" "everything on")
envs=("" "$off" "VK_BLACKBOX_BREADCRUMBS=submit" "VK_BLACKBOX_BREADCRUMBS=pass" "VK_BLACKBOX_BREADCRUMBS=command"
  "VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_NAN=ops")
out=$(mktemp)
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    if [ "$i" -eq 0 ]; then layer=(); else layer=(VK_ADD_LAYER_PATH="$manifests" VK_INSTANCE_LAYERS=VK_LAYER_blackbox); fi
    # shellcheck disable=SC2086
    env "${layer[@]}" ${envs[$i]} VK_BLACKBOX_LOG=warn "$bin/bb-testapp" record-bench 2> "$manifests/stderr" \
      | awk -v i="$i" '/record_ns_per_command/ {r=$3} /submit_ns/ {s=$3} END {print i, r, s}' >> "$out"
  done
  echo "bench-record: round $r of $reps done" >&2
done
echo "record-bench on $(sed -n 's/^bb-testapp: device [0-9]*: //p' "$manifests/stderr" | head -1), $reps rounds, medians"
printf '%-22s %14s %8s %14s %8s\n' setting "ns/command" ratio "submit+wait ms" ratio
for i in "${!names[@]}"; do
  awk -v i="$i" '$1 == i {print $2, $3}' "$out" | sort -n | awk -v name="${names[$i]}" -v i="$i" '
    { r[NR] = $1 } END { n = NR; m = (n % 2) ? r[(n+1)/2] : (r[n/2] + r[n/2+1]) / 2; print i, m }' >> "$out.rec"
  awk -v i="$i" '$1 == i {print $3}' "$out" | sort -n | awk -v i="$i" '
    { s[NR] = $1 } END { n = NR; m = (n % 2) ? s[(n+1)/2] : (s[n/2] + s[n/2+1]) / 2; print i, m }' >> "$out.sub"
done
base_r=$(awk '$1 == 0 {print $2}' "$out.rec"); base_s=$(awk '$1 == 0 {print $2}' "$out.sub")
for i in "${!names[@]}"; do
  r=$(awk -v i="$i" '$1 == i {print $2}' "$out.rec"); s=$(awk -v i="$i" '$1 == i {print $2}' "$out.sub")
  awk -v n="${names[$i]}" -v r="$r" -v s="$s" -v br="$base_r" -v bs="$base_s" \
    'BEGIN { printf "%-22s %14.1f %7.3fx %14.2f %7.3fx\n", n, r, r / br, s / 1e6, s / bs }'
done
rm -rf "$out" "$out.rec" "$out.sub"
