#!/usr/bin/python3
"""sizes.py -- no C function is longer than 120 lines and no header than 600, so that each reads
in one sitting; prints the largest of each

usage: tests/structure/sizes.py SOURCE_DIR        exit 0 when within, 1 not
"""

import re
import sys

from c_sources import c_sources

MAX_FUNCTION = 120
MAX_HEADER = 600

# a function's definition: a line at column 0 that names it and opens its parameters, ending in
# ')' (its body's '{' on the next line, as the style has it)
DEFINITION = re.compile(r"^(?!static\s+const\b)[A-Za-z_][^;=()]*\b([A-Za-z_]\w*)\s*\(")


def functions(text):
    """(name, first line, lines) of each function defined in text"""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = DEFINITION.match(lines[i])
        if m and not lines[i].startswith(("typedef", "#", "extern", "struct", "enum", "union")):
            j = i
            while j < len(lines) and not lines[j].rstrip().endswith(")") and \
                    not lines[j].rstrip().endswith("{") and ";" not in lines[j]:
                j += 1
            if j + 1 < len(lines) and lines[j + 1] == "{":
                k = j + 2
                while k < len(lines) and lines[k] != "}":
                    k += 1
                out.append((m.group(1), i + 1, k - i + 1))
                i = k
        i += 1
    return out


def main():
    fns, headers = [], []
    for f, text in c_sources(sys.argv, "sizes.py", __doc__).items():
        if f.endswith(".h"):
            headers.append((text.count("\n"), f))
        fns += [(n, f"{f}:{line}", name) for name, line, n in functions(text)]
    fns.sort(reverse=True)
    headers.sort(reverse=True)
    bad = [x for x in fns if x[0] > MAX_FUNCTION] + [h for h in headers if h[0] > MAX_HEADER]
    for n, where, name in fns[:3]:
        print(f"function {name} ({where}): {n} lines")
    for n, f in headers[:3]:
        print(f"header {f}: {n} lines")
    for x in bad:
        print(f"TOO LONG: {x}")
    print(f"{len(fns)} functions (at most {MAX_FUNCTION} lines), {len(headers)} headers (at most "
          f"{MAX_HEADER})" + ("" if not bad else f": {len(bad)} over"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
