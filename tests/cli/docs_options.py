#!/usr/bin/python3
"""docs_options.py -- docs/cli.md holds the option table the commands print (autotm help --markdown,
made from the same rows as every --help), and every option a --help lists is in it

usage: tests/cli/docs_options.py AUTOTM SOURCE_DIR        exit 0 when they match, 1 not
"""
import re
import subprocess
import sys

COMMANDS = ("zoo", "tiers", "profile", "plan", "run", "search")
BEGIN = "<!-- options: printed by 'autotm help --markdown'; cli.docs_options checks it -->\n"
END = "<!-- end of options -->\n"


def run(autotm, *args):
    p = subprocess.run([autotm, *args], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"docs_options.py: autotm {' '.join(args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    table = run(argv[1], "help", "--markdown")
    with open(f"{argv[2]}/docs/cli.md") as f:
        docs = f.read()
    if BEGIN not in docs or END not in docs:
        print("docs/cli.md has no option table between its markers")
        return 1
    held = docs.split(BEGIN, 1)[1].split(END, 1)[0]
    bad = 0
    if held != table:
        bad = 1
        new, old = table.splitlines(), held.splitlines()
        for line in sorted(set(new) - set(old)):
            print(f"printed, not in docs/cli.md: {line}")
        for line in sorted(set(old) - set(new)):
            print(f"in docs/cli.md, not printed: {line}")
        print("docs/cli.md's option table is not what the commands print; replace it with "
              "the output of 'autotm help --markdown'")
    documented = set(re.findall(r"^\| `(?:-\w, )?(--[a-z0-9-]+)", table, re.M))
    for c in COMMANDS:
        for opt in re.findall(r"^  (?:-\w, )?(--[a-z0-9-]+)", run(argv[1], c, "--help"), re.M):
            if opt != "--help" and opt not in documented:
                bad = 1
                print(f"{opt} ({c}): in --help, not in the table")
    if not documented:
        print("no option in the table")
        return 1
    if not bad:
        print(f"{len(documented)} options of {len(COMMANDS)} commands, the table in docs/cli.md "
              "as printed")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
