"""targets -- the figures' own summary: how large the measured effects were, how tight the
measured ratios, and how well the predictions held, from one machine's data (DATA/MACHINE: the
cpu/ folder that experiments/conventional.py and experiments/inception.py write, and the large/
folder of experiments/large.py).

    all slow     all-slow's step over all-fast's per Figure 7 network (target: at least 1.5x on
                 every network)
    loss         the geometric mean over Figure 7's networks of each placement's step over all
                 fast's at 4:1 and at 1:1, as a loss (target: synchronous and asynchronous within
                 AutoTM's 27.7%, asynchronous no slower than synchronous; NUMA beside the
                 paper's 71.9%)
    Figure 7     the share of bars (speedup over all slow of numa, static, synchronous and
                 asynchronous at 8:1, 4:1 and 1:1) whose per-turn ratio range, largest over
                 least, is within 1.10 (target: 90%), how many are within 1.20 (target: all),
                 and the widest
    all fast     any planned placement (static, synchronous, asynchronous) measured faster than
                 all fast in its comparison by more than 3% (median of the per-turn ratios)
    async/sync   the asynchronous plan's step over the synchronous plan's, turn by turn, per
                 Figure 7 network and ratio (target: none above 1.03 by its median)
    Figure 8     the synchronous plan's speedup over 2LM per network (target: 1.5x on two)
    Figure 10a   the static and synchronous slowdowns at the all-fast limit (0:1), against 1.0;
                 and over the sweep, each curve's predicted step never rising with the limit
                 and its measured slowdown rising only within the two points' per-turn ranges
    Figure 11    how many planned placements have a predicted slowdown against all fast within
                 5% of the measured one, and the mean and largest |error| of the step time and
                 of the slowdown, per formulation; all-slow's and NUMA's too
    peak         the fast memory each run held at its high-water mark against its limit
                 (target: never above) and against its plan's layout (target: within 5%; the
                 distribution)

Figure 7's networks are the paper's four CNNs where the data has them (else every network).
Each value is taken as the figures take it: of the last comparison at a ratio that has what it
divides. scripts/figures.sh prints this at its end, with the time it took.

As a command:
    python3 -m autotm_results.targets DATA/MACHINE [--wall-s S]   the summary
    python3 -m autotm_results.targets DATA/MACHINE --pictures     Figure 7's workloads with a
                       4:1 comparison (or plan), one a line: network, preset (tab-separated)
"""

import argparse
import math
import os
import sys

from .comparisons import (absolute_error, comparisons, error_stats, latest, slowdown_error)
from .values import is_positive
from .ratios import ALL_FAST, norm_ratio, ratio_str
from .results import print_lines, read, results_files, split_recompute

FOLDER = "cpu"
LARGE_FOLDER = "large"
FIG7_NETWORKS = ("vgg19", "resnet200", "inception_v4", "densenet264")
FIG7_RATIOS = ((8, 1), (4, 1), (1, 1))
FIG7_BARS = ("numa", "static", "synchronous", "asynchronous")
PLANNED = ("static", "synchronous", "asynchronous")
FIG10_NETWORK = "inception_v4"
FIG10_CURVES = ("static", "synchronous")
TIGHT, LOOSE, FASTER = 1.10, 1.20, 0.97
ALL_SLOW_AT_LEAST = 1.5
LOSS_RATIOS = ((4, 1), (1, 1))
AUTOTM_LOSS, NUMA_PAPER_LOSS, LOSS_GOAL = 27.7, 71.9, 20.0
ASYNC_OVER_SYNC = 1.03
PEAK_WITHIN = 5.0
BASELINES = ("all-slow", "numa")
FIG8_SPEEDUP, FIG8_NETWORKS = 1.5, 2
SLOWDOWN_WITHIN = 5.0
PICTURE_RATIO = (4, 1)


