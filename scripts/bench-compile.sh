#!/usr/bin/env bash
# What pipeline creation costs per module through Blackbox, against no layer, measured in the same run, over
# a corpus of real modules: bb-testapp's pipeline-compile (each module tagged afresh so that nothing keyed by
# its words is reused, then vkCreateShaderModule + one vkCreate*Pipelines call without a pipeline cache, plus
# the compile a driver defers to the first use: llvmpipe compiles at the first dispatch or draw) runs over
# every module with each setting in turn (no layer; Blackbox's defaults, asserts and printf; NaN outputs;
# NaN ops), interleaved, REPS rounds. Driver disk caches are off (MESA_SHADER_CACHE_DISABLE,
# __GL_SHADER_DISK_CACHE=0). Prints each module's time without the layer and its ratio at each setting
# (medians over the rounds), then per setting the distribution of the ratios over the modules (median,
# 90th percentile, worst, the worst modules by name) for all of them, compute and fragment, and the ratio of
# the total time.
#   scripts/bench-compile.sh [REPS]            (default 3; builds the release binaries first)
#   BIN=.gpu scripts/bench-compile.sh [REPS]   (prepacked binaries and modules, as scripts/gpu-pack.sh lays
#                                               them out)
# The modules: the shared corpus's compute and fragment modules ($BLACKBOX_SHARED_CORPUS, default
# ../shared/corpus/spv; with BIN, $BIN/shared-corpus), ncnn's (tests/compile-corpus/ncnn), and the engine
# corpus's compute and fragment sources (target/tmp/corpus, made by `cargo test -p blackbox-engine --test
# corpus`; with BIN, $BIN/corpus; two variants of each: plain and spirv-opt -O, SPIR-V 1.3). MODULES="FILE_OR_DIR..." replaces that list; SAMPLE=K keeps every K-th
# module; ITERS (default 1) compiles each module that many times per process (the process's median counts).
# A fragment module is compiled with a small vertex shader made to match it (part of the time, the same for
# every setting but for its own instrumentation). Modules bb-testapp cannot run (other interfaces, missing
# features, a driver crash) are listed and left out; so is a module that fails with Blackbox only, loudly.
# Uses lavapipe unless VK_DRIVER_FILES is set; with BIN and without VK_DRIVER_FILES, the loader's own choice.
# Times are the process's CPU time (all threads) over those calls, which moves less than the wall clock
# when other processes share the cores; CLOCK=wall takes the wall clock instead.
# LAYER_ENV="VAR=VALUE ..." is added to every Blackbox setting (e.g. LAYER_ENV=VK_BLACKBOX_NAN_RECORDS=end).
# On lavapipe (2 cores) one module's ratio moves by ±10-20% between runs; read the distribution, not a module.
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
iters=${ITERS:-1}
sample=${SAMPLE:-1}
case ${CLOCK:-cpu} in cpu) wall=0 ;; wall) wall=1 ;; *) echo "bench-compile: CLOCK is cpu or wall" >&2; exit 2 ;; esac
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-compile
export MESA_SHADER_CACHE_DISABLE=true __GL_SHADER_DISK_CACHE=0
unset VK_BLACKBOX_ASSERT VK_BLACKBOX_PRINTF VK_BLACKBOX_NAN VK_INSTANCE_LAYERS
unset VK_LAYER_ENABLES VK_LAYER_DISABLES VK_LAYER_SETTINGS_PATH

# ---- the modules ----
if [ -n "${MODULES:-}" ]; then
  read -r -a sources <<< "$MODULES"
elif [ -n "${BIN:-}" ]; then
  sources=("$bin/shared-corpus" "$bin/ncnn" "$bin/corpus")
else
  sources=("${BLACKBOX_SHARED_CORPUS:-../shared/corpus/spv}" tests/compile-corpus/ncnn target/tmp/corpus)
