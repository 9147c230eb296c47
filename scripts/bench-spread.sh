#!/usr/bin/env bash
# How much a benchmark's ratios move between runs: runs one of the bench-*.sh scripts that write BENCH_TSV
# (bench-record.sh, bench-gpu.sh) RUNS times, one after the other, then prints per row and figure the
# ratio of each run, their median and their spread (half the range, in percent of the median).
#   scripts/bench-spread.sh RUNS scripts/bench-record.sh [ITS ARGUMENTS...]
# The script's own output goes to $TMPDIR (its path is printed); its environment (BIN, RECORD_ARGS...)
# passes through.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: scripts/bench-spread.sh RUNS SCRIPT [ARGS...]" >&2; exit 2; }
runs=$1; shift
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "bench-spread: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
[ -x "$1" ] || { echo "bench-spread: $1 is not an executable script" >&2; exit 2; }
tsv=$(mktemp "${TMPDIR:-/tmp}/bench-spread.XXXXXX.tsv")
log=${tsv%.tsv}.log
echo "bench-spread: $runs runs of $*; output in $log" >&2
for r in $(seq "$runs"); do
  # Each line of this run's TSV gets the run's number in front.
  part=$(mktemp)
  BENCH_TSV=$part "$@" >> "$log" 2>&1 || { echo "bench-spread: run $r failed (see $log)" >&2; exit 1; }
  sed "s/^/$r\t/" "$part" >> "$tsv"
  rm -f "$part"
  echo "bench-spread: run $r of $runs done" >&2
done
echo "ratios over $runs runs of $*: per run, then the median and ± half the range"
awk -F'\t' -v runs="$runs" '
  function median(a, n,   k, j, t) {
    for (k = 2; k <= n; k++) { t = a[k]; for (j = k - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  { key = $2 "\t" $3 "\t" $4; if (!(key in seen)) { seen[key] = 1; order[++keys] = key }
    n[key]++; ratio[key, n[key]] = $6 }
  END {
    for (k = 1; k <= keys; k++) {
      key = order[k]; split(key, f, "\t"); line = ""
      lo = hi = ratio[key, 1]
      for (i = 1; i <= n[key]; i++) {
        v = ratio[key, i]; vals[i] = v; line = line sprintf(" %.3fx", v)
        if (v < lo) lo = v; if (v > hi) hi = v
      }
      m = median(vals, n[key])
      printf "%-8s %-30s %-16s %s   median %.3fx ±%.1f%%\n", f[1], f[2], f[3], line, m, (m > 0) ? 50 * (hi - lo) / m : 0
    }
  }' "$tsv"
