#!/usr/bin/env bash
# Times `blackbox triage` over COUNT report folders (default 100000): the real lavapipe reports of
# report/tests/reports/ copied COUNT times with their time, pid and signature varied (50 signatures),
# written once into DIR (default target/bench-triage/reports-COUNT) and kept for later runs. Prints the
# wall time of each of RUNS runs (default 3; the first one may read from disk, the others from the page
# cache) and their median. Uses the release build (cargo build --release -p blackbox-cli).
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-100000}
runs=${2:-3}
dir=${3:-target/bench-triage/reports-$count}
bin=target/release/blackbox
[ -x "$bin" ] || cargo build --release -p blackbox-cli
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  python3 - "$dir" "$count" <<'PY'
import glob, json, os, sys
out, count = sys.argv[1], int(sys.argv[2])
seeds = [json.load(open(f)) for f in sorted(glob.glob("report/tests/reports/*.json"))]
texts = []
for i in range(count):
    r = seeds[i % len(seeds)]
    r["unix_ms"] = 1_796_015_553_123 + i * 1000
    r["app"]["pid"] = 10000 + i
    r["signature"] = "%016x" % (0x9e3779b97f4a7c15 * (i % 50) % (1 << 64))
    folder = os.path.join(out, "bb-testapp-%d-1" % (10000 + i))
    os.mkdir(folder)
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump(r, f, indent=2)
    with open(os.path.join(folder, "report.txt"), "w") as f:
        f.write("Blackbox report\n")
open(os.path.join(out, ".complete"), "w").close()
PY
fi
echo "# blackbox triage over $count report folders ($(du -sh "$dir" | cut -f1)), $(nproc) CPUs, $runs runs"
times=()
for i in $(seq "$runs"); do
  start=$(date +%s.%N)
  "$bin" triage "$dir" > /tmp/bench-triage.out
  end=$(date +%s.%N)
  t=$(echo "$end - $start" | bc)
  times+=("$t")
  echo "run $i: $t s ($(tail -1 /tmp/bench-triage.out))"
done
printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print "median: " a[int((NR+1)/2)] " s"}'
