# shellcheck shell=bash
# Sourced by bench-shaders.sh and bench-pipelines.sh: the Khronos validation layer's GPU-assisted
# validation and DebugPrintf, the tools a user would otherwise pick, as extra rows. They are enabled as a
# user would enable them, through the environment: VK_LAYER_ENABLES (works with the layer 1.3.239 installed
# here; SDK 1.4.335 deprecates it for VK_LAYER_GPUAV_ENABLE and the like, but still reads it). The layer's
# core checks stay on, as they do for that user.

vvl_names=("validation: GPU-AV" "validation: DebugPrintf")
vvl_envs=("VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT"
  "VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation VK_LAYER_ENABLES=VK_VALIDATION_FEATURE_ENABLE_DEBUG_PRINTF_EXT")

# vvl_check ENV DIR APP ARGS...: runs APP ARGS once with ENV (one of vvl_envs) and the layer's own log on
# stdout (a settings file in DIR), and prints nothing if the feature really was on, else why it was not: the
# layer may be missing (the GPU machine has none unless its package is carried), or may turn the feature off
# at vkCreateDevice (e.g. without fragmentStoresAndAtomics). The timed runs themselves log nothing extra.
vvl_check() {
  local env_words=$1 dir=$2
  shift 2
  local feature=${env_words##*=} log=$dir/vvl-check.log
  mkdir -p "$dir/vvl-settings"
  printf '%s\n' "khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG" \
    "khronos_validation.report_flags = info,warn,perf,error" > "$dir/vvl-settings/vk_layer_settings.txt"
  local rc=0
  # shellcheck disable=SC2086
  env $env_words VK_LAYER_SETTINGS_PATH="$dir/vvl-settings" "$@" > "$log" 2>&1 || rc=$?
  # The loader skips a layer of VK_INSTANCE_LAYERS it cannot find without failing: the layer's status
  # message at vkCreateInstance is what says it loaded.
  if ! grep -q "khronos-validation-createinstance-status-message" "$log"; then
    echo "VK_LAYER_KHRONOS_validation did not load (not installed?; bb-testapp exit $rc)"
  elif grep -qiE "(Validation|Printf) disabled" "$log"; then
    echo "the layer turned it off: $(grep -ioE "[^.]*(Validation|Printf) disabled" "$log" | head -1)"
  elif ! grep -q "Current Enables: .*$feature" "$log"; then
    echo "the layer's log does not show $feature enabled (bb-testapp exit $rc, log: $(tail -1 "$log"))"
  fi
}
