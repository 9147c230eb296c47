#!/usr/bin/env bash
# Blackbox under load for longer than the tests run it (they do the same for seconds; see
# tests/integration/tests/robustness.rs), with everything on (breadcrumbs at every command, watchdog,
# asserts, printf, NaN checks of operations):
#   1. bb-testapp's `stress` for SECONDS (default 300): 8 threads recording and submitting on every queue,
#      one failing assert per dispatch; the failures Blackbox counts must equal the dispatches.
#   2. FRAMES frames (default 10000) of bb-testapp's frame-bench and of vkcube (under Xvfb), sampling resident
#      memory every second: it must stay flat after warm-up (printed; the lowest sample of the last half of
#      the run may not exceed the first half's by more than 2 MiB, nor its peak by more than 4 MiB, as in
#      robustness.rs: a leak lifts the floor, the driver's transient allocations move the peaks).
#   scripts/soak.sh [SECONDS] [FRAMES]     (builds the release binaries first; uses lavapipe unless
#                                          VK_DRIVER_FILES is set)
# Exits non-zero on the first failed check. Writes files only under $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-300}
frames=${2:-10000}
cargo build --release -q -p blackbox-layer -p blackbox-testapp
export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
tmp=$(mktemp -d)
xvfb=
trap 'rm -rf "$tmp"; [ -n "$xvfb" ] && kill "$xvfb" 2> /dev/null || true' EXIT
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp}
mkdir -p "$tmp/manifests"
sed "s|\"./libVkLayer_blackbox.so\"|\"$PWD/target/release/libVkLayer_blackbox.so\"|" manifest/VkLayer_blackbox.json \
  > "$tmp/manifests/VkLayer_blackbox.json"
export VK_ADD_LAYER_PATH=$tmp/manifests VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_OUTPUT=$tmp/reports \
  VK_BLACKBOX_NAN=ops VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_WATCHDOG_MS=5000

echo "soak: stress, 8 threads, $seconds s"
target/release/bb-testapp --threads 8 --seconds "$seconds" stress > "$tmp/stress.out" 2> "$tmp/stress.err"
dispatches=$(awk '/^stress_dispatches/ {print $2}' "$tmp/stress.out")
counted=$(grep 'assert 7 failed' "$tmp/stress.err" | sed -E 's/.* x([0-9]+) .*/\1/' | awk '{s += $1} END {print s + 0}')
echo "soak: $dispatches dispatches, $counted assert failures counted"
[ "$dispatches" = "$counted" ] || { echo "soak: FAILED: counts differ" >&2; exit 1; }
# Blackbox creates the report folder at start; it must still be empty (no false hang).
[ -z "$(ls -A "$tmp/reports" 2> /dev/null)" ] || { echo "soak: FAILED: a report was written: $(ls "$tmp/reports")" >&2; exit 1; }

# Runs "$@", sampling VmRSS every second; checks the samples are flat after warm-up.
flat() {
  local what=$1
  shift
  "$@" > "$tmp/app.out" 2> "$tmp/app.err" &
  local pid=$! samples=()
  while kill -0 "$pid" 2> /dev/null; do
    samples+=("$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2> /dev/null || true)")
    sleep 1
  done
  wait "$pid" || { echo "soak: FAILED: $what exited with $?" >&2; tail -5 "$tmp/app.err" >&2; exit 1; }
  printf '%s\n' "${samples[@]}" | awk -v what="$what" '
    NF { v[++n] = $1 }
    END {
      from = int(n * 3 / 10) + 1; mid = from + int((n - from + 1) / 2)
      lo_a = lo_b = -1
      for (i = from; i < mid; i++) { if (v[i] > a) a = v[i]; if (lo_a < 0 || v[i] < lo_a) lo_a = v[i] }
      for (i = mid; i <= n; i++) { if (v[i] > b) b = v[i]; if (lo_b < 0 || v[i] < lo_b) lo_b = v[i] }
      printf "soak: %s: %d samples (1 s apart), after warm-up RSS floor %d KiB then %d KiB, peak %d KiB then %d KiB\n", what, n, lo_a, lo_b, a, b
      if (n < 6) { print "soak: too few samples to judge"; exit 0 }
      if (lo_b > lo_a + 2048 || b > a + 4096) { print "soak: FAILED: memory grows"; exit 1 }
    }'
}

flat "bb-testapp frame-bench, $frames frames" target/release/bb-testapp --frames "$frames" --frame-draws 200 \
  --frame-dispatches 200 frame-bench
if command -v vkcube > /dev/null && command -v Xvfb > /dev/null; then
  Xvfb :93 -screen 0 640x480x24 -nolisten tcp > /dev/null 2>&1 &
  xvfb=$!
  sleep 1
  DISPLAY=:93 flat "vkcube, $frames frames" vkcube --c "$frames"
else
  echo "soak: vkcube or Xvfb missing (scripts/setup.sh installs them): skipped"
fi
echo "soak: passed"
