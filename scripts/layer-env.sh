# Sourced by the scripts that run programs through a build of the layer on lavapipe (memcheck.sh, tsan.sh).
#
# use_layer LIB DIR: writes a manifest for the layer library LIB into DIR and enables it (explicitly, on
# lavapipe unless VK_DRIVER_FILES says otherwise) for every program started after it.
use_layer() {
  local lib=$1 dir=$2
  mkdir -p "$dir"
  sed "s|\"library_path\": *\"[^\"]*\"|\"library_path\": \"$lib\"|" manifest/VkLayer_blackbox.json \
    > "$dir/VkLayer_blackbox.json"
  export VK_DRIVER_FILES=${VK_DRIVER_FILES:-/usr/share/vulkan/icd.d/lvp_icd.x86_64.json}
  export VK_ADD_LAYER_PATH=$dir VK_INSTANCE_LAYERS=VK_LAYER_blackbox
}

# run_args NAME ENV... -- CMD...: the arguments of a script's `run`, split into run_name, run_envs (an array
# of VAR=VALUE) and run_cmd (an array).
run_args() {
  run_name=$1
  shift
  run_envs=()
  while [ "$1" != "--" ]; do
    run_envs+=("$1")
    shift
  done
  shift
  run_cmd=("$@")
}

# run_at_both_settings OUT APP SCENARIO...: the script's `run` of APP's scenarios at the two settings both
# scripts check, between them every instrumentation and breadcrumb path: NaN `ops` with `command`
# breadcrumbs, loop reports and integer checks; NaN `outputs` written where they fire with `pass`
# breadcrumbs, loop breaks, checkpoints and shader dumps (into OUT/dump).
run_at_both_settings() {
  local out=$1 app=$2
  shift 2
  run ops VK_BLACKBOX_NAN=ops VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_LOOPS=report VK_BLACKBOX_INT=on \
    -- "$app" "$@"
  run outputs-fired VK_BLACKBOX_NAN=outputs VK_BLACKBOX_NAN_RECORDS=fired VK_BLACKBOX_BREADCRUMBS=pass \
    VK_BLACKBOX_LOOPS=break VK_BLACKBOX_CHECKPOINTS=on VK_BLACKBOX_DUMP_SHADERS="$out/dump" -- "$app" "$@"
}
