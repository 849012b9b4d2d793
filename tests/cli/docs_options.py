#!/usr/bin/python3
"""docs_options.py -- every option a command's --help lists has its row in docs/cli.md, and every
option docs/cli.md names is one some command takes (the docs describe the command as it is)

usage: tests/cli/docs_options.py AUTOTM SOURCE_DIR        exit 0 when they match, 1 not
"""
import re
import subprocess
import sys

COMMANDS = ("zoo", "tiers", "profile", "plan", "run", "search")
ALWAYS = {"--help", "--version"}


def help_options(autotm):
    """{option: [commands whose --help lists it]}"""
    out = {}
    for c in COMMANDS:
        p = subprocess.run([autotm, c, "--help"], capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"docs_options.py: autotm {c} --help exited {p.returncode}: {p.stderr}")
        for opt in re.findall(r"^\s+(?:-\w, )?(--[a-z0-9-]+)", p.stdout, re.M):
            out.setdefault(opt, []).append(c)
    return out


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    have = help_options(argv[1])
    with open(f"{argv[2]}/docs/cli.md") as f:
        documented = set(re.findall(r"`(--[a-z0-9-]+)", f.read()))
    missing = sorted(set(have) - documented - ALWAYS)
    stale = sorted(documented - set(have) - ALWAYS)
    for o in missing:
        print(f"{o} ({', '.join(have[o])}): in --help, not in docs/cli.md")
    for o in stale:
        print(f"{o}: in docs/cli.md, no command takes it")
    if not have:
        print("no option found in any --help")
        return 1
    print(f"{len(have)} options of {len(COMMANDS)} commands, every one in docs/cli.md"
          if not missing and not stale else "docs/cli.md does not match the commands")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
