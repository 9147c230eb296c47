#!/usr/bin/env bash
# GPU time of shaders instrumented by Blackbox (asserts, NaN checks) and by the Khronos validation layer
# (GPU-AV, DebugPrintf), against no layer, measured in the same run: bb-testapp's shader-bench (an ALU-heavy
# compute dispatch and full-screen fragment pass, both with a BB_ASSERT that always holds, timed with
# timestamp queries) runs with each setting in turn, interleaved, REPS times; the table shows the medians of
# the runs' medians and the ratios to no layer, and the checksums of all settings are compared (the
# instrumented shaders must compute the same bits). Each Blackbox setting turns on one kind of
# instrumentation alone (loop budgets at the default limit, which the benchmark's loop never reaches:
# the counters' cost); breadcrumbs and the watchdog are off in all of them (scripts/bench-gpu.sh measures
# breadcrumbs). The row "no layer, condition only" runs the shaders built with the assert replaced by its
# condition checked by hand (bb-testapp --shader-condition-only), without any layer: the reference for the
# "asserts only" row, since without a layer the driver deletes the assert, condition and all.
#   scripts/bench-shaders.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-shaders.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out)
# SHADER_ARGS (default empty) goes to bb-testapp, e.g. SHADER_ARGS="--shader-invocations 4194304
# --shader-size 4096 --shader-iterations 256" for a GPU (defaults 65536, 256, 64; --frames 20). Uses
# VK_DRIVER_FILES if set, else lavapipe's; with BIN and without VK_DRIVER_FILES, the loader's own choice of
# driver. LAYER_ENV="VAR=VALUE ..." is added to every Blackbox row (e.g. LAYER_ENV=VK_BLACKBOX_NAN_RECORDS=end).
# The validation layer's rows are skipped, with a note, where it is not installed or does not turn the
# feature on. The first round also asks the driver for its statistics of each row's pipelines
# (bb-testapp --pipeline-stats: VK_KHR_pipeline_executable_properties), printed after the table as
# registers per thread and binary bytes of each shader, where the device has them (not lavapipe). Writes
# files only under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
shader_args=${SHADER_ARGS:-}
# shellcheck source=scripts/validation-peers.sh
source scripts/validation-peers.sh
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-shaders
# Only what each row sets reaches the validation layer or Blackbox.
unset VK_LAYER_ENABLES VK_LAYER_DISABLES VK_LAYER_SETTINGS_PATH VK_INSTANCE_LAYERS
read -r invocations size iterations frames <<< "$(echo "$shader_args" | awk '
  BEGIN { n = 65536; w = 256; i = 64; k = 20 }
  { for (j = 1; j < NF; j++) { if ($j == "--shader-invocations") n = $(j+1); if ($j == "--shader-size") w = $(j+1)
                               if ($j == "--shader-iterations") i = $(j+1); if ($j == "--frames") k = $(j+1) } }
  END { print n, w, i, k }')"
blackbox="VK_ADD_LAYER_PATH=$tmp/manifests VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_OUTPUT=$tmp/reports"
blackbox="$blackbox VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_BREADCRUMBS=off VK_BLACKBOX_LOG=warn ${LAYER_ENV:-}"
none="VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off"
names=("no layer" "no layer, condition only" "layer, instr. off" "asserts only" "NaN outputs" "NaN ops" "loops report" "loops break"
  "integer checks" "${vvl_names[@]}")
envs=(""
  ""
  "$blackbox $none"
  "$blackbox VK_BLACKBOX_ASSERT=log VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off"
  "$blackbox VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=outputs"
  "$blackbox VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=ops"
  "$blackbox $none VK_BLACKBOX_LOOPS=report"
  "$blackbox $none VK_BLACKBOX_LOOPS=break"
  "$blackbox $none VK_BLACKBOX_INT=on"
  "${vvl_envs[@]}")
