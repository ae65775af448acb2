#!/usr/bin/env bash
# Counts, with callgrind, the instructions real programs execute inside their
# calls to the allocator, under each allocator: perl, python3, sqlite3, git
# and gcc's C compiler, each on one fixed input. A count does not move with
# the machine's speed the way the workloads' timings do, so it ranks close
# allocators on real programs; this is how the twenty-fifth session found
# malloc_usable_size's and realloc's costs (DESIGN.md "Measured changes").
# Prints two markdown tables (inside allocator calls, whole program).
# usage: scripts/program-instructions.sh [BUILD_DIR] (for libmallard.so and the glibc shim)
# PROGRAM_INSTRUCTIONS_ALLOCATORS="a b": only those allocators (default: all of allocators.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${1:-build}
mallard=$root/$build/src/libmallard.so
# These programs call glibc's malloc directly; the shim, which forwards the
# malloc API to it, gives those calls an object of their own to be counted by.
glibc_shim=$root/$build/tools/libmallard-glibc-shim.so
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source scripts/allocators.sh
command -v valgrind >/dev/null || { echo "program-instructions: valgrind not installed" >&2; exit 1; }

# The inputs. Each program runs natively in about 0.05-0.2 s.
cat >"$work/hash.pl" <<'EOF'
my %h;
for my $i (1 .. 20000) {
  my $k = join "", map { chr(97 + ($i * 7 + $_ * 13) % 26) } 1 .. 6;
  $h{$k . $i % 977} .= "$i,";
}
my @keys = sort keys %h;
my $s = join ";", map { "$_=$h{$_}" } @keys;
(my $u = $s) =~ s/(\d+)/<$1>/g;
print scalar(@keys), " ", length($u), "\n";
EOF
cat >"$work/roundtrip.py" <<'EOF'
import json
records = [{"id": i, "name": "user%d" % i, "tags": ["t%d" % (i % 7), "g%d" % (i % 13)], "score": i * 0.5}
           for i in range(8000)]
text = json.dumps(records)
back = json.loads(text)
back.sort(key=lambda r: (r["tags"][1], -r["id"]))
print(len(text), back[0]["id"])
EOF
cat >"$work/table.sql" <<'EOF'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
INSERT INTO t SELECT i, printf('%08x-%d', (i * 2654435761) % 4294967291, i), i * 1.5 FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*), sum(length(b)) FROM t WHERE b > '8';
SELECT substr(b, 1, 2), count(*) FROM t GROUP BY 1 ORDER BY 2 DESC LIMIT 2;
EOF
for i in $(seq 15); do
  echo "int f$i(int* a, int n) { int s = 0; for (int j = 0; j < n; ++j) { s += a[j] * $i + (a[j] >> ($i % 7));" \
       "if (a[j] % $((i % 5 + 2)) == 0) s ^= j; } switch (s & 7) { case 1: s += $((i * 3)); break;" \
       "case 3: s -= $i; break; default: s *= 3; } return s; }"
done >"$work/generated.c"

# program NAME OBJECT COMMAND...: OBJECT is the file whose calls are counted
# (the executable, or the library that holds the program's code).
programs=() descriptions=()
declare -A object command
program() {
  local name=$1 obj=$2 description=$3
  shift 3
  programs+=("$name")
  descriptions+=("$name: $description")
  object[$name]=$obj
  command[$name]=$(printf '%q ' "$@")
}
resolve() { readlink -f "$(command -v "$1")"; }
if command -v perl >/dev/null; then
  # A fixed hash seed: the same buckets, and so the same work, in every run.
  export PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0
  program perl "$(resolve perl)" "a hash of 20,000 growing strings, sorted, joined, a global regex substitution" \
    "$(resolve perl)" "$work/hash.pl"
fi
# Debian's python3, not a version manager's shim script in front of it.
python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3 || true)
if [ -n "$python" ]; then
  export PYTHONHASHSEED=0  # as perl's: the same dict layouts in every run
  program python3 "$(readlink -f "$python")" "8,000 records to JSON and back, sorted" "$(readlink -f "$python")" "$work/roundtrip.py"
fi
if command -v sqlite3 >/dev/null; then
  sqlite_library=$(ldd "$(resolve sqlite3)" | awk '/libsqlite3/ { print $3 }')
  program sqlite3 "$(readlink -f "$sqlite_library")" "20,000 rows into an in-memory table, an index, two queries" \
    "$(resolve sqlite3)" :memory: ".read $work/table.sql"
