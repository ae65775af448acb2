# Sourced by every real-program test. Usage: test.sh /path/to/libmallard.so
#
# Each test runs a program twice, without and with LD_PRELOAD=libmallard.so,
# and compares what it prints. The preloaded run also sets
# MALLARD_CONF=stats_print:true, so that every process that really ran on
# mallard prints mallard's statistics on stderr at exit: the test checks them
# to prove that mallard, not glibc, served the program's memory.
# Exit codes: 0 pass, 1 fail, 77 skip (program not installed: `make deps`
# installs everything these tests need).
set -euo pipefail

LIB=$(readlink -f "${1:?usage: $0 /path/to/libmallard.so}")
[ -f "$LIB" ] || { echo "FAIL: $LIB does not exist" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/mallard-program.XXXXXX")
cleanup_hooks=()
cleanup() {
  local hook
  for hook in "${cleanup_hooks[@]+"${cleanup_hooks[@]}"}"; do eval "$hook" || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

skip() {
  echo "SKIP: $*"
  exit 77
}

# need PROGRAM...: skip the test when one is not installed.
need() {
  local p
  for p in "$@"; do
    command -v "$p" >/dev/null 2>&1 || skip "$p is not installed (make deps installs it)"
  done
}

# The preload takes: a process started with LD_PRELOAD maps libmallard.
check_preload() {
  LD_PRELOAD="$LIB" cat /proc/self/maps >"$WORK/preload-maps" || fail "cat /proc/self/maps under LD_PRELOAD failed"
  grep -qF "$LIB" "$WORK/preload-maps" || fail "LD_PRELOAD=$LIB did not load it:
$(cat "$WORK/preload-maps")"
  # cat is a C program: mallard must not bring a C++ runtime into it.
  if grep -E "libstdc\+\+|libgcc_s|libm\.so" "$WORK/preload-maps"; then
    fail "LD_PRELOAD=$LIB loaded a C++ runtime into a C program"
  fi
}

# with_mallard CMD...: runs CMD on mallard, statistics printed at exit.
with_mallard() {
  LD_PRELOAD="$LIB" MALLARD_CONF=stats_print:true "$@"
}

# largest_stat FIELD FILE: the largest value of mallard's statistic FIELD
# printed at exit in FILE (one block per process), 0 if none.
largest_stat() {
  { grep -Eo "^$1: *[0-9]+" "$2" || true; } | awk -v max=0 '{ if ($2 + 0 > max) max = $2 + 0 } END { print max }'
}

# expect_mallard_served NAME ERRFILE MIN_BYTES: at least one process of the
# run printed mallard's statistics, and one of them had MIN_BYTES or more
# mapped (the memory came from mallard).
expect_mallard_served() {
  local name=$1 err=$2 min=$3
  local blocks mapped
  blocks=$(grep -c "^allocated:" "$err" || true)
  [ "$blocks" -ge 1 ] || fail "$name: no mallard statistics at exit: did the program run on mallard?
$(tail -n 20 "$err")"
  mapped=$(largest_stat mapped "$err")
  [ "$mapped" -ge "$min" ] || fail "$name: mallard mapped only $mapped bytes (expected >= $min)"
  echo "$name: $blocks process(es) ran on mallard, up to $mapped bytes mapped"
}

# compare_runs NAME MIN_BYTES CMD...: runs CMD in $WORK/NAME.plain and
# $WORK/NAME.mallard (created, and the working directory of each run), and
# requires the same exit status and the same stdout.
compare_runs() {
  local name=$1 min=$2
  shift 2
  local plain="$WORK/$name.plain" mallard="$WORK/$name.mallard" plain_rc=0 mallard_rc=0
  mkdir -p "$plain" "$mallard"
  (cd "$plain" && "$@") >"$plain.out" 2>"$plain.err" || plain_rc=$?
  (cd "$mallard" && with_mallard "$@") >"$mallard.out" 2>"$mallard.err" || mallard_rc=$?
  [ "$plain_rc" -eq 0 ] || fail "$name: the run without mallard failed ($plain_rc):
$(tail -n 20 "$plain.err")"
  [ "$mallard_rc" -eq 0 ] || fail "$name: the run on mallard failed ($mallard_rc), glibc's did not:
$(tail -n 40 "$mallard.err")"
  cmp -s "$plain.out" "$mallard.out" || fail "$name: output differs with mallard:
$(diff "$plain.out" "$mallard.out" | head -n 20)"
  [ -s "$plain.out" ] || fail "$name: the program printed nothing: nothing was compared"
  expect_mallard_served "$name" "$mallard.err" "$min"
  echo "$name: same output with and without mallard ($(wc -c <"$plain.out") bytes)"
}

check_preload
