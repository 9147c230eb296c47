#!/usr/bin/env bash
# Runs the test app's scenarios through the layer on lavapipe with both built under ThreadSanitizer, at
# settings that reach most of the layer and the engine, and counts the data races with an access in
# Blackbox's code. Races inside lavapipe are in the total but not Blackbox's: lavapipe is not instrumented,
# its futex-based locks are invisible to TSan, and the same reports come without Blackbox.
#
#   scripts/tsan.sh            # about 3 minutes on 2 CPUs after a 2-minute build
#
# Needs the nightly toolchain with its rust-src component (`rustup component add rust-src --toolchain
# nightly`): TSan needs the standard library rebuilt with it (-Zbuild-std). Builds into target/tsan. Exit
# status 1 if any race is Blackbox's. Logs and reports go to $OUT (default target/tsan-runs). Not part of
# the test command (nightly only); the test command does run the test app under gcc's TSan runtime
# (robustness.rs), which checks that Blackbox keeps to the address space TSan leaves to the program.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-$root/target/tsan-runs}
rm -rf "$out"
mkdir -p "$out"
target=x86_64-unknown-linux-gnu
if ! rustup run nightly rustc --print sysroot > /dev/null 2>&1 \
  || [ ! -f "$(rustup run nightly rustc --print sysroot)/lib/rustlib/src/rust/library/Cargo.lock" ]; then
  echo "tsan.sh: needs the nightly toolchain and its rust-src (rustup component add rust-src --toolchain nightly)" >&2
  exit 2
fi
echo "tsan.sh: building the layer and the test app with -Zsanitizer=thread (target/tsan)"
# -rdynamic: the test app exports TSan's runtime, which the layer's instrumented code calls.
RUSTFLAGS="-Zsanitizer=thread -Clink-arg=-rdynamic" cargo +nightly build -q -Zbuild-std --target $target \
  --target-dir "$root/target/tsan" -p blackbox-layer -p blackbox-testapp
lib=$root/target/tsan/$target/debug/libVkLayer_blackbox.so
app=$root/target/tsan/$target/debug/bb-testapp
# shellcheck source=scripts/layer-env.sh
. scripts/layer-env.sh
use_layer "$lib" "$out/manifest"

failed=0
# run NAME ENV... -- CMD...: one program under TSan, then its races counted.
run() {
  run_args "$@"
  local name=$run_name start=$SECONDS rc=0
  # In a subshell whose stderr is dropped: bash's own "Aborted" line for assert-abort's SIGABRT goes there.
  (env "${run_envs[@]}" VK_BLACKBOX_OUTPUT="$out/reports-$name" TSAN_OPTIONS="halt_on_error=0 exitcode=0" \
    timeout 900 "${run_cmd[@]}" > "$out/$name.out" 2> "$out/$name.log"; exit $?) 2> /dev/null || rc=$?
  python3 - "$out/$name.log" "$name" "$rc" "$((SECONDS - start))" <<'PY' || failed=1
import re, sys
log, name, rc, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
text = open(log, errors='replace').read()
reports = re.findall(r'WARNING: ThreadSanitizer: (.*?)\n==================', text, re.S)
# Each access's stack starts at a line "  Write of size ..." / "  Previous read of size ..."; its innermost
# frame outside TSan's own interceptors decides whose access it is.
access = re.compile(r'^  (?:Previous )?(?:atomic )?(?:[Ww]rite|[Rr]ead) of size .*?(?=\n\n)', re.M | re.S)
runtime = re.compile(r'tsan_interceptors|sanitizer_common|tsan_rtl|compiler-rt')
ours = []
for r in reports:
    for a in access.findall(r):
        frames = [f for f in re.findall(r'#\d+ (.*)', a) if not runtime.search(f)]
        if frames and re.search(r'blackbox|/layer/src/|/engine/src/', frames[0], re.I):
            ours.append(r)
            break
print(f'{name}: exit {rc}, {secs} s, {len(reports)} TSan reports, {len(ours)} with an access in Blackbox')
for r in ours[:3]:
    print(r[:4000])
sys.exit(1 if ours else 0)
PY
}

scenarios="compute draw-renderpass draw-dynamic secondary threads timeline two-queues instances debug-labels
  nan-fragment nan-compute nan-poll nan-sleep nan-signal-array assert-compute assert-fragment printf loop-one
  int-div malformed-spirv destroy-early spirv-run nan-fp16-fp64 validation-canary passes stress fork-child"
# shellcheck disable=SC2086
run_at_both_settings "$out" "$app" $scenarios
run hang-report VK_BLACKBOX_WATCHDOG_MS=1000 VK_BLACKBOX_BREADCRUMBS=command -- "$app" hang
run assert-abort VK_BLACKBOX_ASSERT=abort -- "$app" assert-compute
[ "$failed" = 0 ] && echo "tsan.sh: no race with an access in Blackbox's code" \
  || echo "tsan.sh: races with an access in Blackbox's code (above); logs in $out"
exit "$failed"
