#!/usr/bin/env bash
# The engine corpus's compute and fragment modules on a real driver: runs them all through
# `bb-testapp spirv-run` without Blackbox, then with it at its defaults, at NaN `outputs` and at NaN `ops`,
# and prints for each level how many give the same bits as without it, and which do not.
#
#   scripts/gpu-pack.sh                 # here: binaries and modules into .gpu/ (corpus/ from the engine tests)
#   scripts/gpu-corpus.sh               # there (BIN=.gpu, MODULES=$BIN/corpus, OUT=./gpu-out)
#
# tests/integration/tests/corpus_run.rs makes the same comparison on lavapipe in the test command.
set -u
BIN=$(cd "${BIN:-.gpu}" && pwd)
MODULES=${MODULES:-$BIN/corpus}
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
shopt -s nullglob
files=("$MODULES"/*.spv)
if [ ${#files[@]} -eq 0 ]; then
  echo "gpu-corpus: no modules in $MODULES" >&2
  exit 2
fi
args=()
for f in "${files[@]}"; do args+=(--spirv "$f"); done
layer=(VK_ADD_LAYER_PATH="$BIN" VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_LOG=warn)

run() { # NAME ENV...
  local name=$1
  shift
  local start
  start=$(date +%s.%N)
  timeout -s KILL 600 env "$@" "$BIN/bb-testapp" spirv-run "${args[@]}" \
    > "$OUT/corpus-$name.txt" 2> "$OUT/corpus-$name.err"
  local rc=$?
  echo "corpus $name: exit $rc after $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
}

echo "gpu-corpus: ${#files[@]} modules from $MODULES"
run bare
run defaults "${layer[@]}"
run outputs "${layer[@]}" VK_BLACKBOX_NAN=outputs
run ops "${layer[@]}" VK_BLACKBOX_NAN=ops
echo "device: $(sed -n 's/^bb-testapp: device [0-9]*: //p' "$OUT/corpus-bare.err" | head -1)"
echo "skipped without Blackbox: $(grep -c ' skipped: ' "$OUT/corpus-bare.txt")"
grep ' skipped: ' "$OUT/corpus-bare.txt" | sed 's/^/  /' | head -20
for level in defaults outputs ops; do
  awk -v level="$level" '
    FNR == NR { if ($1 == "spirv" && $3 == "checksum") bare[$2] = $4; next }
    $1 == "spirv" && $3 == "checksum" { seen[$2] = 1; if (bare[$2] == $4) same++; else { diff++; names = names " " $2 } }
    END {
      ran = 0; for (m in bare) ran++
      missing = 0; for (m in bare) if (!(m in seen)) missing++
      printf "%-9s %d of %d the same, %d different, %d not run\n", level, same, ran, diff, missing
      if (diff) print "  different:" names
    }' "$OUT/corpus-bare.txt" "$OUT/corpus-$level.txt"
done