def workloads(machine_dir, folder=FOLDER):
    """workloads -- (name, preset, comparisons, runs) of every results file of the machine's
    FOLDER (cpu/ by default; ResultsError for one that cannot be read)"""
    out = []
    for path in results_files(os.path.join(machine_dir, folder)):
        res = read(path).check()
        wl = res.workload
        out.append((wl.get("name") or os.path.basename(path).split("-")[0], wl.get("preset"),
                    comparisons(res.runs), res.runs))
    return out


def fig7_workloads(wls):
    """fig7_workloads -- the workloads of WLS that are Figure 7's networks (every one when none
    is)"""
    mine = [w for w in wls if w[0] in FIG7_NETWORKS]
    return mine or wls


def fig7_ranges(wls):
    """fig7_ranges -- [(label, range)] of every Figure 7 bar measured: its per-turn ratios'
    largest over least"""
    out = []
    for name, _, comps, _ in fig7_workloads(wls):
        for k in FIG7_RATIOS:
            for f in FIG7_BARS:
                c = latest(comps, k, "all-slow", f)
                if c is None:
                    continue
                s = c.ratio_of("all-slow", f)
                out.append((f"{name} {ratio_str(k)} {f}", s.high / s.low))
    return out


def faster_than_all_fast(wls):
    """faster_than_all_fast -- [(label, median)] of the planned placements whose median step
    over all fast's, turn by turn, is below 0.97"""
    out = []
    for name, _, comps, _ in wls:
        for k in sorted({c.ratio for c in comps if c.ratio is not None}):
            for f in PLANNED:
                c = latest(comps, k, "all-fast", f)
                if c is None:
                    continue
                s = c.ratio_of(f, "all-fast")
                if s.median < FASTER:
                    out.append((f"{name} {ratio_str(k)} {f}", s.median))
    return out


def all_slow_cost(wls):
    """all_slow_cost -- [(network, Spread)] of all-slow's step over all-fast's, turn by turn, per
    Figure 7 network: of its last 4:1 comparison with both (else its last with both)"""
    out = []
    for name, _, comps, _ in fig7_workloads(wls):
        c = latest(comps, PICTURE_RATIO, "all-fast", "all-slow") or latest(comps, None, "all-fast",
                                                                          "all-slow")
        if c is not None:
            out.append((name, c.ratio_of("all-slow", "all-fast")))
    return out


def geomean_loss(wls, ratio, formulation):
    """geomean_loss -- (loss in %, networks) of FORMULATION at RATIO: the geometric mean over
    Figure 7's networks of its median step over all fast's, minus 1; None when no network has
    the comparison"""
    logs = []
    for _, _, comps, _ in fig7_workloads(wls):
        c = latest(comps, ratio, "all-fast", formulation)
        if c is not None:
            logs.append(math.log(c.ratio_of(formulation, "all-fast").median))
    if not logs:
        return None
    return (100.0 * (math.exp(sum(logs) / len(logs)) - 1.0), len(logs))


def fig8_speedups(machine_dir):
    """fig8_speedups -- [(label, Spread)] of 2LM's step over the synchronous plan's, turn by
    turn, per network and ratio of the machine's large/ folder (none without one)"""
    if not os.path.isdir(os.path.join(machine_dir, LARGE_FOLDER)):
        return []
    out = []
    for name, _, comps, _ in workloads(machine_dir, LARGE_FOLDER):
        for k in sorted({c.ratio for c in comps if c.ratio is not None}):
            c = latest(comps, k, "2lm", "synchronous")
            if c is not None:
                out.append((f"{name} {ratio_str(k)}", c.ratio_of("2lm", "synchronous")))
    return out


def fig10_workload(wls):
    """fig10_workload -- Figure 10's workload: inception_v4, else the one compared at the most
    limits; None without any"""
    def limits(w):
        return len({c.ratio for c in w[2] if any(f in c.runs for f in FIG10_CURVES)})
    mine = [w for w in wls if w[0] == FIG10_NETWORK] or wls
    return max(mine, key=limits) if mine else None


