#!/usr/bin/env bash
# Instructions per recorded command, by setting, counted by callgrind (the same whatever the machine's load):
# bb-testapp's record-bench, recording only (`--record-only`: no submission, which lavapipe would execute
# at valgrind's pace), with callgrind collecting only inside the benchmark's recording function (so
# instance, device and pipeline creation do not count). Each setting runs twice, with ITERS_A and ITERS_B
# counted iterations (after the benchmark's warm-up ones); the difference divided by the commands between
# them is the steady state, first recordings' allocations left out. The second table splits what each
# setting adds to no layer by where the instructions run, by the source file of each line (so code inlined
# into a trampoline counts where it was written): the trampoline (`ffi/`, `commands.rs`: catch_unwind, the
# arguments, the call down), the command buffer lookup (the thread's cache: thread-local access, its
# RefCell, `__tls_get_addr`), the log (`command_buffer.rs`, `command_log.rs` and their vectors: the
# recording state, the entry, labels, binds), the markers (`breadcrumbs.rs`), the allocator (malloc, free,
# memcpy), the driver (lavapipe's own code: mostly the marker fills it records), the peer (CDL's library)
# and the rest (the app, ash, the fault layer). The last rows run Blackbox on the buffer-marker path of GPUs
# that have VK_AMD_buffer_marker (the H200), faked on lavapipe by the fault layer below it (BB_FAULT_FAKE_BUFFER_MARKER: its markers record
# nothing, so they show Blackbox's own cost on that path, not a driver's).
#   scripts/bench-callgrind.sh                 (builds the release binaries first; lavapipe)
#   CALLGRIND_ARGS="--cmdbufs 4 --draws 500" ITERS_A=1 ITERS_B=5 (the defaults)
#   KEEP=DIR                                   keeps the callgrind files (callgrind_annotate them)
#   KEEP=DIR REUSE=1                           only prints the tables again from KEEP's files
# Needs valgrind. Includes CDL's rows when ../shared/peers/cdl (or BLACKBOX_PEER_CDL) is there.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "bench-callgrind: needs valgrind (apt-get install valgrind)" >&2; exit 1; }
args=${CALLGRIND_ARGS:---cmdbufs 4 --draws 500}
iters_a=${ITERS_A:-1}
iters_b=${ITERS_B:-5}
# shellcheck source=scripts/bench-setup.sh
source scripts/bench-setup.sh
bench_setup bench-callgrind
keep=${KEEP:-$tmp/callgrind}
mkdir -p "$keep"
bench_rows record
# The H200's path on lavapipe: the fault layer below Blackbox fakes VK_AMD_buffer_marker (its markers record
# nothing), so Blackbox writes a buffer marker per command, inside render passes too.
cargo build --release -q -p blackbox-fault-layer 2> /dev/null
sed "s|\"./libVkLayer_blackbox_fault.so\"|\"$PWD/target/release/libVkLayer_blackbox_fault.so\"|" \
  tests/fault-layer/VkLayer_blackbox_fault.json > "$tmp/manifests/VkLayer_blackbox_fault.json"
faked="VK_ADD_LAYER_PATH=$tmp/manifests VK_INSTANCE_LAYERS=VK_LAYER_blackbox:VK_LAYER_BLACKBOX_fault"
faked="$faked BB_FAULT_FAKE_BUFFER_MARKER=1 VK_BLACKBOX_OUTPUT=$tmp/reports"
row_names+=("submit, faked buffer markers" "pass, faked buffer markers" "command, faked buffer markers")
row_envs+=("$faked VK_BLACKBOX_BREADCRUMBS=submit" "$faked VK_BLACKBOX_BREADCRUMBS=pass"
  "$faked VK_BLACKBOX_BREADCRUMBS=command")

run() { # run INDEX ITERS: callgrind's file for that row
  local file=$keep/row$1-$2.out status=0
  # shellcheck disable=SC2086
  env ${row_envs[$1]} VK_BLACKBOX_LOG=warn valgrind --tool=callgrind --callgrind-out-file="$file" \
    --toggle-collect='*record_bench*Bench*record*' "$bin/bb-testapp" $args --iters "$2" --record-only \
    record-bench > "$keep/row$1-$2.stdout" 2> "$keep/row$1-$2.stderr" || status=$?
  if ! row_ok "$status" "$1"; then
    echo "bench-callgrind: bb-testapp failed ($status) with setting '${row_names[$1]}':" >&2
    grep -v '^==' "$keep/row$1-$2.stderr" | tail -5 >&2
    exit 1
  fi
  # Self cost per function, one line each: Ir, then the rest of the line (file:function [object]).
  callgrind_annotate --auto=no --inclusive=no --threshold=100 "$file" 2> /dev/null \
    | awk '/^ *[0-9,]+ +\( *[0-9.]+%\) / && !/PROGRAM TOTALS/ {
        ir = $1; gsub(",", "", ir); sub(/^ *[0-9,]+ +\( *[0-9.]+%\) +/, ""); print ir "\t" $0 }' \
    > "$file.self"
}