# bb-testapp's arguments of each row beyond SHADER_ARGS.
declare -A row_args=([1]=--shader-condition-only)
# Rows that cannot run get a note instead of numbers.
declare -A skipped=()
for i in "${!vvl_names[@]}"; do
  row=$((${#names[@]} - ${#vvl_names[@]} + i))
  # shellcheck disable=SC2086
  reason=$(vvl_check "${vvl_envs[$i]}" "$tmp" "$bin/bb-testapp" $shader_args --frames 2 --shader-invocations 64 \
    --shader-size 16 --shader-iterations 2 shader-bench)
  [ -z "$reason" ] || skipped[$row]=$reason
done
out=$tmp/results
: > "$out"
stats=$tmp/stats
: > "$stats"
device=""
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    [ -z "${skipped[$i]:-}" ] || continue
    # shellcheck disable=SC2086
    # The first round also asks for the driver's statistics of the pipelines (registers, binary size).
    stats_arg=""
    [ "$r" -gt 1 ] || stats_arg=--pipeline-stats
    if ! result=$(env ${envs[$i]} "$bin/bb-testapp" $shader_args ${row_args[$i]:-} $stats_arg shader-bench 2> "$tmp/stderr"); then
      echo "bench-shaders: bb-testapp failed with setting '${names[$i]}':" >&2
      tail -5 "$tmp/stderr" >&2
      exit 1
    fi
    [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
    awk -v i="$i" '/compute_gpu_us/ {c=$3} /fragment_gpu_us/ {f=$3} /compute_cpu_us/ {cc=$3} /fragment_cpu_us/ {fc=$3}
      /^scenario shader-bench checksum/ {s=$4}
      END { print i, (c == "" ? "-" : c), (f == "" ? "-" : f), cc + fc, s }' <<< "$result" >> "$out"
    if [ "$r" -eq 1 ]; then
      # NVIDIA names them "Register Count" and "Binary Size", and the fragment pipeline's fragment
      # executable "FS" (its other is the vertex shader's); a driver that names them otherwise gets "-".
      awk -v i="$i" -F' = ' '
        /^shader-bench stats none/ { none = 1 }
        /^shader-bench stats compute .*: Register Count = / { rc = $2 }
        /^shader-bench stats compute .*: Binary Size = / { bc = $2 }
        /^shader-bench stats fragment FS: Register Count = / { rf = $2 }
        /^shader-bench stats fragment FS: Binary Size = / { bf = $2 }
        END { if (!none) print i, (rc == "" ? "-" : rc), (bc == "" ? "-" : bc), (rf == "" ? "-" : rf), (bf == "" ? "-" : bf) }
      ' <<< "$result" >> "$stats"
    fi
  done
  echo "bench-shaders: round $r of $reps done" >&2
done
# The median of column $2 of the rows of setting $1 ("-" where the device has no timestamps).
median() {
  awk -v i="$1" -v col="$2" '$1 == i && $col != "-" {print $col}' "$out" | sort -g | awk '
    { v[NR] = $1 } END { print NR == 0 ? "-" : (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'
}
echo "shader-bench on ${device:-unknown device}, $reps rounds of $frames runs (first one a warm-up):" \
  "$invocations compute invocations and ${size}x$size pixels, $iterations loop iterations each, medians"
printf '%-24s %16s %8s %17s %8s %18s %8s\n' setting "compute GPU us" ratio "fragment GPU us" ratio \
  "submit+wait CPU us" ratio
base_c=$(median 0 2); base_f=$(median 0 3); base_w=$(median 0 4)
for i in "${!names[@]}"; do
  if [ -n "${skipped[$i]:-}" ]; then
    printf '%-24s skipped: %s\n' "${names[$i]}" "${skipped[$i]}"
    continue
  fi
  awk -v n="${names[$i]}" -v c="$(median "$i" 2)" -v f="$(median "$i" 3)" -v w="$(median "$i" 4)" \
    -v bc="$base_c" -v bf="$base_f" -v bw="$base_w" '
    function cell(v, b, width) {
      if (v == "-") return sprintf(" %*s %8s", width, "-", "-")
      return sprintf(" %*.1f %7.3fx", width, v, b > 0 ? v / b : 0)
    }
    BEGIN { print sprintf("%-24s", n) cell(c, bc, 16) cell(f, bf, 17) cell(w, bw, 18) }'
done
sums=$(awk '{print $5}' "$out" | sort -u)
if [ "$(wc -l <<< "$sums")" -eq 1 ]; then
  echo "checksums: all $(wc -l < "$out") runs agree ($sums)"
else
  echo "checksums DIFFER between settings:"
  awk '{print $5, $1}' "$out" | sort -u | while read -r sum i; do echo "  $sum  ${names[$i]}"; done
  exit 1
fi
# What the driver kept of each setting's shaders (VK_KHR_pipeline_executable_properties), where it says.
if [ -s "$stats" ]; then
  echo "driver statistics (first round): registers per thread and binary bytes of the compute and fragment shaders"
  printf '%-24s %10s %12s %10s %12s\n' setting "comp. regs" "comp. bytes" "frag. regs" "frag. bytes"
  while read -r i rc bc rf bf; do
    printf '%-24s %10s %12s %10s %12s\n' "${names[$i]}" "$rc" "$bc" "$rf" "$bf"
  done < "$stats"
else
  echo "driver statistics: none (the device has no VK_KHR_pipeline_executable_properties)"
fi
