#!/usr/bin/env bash
# redis-server (Debian's) under LD_PRELOAD=libmallard.so on 127.0.0.1 and a
# free port, without persistence. A fixed command script must give the same
# answers as a server without mallard; then redis-benchmark and
# `redis-cli -r 100000 RPUSH` drive it. mallard must really serve the data:
# the server maps libmallard.so, its RSS grows with the data set, mallard's
# own statistics at exit show the data set allocated, and after FLUSHDB of a
# second data set RSS falls back (mallard returns the memory).
source "$(dirname "$0")/common.sh"
need redis-server redis-cli redis-benchmark

SERVER_PID=
cleanup_hooks+=('[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; wait 2>/dev/null')

port_is_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }

cli() { redis-cli -h 127.0.0.1 -p "$PORT" "$@"; }

# start_server NAME [VAR=VALUE...]: starts redis-server (through env, so
# that $! is the server itself) with those variables on a free port; sets
# SERVER_PID and PORT. Its log goes to $WORK/NAME.log, stderr to
# $WORK/NAME.err.
start_server() {
  local name=$1
  shift
  local attempt
  for attempt in 1 2 3 4 5; do
    PORT=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
    port_is_free "$PORT" || continue
    env "$@" redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
      --enable-debug-command yes --logfile '' >"$WORK/$name.log" 2>"$WORK/$name.err" &
    SERVER_PID=$!
    local i
    for i in $(seq 1 100); do
      if [ "$(cli ping 2>/dev/null)" = PONG ]; then return 0; fi
      kill -0 "$SERVER_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=
  done
  fail "$name: redis-server did not start:
$(tail -n 20 "$WORK/$name.log" "$WORK/$name.err")"
}

stop_server() {
  cli shutdown nosave >/dev/null 2>&1 || true
  local rc=0
  wait "$SERVER_PID" || rc=$?
  SERVER_PID=
  return "$rc"
}

# The fixed script: its answers depend only on the data, never on the
# allocator (no MEMORY USAGE, no INFO).
data_script() {
  cli -r 100000 rpush dummy x >/dev/null
  cli llen dummy
  cli debug populate 200000 key 100
  cli dbsize
  cli get key:123
  cli strlen key:199999
  cli lrange dummy 0 4
  for i in $(seq 1 200); do echo "sadd set$(( i % 7 )) member$i"; echo "hset hash$(( i % 5 )) field$i value$i"; done | cli >/dev/null
  cli scard set1
  cli smembers set1 | sort | md5sum
  cli sunion set1 set2 | sort | md5sum
  cli hgetall hash3 | md5sum
  cli keys 'key:1999*' | sort | md5sum
  cli append key:5 tail
  cli getrange key:5 95 120
}

# --- the reference: redis on glibc's malloc (or its bundled allocator) ----
start_server plain
data_script >"$WORK/plain.out"
stop_server || fail "redis-server without mallard exited with an error"

# --- on mallard ------------------------------------------------------------
start_server mallard LD_PRELOAD="$LIB" MALLARD_CONF=stats_print:true
grep -qF "$LIB" "/proc/$SERVER_PID/maps" || fail "redis-server does not map $LIB"
rss_before=$(rss_kb)
data_script >"$WORK/mallard.out"
cmp -s "$WORK/plain.out" "$WORK/mallard.out" || fail "redis answers differ with mallard:
$(diff "$WORK/plain.out" "$WORK/mallard.out" | head -n 20)"
[ "$(cli llen dummy)" = 100000 ] || fail "LLEN dummy is $(cli llen dummy), expected 100000"
rss_data=$(rss_kb)
[ $(( rss_data - rss_before )) -ge 20000 ] ||
  fail "RSS grew by only $(( rss_data - rss_before )) KiB with 200000 keys and a 100000-element list"
echo "redis: same answers with and without mallard; RSS $rss_before -> $rss_data KiB"

LD_PRELOAD="$LIB" redis-benchmark -h 127.0.0.1 -p "$PORT" -q -n 20000 >"$WORK/benchmark.out" 2>&1 ||
  fail "redis-benchmark failed: $(tail -n 20 "$WORK/benchmark.out")"
grep -q "requests per second" "$WORK/benchmark.out" || fail "redis-benchmark printed no results: $(cat "$WORK/benchmark.out")"
kill -0 "$SERVER_PID" || fail "redis-server died during redis-benchmark: $(tail -n 20 "$WORK/mallard.err")"
[ "$(cli llen dummy)" = 100000 ] || fail "LLEN dummy changed during the benchmark"
[ "$(cli strlen key:123)" = 100 ] || fail "key:123 changed during the benchmark"
sed 's/^/redis-benchmark: /' "$WORK/benchmark.out" | tr '\r' '\n' | grep -a "requests per second" | head -n 30

# A second data set in database 1, then FLUSHDB: the memory goes back to the
# OS after mallard's purge delay (a few PINGs keep the server doing work).
rss_base=$(rss_kb)
cli -n 1 debug populate 200000 other 200 >/dev/null
rss_peak=$(rss_kb)
cli -n 1 flushdb >/dev/null
for i in $(seq 1 50); do
  cli ping >/dev/null
  rss_now=$(rss_kb)
  [ $(( rss_now - rss_base )) -le $(( (rss_peak - rss_base) / 2 )) ] && break
  sleep 0.1
done
echo "redis: FLUSHDB of a second data set: RSS $rss_base -> $rss_peak -> $rss_now KiB"
[ $(( rss_now - rss_base )) -le $(( (rss_peak - rss_base) / 2 )) ] ||
  fail "RSS stayed at $rss_now KiB after FLUSHDB (base $rss_base KiB, peak $rss_peak KiB): memory not returned"

stop_server || fail "redis-server on mallard exited with an error: $(tail -n 20 "$WORK/mallard.err")"
# mallard's own statistics at exit: the data set (~30 MB) is allocated.
allocated=$(largest_stat allocated "$WORK/mallard.err")
[ "$allocated" -ge 20000000 ] || fail "mallard's statistics at exit show $allocated bytes allocated, expected >= 20 MB:
$(cat "$WORK/mallard.err")"
echo "redis: mallard held $allocated bytes for the server at exit"