def fig10_curves(wls, of_curve):
    """fig10_curves -- (network, {curve: of_curve(its comparisons, curve)}) for Figure 10's
    workload (fig10_workload), a curve left out where of_curve gives None; None without a
    workload or any curve"""
    w = fig10_workload(wls)
    if w is None:
        return None
    name, _, comps, _ = w
    out = {f: of_curve(comps, f) for f in FIG10_CURVES}
    out = {f: v for f, v in out.items() if v is not None}
    return (name, out) if out else None


def fig10_at_all_fast(wls):
    """fig10_at_all_fast -- (network, {curve: median slowdown}) at the all-fast limit for
    Figure 10's workload (fig10_workload); None when there is no comparison at 0:1"""
    def at_all_fast(comps, f):
        c = latest(comps, ALL_FAST, "all-fast", f)
        return c.ratio_of(f, "all-fast").median if c is not None else None
    return fig10_curves(wls, at_all_fast)


def fig11_raw(wls, ratios=None):
    """fig11_raw -- {formulation: {'step': [Spread], 'slowdown': [Spread]}} (errors in %, None
    where a run has none) of the planned placements, each ratio's last comparison (of RATIOS
    only, when given)"""
    errs = {f: {"step": [], "slowdown": []} for f in PLANNED}
    for _, _, comps, _ in wls:
        for k in {c.ratio for c in comps if ratios is None or c.ratio in ratios}:
            for f in PLANNED:
                c = latest(comps, k, f)
                if c is None:
                    continue
                errs[f]["step"].append(absolute_error(c.runs[f]))
                errs[f]["slowdown"].append(slowdown_error(c.runs[f]))
    return errs


def fig11_errors(wls):
    """fig11_errors -- {formulation: {'step': stats, 'slowdown': stats}} (error_stats: mean and
    largest |error| in %, how many) of the planned placements, each ratio's last comparison"""
    return {f: {kind: error_stats(v) for kind, v in d.items()}
            for f, d in fig11_raw(wls).items()}


def slowdowns_within(wls):
    """slowdowns_within -- (how many, of how many) planned placements' predicted slowdowns
    against all fast lie within 5% of the measured ones (median over turns), the last comparison
    at each of Figure 7's ratios"""
    errs = [e for d in fig11_raw(wls, FIG7_RATIOS).values() for e in d["slowdown"]
            if e is not None]
    return (sum(1 for e in errs if abs(e.median) <= SLOWDOWN_WITHIN), len(errs))


def async_over_sync(wls):
    """async_over_sync -- [(label, Spread)] of the asynchronous plan's step over the synchronous
    plan's, turn by turn, per Figure 7 network and ratio"""
    out = []
    for name, _, comps, _ in fig7_workloads(wls):
        for k in FIG7_RATIOS:
            c = latest(comps, k, "synchronous", "asynchronous")
            if c is not None:
                out.append((f"{name} {ratio_str(k)}", c.ratio_of("asynchronous", "synchronous")))
    return out


def fast_fraction(k):
    """fast_fraction -- the share of the peak a ratio (slow, fast) gives fast memory"""
    return k[1] / (k[0] + k[1])


def fig10_monotone(wls):
    """fig10_monotone -- (network, {curve: (limits, [predicted rises], [measured rises])}) over
    Figure 10's sweep (its network's comparisons with all fast, by fast memory): a predicted
    rise is a limit whose plan's predicted step is above the smaller limit's before it, a
    measured one a limit whose slowdown's per-turn range lies wholly above the smaller limit's
    (label, before, after), over Figure 10's workload (fig10_workload); None without one"""
    def rises(comps, f):
        pts = []
        for k in sorted({c.ratio for c in comps if c.ratio is not None}, key=fast_fraction):
            c = latest(comps, k, "all-fast", f)
            if c is not None:
                pts.append((k, c.runs[f].get("predicted_runtime"), c.ratio_of(f, "all-fast")))
        pred, meas = [], []
        for (k0, p0, s0), (k1, p1, s1) in zip(pts, pts[1:]):
            label = f"{ratio_str(k0)} to {ratio_str(k1)}"
            if is_positive(p0) and is_positive(p1) and p1 > p0 * (1 + 1e-9):
                pred.append((label, p0, p1))
            if s1.low > s0.high:
                meas.append((label, s0, s1))
        return (len(pts), pred, meas) if pts else None
    return fig10_curves(wls, rises)


