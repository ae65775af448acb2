#!/usr/bin/env bash
# python3, single-threaded: a large dict and list, strings, sorting, a hash
# of everything. PYTHONMALLOC=malloc sends every object to malloc (pymalloc
# would otherwise serve small objects from its own mmap'd arenas).
source "$(dirname "$0")/common.sh"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=$(command -v python3 || true)
[ -n "$PYTHON" ] || skip "python3 is not installed (make deps installs it)"

cat >"$WORK/workload.py" <<'PY'
import hashlib, random
random.seed(12345)
table = {}
for i in range(300000):
    key = "key%d" % random.randrange(10**9)
    table[key] = [i, str(i) * (i % 7), {"n": i, "s": "v" * (i % 40)}]
for key in list(table)[::2]:          # free half, in insertion order
    del table[key]
blobs = [bytes(random.getrandbits(8) for _ in range(random.randrange(1, 300))) for _ in range(20000)]
text = " ".join(str(x) for x in range(200000))
words = sorted(text.split(), key=lambda w: (len(w), w[::-1]))
digest = hashlib.sha256()
digest.update(repr(sorted(table.items())[:2000]).encode())
for b in blobs:
    digest.update(b)
digest.update(" ".join(words[::97]).encode())
print(len(table), len(blobs), len(words), digest.hexdigest())
PY
compare_runs python 1048576 env PYTHONMALLOC=malloc PYTHONHASHSEED=0 "$PYTHON" "$WORK/workload.py"
