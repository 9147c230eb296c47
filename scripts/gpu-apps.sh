#!/usr/bin/env bash
# The third-party programs of tests/integration/apps/ (wgpu, ncnn, Taichi, pygfx, IREE, VkFFT) on a GPU machine: each without
# any layer but the validation layer (the reference), then through Blackbox at the defaults, NaN `outputs`,
# NaN `ops`, loop and integer checks, `command` breadcrumbs and everything at once, the validation layer
# below (synchronization validation and best practices on). Prints, per run, whether the results are the
# program's own, Blackbox's lines, and every validation message id the run has more or less often than
# the reference. The device tool carries 64 MiB a call and Taichi's wheel is 55 MB, so it packs two folders:
#
#   scripts/gpu-apps.sh pack              # .gpu-apps/wgpu-ncnn, .gpu-apps/taichi, .gpu-apps/iree (needs .gl)
#   scripts/gpu-apps.sh run .gpu-apps/wgpu-ncnn wgpu ncnn pygfx   # there, carrying .gpu-apps/wgpu-ncnn
#   scripts/gpu-apps.sh run .gpu-apps/taichi taichi           # there, carrying .gpu-apps/taichi
#   scripts/gpu-apps.sh run .gpu-apps/iree iree               # there, carrying .gpu-apps/iree
#   scripts/gpu-apps.sh pack-vkfft        # .gpu-apps/vkfft alone (no download): apps/vkfft_app.c built here
#   scripts/gpu-apps.sh run .gpu-apps/vkfft vkfft             # there, carrying .gpu-apps/vkfft
#   scripts/gpu-apps.sh compile-vkfft .gpu-apps/vkfft         # there: its kernels' pipeline creation
#
# IREE's runtime (apps/iree_app.py) runs apps/iree_kernels.mlir, which `pack` compiles here with the pinned
# IREE compiler of .venv-apps for NVIDIA's GPUs (`--iree-vulkan-target=ampere`: IREE 3.1 knows no later
# one) into .gpu-apps/iree/kernels.vmfb; the machine gets IREE's runtime wheel alone.
#
# `pack` builds the release layer and downloads the pinned wheels for the GPU machine's Python (3.12), and
# copies the Vulkan loader and validation layer debs from .gl/ (the device tool's notes say how to fetch
# them). `run` unpacks them, installs the wheels into /tmp/site, and writes every run's output and reports
# into $OUT/logs.tgz (or /tmp). With LOCAL=1 it unpacks nothing (PY=.venv-apps/bin/python to try it here).
set -uo pipefail
cd "$(dirname "$0")/.."