def baseline_errors(wls):
    """baseline_errors -- {all-slow, numa: [slowdown error Spread]} at Figure 7's ratios, each
    ratio's last comparison"""
    out = {f: [] for f in BASELINES}
    for _, _, comps, _ in wls:
        for k in {c.ratio for c in comps if c.ratio in FIG7_RATIOS}:
            for f in BASELINES:
                c = latest(comps, k, f)
                e = slowdown_error(c.runs[f]) if c is not None else None
                if e is not None:
                    out[f].append(e)
    return out


def peaks(machine_dir):
    """peaks -- (runs over their limit [label], [high-water over the plan's layout, in %, of the
    planned runs]) of every measured run with a fast_memory record, in the machine's cpu/ and
    large/ folders"""
    over, dev = [], []
    for folder in (FOLDER, LARGE_FOLDER):
        if not os.path.isdir(os.path.join(machine_dir, folder)):
            continue
        for name, _, _, runs in workloads(machine_dir, folder):
            for r in runs:
                fm = r.get("fast_memory") if isinstance(r, dict) else None
                if not isinstance(fm, dict) or not is_positive(fm.get("high_water_bytes")):
                    continue
                f = r.get("formulation")
                if fm.get("within_limit") is False:
                    over.append(f"{name} {f} {fm.get('high_water_at')}")
                if split_recompute(f or "")[0] in PLANNED and is_positive(fm.get("predicted_bytes")):
                    dev.append(100.0 * (fm["high_water_bytes"] / fm["predicted_bytes"] - 1.0))
    return over, dev


def fmt_wall(s):
    """fmt_wall -- seconds as 12.3 s, 4 min 5 s or 1 h 20 min"""
    if s < 60:
        return f"{s:.1f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec} s"
    return f"{m // 60} h {m % 60} min"


def met(ok):
    """met -- 'met' or 'NOT met'"""
    return "met" if ok else "NOT met"


