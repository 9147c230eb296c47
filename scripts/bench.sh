#!/usr/bin/env bash
# Every benchmark of the project in one run, each against no layer measured in the same run, with the date,
# machine and driver on top: paste its output into the README's performance section.
#   scripts/bench.sh [REPS]            here, on lavapipe (default REPS 5): recording and submission CPU time
#                                      (bench-record), pipeline creation (bench-pipelines), shader run time
#                                      (bench-shaders), memory (bench-memory), frame capture
#                                      (bench-frames), engine throughput (the
#                                      engine's `throughput` example over its test corpus and, when present,
#                                      ../shared/corpus)
#   BIN=.gpu scripts/bench.sh [REPS]   on a GPU machine, with the binaries scripts/gpu-pack.sh lays out: CPU
#                                      time of recording and submission (bench-record), GPU
#                                      time of breadcrumbs (bench-gpu), shader run time, memory and frame
#                                      capture (bench-frames, headless), sized for a GPU
# Each part's own script says what it measures and how; this one only runs them in turn.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}

if [ -n "${BIN:-}" ] && [ -f "$BIN/COMMIT" ]; then
  commit=$(cat "$BIN/COMMIT")
else
  commit=$(git rev-parse --short HEAD 2> /dev/null || echo '?')
fi
echo "# Blackbox benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $commit"
echo "# machine: $(nproc) CPUs, $(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -sr)"
if command -v nvidia-smi > /dev/null; then
  echo "# GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1) (NVIDIA driver)"
fi
if [ -z "${BIN:-}" ]; then
  echo "# driver: $(VK_DRIVER_FILES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json vulkaninfo --summary 2>/dev/null \
    | awk -F'= ' '/driverInfo/ {print "lavapipe, " $2; exit}')"
fi
echo "# command: ${BIN:+BIN=$BIN }scripts/bench.sh $reps"
echo

part() {
  echo "## $1"
  shift
  "$@"
  echo
}

if [ -n "${BIN:-}" ]; then
  part "Recording and submission, CPU (scripts/bench-record.sh)" bash scripts/bench-record.sh "$reps"
  part "GPU time of breadcrumbs (scripts/bench-gpu.sh)" bash scripts/bench-gpu.sh "$reps"
  SHADER_ARGS=${SHADER_ARGS:---shader-invocations 4194304 --shader-size 2048 --shader-iterations 256} \
    part "Shader run time (scripts/bench-shaders.sh)" bash scripts/bench-shaders.sh "$reps"
  part "Memory (scripts/bench-memory.sh)" bash scripts/bench-memory.sh "$reps"
  part "Frame capture per present (scripts/bench-frames.sh)" bash scripts/bench-frames.sh "$reps"
else
  part "Recording and submission, CPU (scripts/bench-record.sh)" bash scripts/bench-record.sh "$reps"
  part "Pipeline creation (scripts/bench-pipelines.sh)" bash scripts/bench-pipelines.sh "$reps"
  part "Shader run time (scripts/bench-shaders.sh)" bash scripts/bench-shaders.sh "$reps"
  part "Memory (scripts/bench-memory.sh)" bash scripts/bench-memory.sh "$reps"
  part "Frame capture per present (scripts/bench-frames.sh)" bash scripts/bench-frames.sh "$reps"
  # The engine's own corpus (compiled by its tests into target/tmp/corpus), then the shared one.
  if [ ! -d target/tmp/corpus ]; then
    cargo test -q --release -p blackbox-engine --test corpus > /dev/null 2>&1 || true
  fi
  part "Engine throughput, engine test corpus" \
    cargo run -q --release -p blackbox-engine --example throughput -- target/tmp/corpus "$reps"
  if [ -d ../shared/corpus/spv ]; then
    part "Engine throughput, shared corpus" \
      cargo run -q --release -p blackbox-engine --example throughput -- ../shared/corpus/spv "$reps"
  fi
fi