pack() {
  cargo build --release -q -p blackbox-layer || exit 1
  ls .gl/libvulkan1_*.deb .gl/vulkan-validationlayers_*.deb > /dev/null 2>&1 || {
    echo "gpu-apps: no .gl/*.deb (the Vulkan loader, libglvnd and vulkan-validationlayers)" >&2
    exit 1
  }
  local pins wheels
  pins=$(grep -E '^[A-Za-z].*==' tests/integration/apps/requirements.txt)
  wheels=$(mktemp -d)
  for pin in wgpu ncnn taichi cffi pycparser rendercanvas dill pygfx pylinalg freetype-py uharfbuzz hsluv \
    Jinja2 MarkupSafe iree-base-runtime; do
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 -d "$wheels" "$(grep -i "^$pin==" <<< "$pins")" || exit 1
  done
  rm -rf .gpu-apps
  for dir in wgpu-ncnn taichi iree; do
    local d=.gpu-apps/$dir
    mkdir -p "$d/gl" "$d/whl"
    cp target/release/libVkLayer_blackbox.so "$d/" && strip "$d/libVkLayer_blackbox.so"
    sed 's#"library_path": *"[^"]*"#"library_path": "./libVkLayer_blackbox.so"#' \
      manifest/VkLayer_blackbox.json > "$d/VkLayer_blackbox.json"
    cp .gl/*.deb "$d/gl/"
  done
  cp "$wheels"/wgpu-* "$wheels"/ncnn-* "$wheels"/cffi-* "$wheels"/pycparser-* "$wheels"/rendercanvas-* \
    "$wheels"/pygfx-* "$wheels"/pylinalg-* "$wheels"/freetype_py-* "$wheels"/uharfbuzz-* "$wheels"/hsluv-* \
    "$wheels"/jinja2-* "$wheels"/markupsafe-* .gpu-apps/wgpu-ncnn/whl/
  cp "$wheels"/taichi-* "$wheels"/dill-* .gpu-apps/taichi/whl/
  cp "$wheels"/iree_base_runtime-* .gpu-apps/iree/whl/
  rm -rf "$wheels"
  .venv-apps/bin/iree-compile --iree-hal-target-device=vulkan --iree-vulkan-target=ampere \
    tests/integration/apps/iree_kernels.mlir -o .gpu-apps/iree/kernels.vmfb || exit 1
  git rev-parse --short HEAD > .gpu-apps/wgpu-ncnn/COMMIT
  cp .gpu-apps/wgpu-ncnn/COMMIT .gpu-apps/taichi/COMMIT
  cp .gpu-apps/wgpu-ncnn/COMMIT .gpu-apps/iree/COMMIT
  pack_vkfft
  du -sh .gpu-apps/*
}

# .gpu-apps/vkfft: the layer, the debs and apps/vkfft_app.c built here as tests/integration/tests/vkfft.rs
# builds it (glslang and SPIRV-Tools linked statically, so the machine needs only the loader).
pack_vkfft() {
  cargo build --release -q -p blackbox-layer || exit 1
  local d=.gpu-apps/vkfft
  rm -rf "$d"
  mkdir -p "$d/gl" "$d/include"
  cp target/release/libVkLayer_blackbox.so "$d/" && strip "$d/libVkLayer_blackbox.so"
  sed 's#"library_path": *"[^"]*"#"library_path": "./libVkLayer_blackbox.so"#' \
    manifest/VkLayer_blackbox.json > "$d/VkLayer_blackbox.json"
  cp .gl/*.deb "$d/gl/" || exit 1
  sed 's/VkCommandBuffer commandBuffer = {};/VkCommandBuffer commandBuffer = VK_NULL_HANDLE;/' \
    /usr/include/vkFFT.h > "$d/include/vkFFT.h"
  gcc -O1 -w -I "$d/include" tests/integration/apps/vkfft_app.c -o "$d/vkfft_app" -lvulkan -lglslang \
    -lMachineIndependent -lOSDependent -lGenericCodeGen -lOGLCompiler -lSPIRV -lglslang-default-resource-limits \
    -lSPIRV-Tools-opt -lSPIRV-Tools -lstdc++ -lm -lpthread || exit 1
  rm -r "$d/include"
  cargo build --release -q -p blackbox-testapp || exit 1
  cp target/release/bb-testapp "$d/" && strip "$d/bb-testapp"
  git rev-parse --short HEAD > "$d/COMMIT"
}

# The pipeline creation of VkFFT's kernels on the machine (after `run`, which installs the loader): for
# each setting, the app runs once through Blackbox with VK_BLACKBOX_DUMP_SHADERS, then bb-testapp's
# pipeline-compile (3 iterations, medians, NVIDIA's disk cache off) creates and first uses each kernel as
# VkFFT made it and as the layer instrumented it; prints both times per kernel and the geometric mean of
# the ratios.
compile_vkfft() {
  local D W s f b id o i
  D=$(cd "$1" && pwd) || exit 1
  W=/tmp/vkfft-compile
  rm -rf $W
  mkdir -p $W/dump $W/home
  export __GL_SHADER_DISK_CACHE=0
  for s in "VK_BLACKBOX_NAN=ops" "VK_BLACKBOX_INT=on" "VK_BLACKBOX_INT=on VK_BLACKBOX_NAN_RECORDS=end"; do
    rm -rf $W/dump/*
    env HOME=$W/home VK_ADD_LAYER_PATH="$D" VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_DUMP_SHADERS=$W/dump $s \
      timeout 300 "$D/vkfft_app" > $W/app.out 2>&1
    echo "== $s: rc $?, $(grep -c '^result' $W/app.out) results"
    local args=()
    for f in $W/dump/*.instrumented.spv; do
      b=${f%.instrumented.spv}
      args+=(--spirv "$b.spv" --spirv "$f")
    done
    timeout 300 "$D/bb-testapp" pipeline-compile --iters 3 "${args[@]}" > $W/compile.out 2>&1
    for b in $W/dump/*.sites.txt; do
      id=$(basename "$b" .sites.txt)
      # Creation and first use: llvmpipe compiles a compute shader at its first dispatch.
      o=$(awk -v m="$id.spv" '$2 == m {printf "%.0f", $5 + $7}' $W/compile.out)
      i=$(awk -v m="$id.instrumented.spv" '$2 == m {printf "%.0f", $5 + $7}' $W/compile.out)
      echo "$id $(grep -c '^site' "$b") sites: $o -> $i us"
    done | awk '{print; if ($4 > 0) {s += log($6 / $4); n++}} END {if (n) printf "geometric mean %.2fx over %d kernels\n", exp(s / n), n}'
  done
}

run() {
  local D
  D=$(cd "$1" && pwd) || exit 1
  shift
  local PY=${PY:-python3}
  if [ -z "${LOCAL:-}" ]; then
    for f in "$D"/gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
    if ls "$D"/whl/*.whl > /dev/null 2>&1; then
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
        "$D"/whl/*.whl || exit 1
    fi
    # The loader's standard folders, in case the machine's environment names none.
    mkdir -p /etc/vulkan/icd.d
    cp /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /etc/vulkan/icd.d/ 2> /dev/null
  fi
  echo "gpu-apps: layer built from $(cat "$D/COMMIT" 2> /dev/null || echo '?')"
  local W=/tmp/gpu-apps
  rm -rf $W
  mkdir -p $W/runtime $W/logs
  cat > $W/vk_layer_settings.txt << 'S'
khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT
khronos_validation.report_flags = error,warn,perf,info
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.log_filename = stdout
khronos_validation.enable_message_limit = false
S
  one() { # NAME SCRIPT ARGS VAR=VALUE... (SCRIPT: a Python script of apps/, or a program's path)
    local name=$1 script=$2 args=$3 program
    shift 3
    case $script in
      /*) program=$script ;;
      *) program="$PY $PWD/tests/integration/apps/$script" ;;
    esac
    env -i PATH="$PATH" LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" XDG_DATA_DIRS="${XDG_DATA_DIRS:-}" HOME=$W \
      XDG_RUNTIME_DIR=$W/runtime VK_LAYER_SETTINGS_PATH=$W/vk_layer_settings.txt PYTHONPATH=/tmp/site \
      PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 "$@" \
      timeout 300 $program $args > "$W/logs/$name.out" 2>&1
    echo "rc=$?" >> "$W/logs/$name.out"
  }
  ids() { grep -oE '^[A-Za-z0-9_-]+\((ERROR|WARN) / [A-Z]+\)' "$1" | sed 's/(.*//' | sort | uniq -c |
    awk '{print $2" "$1}' | sort; }
  local settings=(
    ""
    "VK_BLACKBOX_NAN=outputs"
    "VK_BLACKBOX_NAN=ops"
    "VK_BLACKBOX_LOOPS=break VK_BLACKBOX_INT=on"
    "VK_BLACKBOX_BREADCRUMBS=command"
    "VK_BLACKBOX_NAN=ops VK_BLACKBOX_NAN_RECORDS=end VK_BLACKBOX_LOOPS=break VK_BLACKBOX_INT=on VK_BLACKBOX_BREADCRUMBS=command VK_BLACKBOX_CHECKPOINTS=on"
  )
  local n script args k s f ref
  for n in "$@"; do
    case $n in
      wgpu) script=wgpu_app.py args=--nan ;;
      taichi) script=taichi_app.py args=--nan ;;
      ncnn) script=ncnn_app.py args= ;;
      pygfx) script=pygfx_app.py args= ;;
      iree) script=iree_app.py args=$D/kernels.vmfb ;;
      vkfft) script=$D/vkfft_app args= ;;
      *) echo "gpu-apps: unknown program $n (wgpu, ncnn, taichi, pygfx, iree, vkfft)" >&2; exit 2 ;;
    esac
    ref=$W/logs/${n}_reference.out
    one "${n}_reference" $script "$args" VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
    echo "== $n without Blackbox: $(grep '^rc=' "$ref"), $(grep -c '^result' "$ref") results"
    grep -v '^result\|^rc=' "$ref" | grep -m2 -E '^[a-z]+-app:|Assertion' | cut -c1-300
    k=0
    for s in "${settings[@]}"; do
      k=$((k + 1))
      f=$W/logs/${n}_$k.out
      one "${n}_$k" $script "$args" VK_ADD_LAYER_PATH="$D" VK_INSTANCE_LAYERS=VK_LAYER_blackbox:VK_LAYER_KHRONOS_validation \
        VK_BLACKBOX_OUTPUT=$W/reports-${n}-$k $s
      echo "-- $n, ${s:-defaults}: $(grep '^rc=' "$f"), results $(diff <(grep '^result' "$ref") <(grep '^result' "$f") > /dev/null && echo 'the same' || echo DIFFERENT), Blackbox start-up lines $(grep -c 'blackbox\] info: Blackbox' "$f"), reports $(ls $W/reports-${n}-$k 2> /dev/null | wc -l), validation messages changed: [$(join -a1 -a2 -e0 -o 0,1.2,2.2 <(ids "$ref") <(ids "$f") | awk '$3!=$2{printf "%s %d->%d; ", $1, $2, $3}')]"
      grep -h '\[blackbox\] \(warn\|error\)' "$f" | cut -c1-300 | sort | uniq -c | head -6
      # What Blackbox put in force there, at the defaults and with everything on.
      [ $k = 1 ] || [ $k = ${#settings[@]} ] && grep -h 'blackbox\] info: Blackbox' "$f" | sed 's/.*; features: /   features: /'
    done
  done
  tar czf "${OUT:-/tmp}/logs.tgz" -C $W logs $(cd $W && ls -d reports-* 2> /dev/null)
}

case "${1:-}" in
  pack) pack ;;
  pack-vkfft) pack_vkfft ;;
  compile-vkfft) shift; [ $# -eq 1 ] || { echo "usage: $0 compile-vkfft DIR" >&2; exit 2; }; compile_vkfft "$1" ;;
  run) shift; [ $# -ge 2 ] || { echo "usage: $0 run DIR wgpu|ncnn|taichi|pygfx|iree|vkfft..." >&2; exit 2; }; run "$@" ;;
  *) echo "usage: $0 pack | pack-vkfft | run DIR wgpu|ncnn|taichi|pygfx|iree|vkfft... | compile-vkfft DIR" >&2; exit 2 ;;
esac
