#!/usr/bin/env bash
# Runs stl_bench (bench/stl) under each allocator through LD_PRELOAD and
# prints seed 003's table: std-allocator time / mallard-STL time, 32 threads.
#
# usage: scripts/stl-bench.sh [path/to/libmallard.so]
#   default library: build/src/libmallard.so (skipped, with a note, if absent)
# environment:
#   STL_BENCH            the binary (default: build/bench/stl/stl_bench, then build-stl/...)
#   STL_BENCH_MIN_TIME   seconds per benchmark (default 0.2; a full run of the
#                        five allocators then takes about 2 minutes)
#   STL_BENCH_OUT        where the JSON results and table.md go (default build/stl-bench)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mallard_library=${1:-$root/build/src/libmallard.so}
min_time=${STL_BENCH_MIN_TIME:-0.2}
out_dir=${STL_BENCH_OUT:-$root/build/stl-bench}
source "$root/scripts/allocators.sh"

bench=${STL_BENCH:-}
if [ -z "$bench" ]; then
  for candidate in "$root/build/bench/stl/stl_bench" "$root/build-stl/bench/stl/stl_bench"; do
    if [ -x "$candidate" ]; then bench=$candidate; break; fi
  done
fi
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "stl-bench: stl_bench not found; build it: cmake --build build --target stl_bench" >&2
  exit 1
fi

mkdir -p "$out_dir"
allocators=(glibc jemalloc tcmalloc mimalloc mallard)
declare -A preload
for name in "${allocators[@]}"; do preload[$name]=$(allocator_library "$name" "$mallard_library"); done

ran=()
notes=()
for name in "${allocators[@]}"; do
  library=${preload[$name]}
  if [ -n "$library" ] && [ ! -e "$library" ]; then
    notes+=("$name skipped: $library does not exist")
    continue
  fi
  echo "stl-bench: $name${library:+ (LD_PRELOAD=$library)}" >&2
  if ! LD_PRELOAD=$library "$bench" --benchmark_min_time="$min_time" \
      --benchmark_out="$out_dir/$name.json" --benchmark_out_format=json >/dev/null 2>"$out_dir/$name.log"; then
    notes+=("$name failed: see $out_dir/$name.log")
    continue
  fi
  ran+=("$name")
done

if [ ${#ran[@]} -eq 0 ]; then
  printf '%s\n' "${notes[@]}" >&2
  exit 1
fi

python3 - "$out_dir" "$bench" "$min_time" "${ran[@]}" -- "${notes[@]}" <<'EOF' | tee "$out_dir/table.md"
import json
import sys

out_dir, bench, min_time = sys.argv[1:4]
rest = sys.argv[4:]
split = rest.index("--")
allocators, notes = rest[:split], rest[split + 1:]

times = {}  # allocator -> benchmark name (without the /real_time/threads suffix) -> ns per iteration
for allocator in allocators:
    with open(f"{out_dir}/{allocator}.json") as f:
        data = json.load(f)
    table = {}
    for b in data["benchmarks"]:
        name = b["name"].split("/real_time")[0]
        scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b.get("time_unit", "ns")]
        table[name] = b["real_time"] * scale
    times[allocator] = table

sizes = ["1MiB", "64KiB", "32KiB", "4KiB", "32B"]
columns = [("mallard STL (inline)", "inline"), ("mallard STL + arena", "arena"),
           ("mallard STL + child arena per request", "child_arena")]

def ratio(allocator, baseline, variant):
    t = times[allocator]
    if baseline in t and variant in t and t[variant] > 0:
        return f"{t[baseline] / t[variant]:.2f}"
    return "n/a"

print(f"std-allocator time / mallard-STL time, 32 threads (higher is better; `{bench.split('/')[-1]} --benchmark_min_time={min_time}` under LD_PRELOAD)")
print()
for title, variant in columns:
    print(f"### {title}")
    print()
    print("| block | " + " | ".join(allocators) + " |")
    print("|---|" + "---:|" * len(allocators))
    for size in sizes:
        cells = [ratio(a, f"block/{size}/std", f"block/{size}/{variant}") for a in allocators]
        print(f"| {size} | " + " | ".join(cells) + " |")
    print()

print("### Per request: small map, vector and hash map (N <= 8), std:: / mallard::inline_*")
print()
print("| workload | " + " | ".join(allocators) + " |")
print("|---|" + "---:|" * len(allocators))
print("| std / inline_* | " + " | ".join(ratio(a, "request/std", "request/inline") for a in allocators) + " |")
print("| std / std::pmr over a child arena | " + " | ".join(ratio(a, "request/std", "request/pmr_arena") for a in allocators) + " |")
print()
print("Absolute times (ns per iteration, wall clock):")
print()
names = sorted({n for a in allocators for n in times[a]})
print("| benchmark | " + " | ".join(allocators) + " |")
print("|---|" + "---:|" * len(allocators))
for n in names:
    print(f"| {n} | " + " | ".join(f"{times[a][n]:.1f}" if n in times[a] else "n/a" for a in allocators) + " |")
for note in notes:
    print()
    print(f"Note: {note}")
EOF
