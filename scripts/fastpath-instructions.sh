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
count() {  # lib size -> instructions per pair (loop overhead included, ~9)
  local out
  out=$(LD_PRELOAD=$1 valgrind --tool=callgrind --toggle-collect=pair_loop --callgrind-out-file=/dev/null "$bin" "$2" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  echo $(( (out + 500000) / 1000000 ))
}
echo "| allocator | malloc(16)+free | malloc(24)+free |"
echo "|---|---|---|"
for name in "${allocator_names[@]}"; do
  lib=$(allocator_library "$name" "$mallard")
  if [ -n "$lib" ] && [ ! -e "$lib" ]; then echo "| $name | not installed | |"; continue; fi
  echo "| $name | $(count "$lib" 16) | $(count "$lib" 24) |"
done
echo
echo "Instructions per pair, counted by callgrind over 10^6 pairs (the loop itself adds about 9)."
