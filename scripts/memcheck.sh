#!/usr/bin/env bash
# Runs the test app's scenarios, vulkaninfo and vkcube under Valgrind's memcheck with the debug layer loaded
# (lavapipe), at settings that reach most of the layer and the engine, and counts the memory errors whose
# innermost frame outside the C library is Blackbox's code. Errors of the loader, the driver or the X
# libraries are in the total but not Blackbox's: they are there without Blackbox too.
#
#   scripts/memcheck.sh            # about 4 minutes on 2 CPUs; needs valgrind, and Xvfb for vkcube and frames
#
# Needs the debug build (`cargo build -p blackbox-layer -p blackbox-testapp`). Exit status 1 if any error is
# Blackbox's. Logs and reports go to $OUT (default target/memcheck). Not part of the test command: under
# memcheck lavapipe runs shaders about 50 times slower, so it is minutes; for the same reason the scenarios
# with seconds of GPU work (`hostile-strings`, `flood`, the benchmarks) are left out, as their own waits
# time out.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=${OUT:-$root/target/memcheck}
rm -rf "$out"
mkdir -p "$out"
command -v valgrind > /dev/null || { echo "memcheck.sh: valgrind is not installed (apt install valgrind)" >&2; exit 2; }
lib=$root/target/debug/libVkLayer_blackbox.so
app=$root/target/debug/bb-testapp
for f in "$lib" "$app"; do
  [ -f "$f" ] || { echo "memcheck.sh: $f is missing: cargo build -p blackbox-layer -p blackbox-testapp" >&2; exit 2; }
done
# shellcheck source=scripts/layer-env.sh
. scripts/layer-env.sh
use_layer "$lib" "$out/manifest"

failed=0
# run NAME ENV... -- CMD...: one program under memcheck, then its errors counted.
run() {
  run_args "$@"
  local name=$run_name start=$SECONDS rc=0
  # In a subshell that waits for it (not exec'd: `; exit`) and whose stderr is dropped: bash's own
  # "Aborted" line for assert-abort's SIGABRT goes there.
  (env "${run_envs[@]}" VK_BLACKBOX_OUTPUT="$out/reports-$name" \
    timeout 900 valgrind --tool=memcheck --error-limit=no --num-callers=40 --log-file="$out/$name.log" "${run_cmd[@]}" \
    > "$out/$name.out" 2>&1; exit $?) 2> /dev/null || rc=$?
  python3 - "$out/$name.log" "$name" "$rc" "$((SECONDS - start))" <<'PY' || failed=1
import re, sys
log, name, rc, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
blocks = re.split(r'\n==\d+== \n', open(log, errors='replace').read())
kinds = r'==\d+== (Invalid|Conditional|Use of uninit|Syscall param|Mismatched|Source and dest|Argument|Jump to)'
errors = [b for b in blocks if re.search(kinds, b)]
# The innermost frame outside the C library, the dynamic loader and valgrind's own preload decides whose
# error it is.
system = re.compile(r'libc\.so|ld-linux|vgpreload|\.S:\d+\)|dl-[a-z-]+\.c|\((writev|read|write|syscall|ioctl|sendmsg|recvmsg)\.c')
ours = []
for b in errors:
    for frame in re.findall(r'==\d+== +(?:at|by) 0x[0-9A-F]+: (.*)', b):
        if system.search(frame):
            continue
        if 'blackbox' in frame.lower():
            ours.append(b)
        break
print(f'{name}: exit {rc}, {secs} s, {len(errors)} memcheck errors, {len(ours)} in Blackbox')
for b in ours[:3]:
    print(b[:4000])
sys.exit(1 if ours else 0)
PY
}

scenarios="compute draw-renderpass draw-dynamic secondary threads timeline two-queues instances debug-labels
  nan-fragment nan-compute assert-compute assert-fragment printf loop-one int-div malformed-spirv destroy-early
  spirv-run nan-fp16-fp64 validation-canary fork-child"
# shellcheck disable=SC2086
run_at_both_settings "$out" "$app" $scenarios
run hang-report VK_BLACKBOX_WATCHDOG_MS=1000 VK_BLACKBOX_BREADCRUMBS=command -- "$app" hang --hang-groups 200
run assert-abort VK_BLACKBOX_ASSERT=abort -- "$app" assert-compute
run vulkaninfo VK_BLACKBOX_NAN=ops -- vulkaninfo
display=
if command -v Xvfb > /dev/null; then
  # One X server for both, on a display number it picks itself (its first line; none if it fails to start).
  exec 3< <(Xvfb -displayfd 1 -screen 0 640x480x24 -nolisten tcp 2> /dev/null & echo "pid $!")
  read -r _ xvfb <&3
  trap 'kill "$xvfb" 2> /dev/null || true' EXIT
  read -r display <&3 || display=
fi
if [ -n "$display" ]; then
  export DISPLAY=:$display
  run vkcube VK_BLACKBOX_NAN=ops VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_FRAMES=4 VK_BLACKBOX_FLASH=on -- \
    vkcube --c 20
  run frames VK_BLACKBOX_NAN=outputs VK_BLACKBOX_NAN_RECORDS=fired VK_BLACKBOX_FRAMES=4 -- "$app" frames
else
  echo "memcheck.sh: no X server (Xvfb missing or it did not start): vkcube and frames not run"
fi
exit $failed
