#!/usr/bin/env bash
# The cost of frame capture per present, against no layer, measured in the same run: bb-testapp's `frames`
# scenario (a full-screen draw presented each frame, one frame in flight, no bad frame) runs with each
# setting in turn, interleaved, REPS times. The table shows the medians of the runs' medians: the frame time
# (acquire to the frame's fence, CPU) and the vkQueuePresentKHR call, with ratios to no layer, and the GPU
# time of the layer's own work per present (the copy of the presented image and the flash pass, from the
# timestamps the layer logs when the swapchain goes). Only frame capture differs between the layer
# settings: breadcrumbs, the watchdog, asserts, printf and NaN checks are off in all of them.
#   scripts/bench-frames.sh [REPS]            (default 5; release build, lavapipe, a window on an Xvfb of its
#                                              own unless DISPLAY is set)
#   BIN=.gpu scripts/bench-frames.sh [REPS]   (prepacked binaries, scripts/gpu-pack.sh; a headless surface:
#                                              VK_EXT_headless_surface)
# FRAMES_ARGS (default "--frames-count 200 --present-size 1920x1080") goes to bb-testapp. Uses VK_DRIVER_FILES
# if set, else lavapipe's; with BIN and without VK_DRIVER_FILES, the loader's own choice of driver. Writes
# files only under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
frames_args=${FRAMES_ARGS:---frames-count 200 --present-size 1920x1080}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-frames
if [ -n "${BIN:-}" ]; then
  frames_args="$frames_args --headless"
elif [ -z "${DISPLAY:-}" ]; then
  # A screen as large as the window, so that the whole image is drawn and presented.
  # -noreset: the server outlives its first client (a reset would end it here).
  exec 3< <(Xvfb -displayfd 1 -screen 0 1920x1080x24 -nolisten tcp -noreset 2> /dev/null & echo "pid $!")
  read -r _ xvfb_pid <&3
  read -r number <&3
  export DISPLAY=":$number"
  # shellcheck disable=SC2064
  trap "kill $xvfb_pid 2> /dev/null; rm -rf '$tmp'" EXIT
fi
common="VK_BLACKBOX_BREADCRUMBS=off VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off
  VK_BLACKBOX_NAN=off VK_BLACKBOX_LOG=info"
names=("no layer" "layer, capture off" "VK_BLACKBOX_FRAMES=8" "VK_BLACKBOX_FLASH=on")
envs=("" "VK_BLACKBOX_FRAMES=0" "VK_BLACKBOX_FRAMES=8" "VK_BLACKBOX_FLASH=on")
out=$tmp/results
: > "$out"
device="" size=""
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
    status=0
    result=$(env "${layer[@]}" "$bin/bb-testapp" $frames_args --bad-frame 0 frames 2> "$tmp/stderr") || status=$?
    # A machine that cannot present (no display, no VK_EXT_headless_surface: the lent H200) skips the
    # scenario (exit 4): the benchmark says so and has no figures, which is not a failure of the run.
    if grep -q "^scenario frames skipped" <<< "$result"; then
      echo "frame capture: not measured here, $(sed -n 's/^scenario frames skipped //p' <<< "$result")"
      exit 0
    fi
    if [ "$status" -ne 0 ]; then
      echo "bench-frames: bb-testapp failed ($status) with setting '${names[$i]}':" >&2
      tail -5 "$tmp/stderr" >&2
      exit 1
    fi
    [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
    [ -n "$size" ] || size=$(sed -n 's/^bb-testapp: frames: \([0-9]* frames of [0-9x]* [A-Z0-9_]*\).*/\1/p' "$tmp/stderr")
    # The layer's line: "GPU time per present (median of N): copy X us, flash pass Y us".
    copy=$(sed -n 's/.*GPU time per present .*: copy \([0-9.]*\) us.*/\1/p' "$tmp/stderr" | head -1)
    flash=$(sed -n 's/.*flash pass \([0-9.]*\) us.*/\1/p' "$tmp/stderr" | head -1)
    awk -v i="$i" -v copy="${copy:--}" -v flash="${flash:--}" '/^frames frame_us/ {f=$3; p=$5}
      END { print i, f, p, copy, flash }' <<< "$result" >> "$out"
  done
  echo "bench-frames: round $r of $reps done" >&2
done
# The median of column $2 of the rows of setting $1 ("-" where there is none).
median() {
  awk -v i="$1" -v col="$2" '$1 == i && $col != "-" {print $col}' "$out" | sort -g | awk '
    { v[NR] = $1 } END { print NR == 0 ? "-" : (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}
# The spread of column $2 of setting $1 across rounds: lowest-highest.
spread() {
  awk -v i="$1" -v col="$2" '$1 == i && $col != "-" {print $col}' "$out" | sort -g | awk '
    NR == 1 { lo = $1 } { hi = $1 } END { print NR == 0 ? "-" : sprintf("%.1f-%.1f", lo, hi) }'
}
echo "frames on ${device:-unknown device}, $reps rounds of ${size:-?} (no bad frame), medians (and the rounds' range)"
printf '%-22s %24s %8s %22s %8s %18s %18s\n' setting "frame CPU us" ratio "present call us" ratio "copy GPU us" \
  "flash pass GPU us"
base_f=$(median 0 2); base_p=$(median 0 3)
for i in "${!names[@]}"; do
  awk -v n="${names[$i]}" -v f="$(median "$i" 2)" -v fs="$(spread "$i" 2)" -v p="$(median "$i" 3)" \
    -v ps="$(spread "$i" 3)" -v c="$(median "$i" 4)" -v g="$(median "$i" 5)" -v bf="$base_f" -v bp="$base_p" '
    function gpu(v) { return v == "-" ? sprintf(" %18s", "-") : sprintf(" %18.1f", v) }
    BEGIN {
      printf "%-22s %10.1f (%11s) %7.3fx %8.1f (%11s) %7.3fx%s%s\n", n, f, fs, (bf > 0 ? f / bf : 0), p, ps,
        (bp > 0 ? p / bp : 0), gpu(c), gpu(g)
    }'
done
