#!/usr/bin/env bash
# Lays out release binaries in .gpu/ for scripts/gpu-check.sh on another machine (the device tool carries
# it): blackbox, bb-testapp, the layer with its explicit manifest, the fault layer with its manifest; and,
# for scripts/gpu-corpus.sh and scripts/bench-compile.sh, the compute and fragment modules of the engine's
# corpus (compiled by its tests into target/tmp/corpus: `cargo test -p blackbox-engine --test corpus` makes
# them); for scripts/bench-compile.sh, the shared corpus's compute and fragment modules and ncnn's; and
# LunarG's Crash Diagnostic Layer into .gpu/cdl when it is here (BLACKBOX_PEER_CDL, else ../shared/peers/cdl),
# for the benchmarks' CDL rows.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p blackbox-cli -p blackbox-testapp -p blackbox-layer -p blackbox-fault-layer
rm -rf .gpu && mkdir -p .gpu/fault
cp target/release/blackbox target/release/bb-testapp target/release/libVkLayer_blackbox.so .gpu/
cp manifest/VkLayer_blackbox.json .gpu/
cp target/release/libVkLayer_blackbox_fault.so .gpu/fault/
cp tests/fault-layer/VkLayer_blackbox_fault.json .gpu/fault/
# For scripts/gpu-check.sh: the fragment shader with a NaN in green (or red) of its vec4.
mkdir -p .gpu/kept
for define in GREEN_NAN RED_NAN; do
  glslangValidator -q -V --target-env vulkan1.2 -g -D$define tests/integration/shaders/kept_components.frag \
    -o .gpu/kept/${define,,}.spv > /dev/null
done
mkdir -p .gpu/corpus
modules=(target/tmp/corpus/*.comp.*spv target/tmp/corpus/*.frag.*spv)
if [ -e "${modules[0]}" ]; then
  cp "${modules[@]}" .gpu/corpus/
else
  echo "gpu-pack: no corpus in target/tmp/corpus (cargo test -p blackbox-engine --test corpus makes it)" >&2
fi
# For scripts/bench-compile.sh: the shared corpus's compute and fragment modules, and ncnn's.
mkdir -p .gpu/shared-corpus .gpu/ncnn
shared=${BLACKBOX_SHARED_CORPUS:-../shared/corpus/spv}
if [ -d "$shared" ]; then
  cp "$shared"/*.comp.spv "$shared"/*.frag.spv .gpu/shared-corpus/
else
  echo "gpu-pack: no shared corpus at $shared (BLACKBOX_SHARED_CORPUS)" >&2
fi
cp tests/compile-corpus/ncnn/*.spv .gpu/ncnn/
cdl=${BLACKBOX_PEER_CDL:-../shared/peers/cdl}
if [ -e "$cdl/VkLayer_crash_diagnostic.json" ]; then
  mkdir -p .gpu/cdl && cp "$cdl"/VkLayer_crash_diagnostic.json "$cdl"/libVkLayer_crash_diagnostic.so .gpu/cdl/
else
  echo "gpu-pack: no CDL in $cdl: the benchmarks will have no CDL rows" >&2
fi
strip .gpu/blackbox .gpu/bb-testapp .gpu/*.so .gpu/fault/*.so
# The commit the binaries were built from (the GPU machine's copy of the tree may not have .git).
echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!.gpu' || echo ' + uncommitted changes')" > .gpu/COMMIT
du -sh .gpu
