#!/usr/bin/env bash
# CPU cost of creating pipelines through Blackbox, with shader instrumentation off and at each level, against
# no layer, measured in the same run: bb-testapp's pipeline-bench (new, distinct shader modules and compute and
# graphics pipelines, no pipeline cache) runs with each setting in turn, interleaved, REPS times; the table
# shows medians and ratios.
#   scripts/bench-pipelines.sh [REPS]     (default 5; builds the release binaries first)
# Uses lavapipe unless VK_DRIVER_FILES is set. PIPELINES and ITERS (default 60 and 9) size each run.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
pipelines=${PIPELINES:-60}
iters=${ITERS:-9}
cargo build --release -q -p blackbox-layer -p blackbox-testapp 2>/dev/null
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$(mktemp -d)}
# The "defaults" setting means the layer's defaults.
unset VK_BLACKBOX_ASSERT VK_BLACKBOX_PRINTF VK_BLACKBOX_NAN
manifests=$(mktemp -d)
out=$(mktemp)
trap 'rm -rf "$manifests" "$out"' EXIT
sed "s|\"./libVkLayer_blackbox.so\"|\"$PWD/target/release/libVkLayer_blackbox.so\"|" manifest/VkLayer_blackbox.json \
  > "$manifests/VkLayer_blackbox.json"
names=("no layer" "layer, instr. off" "asserts+printf (defaults)" "NaN outputs" "NaN ops")
envs=("" "VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off" "" "VK_BLACKBOX_NAN=outputs"
  "VK_BLACKBOX_NAN=ops")
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    if [ "$i" -eq 0 ]; then layer=(); else layer=(VK_ADD_LAYER_PATH="$manifests" VK_INSTANCE_LAYERS=VK_LAYER_blackbox); fi
    # shellcheck disable=SC2086
    if ! result=$(env "${layer[@]}" ${envs[$i]} VK_BLACKBOX_LOG=warn target/release/bb-testapp \
      --pipelines "$pipelines" --iters "$iters" pipeline-bench 2>/dev/null); then
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
echo "pipeline-bench on $(VK_LOADER_DEBUG= vulkaninfo --summary 2>/dev/null | awk -F'= ' '/deviceName/ {print $2; exit}'),"\
  "$reps rounds of $iters x $pipelines compute + $pipelines graphics pipelines, medians"
printf '%-25s %20s %8s %21s %8s\n' setting "compute us/pipeline" ratio "graphics us/pipeline" ratio
base_c=$(median 0 2); base_g=$(median 0 3)
for i in "${!names[@]}"; do
  awk -v n="${names[$i]}" -v c="$(median "$i" 2)" -v g="$(median "$i" 3)" -v bc="$base_c" -v bg="$base_g" \
    'BEGIN { printf "%-25s %20.1f %7.2fx %21.1f %7.2fx\n", n, c, c / bc, g, g / bg }'
done
