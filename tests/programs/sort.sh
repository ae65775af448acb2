#!/usr/bin/env bash
# sort(1) over a generated 200,000-line file, in several modes (numeric,
# keyed, unique, parallel with a small buffer so that it merges runs).
source "$(dirname "$0")/common.sh"
need sort awk

awk 'BEGIN { srand(42); for (i = 0; i < 200000; i++)
  printf "%d w%d %08x %s\n", int(rand() * 1000000), int(rand() * 5000), int(rand() * 4000000000), substr("abcdefghijklmnopqrstuvwxyz", 1 + int(rand() * 26)) }' >"$WORK/input.txt"

sort_all() {
  sort "$1" | md5sum
  sort -n "$1" | md5sum
  sort -k2,2 -k1,1n "$1" | md5sum
  sort -u -k4,4 "$1" | md5sum
  sort --parallel=4 -S 1M -T . "$1" | md5sum
  sort -r -k3,3 "$1" | head -n 3
}
export -f sort_all
compare_runs sort 1048576 bash -c 'sort_all "$0"' "$WORK/input.txt"
