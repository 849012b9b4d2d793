#!/usr/bin/python3
"""file_cycles -- fails when the files of one library call each other in a circle.

Reads each static library's members with `nm`: a member that leaves a symbol undefined
calls (or reads) the member that defines it. Within one library those calls must form no
cycle, so that a helper sits below the files that use it, never in a file that calls them.

usage: file_cycles.py [--nm NM] LIBRARY.a...
"""
import argparse
import os
import subprocess
import sys

# nm letters of symbols a member defines for others (text, data, bss, read-only, common, weak)
DEFINED = set("TDBRCVWGS")


def members(nm, archive):
    """members -- {member: (defined symbols, undefined symbols)} of one static library"""
    out = subprocess.run([nm, "-A", "-g", archive], check=True, capture_output=True,
                         text=True).stdout
    table = {}
    for line in out.splitlines():
        # "lib.a:member.o:0000000000000000 T name" or "lib.a:member.o:                 U name"
        where, _, rest = line.rpartition(":")
        fields = rest.split()
        if len(fields) < 2:
            continue
        letter, name = fields[-2], fields[-1]
        member = where.rsplit(":", 1)[-1]
        defined, undefined = table.setdefault(member, (set(), set()))
        if letter == "U":
            undefined.add(name)
        elif letter in DEFINED:
            defined.add(name)
    return table


def call_graph(table):
    """call_graph -- {caller: {callee: [symbols]}} between members of one library"""
    owner = {}
    for member, (defined, _) in table.items():
        for name in defined:
            owner[name] = member
    graph = {m: {} for m in table}
    for member, (_, undefined) in table.items():
        for name in sorted(undefined):
            callee = owner.get(name)
            if callee and callee != member:
                graph[member].setdefault(callee, []).append(name)
    return graph


def cycles(graph):
    """cycles -- the strongly connected components of more than one member (Tarjan's)"""
    index, low, on_stack, stack, found = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nm", default="nm")
    ap.add_argument("libraries", nargs="+")
    args = ap.parse_args()
    bad = 0
    for lib in args.libraries:
        graph = call_graph(members(args.nm, lib))
        n_edges = sum(len(c) for c in graph.values())
        comps = cycles(graph)
        name = os.path.basename(lib)
        if not comps:
            print(f"{name}: {len(graph)} files, {n_edges} calls between them, no cycle")
            continue
        for comp in comps:
            bad += 1
            print(f"{name}: files calling each other in a circle: {', '.join(comp)}")
            for a in comp:
                for b, names in sorted(graph[a].items()):
                    if b in comp:
                        print(f"  {a} -> {b}: {', '.join(names)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
