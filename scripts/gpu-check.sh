#!/usr/bin/env bash
# What lavapipe cannot show, on a machine with a GPU: buffer markers per command (a draw inside a render
# pass too), NV checkpoints, VK_EXT_device_fault, the watchdog on a real hang, instrumentation on a real
# driver, frame capture at 1080p. Runs release binaries from BIN (default .gpu/: blackbox, bb-testapp, the layer, the fault layer and
# their manifests, as scripts/gpu-pack.sh lays them out) and writes logs and reports under OUT (default
# ./gpu-out). Every app run has a timeout: on the H200 a process whose GPU work faulted hangs in teardown.
set -u
BIN=$(cd "${BIN:-.gpu}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
layer=(env VK_ADD_LAYER_PATH="$BIN" VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_LOG=info)

step() { echo "== $*" | tee -a "$OUT/steps.log"; }
run_app() { # NAME TIMEOUT ENV... -- ARGS...
  local name=$1 limit=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  step "$name: $* (${envs[*]})"
  local start=$(date +%s.%N)
  timeout -s KILL "$limit" "${layer[@]}" VK_BLACKBOX_OUTPUT="$OUT/reports/$name" "${envs[@]}" "$BIN/bb-testapp" "$@" \
    > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s" | tee -a "$OUT/steps.log"
}

"$BIN/blackbox" doctor --layer "$BIN/libVkLayer_blackbox.so" > "$OUT/doctor.txt" 2>&1
run_app nan-compute 60 VK_BLACKBOX_NAN=ops -- nan-compute
run_app nan-fragment 60 VK_BLACKBOX_NAN=ops -- nan-fragment --nan-op pow
run_app assert 60 -- assert-compute assert-fragment
run_app printf 60 -- printf
run_app all-instrumented 120 VK_BLACKBOX_NAN=ops -- all
# NaN outputs on the components an attachment keeps: a vec4's NaN green reported into rgba32f, not into r8
# (at ops its division still is), and a NaN red into r8 as the one value.
kept() { echo spirv-run --spirv "$BIN/kept/$1.spv" --attachment-format "$2"; }
run_app kept-green-rgba32f 60 VK_BLACKBOX_NAN=outputs -- $(kept green_nan rgba32f)
run_app kept-green-r8 60 VK_BLACKBOX_NAN=outputs -- $(kept green_nan r8)
run_app kept-green-r8-ops 60 VK_BLACKBOX_NAN=ops -- $(kept green_nan r8)
run_app kept-red-r8 60 VK_BLACKBOX_NAN=outputs -- $(kept red_nan r8)
# Frame capture on a headless surface (VK_EXT_headless_surface), 1080p: one report each, frame 57, its PNG.
run_app frames-nan 120 VK_BLACKBOX_FRAMES=8 VK_BLACKBOX_NAN=outputs -- frames --headless --present-size 1920x1080
run_app frames-flash 120 VK_BLACKBOX_FLASH=on -- frames --headless --present-size 1920x1080 --flash
run_app hang 90 VK_BLACKBOX_WATCHDOG_MS=2000 -- hang --hang-groups 8000 --hang-iterations "${HANG_ITERATIONS:-150000000}"
run_app hang-draw 90 VK_BLACKBOX_WATCHDOG_MS=2000 -- hang-draw --hang-iterations "${DRAW_ITERATIONS:-20000000}"
# The same hang with NV checkpoints on (by default they are off where buffer markers exist): what a report
# gains from them is its "Checkpoints" section; compare the two reports.
run_app hang-draw-checkpoints 90 VK_BLACKBOX_WATCHDOG_MS=2000 VK_BLACKBOX_CHECKPOINTS=on \
  -- hang-draw --hang-iterations "${DRAW_ITERATIONS:-20000000}"
run_app device-lost 90 VK_ADD_LAYER_PATH="$BIN:$BIN/fault" \
  VK_INSTANCE_LAYERS=VK_LAYER_blackbox:VK_LAYER_BLACKBOX_fault BB_FAULT_LOST_AFTER_MS=1000 VK_BLACKBOX_WATCHDOG_MS=0 \
  -- hang --hang-iterations "${HANG_ITERATIONS:-150000000}"
run_app bad-address 40 VK_BLACKBOX_WATCHDOG_MS=3000 -- bad-address
(cd "$OUT" && tar czf reports.tgz reports && rm -rf reports)
for f in "$OUT"/*.log; do echo "--- $f"; grep -E "\[blackbox\]|scenario|bb-testapp:" "$f" | cut -c1-300 | head -20; done
