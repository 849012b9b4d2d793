"""tables -- the figures' measured data as Markdown tables, one per experiment folder of a
machine: every comparison's placements as their step over a baseline's, median [least-largest]
of the per-turn ratios, with the predicted ratio beside it.

    cpu/        Figures 7, 9, 10, 11: per network and ratio, each placement's step over all
                fast's (its slowdown), and (predicted); all fast's own step in seconds
    large/      Figure 8: per network and ratio, 2LM's and static's step over the synchronous
                plan's (the synchronous plan's speedup over them)
    recompute/  per network and ratio, each placement's step over all fast's
    gpu/        per network and ratio, each placement's step over the first baseline's

A run whose measured step cannot be used is left out with a warning (Results.drop_unusable), and
a file whose name says another network than its workload (the drivers name it
NETWORK-PRESET.json) is tabulated as its workload's, with a warning naming both.

As a command:
    python3 -m autotm_results.tables DATA/MACHINE [--folder cpu|large|recompute|gpu]
                                     [--ratios 8:1,4:1,1:1] [--networks a,b]
"""

import argparse
import os
import sys

from .comparisons import comparisons
from .ratios import parse_ratios, ratio_str
from .results import network_mismatch, print_lines, read, results_files, warning
from .values import is_positive

# per folder: the baseline each placement is divided by, the placements in column order
LAYOUT = {
    "cpu": ("all-fast", ("all-slow", "numa", "static", "synchronous", "asynchronous")),
    "recompute": ("all-fast", ("synchronous", "synchronous+recompute", "asynchronous",
                               "asynchronous+recompute")),
    "large": ("synchronous", ("2lm", "static")),
    "gpu": (None, ("synchronous", "asynchronous", "synchronous+recompute",
                   "asynchronous+recompute")),
}


def cell(c, num, den):
    """cell -- 'median [low-high] (predicted)' of NUM's step over DEN's in comparison C; '' when
    C lacks either"""
    if not c.has(num, den):
        return ""
    s = c.ratio_of(num, den)
    text = f"{s.median:.3f} [{s.low:.3f}-{s.high:.3f}]"
    p, q = c.runs[num].get("predicted_runtime"), c.runs[den].get("predicted_runtime")
    if is_positive(p) and is_positive(q):
        text += f" ({p / q:.3f})"
    return text


def rows(machine_dir, folder, ratios=None, networks=None):
    """rows -- (header, [row]) of FOLDER's table: one row per network and ratio (the last
    comparison at it); ResultsError for a file that cannot be read"""
    base, cols = LAYOUT[folder]
    out = []
    seen_cols = set()
    path = os.path.join(machine_dir, folder)
    for f in results_files(path) if os.path.isdir(path) else []:
        res = read(f).check()
        mismatch = network_mismatch(f, res.workload)
        if mismatch:
            warning(f"{f}: {mismatch}")
        name = res.workload.get("name") or os.path.basename(f).split("-")[0]
        if networks and name not in networks:
            continue
        comps = comparisons(res.runs)
        last = {}
        for c in comps:
            if c.ratio is not None:
                last[c.ratio] = c
        for k in sorted(last, key=lambda r: (r[1] / (r[0] + r[1]))):
            if ratios and k not in ratios:
                continue
            c = last[k]
            den = base or next(iter(c.runs))
            r = [name, ratio_str(k), f"{c.runs[den].get('actual_runtime', 0):.3f} s ({den})",
                 str(c.turns)]
            for col in cols:
                v = cell(c, col, den) if col != den else ""
                if v:
                    seen_cols.add(col)
                r.append(v)
            out.append(r)
    keep = [i for i, col in enumerate(cols) if col in seen_cols]
    header = ["network", "ratio", "baseline step", "turns"] + [cols[i] for i in keep]
    return header, [r[:4] + [r[4 + i] for i in keep] for r in out]


def markdown(header, body):
    """markdown -- the lines of a Markdown table"""
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return lines


def main(argv=None):
    """main -- print the tables of one machine's data"""
    p = argparse.ArgumentParser(
        prog="python3 -m autotm_results.tables",
        description="The figures' measured data as Markdown tables: each placement's step over a "
                    "baseline's, median [least-largest] of the per-turn ratios, (predicted).")
    p.add_argument("machine_dir", metavar="DATA/MACHINE")
    p.add_argument("--folder", choices=sorted(LAYOUT), action="append",
                   help="the experiment folder (default: every one there is)")
    p.add_argument("--ratios", metavar="LIST", help="only these ratios (e.g. 8:1,4:1,1:1)")
    p.add_argument("--networks", metavar="LIST", help="only these networks (comma-separated)")
    args = p.parse_args(argv)
    try:
        ratios = set(parse_ratios(args.ratios, normalize=True)) if args.ratios else None
    except ValueError as e:
        p.error(f"--ratios {args.ratios}: {e}")
    networks = set(args.networks.split(",")) if args.networks else None
    folders = args.folder or [f for f in LAYOUT if os.path.isdir(os.path.join(args.machine_dir, f))]
    if not folders:
        print(f"tables: {args.machine_dir}: no experiment folder ({', '.join(sorted(LAYOUT))})",
              file=sys.stderr)
        return 1

    def tables():
        for f in folders:
            header, body = rows(args.machine_dir, f, ratios, networks)
            base = LAYOUT[f][0] or "the first placement"
            yield (f"{f}/: step over {base}'s, median [least-largest] of the per-turn ratios "
                   f"(predicted)\n")
            yield "\n".join(markdown(header, body)) + "\n"

    return print_lines("tables", tables)


if __name__ == "__main__":
    sys.exit(main())