for i in "${!row_names[@]}"; do
  if [ -z "${REUSE:-}" ]; then
    run "$i" "$iters_a"
    run "$i" "$iters_b"
  fi
  echo "bench-callgrind: ${row_names[$i]} done" >&2
done

commands=$(awk '/^record-bench commands/ {print $3}' "$keep/row0-$iters_b.stdout")
per=$(( (iters_b - iters_a) * commands ))
# Per row, Ir per command in the steady state (B minus A, over the commands between them), in all and by part.
result=$tmp/parts
: > "$result"
for i in "${!row_names[@]}"; do
  cp "$keep/row$i-$iters_b.out.self" "$tmp/B.self"
  cp "$keep/row$i-$iters_a.out.self" "$tmp/A.self"
  awk -F'\t' -v i="$i" -v per="$per" '
    # By the source file of each line (inlined code counts where its source is), then by function.
    function part(f,   file) {
      file = f; sub(/:.*/, "", file)
      if (f ~ /crash_diagnostic/) return "peer"
      if (f ~ /blackbox_fault/) return "other"
      if (f ~ /libvulkan_lvp|^\?\?\?:/) return "driver"
      if (f ~ /malloc\.c|arena\.c|memmove|memset|memcpy|__rust_(alloc|realloc|dealloc)|__rdl_/) return "alloc"
      if (f ~ /tls_get_addr/) return "lookup"
      if (f ~ /str::converts::from_utf8|strlen/) return "log"
      if (f ~ /VkLayer_blackbox|libVkLayer_blackbox/) {
        if (file ~ /breadcrumbs\.rs/ || f ~ /::mark|finish_units/) return "markers"
        if (file ~ /thread_local|cell\.rs/ || f ~ /command_buffer::(lookup|with)/) return "lookup"
        if (file ~ /command_buffer\.rs|command_log\.rs|alloc\/src\/(vec|raw_vec)|str\/(validations|converts)/) return "log"
        if (file ~ /layer\/src\/ffi\/|layer\/src\/commands\.rs|panicking|panic|maybe_dangling|option\.rs/) return "hook"
        if (f ~ /VkLayer_blackbox::ffi::/) return "hook"
        return "log"
      }
      return "other"
    }
    FNR == 1 { b = (FILENAME ~ /A\.self$/) ? -1 : 1 }
    { sum[part($2)] += b * $1; total += b * $1 }
    END {
      printf "%d %.1f", i, total / per
      n = split("hook lookup log markers alloc driver peer other", parts, " ")
      for (k = 1; k <= n; k++) printf " %.1f", sum[parts[k]] / per
      printf "\n"
    }' "$tmp/B.self" "$tmp/A.self" >> "$result"
done

echo "record-bench under callgrind (lavapipe, recording only, $args), Ir per recorded command (steady state:" \
  "iterations $iters_b minus $iters_a, $commands commands each)"
printf '%-32s %10s %8s\n' setting "Ir/command" ratio
base=$(awk '$1 == 0 {print $2}' "$result")
for i in "${!row_names[@]}"; do
  awk -v n="${row_names[$i]}" -v i="$i" -v b="$base" '$1 == i { printf "%-32s %10.1f %7.3fx\n", n, $2, $2 / b }' "$result"
done
echo
echo "added to no layer, Ir per command, by part and by the source file of each line (hook: ffi/ trampoline," \
  "arguments, call down; lookup: the thread's command buffer cache; log: command_buffer.rs, command_log.rs and" \
  "their vectors; markers: breadcrumbs.rs; alloc: malloc/free/memcpy; driver: lavapipe; peer: CDL's library;" \
  "other: the app, ash)"
printf '%-32s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n' setting added hook lookup log markers alloc driver peer other
awk '$1 == 0' "$result" > "$tmp/base"
for i in "${!row_names[@]}"; do
  [ "$i" -eq 0 ] && continue
  awk -v n="${row_names[$i]}" -v i="$i" 'NR == FNR { for (k = 2; k <= NF; k++) b[k] = $k; next }
    $1 == i { printf "%-32s", n; for (k = 2; k <= NF; k++) printf " %8.1f", $k - b[k]; printf "\n" }' \
    "$tmp/base" "$result"
done
[ -z "$cdl_note" ] || echo "$cdl_note"
