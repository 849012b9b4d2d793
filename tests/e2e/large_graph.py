#!/usr/bin/python3
"""large_graph.py -- a generated forward graph of 200,000 layers (400,000 kernels): memory
linear in the graph with a stated bound (BYTES_PER_NODE beyond what a tiny network takes) for
'zoo' and for 'run', and Ctrl-C honoured while it is read, built and run (exit 130 naming where)

usage: tests/e2e/large_graph.py AUTOTM
"""

import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time

LAYERS = 200_000
BYTES_PER_NODE = 1024  # docs/graph-format.md, "Large graphs"


def write_graph(path):
    layers = [{"name": "fc0", "op": "linear", "input": "input", "out_features": 8}]
    layers += [{"name": f"r{i}", "op": "relu", "input": f"r{i - 1}" if i > 1 else "fc0"}
               for i in range(1, LAYERS - 1)]
    layers.append({"name": "fcz", "op": "linear", "input": f"r{LAYERS - 2}", "out_features": 4})
    doc = {"format": "autotm-forward", "version": 1, "name": "deep", "batch": 2,
           "input": {"shape": [8, 1, 1]}, "layers": layers, "output": "fcz"}
    with open(path, "w") as f:
        json.dump(doc, f)


def peak_rss(args):
    """(exit code, stderr, the child's peak resident bytes) of autotm ARGS"""
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(args[0], args)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    autotm = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="autotm-large-") as tmp:
        graph = os.path.join(tmp, "deep.json")
        write_graph(graph)
        code, base = peak_rss([autotm, "zoo", "--model", "tiny_mlp"])
        if code != 0:
            failures.append(f"zoo --model tiny_mlp: exit {code}")
        nodes = 2 * LAYERS + 6  # forward, backward, the loss and the updates
        bound = base + nodes * BYTES_PER_NODE
        for cmd in (["zoo", "--graph", graph], ["run", "--graph", graph, "--iters", "1"]):
            code, rss = peak_rss([autotm] + cmd)
            print(f"large_graph.py: autotm {cmd[0]} of {nodes} nodes: {rss / 2**20:.0f} MiB at "
                  f"most, {(rss - base) / nodes:.0f} bytes a node beyond a tiny network's "
                  f"{base / 2**20:.0f} MiB (bound {BYTES_PER_NODE})")
            if code != 0:
                failures.append(f"{cmd[0]}: exit {code}")
            if rss > bound:
                failures.append(f"{cmd[0]}: {rss} bytes at most, over the bound of {bound}")
        # Ctrl-C while the graph is read, built or run: 130, and where it was
        for delay in (0.5, 1.5, 3.0):
            p = subprocess.Popen([autotm, "run", "--graph", graph, "--iters", "1000"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            time.sleep(delay)
            p.send_signal(signal.SIGINT)
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                failures.append(f"Ctrl-C after {delay} s: not honoured within 60 s")
                continue
            if p.returncode != 130 or "interrupted" not in err:
                failures.append(f"Ctrl-C after {delay} s: exit {p.returncode}: {err.strip()}")
    for f in failures:
        print("large_graph.py: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
