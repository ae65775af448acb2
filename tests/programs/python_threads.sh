#!/usr/bin/env bash
# python3, multi-threaded: 32 threads build strings and dicts at once; the
# objects one thread drops are often freed by another (reference counts
# reach zero wherever the last reference goes). PYTHONMALLOC=malloc sends
# every object to malloc.
source "$(dirname "$0")/common.sh"
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=$(command -v python3 || true)
[ -n "$PYTHON" ] || skip "python3 is not installed (make deps installs it)"

cat >"$WORK/workload.py" <<'PY'
import hashlib, queue, threading
results = [None] * 32
handoff = queue.Queue(maxsize=256)

def build(i):
    parts = []
    for j in range(20000):
        parts.append(("t%d-%d-" % (i, j)) * (j % 5 + 1))
        if j % 50 == 0:
            handoff.put(parts[-1] * 3)       # freed by a consumer thread
    index = {p: len(p) for p in parts[::3]}
    results[i] = hashlib.sha256("".join(parts).encode()).hexdigest() + ":%d" % len(index)

def consume(out):
    total = 0
    while True:
        item = handoff.get()
        if item is None:
            break
        total += len(item)
    out.append(total)

totals = []
consumers = [threading.Thread(target=consume, args=(totals,)) for _ in range(4)]
builders = [threading.Thread(target=build, args=(i,)) for i in range(32)]
for t in consumers + builders:
    t.start()
for t in builders:
    t.join()
for _ in consumers:
    handoff.put(None)
for t in consumers:
    t.join()
print(hashlib.sha256("".join(results).encode()).hexdigest(), sum(totals))
PY
compare_runs python_threads 1048576 env PYTHONMALLOC=malloc PYTHONHASHSEED=0 "$PYTHON" "$WORK/workload.py"