def summary(machine_dir, wall_s=None):
    """summary -- the lines of the summary of MACHINE_DIR's data"""
    wls = workloads(machine_dir)
    lines = [f"targets ({machine_dir}):"]
    cost = all_slow_cost(wls)
    if cost:
        ok = all(s.median >= ALL_SLOW_AT_LEAST for _, s in cost)
        lines.append(f"  all slow over all fast, target at least {ALL_SLOW_AT_LEAST:.1f}x on every "
                     f"network: " + ", ".join(f"{n} {s.median:.2f}x [{s.low:.2f}-{s.high:.2f}]"
                                             for n, s in cost) + f": {met(ok)}")
    for k in LOSS_RATIOS:
        losses = {f: geomean_loss(wls, k, f) for f in ("numa",) + PLANNED}
        have = {f: v for f, v in losses.items() if v is not None}
        if not have:
            continue
        parts = [f"{f} {v[0]:.1f}%" for f, v in have.items()]
        n = max(v[1] for v in have.values())
        verdict = []
        sync, asyn = have.get("synchronous"), have.get("asynchronous")
        if sync and asyn:
            verdict.append(f"synchronous and asynchronous within {AUTOTM_LOSS}%: "
                           f"{met(sync[0] <= AUTOTM_LOSS and asyn[0] <= AUTOTM_LOSS)}")
            verdict.append(f"asynchronous no slower than synchronous: {met(asyn[0] <= sync[0])}")
            if k == PICTURE_RATIO:
                verdict.append(f"both within {LOSS_GOAL:.0f}%: "
                               f"{met(sync[0] <= LOSS_GOAL and asyn[0] <= LOSS_GOAL)}")
        if "numa" in have:
            verdict.append(f"NUMA {have['numa'][0]:.1f}% against the paper's {NUMA_PAPER_LOSS}%")
        lines.append(f"  geomean loss against all fast at {ratio_str(k)} ({n} networks): "
                     + ", ".join(parts) + ("; " + "; ".join(verdict) if verdict else ""))
    ranges = fig7_ranges(wls)
    if ranges:
        tight = sum(1 for _, r in ranges if r <= TIGHT)
        loose = sum(1 for _, r in ranges if r <= LOOSE)
        widest = max(ranges, key=lambda x: x[1])
        lines.append(f"  Figure 7: {tight} of {len(ranges)} bars ({100.0 * tight / len(ranges):.0f}%) "
                     f"have a per-turn ratio range (largest / least) within {TIGHT:.2f} "
                     f"(target: 90%), {loose} of {len(ranges)} within {LOOSE:.2f} (target: all); "
                     f"widest {widest[1]:.3f}: {widest[0]}: "
                     f"{met(tight >= 0.9 * len(ranges) and loose == len(ranges))}")
    else:
        lines.append("  Figure 7: no bar measured in a comparison")
    fast = faster_than_all_fast(wls)
    if fast:
        lines.append(f"  faster than all fast by more than {100 * (1 - FASTER):.0f}% (median), "
                     "target none: " + ", ".join(f"{n} {m:.3f}" for n, m in fast) + ": NOT met")
    else:
        lines.append(f"  no planned placement measured faster than all fast by more than "
                     f"{100 * (1 - FASTER):.0f}% (median; target: none): met")
    aos = async_over_sync(wls)
    if aos:
        worst = max(aos, key=lambda x: x[1].median)
        above = [f"{n} {sp.median:.3f}" for n, sp in aos if sp.median > ASYNC_OVER_SYNC]
        lines.append(f"  asynchronous over synchronous (median of the turns), target none above "
                     f"{ASYNC_OVER_SYNC:.2f}: {len(above)} of {len(aos)} above"
                     + (f" ({', '.join(above)})" if above else "")
                     + f"; largest {worst[1].median:.3f} ({worst[0]}): {met(not above)}")
    f8 = fig8_speedups(machine_dir)
    if f8:
        nets = {label.split()[0] for label, s in f8 if s.median >= FIG8_SPEEDUP}
        lines.append(f"  Figure 8, synchronous over 2LM, target at least {FIG8_SPEEDUP:.1f}x on "
                     f"{FIG8_NETWORKS} networks: " + ", ".join(
                         f"{n} {s.median:.2f}x [{s.low:.2f}-{s.high:.2f}]" for n, s in f8)
                     + f": {met(len(nets) >= FIG8_NETWORKS)}")
    at = fig10_at_all_fast(wls)
    if at:
        name, curves = at
        lines.append(f"  Figure 10a at the all-fast limit ({name} 0:1), target within 3% of 1.0: "
                     + ", ".join(f"{f} {v:.3f} ({100 * (v - 1):+.1f}%)" for f, v in curves.items()))
    else:
        lines.append("  Figure 10a: no comparison at the all-fast limit (0:1)")
    mono = fig10_monotone(wls)
    if mono:
        name, curves = mono
        parts, ok = [], True
        for f, (n, pred, meas) in curves.items():
            ok = ok and not pred and not meas
            parts.append(f"{f} over {n} limits: predicted rises {len(pred)}"
                         + (" (" + ", ".join(f"{lb} {a:.4g} to {b:.4g} s" for lb, a, b in pred) + ")"
                            if pred else "")
                         + f", measured rises beyond the ranges {len(meas)}"
                         + (" (" + ", ".join(f"{lb} {a.median:.3f} to {b.median:.3f}"
                                             for lb, a, b in meas) + ")" if meas else ""))
        lines.append(f"  Figure 10 ({name}), target never rising with the limit: "
                     + "; ".join(parts) + f": {met(ok)}")
    errs = fig11_errors(wls)
    parts = []
    for f, d in errs.items():
        kinds = [f"{kind} {st[0]:.1f}% / {st[1]:.1f}%" for kind, st in d.items() if st]
        if kinds:
            parts.append(f"{f}: " + ", ".join(kinds))
    lines.append("  Figure 11, |error| mean / largest: "
                 + ("; ".join(parts) if parts else "no measured run with a prediction"))
    within, total = slowdowns_within(wls)
    if total:
        lines.append(f"  Figure 11, predicted slowdown against all fast within {SLOWDOWN_WITHIN:.0f}% "
                     f"of the measured one (target: every plan): {within} of {total}: "
                     f"{met(within == total)}")
    base = baseline_errors(wls)
    if any(base.values()):
        parts, ok = [], True
        for f, es in base.items():
            if es:
                n_in = sum(1 for e in es if abs(e.median) <= SLOWDOWN_WITHIN)
                ok = ok and n_in == len(es)
                parts.append(f"{f} {n_in} of {len(es)} (largest {max(abs(e.median) for e in es):.1f}%)")
        lines.append(f"  Figure 11, all slow and NUMA predicted within {SLOWDOWN_WITHIN:.0f}% of the "
                     "measured slowdown: " + ", ".join(parts) + f": {met(ok)}")
    over, dev = peaks(machine_dir)
    if dev or over:
        line = (f"  peak fast memory: {len(over)} runs above their limit"
                + (f" ({', '.join(over[:5])})" if over else "") + " (target: none)")
        if dev:
            xs = sorted(dev)
            n_in = sum(1 for d in xs if abs(d) <= PEAK_WITHIN)
            line += (f"; high-water over the plan's layout, {len(xs)} planned runs: median "
                     f"{xs[len(xs) // 2]:+.1f}%, from {xs[0]:+.1f}% to {xs[-1]:+.1f}%, {n_in} within "
                     f"{PEAK_WITHIN:.0f}%")
        lines.append(line + f": {met(not over and all(abs(d) <= PEAK_WITHIN for d in dev))}")
    if wall_s is not None:
        lines.append(f"  figures.sh took {fmt_wall(wall_s)}")
    return lines


