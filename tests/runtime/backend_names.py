#!/usr/bin/python3
"""backend_names.py -- no backend is told by its name outside runtime/: callers ask atm_backend_caps

usage: backend_names.py SOURCE_DIR    check the C sources outside runtime/ and tests/
       backend_names.py --self-test   the check finds what it must and lets pass what it may

What it refuses, comments left out: a strcmp (strncmp, strcasecmp) on a line that holds a
backend's choice or name as the registry (runtime/backend_reg.c) spells them ("cpu", "cuda",
"sim", "gpu-sim"), and any reading of atm_gpu_opts.mode (gpu.mode, gpu->mode) other than
setting it or handing it to atm_backend_caps_get or atm_backend_supports_op. The tests may
compare names: they check what the runtime reports.
Exit status: 0 clean, 1 found (each place printed), 2 bad usage or no registry to read.
"""
import os
import re
import sys
import tempfile

SKIP_DIRS = {"runtime", "tests", ".git"}
SUFFIXES = (".c", ".h", ".cu")
COMPARE = re.compile(r"\bstr(?:n)?(?:case)?cmp\s*\(")
MODE = re.compile(r"\bgpu\s*(?:\.|->)\s*mode\b")
MODE_SET = re.compile(r"\bgpu\s*(?:\.|->)\s*mode\s*=(?!=)")
MODE_ASKED = re.compile(r"\batm_backend_(?:caps_get|supports_op)\s*\(\s*[\w.>\-\[\]]*?"
                        r"\bgpu\s*(?:\.|->)\s*mode\b")
REGISTRY_NAME = re.compile(r"\.(?:choice|name)\s*=\s*\"([^\"]+)\"")


def strip_comments(text):
    """text with its comments blanked (line breaks kept, so line numbers hold) and strings kept"""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def registry_names(root):
    """every backend's choice and name in the registry"""
    path = os.path.join(root, "runtime", "backend_reg.c")
    with open(path, encoding="utf-8") as f:
        return set(REGISTRY_NAME.findall(strip_comments(f.read())))


def line_findings(line, names):
    """why line tells a backend by its name, or None"""
    if COMPARE.search(line) and any('"%s"' % name in line for name in names):
        return "compares a backend name"
    n_read = len(MODE.findall(line)) - len(MODE_SET.findall(line)) - len(MODE_ASKED.findall(line))
    if n_read > 0:
        return "reads gpu.mode (ask atm_backend_caps_get instead)"
    return None


def check(root):
    """every finding under root, as 'path:line: why: text'"""
    names = registry_names(root)
    if not names:
        raise ValueError("no backend names in runtime/backend_reg.c")
    found = []
    for top, dirs, files in os.walk(root):
        rel = os.path.relpath(top, root)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith("build")]
        for name in sorted(files):
            if not name.endswith(SUFFIXES):
                continue
            path = os.path.join(top, name)
            with open(path, encoding="utf-8", errors="replace") as f:
                text = strip_comments(f.read())
            for i, line in enumerate(text.split("\n"), 1):
                why = line_findings(line, names)
                if why:
                    found.append("%s:%d: %s: %s" % (os.path.relpath(path, root), i, why,
                                                     line.strip()))
    return found


SELF_TEST_TREE = {
    "runtime/backend_reg.c": '{.caps = {.choice = "cpu", .name = "cpu"}},\n'
                             '{.caps = {.choice = "cuda", .name = "cuda"}},\n'
                             '{.caps = {.choice = "sim", .name = "gpu-sim"}},\n',
    "runtime/exec.c": 'if (!strcmp(mode, "cuda") || e->opts.gpu.mode) {}\n',
    "tests/job/test_job.c": 'assert_true(!strcmp(r->backend, "gpu-sim") && o.gpu.mode);\n',
    "job/job.c": 'if (o->mem.gpu.mode && !strcmp(o->mem.gpu.mode, "cuda")) {}\n'
                 'bool d = mem->gpu.mode != NULL;\n'
                 'if (atm_backend_caps_get(mem->gpu.mode, &caps) < 0) {}\n',
    "formats/results.c": '/* strcmp(b, "cpu") in a comment */ if (m->backend &&\n'
                      '    strcmp(m->backend, "cpu")) {}\n',
    "cli/common.c": 'mem->gpu.mode = arg ? arg : "cuda";\n'
                    'if (strcmp(arg, "pcie4")) {} // strcmp(arg, "sim")\n'
                    'printf("cuda \\" strcmp(x, ");\n'
                    'bool ok = atm_backend_supports_op(o->gpu.mode, op);\n',
    "build-x/gen.c": 'if (!strcmp(mode, "sim")) {}\n',
}
SELF_TEST_EXPECT = [
    "formats/results.c:2: compares a backend name",
    "job/job.c:1: compares a backend name",
    "job/job.c:2: reads gpu.mode",
]


def self_test():
    """0 when the check finds exactly the planted comparisons"""
    with tempfile.TemporaryDirectory() as root:
        for rel, text in SELF_TEST_TREE.items():
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        found = sorted(check(root))
    ok = len(found) == len(SELF_TEST_EXPECT) and all(
        f.startswith(e) for f, e in zip(found, SELF_TEST_EXPECT))
    if not ok:
        print("backend_names: self-test: expected\n  %s\nfound\n  %s" %
              ("\n  ".join(SELF_TEST_EXPECT), "\n  ".join(found)), file=sys.stderr)
    return 0 if ok else 1


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split("\n\n")[0], file=sys.stderr)
        return 2
    if argv[1] == "--self-test":
        return self_test()
    try:
        found = check(argv[1])
    except (OSError, ValueError) as e:
        print("backend_names: %s" % e, file=sys.stderr)
        return 2
    for f in found:
        print(f)
    if found:
        print("backend_names: %d place(s) tell a backend by its name outside runtime/: ask "
              "atm_backend_caps_get (atm_runtime.h) what it can do" % len(found), file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
