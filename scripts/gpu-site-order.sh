#!/usr/bin/env bash
# Whether the driver's shader cache finds Blackbox's instrumented modules when an app creates them in
# another order than in an earlier run (the kept site ranges, README "Driver shader caches").
#   scripts/gpu-site-order.sh [MODULES]   (default 40; binaries and modules from scripts/gpu-pack.sh in
#                                          $BIN, default .gpu; the driver the loader finds)
# `bb-testapp spirv-run` runs the first MODULES compute and fragment modules of $BIN/corpus at NaN `ops`,
# each run in an order of its own, with an empty driver cache at first (NVIDIA's:
# __GL_SHADER_DISK_CACHE_PATH; Mesa's: MESA_SHADER_CACHE_DIR) and Blackbox's site ranges kept in one folder
# ("kept") or a fresh one ("fresh"). Prints each run's wall time and how many of its instrumented modules
# are the same bytes as in the first run; runs without Blackbox, cold and warm, for comparison. Each run is
# killed after RUN_LIMIT s (default 120). On the H200 (2026-12-04) the run without Blackbox stopped at the
# 42nd module of the list (it ran on past 30 s): keep MODULES at 41 or less there.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=$(cd "${BIN:-.gpu}" && pwd)
count=${1:-40}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mapfile -t modules < <(ls "$BIN/corpus" | grep -E '\.(comp|frag)\.' | head -n "$count")
[ "${#modules[@]}" -gt 0 ] || { echo "gpu-site-order: no modules in $BIN/corpus" >&2; exit 2; }
# The orders: as listed, reversed, and two fixed shuffles.
order() {
  case $1 in
    forward) printf '%s\n' "${modules[@]}" ;;
    reverse) printf '%s\n' "${modules[@]}" | tac ;;
    *) printf '%s\n' "${modules[@]}" | shuf --random-source=<(yes "$1") ;;
  esac
}
# run NAME ORDER BLACKBOX_CACHE|- DRIVER_CACHE: one process, timed.
run() {
  local name=$1 order=$2 cache=$3 driver=$4 args=()
  while read -r m; do args+=(--spirv "$BIN/corpus/$m"); done < <(order "$order")
  local env=(__GL_SHADER_DISK_CACHE_PATH="$work/$driver" __GL_SHADER_DISK_CACHE=1
    __GL_SHADER_DISK_CACHE_SKIP_CLEANUP=1 MESA_SHADER_CACHE_DIR="$work/$driver")
  if [ "$cache" != - ]; then
    env+=(VK_ADD_LAYER_PATH="$BIN" VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_NAN=ops
      XDG_CACHE_HOME="$work/$cache" VK_BLACKBOX_DUMP_SHADERS="$work/dump-$name")
  fi
  mkdir -p "$work/$driver"
  local start end status
  start=$(date +%s.%N)
  timeout "${RUN_LIMIT:-120}" env "${env[@]}" "$BIN/bb-testapp" spirv-run "${args[@]}" > "$work/$name.out" 2>&1
  status=$?
  end=$(date +%s.%N)
  local same=-
  if [ "$cache" != - ] && [ -d "$work/dump-first" ]; then
    same=$(cd "$work/dump-$name" && for f in *.instrumented.spv; do
      cmp -s "$f" "$work/dump-first/$f" && echo same; done | wc -l)
    same="$same of $(ls "$work/dump-$name" | grep -c '\.instrumented\.spv$')"
  fi
  printf '%-28s %-9s exit %s  %6.2f s  ran %s, skipped %s  instrumented as in the first run: %s\n' \
    "$name" "$order" "$status" "$(awk "BEGIN { print $end - $start }")" \
    "$(grep -c '^spirv .* checksum' "$work/$name.out")" "$(grep -c ' skipped: ' "$work/$name.out")" "$same"
  [ "$status" = 0 ] || tail -5 "$work/$name.out"
}
echo "gpu-site-order: ${#modules[@]} modules, NaN ops; $(ls "$BIN"/libVkLayer_blackbox.so)"
run no-blackbox-cold forward - plain
run no-blackbox-warm reverse - plain
run first forward kept driver
run kept-reverse reverse kept driver
run fresh-shuffle-1 1 fresh1 driver
run kept-shuffle-2 2 kept driver
run fresh-shuffle-2 2 fresh2 driver
run kept-reverse-again reverse kept driver
