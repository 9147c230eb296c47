#!/usr/bin/env bash
# The engine corpus's compute and fragment modules on a real driver: runs them all through
# `bb-testapp spirv-run` without Blackbox, then with it at its defaults, at NaN `outputs` and at NaN `ops`,
# and prints for each level how many give the same bits as without it, and which do not.
#
#   scripts/gpu-pack.sh                 # here: binaries and modules into .gpu/ (corpus/ from the engine tests)
#   scripts/gpu-corpus.sh               # there (BIN=.gpu, MODULES=$BIN/corpus, OUT=./gpu-out, LIMIT=40)
#
# A module that crashes or hangs the process is recorded as `spirv NAME failed` and the run goes on with
# the modules after it, in a new process: one that prints nothing for LIMIT seconds is killed (the app's
# own fence wait gives up after 60 s, and on some drivers a process with hung GPU work never exits).
# tests/integration/tests/corpus_run.rs makes the same comparison on lavapipe in the test command.
set -u
BIN=$(cd "${BIN:-.gpu}" && pwd)
MODULES=${MODULES:-$BIN/corpus}
OUT=${OUT:-$PWD/gpu-out}
LIMIT=${LIMIT:-40}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
shopt -s nullglob
files=("$MODULES"/*.spv)
if [ ${#files[@]} -eq 0 ]; then
  echo "gpu-corpus: no modules in $MODULES" >&2
  exit 2
fi
layer=(VK_ADD_LAYER_PATH="$BIN" VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_LOG=warn)

run() { # NAME ENV...
  local name=$1
  shift
  local out="$OUT/corpus-$name.txt" err="$OUT/corpus-$name.err"
  : > "$out"
  : > "$err"
  local start next=0
  start=$(date +%s.%N)
  while [ "$next" -lt ${#files[@]} ]; do
    local args=()
    for f in "${files[@]:next}"; do args+=(--spirv "$f"); done
    env "$@" "$BIN/bb-testapp" spirv-run "${args[@]}" >> "$out" 2>> "$err" &
    local pid=$! lines last=-1 quiet=0
    {
      while kill -0 "$pid"; do
        sleep 1
        lines=$(grep -c '^spirv ' "$out")
        if [ "$lines" -eq "$last" ]; then quiet=$((quiet + 1)); else quiet=0; last=$lines; fi
        if [ "$quiet" -ge "$LIMIT" ]; then kill -KILL "$pid"; fi
      done
      wait "$pid"
    } 2> /dev/null # the shell's own "Segmentation fault" notice: the summary counts it
    local printed
    printed=$(grep -c '^spirv ' "$out")
    if [ "$printed" -ge ${#files[@]} ] || tail -1 "$out" | grep -q '^scenario spirv-run'; then
      break
    fi
    # The module after the last one printed stopped the process.
    echo "spirv $(basename "${files[printed]}") failed" >> "$out"
    next=$((printed + 1))
  done
  echo "corpus $name: $(grep -c '^spirv .* checksum ' "$out") ran, $(grep -c ' failed$' "$out") failed," \
    "$(grep -c ' skipped: ' "$out") skipped, in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
}

echo "gpu-corpus: ${#files[@]} modules from $MODULES"
run bare
run defaults "${layer[@]}"
run outputs "${layer[@]}" VK_BLACKBOX_NAN=outputs
run ops "${layer[@]}" VK_BLACKBOX_NAN=ops
echo "device: $(sed -n 's/^bb-testapp: device [0-9]*: //p' "$OUT/corpus-bare.err" | head -1)"
echo "skipped without Blackbox: $(grep -c ' skipped: ' "$OUT/corpus-bare.txt")"
grep ' skipped: ' "$OUT/corpus-bare.txt" | sed 's/^/  /' | head -20
echo "failed without Blackbox (not compared): $(grep -c ' failed$' "$OUT/corpus-bare.txt")"
grep ' failed$' "$OUT/corpus-bare.txt" | sed 's/^/  /' | head -40
for level in defaults outputs ops; do
  awk -v level="$level" '
    FNR == NR { if ($1 == "spirv" && $3 == "checksum") bare[$2] = $4; next }
    $1 == "spirv" && $3 == "checksum" { seen[$2] = 1; if (bare[$2] == $4) same++; else { diff++; names = names " " $2 } }
    $1 == "spirv" && $3 == "failed" && ($2 in bare) { failed++; failures = failures " " $2 }
    END {
      ran = 0; for (m in bare) ran++
      missing = 0; for (m in bare) if (!(m in seen)) missing++
      printf "%-9s %d of %d the same, %d different, %d failed, %d not run\n", level, same, ran, diff, failed, missing - failed
      if (diff) print "  different:" names
      if (failed) print "  failed:" failures
    }' "$OUT/corpus-bare.txt" "$OUT/corpus-$level.txt"
done
