"""c_sources.py -- what the structure tests read: every C source git tracks under a folder"""

import subprocess
import sys


def c_sources(argv, script, doc):
    """{path: text} of the C and CUDA sources git tracks under argv[1], or exits 2 (bad usage,
    or none found) saying so as script"""
    if len(argv) != 2:
        print(doc, file=sys.stderr)
        sys.exit(2)
    root = argv[1]
    files = subprocess.run(["git", "-C", root, "ls-files", "*.c", "*.h", "*.cu"],
                           capture_output=True, text=True, check=True).stdout.split()
    if not files:
        print(f"{script}: no C sources under {root}", file=sys.stderr)
        sys.exit(2)
    out = {}
    for f in files:
        with open(f"{root}/{f}", errors="replace") as fh:
            out[f] = fh.read()
    return out
