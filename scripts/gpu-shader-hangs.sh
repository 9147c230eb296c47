#!/usr/bin/env bash
# Issues 16 and 12 on a GPU: a genuinely infinite loop in one invocation (bb-testapp loop-forever: invocation
# 1234 loops until the host writes 0 into its word, after --loop-wait-ms) at VK_BLACKBOX_LOOPS=break (by the
# iteration limit, and by a 300 ms time budget: the dispatch's wall time says whether the shader clock counts
# nanoseconds) and at report (the watchdog's hang report names the loop); and blackbox bisect of a hanging
# pass. Release binaries from BIN (default .gpu/, scripts/gpu-pack.sh); logs and reports under OUT.
set -u
BIN=$(cd "${BIN:-.gpu}" && pwd)
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
layer=(env VK_ADD_LAYER_PATH="$BIN" VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_LOG=info)
run_app() { # NAME TIMEOUT ENV... -- ARGS...
  local name=$1 limit=$2; shift 2
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  echo "== $name: $* (${envs[*]})"
  local start=$(date +%s.%N)
  timeout -s KILL "$limit" "${layer[@]}" VK_BLACKBOX_OUTPUT="$OUT/reports/$name" "${envs[@]}" "$BIN/bb-testapp" "$@" \
    > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  grep -E "\[blackbox\] (warn|error)|bb-testapp: loop|scenario" "$OUT/$name.log" | cut -c1-400
}
run_app loop-break-limit 40 VK_BLACKBOX_LOOPS=break VK_BLACKBOX_LOOP_LIMIT=1000000 -- loop-forever --loop-wait-ms 8000
run_app loop-break-time 40 VK_BLACKBOX_LOOPS=break VK_BLACKBOX_LOOP_LIMIT=0 VK_BLACKBOX_LOOP_MS=300 -- \
  loop-forever --loop-wait-ms 8000
run_app loop-report 40 VK_BLACKBOX_LOOPS=report VK_BLACKBOX_LOOP_LIMIT=1000000 VK_BLACKBOX_WATCHDOG_MS=2000 -- \
  loop-forever --loop-wait-ms 5000
for r in "$OUT"/reports/loop-report/*/report.txt; do [ -f "$r" ] && sed -n '1,20p' "$r"; done
echo "== bisect of a hanging pass"
start=$(date +%s.%N)
VK_BLACKBOX_WATCHDOG_MS=1000 timeout -s KILL 200 "$BIN/blackbox" bisect --layer "$BIN/libVkLayer_blackbox.so" \
  --until hang --confirm 2 --logs "$OUT/bisect" -- "$BIN/bb-testapp" passes --passes 16 --bad-pass 11 \
  --pass-fault hang --hang-groups 264 --hang-iterations "${PASS_ITERATIONS:-1500000000}" 2>&1 | cut -c1-300
echo "bisect: exit ${PIPESTATUS[0]} after $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
rm -rf "$OUT/bisect"/run-*/reports
