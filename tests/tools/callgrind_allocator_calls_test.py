#!/usr/bin/env python3
"""Test of scripts/callgrind-allocator-calls.py on a callgrind file written
here, in the format callgrind writes (compressed names, cob= only where the
callee's object differs, calls through a PLT stub filed under '???').

usage: callgrind_allocator_calls_test.py PATH/TO/callgrind-allocator-calls.py
"""
import os
import subprocess
import sys
import tempfile

PROGRAM = "/usr/bin/server"
ALLOCATOR = "/usr/lib/liballoc.so.1.0"

# Calls made from the program's code, with the inclusive cost of each:
#   zmalloc -> malloc_size (allocator, direct; mimalloc's name)    100  counted
#   zmalloc -> stub -> free (allocator, through the PLT)           200  counted
#   zmalloc -> stub -> malloc_usable_size (libc, by its name)       40  counted
#   zmalloc -> memcpy (libc, not the malloc API)                   500  not counted
#   main -> zmalloc (inside the program)                          9999  not counted
# and from elsewhere:
#   libssl's ssl_new -> malloc_size (not the program's call)        70  not counted
#   the stub's own calls (counted once, through the program's call to it)
CALLGRIND = f"""# callgrind format
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir

ob=(1) {PROGRAM}
fl=(1) ???
fn=(1) zmalloc
0 10
cob=(2) {ALLOCATOR}
cfi=(1)
cfn=(2) malloc_size
calls=5 0
0 100
cob=(3) ???
cfi=(1)
cfn=(3) 0x0000000000001020
calls=4 0
0 200
cob=(3)
cfi=(1)
cfn=(4) 0x0000000000001030
calls=2 0
0 40
cob=(4) /usr/lib/libc.so.6
cfi=(1)
cfn=(5) memcpy
calls=3 0
0 500

fn=(6) main
0 5
cfn=(1)
calls=1 0
0 9999

ob=(3)
fn=(3)
0 4
cob=(2)
cfi=(1)
cfn=(7) free
calls=4 0
0 196

fn=(4)
0 2
cob=(4)
cfi=(1)
cfn=(8) malloc_usable_size
calls=2 0
0 38

ob=(5) /usr/lib/libssl.so.3
fn=(9) ssl_new
0 1
cob=(2)
cfi=(1)
cfn=(2)
calls=1 0
0 70

ob=(2)
fn=(2)
0 100
fn=(7)
0 196
ob=(4)
fn=(8)
0 38
fn=(5)
0 500

totals: 11275
"""


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "callgrind.out")
        with open(path, "w") as out:
            out.write(CALLGRIND)
        result = subprocess.run([sys.executable, script, path, PROGRAM, ALLOCATOR], capture_output=True, text=True)
        if result.returncode != 0:
            print("failed:", result.stderr)
            return 1
        got = result.stdout.strip()
        if got != "340":
            print(f"expected 340 (100 direct + 200 through the PLT + 40 by name), got {got!r}")
            return 1
        # Another library as the allocator: only the calls by name are left
        # (free through the stub, malloc_usable_size), not malloc_size.
        result = subprocess.run([sys.executable, script, path, PROGRAM, "/usr/lib/libother.so"], capture_output=True,
                                text=True)
        if result.stdout.strip() != "240":
            print(f"expected 240 by names alone, got {result.stdout.strip()!r}")
            return 1
        result = subprocess.run([sys.executable, script, path, "/usr/bin/other", ALLOCATOR], capture_output=True,
                                text=True)
        if result.stdout.strip() != "0":
            print(f"expected 0 for a program that made no calls, got {result.stdout.strip()!r}")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