fi
list=$tmp/modules
: > "$list"
for s in "${sources[@]}"; do
  if [ -d "$s" ]; then
    # The engine corpus compiles each source many ways: its plain and spirv-opt -O variants of one SPIR-V
    # version (1.3; 1.2 for the generated gen* shaders) stand for it. Other folders: every module.
    find "$s" -maxdepth 1 -type f -name '*.spv' | grep -E '\.(comp|frag)(\.hlsl)?\.' | sort | awk '
      !/\.vulkan1\.[0-9]\./ { print; next }
      /\/gen[0-9]+\.comp\.vulkan1\.2\.(O\.)?[0-9a-f]+\.spv$/ || /\.vulkan1\.3\.(O\.)?[0-9a-f]+\.spv$/' >> "$list"
  elif [ -f "$s" ]; then
    echo "$s" >> "$list"
  else
    echo "bench-compile: $s is missing, left out" >&2
  fi
done
sort -u "$list" | awk -v k="$sample" '(NR - 1) % k == 0' > "$list.sampled"
mv "$list.sampled" "$list"
[ -s "$list" ] || { echo "bench-compile: no modules" >&2; exit 1; }
# Module names must be unique: the engine corpus and the shared corpus name theirs apart already.
dups=$(xargs -n1 basename < "$list" | sort | uniq -d | head -3)
[ -z "$dups" ] || { echo "bench-compile: module names used twice: $dups" >&2; exit 1; }
echo "bench-compile: $(wc -l < "$list") modules, $reps rounds, sample 1/$sample" >&2

# ---- the settings ----
blackbox="VK_ADD_LAYER_PATH=$tmp/manifests VK_INSTANCE_LAYERS=VK_LAYER_blackbox VK_BLACKBOX_OUTPUT=$tmp/reports"
blackbox="$blackbox VK_BLACKBOX_WATCHDOG_MS=0 VK_BLACKBOX_BREADCRUMBS=off VK_BLACKBOX_LOG=warn ${LAYER_ENV:-}"
names=("no layer" "asserts+printf (defaults)" "NaN outputs" "NaN ops")
envs=("" "$blackbox" "$blackbox VK_BLACKBOX_NAN=outputs" "$blackbox VK_BLACKBOX_NAN=ops")

out=$tmp/results # lines: setting round name stage microseconds
: > "$out"
# Runs setting $1 over every module of the list, round $2; a process that dies (a driver crash) is restarted
# after the module it died on, which is noted as skipped.
run_setting() {
  local i=$1 round=$2 todo=$tmp/todo stdout=$tmp/stdout rc last next
  cp "$list" "$todo"
  while [ -s "$todo" ]; do
    rc=0
    # shellcheck disable=SC2086
    env ${envs[$i]} "$bin/bb-testapp" --iters "$iters" $(sed 's/^/--spirv /' "$todo") pipeline-compile \
      > "$stdout" 2> "$tmp/stderr" || rc=$?
    awk -v i="$i" -v r="$round" -v wall="$wall" '$1 == "compile" && $4 == "create_us" {
        print i, r, $2, $3, wall ? $5 + $7 : $9 }
      $1 == "compile" && $3 == "skipped:" { print i, r, $2, "skipped", 0 }' "$stdout" >> "$out"
    # 0: done; 3: the driver wrote debug-utils messages (about modules it refused); 4: a scenario skipped.
    case $rc in 0 | 3 | 4) break ;; esac
    last=$(awk '$1 == "compile" { n = $2 } END { print n }' "$stdout")
    if [ -n "$last" ]; then
      next=$(awk -v n="$last" 'found { print; exit } { b = $0; sub(/.*\//, "", b) } b == n { found = 1 }' "$todo")
    else
      next=$(head -1 "$todo")
    fi
    [ -n "$next" ] || break
    echo "bench-compile: bb-testapp died (status $rc) on $(basename "$next") with '${names[$i]}'" >&2
    echo "$i $round $(basename "$next") crashed 0" >> "$out"
    awk -v n="$next" 'found { print } $0 == n { found = 1 }' "$todo" > "$todo.rest"
    mv "$todo.rest" "$todo"
  done
}
device=""
for r in $(seq "$reps"); do
  for i in "${!names[@]}"; do
    run_setting "$i" "$r"
    [ -n "$device" ] || device=$(awk -F': ' '/^bb-testapp: device [0-9]+: / {print $3; exit}' "$tmp/stderr")
  done
  echo "bench-compile: round $r of $reps done" >&2
