#!/usr/bin/env bash
# Counts the instructions Debian's redis-server executes for one fixed
# redis-benchmark request stream under each allocator, with callgrind.
# redis-benchmark's requests/s in the `redis` workload spreads 1.5-2x from
# run to run for every allocator (client and server share the machine's
# CPUs), so its medians cannot tell close allocators apart; the count can:
# the same requests, the same server, only the allocator differs.
# Two counts per allocator: everything the server executed, and the part spent
# inside its calls to the allocator (scripts/callgrind-allocator-calls.py).
# Prints a markdown table.
# usage: scripts/redis-instructions.sh [BUILD_DIR] (for libmallard.so and the glibc shim)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mallard=$PWD/$build/src/libmallard.so
# redis-server links jemalloc: glibc's malloc is reached through the shim, as in the workload.
glibc_shim=$PWD/$build/tools/libmallard-glibc-shim.so
requests=${REDIS_INSTRUCTIONS_REQUESTS:-30000}  # per test; 4 tests
tests=set,get,lpush,lpop
work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
source scripts/allocators.sh

for tool in valgrind redis-server redis-benchmark redis-cli python3; do
  command -v "$tool" >/dev/null || { echo "redis-instructions: $tool not installed" >&2; exit 1; }
done

# As in the workload: one list entry per quicklist node, so that every LPUSH
# allocates (the seed's one million tiny list entries).
list_setting=--list-max-listpack-size
major=$(redis-server --version | sed -n 's/.* v=\([0-9]*\)\..*/\1/p')
if [ -n "$major" ] && [ "$major" -lt 7 ]; then list_setting=--list-max-ziplist-size; fi

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# count LIB: writes "server_instructions allocator_instructions" to
# $work/counts, or an error message to stderr and returns 1 (with no server
# left behind). Active rehashing is off: it rehashes for 1 ms of wall time a
# tick, which callgrind's slowdown would turn into a count that varies from
# run to run.
count() {
  local lib=$1 port log=$work/valgrind.log out=$work/callgrind.out
  rm -f "$work/counts"
  port=$(free_port)
  LD_PRELOAD=$lib valgrind --tool=callgrind --callgrind-out-file="$out" --log-file="$log" \
    redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --protected-mode no \
    --daemonize no --loglevel warning --dir "$work" --activerehashing no "$list_setting" 1 >/dev/null 2>&1 &
  server_pid=$!
  local up=0
  for _ in $(seq 240); do
    if redis-cli -p "$port" ping >/dev/null 2>&1; then up=1; break; fi
    sleep 0.25
  done
  local error=
  if [ $up = 0 ]; then
    error="redis-server did not start under valgrind: $(tail -3 "$log" 2>/dev/null)"
  elif ! grep -qF "$(readlink -f "$lib")" "/proc/$server_pid/maps"; then
    error="the preload did not take: $lib is not mapped in redis-server"
  elif ! redis-benchmark -p "$port" -n "$requests" -c 50 -P 16 -r 100000 -t "$tests" --csv >"$work/bench.csv" 2>&1; then
    error="redis-benchmark failed: $(tail -3 "$work/bench.csv")"
  fi
  if [ -n "$error" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    echo "redis-instructions: $error" >&2
    return 1
  fi
  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  wait "$server_pid" || true
  server_pid=
  local server allocator
  server=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log")
  allocator=$(python3 scripts/callgrind-allocator-calls.py "$out" "$(readlink -f "$(command -v redis-server)")" "$(readlink -f "$lib")")
  echo "$server $allocator" >"$work/counts"
}

declare -A total in_allocator
names=()
for name in "${allocator_names[@]}"; do
  lib=$(allocator_library "$name" "$mallard")
  [ "$name" = glibc ] && lib=$glibc_shim
  if [ ! -e "$lib" ]; then echo "redis-instructions: $name: $lib not found" >&2; continue; fi
  count "$lib" || { echo "redis-instructions: $name failed" >&2; continue; }
  read -r n a <"$work/counts"
  [ -n "$n" ] && [ -n "$a" ] || { echo "redis-instructions: $name: no count from callgrind" >&2; continue; }
  total[$name]=$n
  in_allocator[$name]=$a
  names+=("$name")
done

all_requests=$((requests * 4))
# lowest_peer COUNTS: the allocator other than mallard with the lowest count
# in the associative array named COUNTS.
lowest_peer() {
  local -n counts=$1
  local name best=
  for name in "${names[@]}"; do
    [ "$name" = mallard ] && continue
    if [ -z "$best" ] || [ "${counts[$name]}" -lt "${counts[$best]}" ]; then best=$name; fi
  done
  echo "$best"
}
best_peer=$(lowest_peer total)
best_in_allocator=$(lowest_peer in_allocator)
echo "| allocator | server, all | per request | in allocator calls | per request | server / mallard's |"
echo "|---|---|---|---|---|---|"
for name in "${names[@]}"; do
  awk -v name="$name" -v n="${total[$name]}" -v a="${in_allocator[$name]}" -v r="$all_requests" -v m="${total[mallard]:-0}" 'BEGIN {
    ratio = m > 0 ? sprintf("%.3f", n / m) : "-"
    printf "| %s | %.1fM | %.0f | %.1fM | %.0f | %s |\n", name, n / 1e6, n / r, a / 1e6, a / r, ratio }'
done
echo
echo "Instructions redis-server executed (start-up and shutdown included, about 21M), and those inside its calls to malloc, free, realloc, calloc and malloc_usable_size, with \`$list_setting 1\`, for redis-benchmark -n $requests -c 50 -P 16 -r 100000 -t $tests (the \`redis\` workload's request mix, $all_requests requests), counted by callgrind. The server's count varies by about 1% from run to run (how the pipelined requests arrive)."
if [ -n "${total[mallard]:-}" ] && [ -n "$best_peer" ]; then
  awk -v m="${total[mallard]}" -v b="${total[$best_peer]}" -v peer="$best_peer" \
      -v ma="${in_allocator[mallard]}" -v ba="${in_allocator[$best_in_allocator]}" -v apeer="$best_in_allocator" 'BEGIN {
    printf "\n- server, all: mallard %.1fM against the lowest peer, %s, %.1fM: %.3fx\n", m / 1e6, peer, b / 1e6, m / b
    printf "- in allocator calls: mallard %.1fM against the lowest peer, %s, %.1fM: %.3fx\n", ma / 1e6, apeer, ba / 1e6, ma / ba }'
fi
