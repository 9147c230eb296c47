# shellcheck shell=bash
# Sourced by the bench-*.sh scripts that also run on a GPU machine: the binaries, the layer's manifest, the
# rows (settings) each benchmark runs, and how its processes are pinned.
#   bench_setup NAME    With BIN set: the prepacked binaries there (scripts/gpu-pack.sh), and the loader's
#                       own choice of driver unless VK_DRIVER_FILES says otherwise. Without: a release build
#                       here, on lavapipe unless VK_DRIVER_FILES is set.
# Sets `bin` (the folder of bb-testapp and the layer) and `tmp` (a scratch folder, removed at exit), writes
# the layer's explicit manifest into $tmp/manifests (for VK_ADD_LAYER_PATH), finds LunarG's Crash
# Diagnostic Layer (`cdl`: BLACKBOX_PEER_CDL, else $BIN/cdl, else ../shared/peers/cdl; empty when there is
# none) and sets `pin`, the command prefix that pins each benchmark process to BENCH_CPUS (a taskset CPU
# list; default: the last two CPUs on a machine of 4 or more, nothing on a smaller one, where two CPUs are
# all there is; `none`: no pinning), so that a process is never moved between CPUs while it measures.
#   bench_rows KIND     Sets `row_names` and `row_envs` (the variables of each row, for env) for KIND:
#                       `record` (CPU of recording: no layer, Blackbox all off, each breadcrumbs level,
#                       everything on) or `gpu` (GPU time: no layer, Blackbox with breadcrumbs off and at
#                       each level, the rest off); both end with CDL's defaults and its
#                       instrument_all_commands when CDL is there. `cdl_note` says why its rows are missing.
#                       `row_ok STATUS INDEX` says whether bb-testapp's exit status is a success for the row:
#                       0, or for a peer's row also 3 (debug-utils messages: CDL warns through them about
#                       the extensions lavapipe lacks).
bench_setup() {
  local name=$1 manifest f
  if [ -n "${BIN:-}" ]; then
    bin=$(cd "$BIN" && pwd)
    for f in bb-testapp libVkLayer_blackbox.so VkLayer_blackbox.json; do
      [ -e "$bin/$f" ] || { echo "$name: $bin/$f is missing (see scripts/gpu-pack.sh)" >&2; exit 1; }
    done
    manifest=$bin/VkLayer_blackbox.json
  else
    cargo build --release -q -p blackbox-layer -p blackbox-testapp 2> /dev/null
    bin=$PWD/target/release
    manifest=manifest/VkLayer_blackbox.json
    export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
  fi
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" EXIT
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp}
  mkdir -p "$tmp/manifests"
  sed "s|\"./libVkLayer_blackbox.so\"|\"$bin/libVkLayer_blackbox.so\"|" "$manifest" > "$tmp/manifests/VkLayer_blackbox.json"

  cdl="" cdl_note=""
  for f in "${BLACKBOX_PEER_CDL:-}" "${BIN:+$bin/cdl}" ../shared/peers/cdl; do
    if [ -n "$f" ] && [ -e "$f/VkLayer_crash_diagnostic.json" ]; then
      cdl=$(cd "$f" && pwd)
      break
    fi
  done
  [ -n "$cdl" ] || cdl_note="note: no CDL rows (LunarG's Crash Diagnostic Layer not found: BLACKBOX_PEER_CDL, \$BIN/cdl or ../shared/peers/cdl)"

  local cpus=${BENCH_CPUS:-}
  if [ -z "$cpus" ] && [ "$(nproc)" -ge 4 ]; then
    cpus="$(($(nproc) - 2)),$(($(nproc) - 1))"
  fi
  pin=()
  if [ -n "$cpus" ] && [ "$cpus" != none ] && command -v taskset > /dev/null; then
    pin=(taskset -c "$cpus")
  fi
  pin_note="${pin[*]:-not pinned}"
}

bench_rows() {
  local blackbox="VK_ADD_LAYER_PATH=$tmp/manifests VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_OUTPUT=$tmp/reports"
  local peer="VK_ADD_LAYER_PATH=$cdl VK_INSTANCE_LAYERS=VK_LAYER_LUNARG_crash_diagnostic"
  peer="$peer VK_LUNARG_CRASH_DIAGNOSTIC_OUTPUT_PATH=$tmp/cdl"
  case $1 in
    record)
      local off="VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off"
      row_names=("no layer" "layer, all off" "breadcrumbs submit" "breadcrumbs pass" "breadcrumbs command"
        "everything on")
      row_envs=("" "$blackbox $off VK_BLACKBOX_BREADCRUMBS=off" "$blackbox VK_BLACKBOX_BREADCRUMBS=submit"
        "$blackbox VK_BLACKBOX_BREADCRUMBS=pass" "$blackbox VK_BLACKBOX_BREADCRUMBS=command"
        "$blackbox VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_NAN=ops")
      ;;
    gpu)
      local common="VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_ASSERT=off VK_BLACKBOX_PRINTF=off VK_BLACKBOX_NAN=off"
      row_names=("no layer" "layer, breadcrumbs off" "breadcrumbs submit" "breadcrumbs pass" "breadcrumbs command")
      row_envs=("" "$blackbox $common VK_BLACKBOX_BREADCRUMBS=off" "$blackbox $common VK_BLACKBOX_BREADCRUMBS=submit"
        "$blackbox $common VK_BLACKBOX_BREADCRUMBS=pass" "$blackbox $common VK_BLACKBOX_BREADCRUMBS=command")
      ;;
    *) echo "bench_rows: no rows of kind $1" >&2; exit 1 ;;
  esac
  own_rows=${#row_names[@]}
  if [ -n "$cdl" ]; then
    row_names+=("CDL defaults" "CDL instrument_all_commands")
    row_envs+=("$peer" "$peer VK_LUNARG_CRASH_DIAGNOSTIC_INSTRUMENT_ALL_COMMANDS=true")
  fi
}

row_ok() {
  [ "$1" -eq 0 ] || { [ "$1" -eq 3 ] && [ "$2" -ge "$own_rows" ]; }
}
