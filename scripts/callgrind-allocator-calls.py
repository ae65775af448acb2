#!/usr/bin/env python3
"""Instructions a program spent inside its calls to the allocator.

Reads a callgrind output file and sums the inclusive cost of every call made
from PROGRAM's own code (the object file at PROGRAM) to the malloc API: any
function of the object ALLOCATOR (the preloaded library, matched by the end of
its path), or a function named like a malloc entry point wherever it lives
(glibc's malloc_usable_size, which a forwarding shim leaves to libc). Calls
that go through a PLT stub are followed through it: callgrind files the stub
under an object named '???' and the allocator call under the stub.

usage: callgrind-allocator-calls.py CALLGRIND_OUT PROGRAM ALLOCATOR
prints: the instructions, one integer
"""
import re
import sys

MALLOC_API = {"malloc", "free", "calloc", "realloc", "reallocarray", "malloc_usable_size", "posix_memalign",
              "aligned_alloc", "memalign", "valloc", "pvalloc", "cfree"}
NAME_SPACE = {"ob": "ob", "cob": "ob", "fn": "fn", "cfn": "fn"}  # the rest share the file-name space
SPEC = re.compile(r"(ob|cob|fn|cfn|fl|fi|fe|cfi|cfl)=(.*)")
COMPRESSED = re.compile(r"\((\d+)\)(?: (.*))?")


def read_calls(path):
    """Yields (caller object, caller function, callee object, callee function, inclusive Ir) per call site."""
    names = {"ob": {}, "fn": {}, "fl": {}}

    def resolve(kind, text):
        # --compress-strings: "(id) name" the first time, "(id)" after.
        match = COMPRESSED.match(text)
        if not match:
            return text.strip()
        ident, name = match.groups()
        table = names[NAME_SPACE.get(kind, "fl")]
        if name is not None:
            table[ident] = name.strip()
        return table[ident]

    ob = fn = cob = cfn = None
    cost_line_next = False
    with open(path) as lines:
        for line in lines:
            if cost_line_next:
                cost_line_next = False
                # "position Ir": the call's inclusive cost. cob= only appears
                # when the callee's object differs from the caller's.
                yield ob, fn, cob or ob, cfn, int(line.split()[1])
                cob = None
                continue
            spec = SPEC.match(line)
            if spec:
                kind, text = spec.groups()
                value = resolve(kind, text)
                if kind == "ob":
                    ob = value
                elif kind == "cob":
                    cob = value
                elif kind == "cfn":
                    cfn = value
                elif kind == "fn":
                    fn, cob = value, None
            elif line.startswith("calls="):
                cost_line_next = True


def main():
    path, program, allocator = sys.argv[1:4]
    calls = list(read_calls(path))

    def is_allocator(obj, function):
        return obj.endswith(allocator) or function in MALLOC_API

    stubs = {(obj, function) for obj, function, callee_obj, callee, _ in calls
             if obj == "???" and is_allocator(callee_obj, callee)}
    total = sum(cost for obj, _, callee_obj, callee, cost in calls
                if obj == program and (is_allocator(callee_obj, callee) or (callee_obj, callee) in stubs))
    print(total)


if __name__ == "__main__":
    main()
