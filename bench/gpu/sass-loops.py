#!/usr/bin/env python3
"""Instruction mix of the loops of one kernel in cuobjdump -sass output.

Usage: bench/gpu/sass-loops.py FILE.sass KERNEL [MIN]

Every backward branch closes a loop; for each loop of at least MIN (50) instructions it prints
the instruction count, the barriers, and the count of each opcode (guards and modifiers
dropped), so that instructions per cell and level follow from the loop's planes, levels and
cells per thread (e.g. 6 planes x 12 levels x 2 cells in j2d5pt's bt=12 round).
"""
import collections
import re
import sys


def kernels(path):
    funcs, cur = {}, None
    for line in open(path):
        m = re.search(r'Function : (\S+)', line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
        if m and cur is not None:
            cur.append((int(m.group(1), 16), m.group(2).strip()))
    return funcs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    funcs = kernels(sys.argv[1])
    name, least = sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 50
    if name not in funcs:
        sys.exit(f"{name}: not in {sys.argv[1]} (kernels: {', '.join(sorted(funcs))})")
    ins = funcs[name]
    index = {a: i for i, (a, _) in enumerate(ins)}
    for i, (addr, text) in enumerate(ins):
        if 'BRA' not in text:
            continue
        m = re.search(r'(0x[0-9a-f]+)', text.split('BRA', 1)[1])
        if not m or int(m.group(1), 16) > addr or int(m.group(1), 16) not in index:
            continue
        body = [t for _, t in ins[index[int(m.group(1), 16)]:i + 1]]
        if len(body) < least:
            continue
        ops = collections.Counter(re.sub(r'^@!?U?P\w+\s+', '', t).split()[0].split('.')[0] for t in body)
        print(f"loop {index[int(m.group(1), 16)]}-{i}: {len(body)} instructions, {ops['BAR']} barriers")
        print('  ' + ', '.join(f"{k} {v}" for k, v in ops.most_common()))


if __name__ == '__main__':
    main()
