#!/usr/bin/python3
"""Figure 7: speedup over all-slow of the NUMA baseline and AutoTM's static,
synchronous and asynchronous placements, per conventional network, at the
slow:fast ratios 8:1, 4:1 and 1:1, with all fast's speedup as a dashed line
over each ratio's bars.  Every bar is the median of the per-turn ratios of one
comparison (all placements of a network and ratio trained in turns in one
process), its error bar their range.  Data: DATA/<machine>/cpu/
(experiments/conventional.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results.ratios import ratio_label

FIG = "fig7"
FORMULATIONS = ["numa", "static", "synchronous", "asynchronous"]
DEFAULT_RATIOS = "8:1,4:1,1:1"


def draw(args):
    wls, driver, show_preset = c.load_workloads(FIG, args)

    # Check every network first: at least one bar against all slow.
    rows = []
    for w in wls:
        bars = {(f, k): w.value("all-slow", f, k)
                for k in w.keys(FORMULATIONS) if k in args.ratios for f in FORMULATIONS}
        ratios = [k for k in w.keys(FORMULATIONS)
                  if any(bars.get((f, k)) for f in FORMULATIONS)]
        if not ratios:
            at = ", ".join(ratio_label(k, False) for k in args.ratios)
            raise c.PlotError(
                f"{w.name} ({w.path}): no numa/static/synchronous/asynchronous run "
                f"compared with all-slow (the baseline of Figure 7) at {at}; run {driver}")
        fast = {k: w.value("all-slow", "all-fast", k) for k in ratios}
        rows.append((w, ratios, bars, fast))

    fig = c.new_figure(10, 7 if len(rows) > 3 else 5.2)
    axes, nrow, ncol = c.panels(fig, len(rows))
    used, any_fast = [], False
    n = len(FORMULATIONS)
    width = 0.8 / n
    for i, (ax, (w, ratios, bars, fast)) in enumerate(zip(axes, rows)):
        top = 1.0
        for j, f in enumerate(FORMULATIONS):
            drawn = c.formulation_bars(ax, w, ratios, bars, f, (j - (n - 1) / 2) * width, width)
            if drawn is not None:
                top = max(top, max(v.high for v in drawn[1]))
        for x, k in enumerate(ratios):
            used += w.runs_at(k, FORMULATIONS + ["all-slow", "all-fast"])
            v = fast[k]
            if v is None:
                continue
            any_fast = True
            top = max(top, v.median)
            ax.hlines(v.median, x - 0.45, x + 0.45, colors=c.COLORS["all-fast"],
                      linestyles="--", linewidth=1.2, zorder=3)
            ax.annotate(f"{v.median:.2f}×", (x + 0.45, v.median), xytext=(0, 2),
                        textcoords="offset points", ha="right", va="bottom", fontsize=7.5,
                        color=c.COLORS["all-fast"])
        ax.axhline(1.0, color="#999999", linewidth=0.8)
        c.ratio_panel(ax, ratios, top * 1.15, w.title(show_preset, w.predicted),
                      "speedup over all slow (×)", i, len(rows), ncol)

    handles = c.bar_handles([f for f in FORMULATIONS
                             if any(v for _, _, bars, _ in rows
                                    for (g, _), v in bars.items() if g == f)])
    if any_fast:
        handles.append(c.line_handle("all fast (all tensors in fast memory)"))
    c.finish_bars(fig, "Speedup over all slow memory (Figure 7)", handles,
                  [r[0] for r in rows], used)
    return [(FIG, fig)]


def main():
    c.run_main(FIG, c.parser(FIG, __doc__, DEFAULT_RATIOS), draw)


if __name__ == "__main__":
    main()
