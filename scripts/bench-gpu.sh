#!/usr/bin/env bash
# GPU time of Blackbox's breadcrumbs (and of LunarG's CDL when it is there), against no layer, measured in the
# same run: bb-testapp's frame-bench runs with each setting in turn, interleaved, REPS rounds, each process
# pinned to the same CPUs (bench-setup.sh), for each frame of FRAME_KINDS (default both):
#   triangles  N one-triangle draws in a render pass, then N 1x1x1 dispatches (the cost of a marker per
#              15 ns draw; FRAME_ARGS sets N and the frames, default 10000 and 20)
#   scene      4 render passes of 250 draws of 1,000-50,000 pixels, a pipeline change every 4 draws (what
#              markers cost a real frame)
# timed with timestamp queries, and submit + fence wait timed on the CPU. Each process reports medians over
# its frames (the first one a warm-up); the tables show, per setting, the median over the rounds and the
# median of its ratio to the no-layer process of the same round, ± half the range of those ratios in percent.
# Only breadcrumbs differ between Blackbox's settings: the watchdog, asserts, printf and NaN checks are off.
#   scripts/bench-gpu.sh [REPS]             (default 5; builds the release binaries first)
#   BIN=.gpu scripts/bench-gpu.sh [REPS]    (prepacked binaries, as scripts/gpu-pack.sh lays them out; no build)
# FRAME_ARGS (default empty) goes to bb-testapp, e.g. FRAME_ARGS="--frame-draws 500 --frame-dispatches 500
# --frames 5". BENCH_TSV=FILE appends each row's figures as tab-separated lines (scripts/bench-spread.sh).
# Uses VK_DRIVER_FILES if set, else lavapipe's; with BIN and without VK_DRIVER_FILES, the loader's own choice
# of driver (the GPU machine's). Writes files only under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
frame_args=${FRAME_ARGS:-}
kinds=${FRAME_KINDS:-triangles scene}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-gpu
bench_rows gpu
# N and K as bb-testapp will use them (its defaults unless FRAME_ARGS says otherwise).
read -r draws dispatches frames <<< "$(echo "$frame_args" | awk '
  BEGIN { d = 10000; p = 10000; k = 20 }
  { for (i = 1; i < NF; i++) { if ($i == "--frame-draws") d = $(i+1); if ($i == "--frame-dispatches") p = $(i+1)
                               if ($i == "--frames") k = $(i+1) } }
  END { print d, p, k }')"
out=$tmp/results
: > "$out"
device=""
for r in $(seq "$reps"); do
  for kind in $kinds; do
    for i in "${!row_names[@]}"; do
      status=0
      # shellcheck disable=SC2086
      result=$(env ${row_envs[$i]} VK_BLACKBOX_LOG=warn "${pin[@]}" "$bin/bb-testapp" $frame_args \
        --frame-kind "$kind" frame-bench 2> "$tmp/stderr") || status=$?
      if ! row_ok "$status" "$i"; then
        echo "bench-gpu: bb-testapp failed ($status) with setting '${row_names[$i]}', frame $kind:" >&2
        tail -5 "$tmp/stderr" >&2
        exit 1
      fi
      [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
      # Per run: round, kind, row, then the GPU figures ("-" without timestamps) and the CPU one.
      awk -v r="$r" -v k="$kind" -v i="$i" '/draws_gpu_us|scene_gpu_us/ {d=$3} /dispatches_gpu_us/ {p=$3}
        /frame_cpu_us/ {c=$3} END { print r, k, i, (d == "" ? "-" : d), (p == "" ? "-" : p), c }' \
        <<< "$result" >> "$out"
    done
  done
  echo "bench-gpu: round $r of $reps done" >&2
done

# Median value, median ratio to no layer in the same round and the ratios' spread (± half the range, %) of
# column $3 for frame kind $1 and row $2; "- - -" where the device has no timestamps.
summary() {
  awk -v k="$1" -v i="$2" -v col="$3" '
    function median(a, n,   x, j, t) {
      for (x = 2; x <= n; x++) { t = a[x]; for (j = x - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
      return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    $2 == k && $3 == 0 { base[$1] = $col }
    $2 == k && $3 == i && $col != "-" { v[$1] = $col }
    END {
      n = 0
      for (r in v) { n++; vals[n] = v[r]; ratios[n] = (base[r] > 0) ? v[r] / base[r] : 0 }
      if (n == 0) { print "- - -"; exit }
      lo = hi = ratios[1]
      for (x = 1; x <= n; x++) { if (ratios[x] < lo) lo = ratios[x]; if (ratios[x] > hi) hi = ratios[x] }
      m = median(ratios, n)
      printf "%s %s %s\n", median(vals, n), m, (m > 0) ? 50 * (hi - lo) / m : 0
    }' "$out"
}
cell() { # value ratio spread -> the table's three columns
  if [ "$1" = "-" ]; then printf ' %12s %8s %7s' - - -; else printf ' %12.1f %7.3fx %6.1f%%' "$1" "$2" "$3"; fi
}
tsv() { # table setting metric value ratio
  [ -z "${BENCH_TSV:-}" ] || [ "$4" = "-" ] || printf '%s\t%s\t%s\t%s\t%s\n' "$@" >> "$BENCH_TSV"
}
for kind in $kinds; do
  if [ "$kind" = scene ]; then
    echo "frame-bench on ${device:-unknown device}, scene, $reps rounds of $frames frames (first one a warm-up) of" \
      "4 passes of 250 draws of 1,000-50,000 pixels, ${pin_note}; medians, ratios to no layer in the same round"
    printf '%-30s %12s %8s %7s %12s %8s %7s\n' setting "scene GPU us" ratio "±" "frame CPU us" ratio "±"
  else
    echo "frame-bench on ${device:-unknown device}, triangles, $reps rounds of $frames frames (first one a warm-up)" \
      "of $draws draws and $dispatches dispatches, ${pin_note}; medians, ratios to no layer in the same round"
    printf '%-30s %12s %8s %7s %12s %8s %7s %12s %8s %7s\n' setting "draws GPU us" ratio "±" "disp. GPU us" ratio \
      "±" "frame CPU us" ratio "±"
  fi
  for i in "${!row_names[@]}"; do
    read -r gv gr gs <<< "$(summary "$kind" "$i" 4)"
    read -r cv cr cs <<< "$(summary "$kind" "$i" 6)"
    row=$(printf '%-30s' "${row_names[$i]}")$(cell "$gv" "$gr" "$gs")
    if [ "$kind" = scene ]; then
      tsv scene "${row_names[$i]}" "GPU us" "$gv" "$gr"
    else
      read -r pv pr ps <<< "$(summary "$kind" "$i" 5)"
      row=$row$(cell "$pv" "$pr" "$ps")
      tsv triangles "${row_names[$i]}" "draws GPU us" "$gv" "$gr"
      tsv triangles "${row_names[$i]}" "dispatches GPU us" "$pv" "$pr"
    fi
    tsv "$kind" "${row_names[$i]}" "frame CPU us" "$cv" "$cr"
    echo "$row$(cell "$cv" "$cr" "$cs")"
  done
  echo
done
[ -z "$cdl_note" ] || echo "$cdl_note"