done

# ---- the tables ----
echo "pipeline-compile on ${device:-unknown device}, $(wc -l < "$list") modules, $reps rounds of $iters," \
  "medians; time = vkCreateShaderModule + vkCreate*Pipelines + the compile deferred to the first use," \
  "$([ "$wall" = 1 ] && echo "wall clock" || echo "CPU time of the process")"
awk -v names="$(IFS='|'; echo "${names[*]}")" -v settings="${#names[@]}" '
  function median(key,   n, i, j, t, v) {
    n = split(samples[key], v, " ")
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  { key = $1 SUBSEP $3
    if ($4 == "skipped" || $4 == "crashed") { bad[key] = $4; next }
    samples[key] = samples[key] " " $5; stage[$3] = $4; seen[$3] = 1 }
  END {
    split(names, name, "|")
    # Modules measured without the layer; those that fail only with it are reported.
    count = 0
    for (m in seen) {
      if (!((0 SUBSEP m) in samples)) continue
      ok = 1
      for (s = 1; s < settings; s++) if (!((s SUBSEP m) in samples)) {
        ok = 0; printf "FAILED with %s only: %s (%s)\n", name[s + 1], m, ((s SUBSEP m) in bad) ? bad[s SUBSEP m] : "no result"
      }
      if (ok) modules[++count] = m
    }
    # Sorted by name.
    for (i = 2; i <= count; i++) { t = modules[i]; for (j = i - 1; j >= 1 && modules[j] > t; j--) modules[j + 1] = modules[j]; modules[j + 1] = t }
    left = 0
    for (key in bad) { split(key, k, SUBSEP); if (k[1] == 0 && !(k[2] in noted)) { noted[k[2]] = bad[key]; left++ } }
    printf "%-58s %-8s %10s", "module", "stage", "ms"
    for (s = 1; s < settings; s++) printf " %12s", substr(name[s + 1], 1, 12)
    printf "\n"
    for (i = 1; i <= count; i++) {
      m = modules[i]; base = median(0 SUBSEP m); total[0] += base
      printf "%-58s %-8s %10.2f", substr(m, 1, 58), stage[m], base / 1000
      for (s = 1; s < settings; s++) {
        v = median(s SUBSEP m); total[s] += v; ratio[s, i] = v / base
        printf " %11.2fx", v / base
      }
      printf "\n"
    }
    printf "\nleft out (no result without the layer): %d modules\n", left
    for (s = 1; s < settings; s++) {
      printf "\n%s: ratio to no layer per module, and of the total time\n", name[s + 1]
      printf "  %-9s %5s %8s %8s %8s %8s   %s\n", "modules", "count", "median", "p90", "worst", "total", "worst modules"
      split("all compute fragment", groups, " ")
      for (g = 1; g <= 3; g++) {
        n = 0; tb = 0; tv = 0
        for (i = 1; i <= count; i++) {
          m = modules[i]
          if (groups[g] != "all" && stage[m] != groups[g]) continue
          r[++n] = ratio[s, i]; who[n] = m; tb += median(0 SUBSEP m); tv += median(s SUBSEP m)
        }
        if (n == 0) continue
        # Sort ratios (descending) with their modules.
        for (a = 2; a <= n; a++) { t = r[a]; tw = who[a]; for (b = a - 1; b >= 1 && r[b] < t; b--) { r[b + 1] = r[b]; who[b + 1] = who[b] } r[b + 1] = t; who[b + 1] = tw }
        med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
        p90 = r[int(n * 0.1) + 1]
        worst = ""
        for (a = 1; a <= 3 && a <= n; a++) worst = worst sprintf("%s%s %.2fx", a > 1 ? ", " : "", who[a], r[a])
        printf "  %-9s %5d %7.2fx %7.2fx %7.2fx %7.2fx   %s\n", groups[g], n, med, p90, r[1], tv / tb, worst
      }
    }
  }' "$out"
