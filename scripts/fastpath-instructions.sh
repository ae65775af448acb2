#!/usr/bin/env bash
# Counts the instructions of one malloc(n)+free pair under each allocator with
# callgrind (stable on any machine: counts, not time). Prints a markdown table.
# usage: scripts/fastpath-instructions.sh [path/to/libmallard.so]
set -euo pipefail
cd "$(dirname "$0")/.."
mallard=${1:-build/src/libmallard.so}
bin=$(mktemp -d)/fastpath_pair
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -O2 bench/fastpath_pair.c -o "$bin"
source scripts/allocators.sh
count() {  # lib size -> instructions per pair, one decimal (loop overhead included, ~9)
  local out
  out=$(LD_PRELOAD=$1 valgrind --tool=callgrind --toggle-collect=pair_loop --callgrind-out-file=/dev/null "$bin" "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  awk -v n="$out" 'BEGIN { printf "%.1f", n / 1000000 }'
}
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }
declare -A pair16 pair24
echo "| allocator | malloc(16)+free | malloc(24)+free |"
echo "|---|---|---|"
for name in "${allocator_names[@]}"; do
  lib=$(allocator_library "$name" "$mallard")
  if [ -n "$lib" ] && [ ! -e "$lib" ]; then echo "| $name | not installed | |"; continue; fi
  pair16[$name]=$(count "$lib" 16)
  pair24[$name]=$(count "$lib" 24)
  echo "| $name | ${pair16[$name]} | ${pair24[$name]} |"
done
echo
echo "Instructions per pair, counted by callgrind over 10^6 pairs (the loop itself adds about 9; a fraction is a path some pairs take, such as a refill)."
# The issue #4 target: no more instructions than mimalloc for either pair.
if [ -n "${pair16[mimalloc]:-}" ] && [ -n "${pair16[mallard]:-}" ]; then
  verdict="not met"
  if at_most "${pair16[mallard]}" "${pair16[mimalloc]}" && at_most "${pair24[mallard]}" "${pair24[mimalloc]}"; then verdict="met"; fi
  echo
  echo "- mallard's pairs at most mimalloc's: malloc(16) ${pair16[mallard]} vs ${pair16[mimalloc]}, malloc(24) ${pair24[mallard]} vs ${pair24[mimalloc]} — **$verdict**"
fi
