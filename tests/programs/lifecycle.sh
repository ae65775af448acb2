#!/usr/bin/env bash
# Runs the lifecycle program (linked with libmallard) with mallard's
# statistics printed at exit, after everything else it does during exit.
# Usage: lifecycle.sh /path/to/libmallard.so /path/to/lifecycle
source "$(dirname "$0")/common.sh"
PROGRAM=${2:?usage: $0 libmallard.so lifecycle}
rc=0
MALLARD_CONF=stats_print:true timeout 60 "$PROGRAM" >"$WORK/out" 2>"$WORK/err" || rc=$?
cat "$WORK/out" "$WORK/err"
[ "$rc" -eq 0 ] || fail "lifecycle exited with $rc"
[ "$(tail -n 1 "$WORK/out")" = "lifecycle: ok" ] || fail "lifecycle did not finish its checks"
grep -q "^allocated:" "$WORK/err" || fail "no mallard statistics at exit"
