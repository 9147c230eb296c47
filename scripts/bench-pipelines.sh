#!/usr/bin/env bash
# CPU cost of creating pipelines through Blackbox, with shader instrumentation off and at each level, against
# no layer, measured in the same run: bb-testapp's pipeline-bench (new, distinct shader modules and compute and
# graphics pipelines, no pipeline cache) runs with each setting in turn, interleaved, REPS times; the table
# shows medians and ratios. The Khronos validation layer with GPU-assisted validation, and with DebugPrintf,
# are the last rows (skipped with a note where the layer is missing or does not turn the feature on); its core
# checks are on there too, as a user has them.
#   scripts/bench-pipelines.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-pipelines.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out)
# Uses lavapipe unless VK_DRIVER_FILES is set; with BIN and without VK_DRIVER_FILES, the loader's own choice.
# PIPELINES and ITERS (default 60 and 9) size each run.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
pipelines=${PIPELINES:-60}
iters=${ITERS:-9}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-pipelines
# The "defaults" setting means the layer's defaults; only what a row sets reaches the validation layer.
unset VK_BLACKBOX_ASSERT VK_BLACKBOX_PRINTF VK_BLACKBOX_NAN
unset VK_INSTANCE_LAYERS VK_LAYER_ENABLES VK_LAYER_DISABLES VK_LAYER_SETTINGS_PATH
# shellcheck source=scripts/validation-peers.sh
source scripts/validation-peers.sh
manifests=$tmp/manifests
out=$tmp/results
names=("no layer" "layer, instr. off" "asserts+printf (defaults)" "NaN outputs" "NaN ops" "${vvl_names[@]}")
envs=("" "VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off" "" "VK_BLACKBOX_NAN=outputs"
  "VK_BLACKBOX_NAN=ops" "${vvl_envs[@]}")
blackbox_rows=4 # rows 1..4 run Blackbox
# Rows that cannot run get a note instead of numbers.
declare -A skipped=()
for i in "${!vvl_names[@]}"; do
  reason=$(vvl_check "${vvl_envs[$i]}" "$manifests" "$bin/bb-testapp" --pipelines 2 --iters 1 pipeline-bench)
  [ -z "$reason" ] || skipped[$((blackbox_rows + 1 + i))]=$reason
done
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    [ -z "${skipped[$i]:-}" ] || continue
    if [ "$i" -eq 0 ] || [ "$i" -gt "$blackbox_rows" ]; then
      layer=()
    else
      layer=(VK_ADD_LAYER_PATH="$manifests" VK_INSTANCE_LAYERS=VK_LAYER_blackbox)
    fi
    # shellcheck disable=SC2086
    if ! result=$(env "${layer[@]}" ${envs[$i]} VK_BLACKBOX_LOG=warn "$bin/bb-testapp" \
      --pipelines "$pipelines" --iters "$iters" pipeline-bench 2> "$tmp/stderr"); then
      echo "bench-pipelines: bb-testapp failed with setting '${names[$i]}'" >&2
      exit 1
    fi
    awk -v i="$i" '/compute_us_per_pipeline/ {c=$3} /graphics_us_per_pipeline/ {g=$3} END {print i, c, g}' \
      <<< "$result" >> "$out"
  done
  echo "bench-pipelines: round $r of $reps done" >&2
done
# The median of column $2 of the rows of setting $1.
median() {
  awk -v i="$1" -v col="$2" '$1 == i {print $col}' "$out" | sort -g | awk '
    { v[NR] = $1 } END { print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}
echo "pipeline-bench on $(sed -n 's/^bb-testapp: device [0-9]*: //p' "$tmp/stderr" | head -1),"\
  "$reps rounds of $iters x $pipelines compute + $pipelines graphics pipelines, medians"
printf '%-25s %20s %8s %21s %8s\n' setting "compute us/pipeline" ratio "graphics us/pipeline" ratio
base_c=$(median 0 2); base_g=$(median 0 3)
for i in "${!names[@]}"; do
  if [ -n "${skipped[$i]:-}" ]; then
    printf '%-25s skipped: %s\n' "${names[$i]}" "${skipped[$i]}"
    continue
  fi
  awk -v n="${names[$i]}" -v c="$(median "$i" 2)" -v g="$(median "$i" 3)" -v bc="$base_c" -v bg="$base_g" \
    'BEGIN { printf "%-25s %20.1f %7.2fx %21.1f %7.2fx\n", n, c, c / bc, g, g / bg }'
done
