#!/usr/bin/env bash
# The Google Benchmark micro-benchmarks of the fast paths (bench/micro_bench)
# under every allocator, interleaved (rep 1 of every allocator, then rep 2...),
# printed as a Markdown table of the median nanoseconds per operation.
# micro_bench links no allocator: each one, mallard included, is preloaded.
# usage: scripts/micro-bench.sh BUILD_DIR [REPS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/${1:-build}
reps=${2:-3}
bin=$build/bench/micro_bench
if [ ! -x "$bin" ]; then
  echo "micro-bench: $bin was not built (Google Benchmark missing?)" >&2
  exit 1
fi
source "$root/scripts/allocators.sh"
declare -A libs
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
present=()
for name in "${allocator_names[@]}"; do
  lib=$(allocator_library "$name" "$build/src/libmallard.so")
  libs[$name]=$lib
  if [ -n "$lib" ] && [ ! -e "$lib" ]; then continue; fi
  present+=("$name")
done
for rep in $(seq "$reps"); do
  for name in "${present[@]}"; do
    LD_PRELOAD=${libs[$name]} "$bin" --benchmark_min_time=0.2 --benchmark_format=csv 2>/dev/null |
      awk -F, -v alloc="$name" '
        /^"BM_/ { gsub(/"/, "", $1); ns = ($7 != "" && $7 > 0) ? 1e9 / $7 : $4; print alloc "," $1 "," ns }' \
      >> "$tmp/results.csv"
  done
done
# Median per (allocator, benchmark), then one row per benchmark.
sort -t, -k1,1 -k2,2 -k3,3g "$tmp/results.csv" | awk -F, -v order="${present[*]}" '
  function flush() { if (n) median[key] = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2; n = 0 }
  { k = $1 "," $2; if (k != key) { flush(); key = k }; v[++n] = $3
    if (!($2 in seen)) { seen[$2] = 1; rows[++nrows] = $2 } }
  END {
    flush()
    ncols = split(order, cols, " ")
    printf "| benchmark (ns per op, median) |"; for (c = 1; c <= ncols; c++) printf " %s |", cols[c]; print ""
    printf "|---|"; for (c = 1; c <= ncols; c++) printf "---:|"; print ""
    for (r = 1; r <= nrows; r++) {
      best = -1
      for (c = 1; c <= ncols; c++) { m = median[cols[c] "," rows[r]]; if (m != "" && (best < 0 || m < best)) best = m }
      printf "| %s |", rows[r]
      for (c = 1; c <= ncols; c++) {
        m = median[cols[c] "," rows[r]]
        if (m == "") printf " - |"; else printf (m == best ? " **%.1f** |" : " %.1f |"), m
      }
      print ""
    }
  }'
echo
echo "Medians of $reps interleaved runs of \`$(basename "$bin") --benchmark_min_time=0.2\`; bold is the fastest. Lower is better."
