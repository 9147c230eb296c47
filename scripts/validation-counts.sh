#!/usr/bin/env bash
# Counts the Khronos validation layer's errors and warnings by message id, for real programs on lavapipe,
# without Blackbox and through it at VK_BLACKBOX_BREADCRUMBS=submit, pass and command, with the settings
# the end-to-end tests use (synchronization validation and best practices on, every message; taken from
# tests/integration/src/validation.rs). Prints one table per program.
#   scripts/validation-counts.sh [PROGRAM...]   programs: vkcube wgpu ncnn testapp (default: all four)
# Needs the workspace built (cargo build --workspace; BLACKBOX_PROFILE=release for a release build) and
# scripts/setup.sh's .venv-apps for wgpu and ncnn. vkcube runs 100 frames under Xvfb.
# On another machine (the GPU one), these say where things are:
#   BLACKBOX_LAYER=PATH (the layer library), BB_TESTAPP=PATH, APPS_PYTHON=PATH (a python with wgpu and ncnn),
#   DRIVER_FILES=ICD.json (default lavapipe's), NCNN_DRIVERS_SELECT=GLOB (default '*lvp*'), NCNN_ADD_DRIVER_FILES=
#   ICD.json (for ncnn, which must not see VK_DRIVER_FILES, a driver outside the loader's search path),
#   VALIDATION_LAYER_PATH=DIR (a folder holding the validation layer's manifest, when it is not installed).
# VALIDATION_ENABLES=sync or bp keeps only synchronization validation or only best practices (default both).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
profile=${BLACKBOX_PROFILE:-debug}
layer=${BLACKBOX_LAYER:-$root/target/$profile/libVkLayer_blackbox.so}
testapp=${BB_TESTAPP:-$root/target/$profile/bb-testapp}
python=${APPS_PYTHON:-$root/.venv-apps/bin/python}
driver_files=${DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
ncnn_select=${NCNN_DRIVERS_SELECT:-*lvp*}
ncnn_add=${NCNN_ADD_DRIVER_FILES:-}
validation_path=${VALIDATION_LAYER_PATH:-}
[ -f "$layer" ] || { echo "validation-counts: $layer is not built (cargo build --workspace)" >&2; exit 1; }
programs=("$@")
[ ${#programs[@]} -gt 0 ] || programs=(vkcube wgpu ncnn testapp)

tmp=$(mktemp -d)
xvfb_pid=
cleanup() {
  [ -n "$xvfb_pid" ] && kill "$xvfb_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# The tests' settings file, verbatim.
sed -n '/^pub const SETTINGS: &str = "\\$/,/^";$/p' tests/integration/src/validation.rs | sed '1d;$d' \
  > "$tmp/vk_layer_settings.txt"
grep -q SYNCHRONIZATION "$tmp/vk_layer_settings.txt" || { echo "validation-counts: no settings found" >&2; exit 1; }
case ${VALIDATION_ENABLES:-both} in
  both) ;;
  sync) sed -i 's/,VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT//' "$tmp/vk_layer_settings.txt" ;;
  bp) sed -i 's/VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,//' "$tmp/vk_layer_settings.txt" ;;
  *) echo "validation-counts: VALIDATION_ENABLES=${VALIDATION_ENABLES}: accepted: both, sync, bp" >&2; exit 2 ;;
esac
echo "validation-counts: $(grep enables "$tmp/vk_layer_settings.txt")" >&2
mkdir -p "$tmp/manifest" "$tmp/runtime"
python3 - "$root/manifest/VkLayer_blackbox.json" "$layer" "$tmp/manifest/VkLayer_blackbox.json" <<'PY'
import json, sys
manifest = json.load(open(sys.argv[1]))
manifest["layer"]["library_path"] = sys.argv[2]
json.dump(manifest, open(sys.argv[3], "w"), indent=2)
PY

display=
start_xvfb() {
  [ -n "$display" ] && return
  exec 3< <(Xvfb -displayfd 1 -screen 0 640x480x24 -nolisten tcp 2>/dev/null & echo "pid $!")
  read -r _ xvfb_pid <&3
  read -r number <&3
  display=":$number"
}

# run_program PROGRAM OUT: runs PROGRAM with the environment already exported; stdout to OUT.
run_program() {
  local program=$1 out=$2
  case $program in
    vkcube) start_xvfb; DISPLAY=$display vkcube --c 100 >"$out" 2>"$out.err" ;;
    wgpu) "$python" tests/integration/apps/wgpu_app.py --nan >"$out" 2>"$out.err" ;;
    ncnn)
      env -u VK_DRIVER_FILES ${ncnn_add:+VK_ADD_DRIVER_FILES="$ncnn_add"} VK_LOADER_DRIVERS_SELECT="$ncnn_select" \
        "$python" tests/integration/apps/ncnn_app.py >"$out" 2>"$out.err" ;;
    testapp) "$testapp" all >"$out" 2>"$out.err" ;;
    *) echo "validation-counts: unknown program $program" >&2; exit 2 ;;
  esac || true
}

for program in "${programs[@]}"; do
  columns=()
  for config in without submit pass command; do
    out="$tmp/$program-$config.txt"
    (
      for v in $(env | grep -oE '^(VK_[A-Z_]+|XDG_[A-Z_]+|DISPLAY)=' | tr -d =); do unset "$v"; done
      export VK_DRIVER_FILES=$driver_files
      export VK_LAYER_SETTINGS_PATH="$tmp/vk_layer_settings.txt" XDG_RUNTIME_DIR="$tmp/runtime"
      export VK_BLACKBOX_OUTPUT="$tmp/reports" PYTHONDONTWRITEBYTECODE=1
      if [ "$config" = without ]; then
        [ -z "$validation_path" ] || export VK_ADD_LAYER_PATH="$validation_path"
        export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
      else
        export VK_ADD_LAYER_PATH="$tmp/manifest${validation_path:+:$validation_path}"
        export VK_INSTANCE_LAYERS=VK_LAYER_blackbox:VK_LAYER_KHRONOS_validation
        export VK_BLACKBOX_BREADCRUMBS=$config
      fi
      run_program "$program" "$out"
    )
    columns+=("$config=$out")
  done
  python3 - "$program" "${columns[@]}" <<'PY'
import re, sys
program, columns = sys.argv[1], [c.split("=", 1) for c in sys.argv[2:]]
header = re.compile(r"^(\S+)\((ERROR|WARN) / \w+\): msgNum: ")
counts, active = {}, {}
for name, path in columns:
    for line in open(path, errors="replace"):
        m = header.match(line)
        if m:
            counts.setdefault(m.group(1), {}).setdefault(name, 0)
            counts[m.group(1)][name] += 1
    err = open(path + ".err", errors="replace").read()
    active[name] = err.count("[blackbox] info: Blackbox ")
names = [n for n, _ in columns]
width = max([len("message id")] + [len(i) for i in counts])
print(f"\n{program} (errors and warnings by id; Blackbox start-up lines: "
      + ", ".join(f"{n} {active[n]}" for n in names) + ")")
print(f"| {'message id':<{width}} | " + " | ".join(f"{n:>7}" for n in names) + " |")
print(f"|{'-' * (width + 2)}|" + "|".join("-" * 9 for _ in names) + "|")
for i in sorted(counts):
    print(f"| {i:<{width}} | " + " | ".join(f"{counts[i].get(n, 0):>7}" for n in names) + " |")
if not counts:
    print("| (none) |")
PY
done
