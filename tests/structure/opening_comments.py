#!/usr/bin/python3
"""opening_comments.py -- every `/* name -- purpose */` comment in the C sources names something
that file has: a function it defines or declares, or a variable, macro or type it defines, so
that no comment outlives the function it described

usage: tests/structure/opening_comments.py SOURCE_DIR
"""

import re
import sys

from c_sources import c_sources

COMMENT = re.compile(r"/\* ([a-z_][a-z0-9_]*) -- ")


def stale(path, text):
    """the names of path's opening comments that nothing else in the file bears"""
    out = []
    for m in COMMENT.finditer(text):
        name = m.group(1)
        rest = text[:m.start()] + text[m.end():]
        if not re.search(r"\b" + re.escape(name) + r"\b", rest):
            out.append(name)
    return out


def main():
    files = c_sources(sys.argv, "opening_comments.py", __doc__)
    bad = 0
    for f, text in files.items():
        for name in stale(f, text):
            print(f"opening_comments.py: {f}: '/* {name} -- ...' names nothing the file "
                  "defines or declares", file=sys.stderr)
            bad += 1
    print(f"opening_comments.py: {len(files)} files, {bad} stale opening comments")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