def pictures(machine_dir):
    """pictures -- (network, preset) of Figure 7's workloads: those compared (or planned) with
    all-slow at 4:1"""
    out = []
    for name, preset, _, runs in workloads(machine_dir):
        if any(isinstance(r, dict) and r.get("formulation") == "all-slow"
               and norm_ratio(r.get("ratio_slow"), r.get("ratio_fast")) == PICTURE_RATIO
               for r in runs):
            out.append((name, preset or "small"))
    return out


def main(argv=None):
    """main -- the summary (or the plan pictures' workloads) of one machine's data"""
    p = argparse.ArgumentParser(prog="python3 -m autotm_results.targets",
                                description="The figures' own summary of one machine's data.")
    p.add_argument("machine_dir", metavar="DATA/MACHINE")
    p.add_argument("--wall-s", type=float, metavar="S", help="the seconds figures.sh took")
    p.add_argument("--pictures", action="store_true",
                   help="list Figure 7's workloads compared at 4:1 (network, preset), nothing else")
    args = p.parse_args(argv)
    if args.pictures:
        return print_lines("targets", lambda: (f"{name}\t{preset}"
                                               for name, preset in pictures(args.machine_dir)))
    return print_lines("targets", lambda: ["\n".join(summary(args.machine_dir, args.wall_s))])


if __name__ == "__main__":
    sys.exit(main())
