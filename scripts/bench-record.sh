#!/usr/bin/env bash
# CPU cost of recording and submitting through Blackbox (and LunarG's CDL when it is there), against no
# layer, measured in the same process: bb-testapp's record-bench (render passes full of draws, binds, push
# constants, labels, dispatches and barriers; see tests/app/src/scenarios/record_bench.rs) with
# `--ab-layer`, which records the same work through two instances and devices of one process in turn, each
# iteration: the first without any layer, the second with the row's layer (the no-layer row: none, so its
# ratio shows the method's own bias and spread). Each row runs in turn, interleaved, REPS rounds, each
# process pinned to the same CPUs (bench-setup.sh). Each instance times every command buffer it records
# (after two warm-up iterations) and reports the mean ns per command of its fastest 5% (the command
# buffers another process's time slice did not hit); the table shows, per row, the median over the rounds
# of the second instance's figure and of its ratio to the first's in the same process, with the spread of
# those ratios over the rounds (half the range, in percent of the median), then submit + wait likewise.
# A ratio within one process is free of what moves between processes (their memory layout, the CPU's
# state when each starts): on the H200 the ratios of separate processes moved by ±18-34% between rounds.
# The last row, "no layer, app markers", has no layer either, but its second instance writes a
# vkCmdWriteBufferMarkerAMD before each draw and dispatch itself (bb-testapp --app-markers), as `command`
# breadcrumbs do: what the driver's own marker call costs, which no layer can take away. It is skipped, with
# a note, where the device has no VK_AMD_buffer_marker (lavapipe).
#   scripts/bench-record.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-record.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out)
# RECORD_ARGS (default empty) goes to bb-testapp, e.g. RECORD_ARGS="--iters 60". BENCH_TSV=FILE appends
# each row's figures as tab-separated lines (scripts/bench-spread.sh reads them). Uses lavapipe unless
# VK_DRIVER_FILES is set; with BIN and without VK_DRIVER_FILES, the loader's own choice.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
record_args=${RECORD_ARGS:-}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-record
bench_rows record
row_names+=("no layer, app markers")
row_envs+=("")
# bb-testapp's arguments of each row beyond RECORD_ARGS; rows bb-testapp skipped, with its reason.
declare -A row_args=([$((${#row_names[@]} - 1))]=--app-markers) skipped=()
out=$tmp/results
: > "$out"
device=""
for r in $(seq "$reps"); do
  for i in "${!row_names[@]}"; do
    [ -z "${skipped[$i]:-}" ] || continue
    status=0
    # The row's layer goes to the second instance only: out of VK_INSTANCE_LAYERS, into --ab-layer.
    envs=${row_envs[$i]}
    layer=none
    if [[ $envs =~ VK_INSTANCE_LAYERS=([^ ]+) ]]; then
      layer=${BASH_REMATCH[1]}
      envs=${envs/VK_INSTANCE_LAYERS=$layer/}
    fi
    # shellcheck disable=SC2086
    result=$(env $envs VK_BLACKBOX_LOG=warn "${pin[@]}" "$bin/bb-testapp" $record_args ${row_args[$i]:-} \
      --ab-layer "$layer" record-bench 2> "$tmp/stderr") || status=$?
    # Exit status 4: bb-testapp skipped the scenario, and says why.
    if [ "$status" -eq 4 ] && grep -q '^scenario record-bench skipped' <<< "$result"; then
      skipped[$i]=$(sed -n 's/^scenario record-bench skipped //p' <<< "$result")
      continue
    fi
    if ! row_ok "$status" "$i"; then
      echo "bench-record: bb-testapp failed ($status) with setting '${row_names[$i]}':" >&2
      tail -5 "$tmp/stderr" >&2
      exit 1
    fi
    [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
    # round, row, then the first instance's and the second's: ns/command, submit ns.
    awk -v r="$r" -v i="$i" '
      $2 == "record_ns_per_command" {c=$3} $2 == "submit_ns" {s=$3}
      $2 == "ab_record_ns_per_command" {bc=$3} $2 == "ab_submit_ns" {bs=$3}
      END {print r, i, c, s, bc, bs}' <<< "$result" >> "$out"
  done
  echo "bench-record: round $r of $reps done" >&2
done
echo "record-bench on ${device:-unknown device}, $reps rounds, ${pin_note}; ns/command: mean of the fastest 5%" \
  "of the command buffers of the instance with the row's layer, median over rounds; ratios: medians of its" \
  "ratios to the instance without a layer in the same process, ± half their range"
printf '%-30s %11s %8s %7s %15s %8s %7s\n' setting "ns/command" ratio "±" "submit+wait ms" ratio "±"
# Per row: median value and ratio, and the ratios' spread, of column $2 (3: record, 4: submit) against the
# instance without a layer of the same process (column $2 + 2).
summary() {
  awk -v i="$1" -v col="$2" '
    function median(a, n,   k, j, t) {
      for (k = 2; k <= n; k++) { t = a[k]; for (j = k - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $2 == i { base[$1] = $col; v[$1] = $(col + 2) }
    END {
      n = 0
      for (r in v) { n++; vals[n] = v[r]; ratios[n] = (base[r] > 0) ? v[r] / base[r] : 0 }
      lo = hi = ratios[1]
      for (k = 1; k <= n; k++) { if (ratios[k] < lo) lo = ratios[k]; if (ratios[k] > hi) hi = ratios[k] }
      m = median(ratios, n)
      printf "%s %s %s\n", median(vals, n), m, (m > 0) ? 50 * (hi - lo) / m : 0
    }' "$out"
}
for i in "${!row_names[@]}"; do
  if [ -n "${skipped[$i]:-}" ]; then
    printf '%-30s skipped: %s\n' "${row_names[$i]}" "${skipped[$i]}"
    continue
  fi
  read -r rec rec_ratio rec_spread <<< "$(summary "$i" 3)"
  read -r sub sub_ratio sub_spread <<< "$(summary "$i" 4)"
  printf '%-30s %11.1f %7.3fx %6.1f%% %15.2f %7.3fx %6.1f%%\n' "${row_names[$i]}" "$rec" "$rec_ratio" "$rec_spread" \
    "$(awk -v s="$sub" 'BEGIN {print s / 1e6}')" "$sub_ratio" "$sub_spread"
  if [ -n "${BENCH_TSV:-}" ]; then
    printf 'record\t%s\tns/command\t%s\t%s\n' "${row_names[$i]}" "$rec" "$rec_ratio" >> "$BENCH_TSV"
    printf 'record\t%s\tsubmit+wait ms\t%s\t%s\n' "${row_names[$i]}" "$(awk -v s="$sub" 'BEGIN {print s / 1e6}')" \
      "$sub_ratio" >> "$BENCH_TSV"
  fi
done
[ -z "$cdl_note" ] || echo "$cdl_note"
