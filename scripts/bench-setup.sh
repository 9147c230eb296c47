# shellcheck shell=bash
# Sourced by the bench-*.sh scripts that also run on a GPU machine: the binaries and the layer's manifest.
#   bench_setup NAME    With BIN set: the prepacked binaries there (scripts/gpu-pack.sh), and the loader's
#                       own choice of driver unless VK_DRIVER_FILES says otherwise. Without: a release build
#                       here, on lavapipe unless VK_DRIVER_FILES is set.
# Sets `bin` (the folder of bb-testapp and the layer) and `tmp` (a scratch folder, removed at exit) and
# writes the layer's explicit manifest into $tmp/manifests (for VK_ADD_LAYER_PATH).
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
}
