#!/usr/bin/python3
"""Recomputation: the synchronous and asynchronous placements alone and with
recomputation (autotm --recompute: a tensor may also be dropped after a use and
its producing kernel run again before a later one), at the same slow:fast
ratios, as the slowdown against all fast (lower is better), per network.  Every
bar is the median of the per-turn ratios of one comparison (all placements of a
network and ratio trained in turns in one process), its error bar their range;
the number over a bar with recomputation is how many kernels its plan runs
again per step.  Data: DATA/<machine>/recompute/ (experiments/recompute.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.ratios import ratio_label
from autotm_results.results import RECOMPUTE, recomputed

FIG = "recompute"
BASELINE = "all-fast"
# the pairs drawn side by side at every ratio: an ILP alone, then with recomputation
PAIRS = [("synchronous", "synchronous" + RECOMPUTE),
         ("asynchronous", "asynchronous" + RECOMPUTE)]
FORMULATIONS = [f for pair in PAIRS for f in pair]
DEFAULT_RATIOS = "8:1,4:1"
WIDTH = 0.19          # a bar
GAP = 0.06            # between the two pairs of a ratio


def n_recomputed(w, f, k, ratio_text):
    """The kernels the run of F at ratio K recomputes per step, and their time (s; None when
    not measured): PlotError when a run with recomputation does not say."""
    run = w.run(f, k)
    got = recomputed(run) if run is not None else None
    if got is None or not c.is_num(got[0]):
        raise c.PlotError(f"{w.path}: the {f} run at {ratio_text} has no num_recomputed_kernels "
                          "(written by an autotm without recomputation?); rerun "
                          f"{registry.driver_of(FIG)} with a current autotm")
    kernels, _, seconds = got
    return int(kernels), (seconds if c.is_num(seconds) else None)


def draw(args):
    wls, driver, show_preset = c.load_workloads(FIG, args)

    # Check every network first: at least one bar against all fast.
    rows = []
    for w in wls:
        keys = [k for k in w.keys(FORMULATIONS) if k in args.ratios]
        bars = {(f, k): w.value(f, BASELINE, k) for k in keys for f in FORMULATIONS}
        ratios = [k for k in keys if any(bars[(f, k)] for f in FORMULATIONS)]
        if not ratios:
            at = ", ".join(ratio_label(k, False) for k in args.ratios)
            raise c.PlotError(
                f"{w.name} ({w.path}): no synchronous/asynchronous run, alone or with "
                f"recomputation, compared with all-fast (the baseline) at {at}; run {driver}")
        counts = {}
        for k in ratios:
            for _, f in PAIRS:
                if bars[(f, k)] is not None:
                    counts[(f, k)] = n_recomputed(w, f, k, ratio_label(k, False))
        rows.append((w, ratios, bars, counts))

    fig = c.new_figure(10, 7 if len(rows) > 3 else 5.2)
    axes, nrow, ncol = c.panels(fig, len(rows))
    used = []
    offsets = {}
    for p, pair in enumerate(PAIRS):
        for j, f in enumerate(pair):
            # the pairs side by side, a gap between them, centred on the ratio's tick
            offsets[f] = (p - 0.5) * (2 * WIDTH + GAP) + (j - 0.5) * WIDTH
    for i, (ax, (w, ratios, bars, counts)) in enumerate(zip(axes, rows)):
        top = 1.0
        for f in FORMULATIONS:
            got = c.formulation_bars(ax, w, ratios, bars, f, offsets[f], WIDTH)
            if got is None:
                continue
            drawn, vals, ks = got
            top = max(top, max(v.high for v in vals))
            if f.endswith(RECOMPUTE):
                for b, v, k in zip(drawn, vals, ks):
                    n, _ = counts[(f, k)]
                    ax.annotate(str(n), (b.get_x() + b.get_width() / 2, v.high),
                                xytext=(0, 2), textcoords="offset points", ha="center",
                                va="bottom", fontsize=7.5,
                                color="#000000" if n else "#777777")
        for k in ratios:
            used += w.runs_at(k, FORMULATIONS + [BASELINE])
        ax.axhline(1.0, color=c.COLORS["all-fast"], linestyle="--", linewidth=1.0, zorder=3)
        c.ratio_panel(ax, ratios, top * 1.18, w.title(show_preset, w.predicted),
                      "over all fast (×, lower: better)", i, len(rows), ncol)

    handles = c.bar_handles([f for f in FORMULATIONS
                             if any(bars.get((f, k)) for _, ratios, bars, _ in rows
                                    for k in ratios)])
    handles.append(c.line_handle("all fast (all tensors in fast memory)"))
    kernels = [n for _, _, _, counts in rows for n, _ in counts.values()]
    extra = ["number over a bar with recomputation: kernels it runs again per step"
             + ("" if any(kernels) else " (none chosen at these limits)")]
    c.finish_bars(fig, "Placement alone and with recomputation: slowdown against all fast",
                  handles, [r[0] for r in rows], used, extra)
    return [(FIG, fig)]


def main():
    c.run_main(FIG, c.parser(FIG, __doc__, DEFAULT_RATIOS), draw)


if __name__ == "__main__":
    main()