fi
if command -v git >/dev/null && head=$(git -C "$root" rev-parse HEAD 2>/dev/null); then
  program git "$(resolve git)" "log -p of this repository's last 40 commits" \
    "$(resolve git)" -C "$root" --no-pager log -p -n 40 --no-color "$head"
fi
if cc1=$(gcc -print-prog-name=cc1 2>/dev/null) && [ -x "$cc1" ]; then
  program cc1 "$(readlink -f "$cc1")" "gcc's C compiler, -O2, on 15 generated functions" \
    "$cc1" -quiet -O2 "$work/generated.c" -o "$work/generated.s"
fi

# count NAME LIB: prints "all in_allocator" for program NAME with LIB
# preloaded, or an error on stderr and returns 1. The preload must show up
# in callgrind's object list, and the program's calls into it must count.
count() {
  local name=$1 lib=$2 out=$work/callgrind.out log=$work/valgrind.log
  rm -f "$out"
  if ! eval "LD_PRELOAD=$(printf '%q' "$lib") valgrind --tool=callgrind --callgrind-out-file=$out --log-file=$log \
       ${command[$name]}" >/dev/null 2>"$work/stderr"; then
    echo "program-instructions: $name failed under valgrind: $(tail -n 3 "$log" "$work/stderr")" >&2
    return 1
  fi
  if ! grep -qF "$(readlink -f "$lib")" "$out"; then
    echo "program-instructions: $name: the preload did not take ($lib is not in callgrind's objects)" >&2
    return 1
  fi
  local all in_allocator
  all=$(sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log")
  in_allocator=$(python3 scripts/callgrind-allocator-calls.py "$out" "${object[$name]}" "$(readlink -f "$lib")")
  if [ -z "$all" ] || [ "${in_allocator:-0}" -le 0 ]; then
    echo "program-instructions: $name: no count (all '$all', in allocator calls '$in_allocator')" >&2
    return 1
  fi
  echo "$all $in_allocator"
}

declare -A all in_allocator
names=()
for name in ${PROGRAM_INSTRUCTIONS_ALLOCATORS:-${allocator_names[@]}}; do
  lib=$(allocator_library "$name" "$mallard")
  [ "$name" = glibc ] && lib=$glibc_shim
  if [ ! -e "$lib" ]; then echo "program-instructions: $name: $lib not found" >&2; continue; fi
  names+=("$name")
  for p in "${programs[@]}"; do
    if counts=$(count "$p" "$lib"); then
      read -r all["$p,$name"] in_allocator["$p,$name"] <<<"$counts"
    fi
  done
done

# table COUNTS: one row per program, the count in millions per allocator,
# then mallard's over the lowest peer's.
table() {
  local -n counts=$1
  local header="| program |" rule="|---|" p name row best ratio
  for name in "${names[@]}"; do header+=" $name |"; rule+="---|"; done
  echo "$header mallard ×lowest peer |"
  echo "$rule---|"
  for p in "${programs[@]}"; do
    row="| $p |" best=
    for name in "${names[@]}"; do
      if [ -n "${counts[$p,$name]:-}" ]; then
        row+=$(awk -v n="${counts[$p,$name]}" 'BEGIN { printf " %.2fM |", n / 1e6 }')
        if [ "$name" != mallard ] && { [ -z "$best" ] || [ "${counts[$p,$name]}" -lt "${counts[$p,$best]}" ]; }; then
          best=$name
        fi
      else
        row+=" failed |"
      fi
    done
    ratio="-"
    if [ -n "${counts[$p,mallard]:-}" ] && [ -n "$best" ]; then
      ratio=$(awk -v m="${counts[$p,mallard]}" -v b="${counts[$p,$best]}" -v peer="$best" \
        'BEGIN { printf "%.3f (%s)", m / b, peer }')
    fi
    echo "$row $ratio |"
  done
}

echo "Inside the program's calls to the allocator (malloc, free, realloc, calloc, malloc_usable_size, the aligned ones):"
echo
table in_allocator
echo
echo "The whole program (start-up and exit included):"
echo
table all
echo
echo "Instructions counted by callgrind; glibc's row preloads the shim that forwards the malloc API to glibc's malloc (a jump more a call). What each program runs:"
echo
for d in "${descriptions[@]}"; do echo "- $d"; done
