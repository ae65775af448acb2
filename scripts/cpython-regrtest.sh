#!/usr/bin/env bash
# CPython's own regression suite with libmallard preloaded: a real program's
# tens of thousands of tests, every object through malloc (PYTHONMALLOC=malloc
# turns pymalloc off), threads, fork, subprocesses (which inherit the
# preload), ctypes and C extensions. A test file can fail for reasons of the
# machine (no network, a sandbox's sockets), so the files that fail under
# mallard run again without it, and only those that pass there count
# against mallard. Not part of `make test`: the suite takes about 25 minutes
# on 2 cores.
#
# usage: scripts/cpython-regrtest.sh [BUILD_DIR]
#   PYTHON: a CPython whose `test` package holds the suite (Debian's
#     python3 has it once libpython3.11-testsuite is installed);
#   REGRTEST_ARGS: more arguments for `python -m test`, in both runs: "-x
#     test_socket" where a test hangs without mallard too, or test names to
#     run part of the suite ("test_dict test_threading").
# Exits 0 when no test file fails under mallard alone.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
mallard=$PWD/$build/src/libmallard.so
python=${PYTHON:-python3}
[ -e "$mallard" ] || { echo "cpython-regrtest: $mallard not built (make build)" >&2; exit 2; }
if ! "$python" -c 'import test.test_dict' 2>/dev/null; then
  echo "cpython-regrtest: $python has no regression suite (apt-get install libpython3.11-testsuite, or set PYTHON)" >&2
  exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2206
extra=(${REGRTEST_ARGS:-})
regrtest=(-m test -j2 --timeout 600 -u "cpu,decimal,subprocess,tzdata" "${extra[@]}")

# The files regrtest's summary lists as failed ("N tests failed:" and the
# indented names after it), one a line.
failed_files() {
  awk '/^[0-9]+ tests? failed:/ {on = 1; next} on && /^    / {for (i = 1; i <= NF; i++) print $i; next} on {on = 0}' "$1" | sort -u
}

echo "== CPython $("$python" -c 'import platform; print(platform.python_version())') regression suite under $mallard"
status=0
LD_PRELOAD=$mallard PYTHONMALLOC=malloc "$python" "${regrtest[@]}" >"$work/mallard.log" 2>&1 || status=$?
sed -n '/== Tests result/,$p' "$work/mallard.log"
failed_files "$work/mallard.log" >"$work/failed"
if [ ! -s "$work/failed" ]; then
  # A nonzero status with no failed file is regrtest itself failing.
  [ "$status" -eq 0 ] || { tail -40 "$work/mallard.log"; exit 1; }
  echo "== every test file passed under mallard"
  exit 0
fi
echo "== again without mallard: $(tr '\n' ' ' <"$work/failed")"
mapfile -t files <"$work/failed"
PYTHONMALLOC=malloc "$python" "${regrtest[@]}" "${files[@]}" >"$work/glibc.log" 2>&1 || true
failed_files "$work/glibc.log" >"$work/failed_glibc"
comm -23 "$work/failed" "$work/failed_glibc" >"$work/only_mallard"
if [ -s "$work/only_mallard" ]; then
  echo "== failed under mallard only: $(tr '\n' ' ' <"$work/only_mallard")"
  grep -A40 -F -f "$work/only_mallard" "$work/mallard.log" | head -200
  exit 1
fi
echo "== each of them fails without mallard too: none fails under mallard alone"
