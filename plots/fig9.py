#!/usr/bin/python3
"""Figure 9: the cost/performance trade-off of AutoTM's synchronous
placement at slow:fast ratios 1:0 (all slow), 8:1, 4:1 and 1:1.  Bars:
performance relative to all fast memory; markers and line: memory cost
relative to all fast memory, (S/price + F)/(S + F), with fast memory PRICE
times as dear per GB as slow memory.  Every bar is the median of the per-turn
ratios of all fast's step to synchronous's in one comparison (trained in
turns in one process), its error bar their range.  Data: DATA/<machine>/cpu/
(experiments/conventional.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results.ratios import ratio_label

FIG = "fig9"
FORMULATION = "synchronous"
DEFAULT_RATIOS = "1:0,8:1,4:1,1:1"


def cost(key, price):
    s, f = key
    return (s / price + f) / (s + f)


def draw(args):
    wls, driver, show_preset = c.load_workloads(FIG, args)
    rows = []
    for w in wls:
        # performance relative to all fast: all fast's step over synchronous's, turn by turn
        perf = {k: w.value("all-fast", FORMULATION, k)
                for k in w.keys([FORMULATION]) if k in args.ratios}
        keys = [k for k in perf if perf[k] is not None]
        if not keys:
            raise c.PlotError(
                f"{w.name} ({w.path}): no synchronous run compared with all-fast (the "
                f"baseline of Figure 9) at "
                f"{', '.join(ratio_label(k, False) for k in args.ratios)}; run {driver}")
        rows.append((w, keys, [perf[k] for k in keys]))

    fig = c.new_figure(10, 7 if len(rows) > 3 else 5.2)
    axes, nrow, ncol = c.panels(fig, len(rows))
    used = []
    for i, (ax, (w, keys, vals)) in enumerate(zip(axes, rows)):
        perf = [v.median for v in vals]
        costs = [cost(k, args.price_ratio) for k in keys]
        for k in keys:
            used += w.runs_at(k, ["all-fast", FORMULATION])
        xs = range(len(keys))
        bars = ax.bar(xs, perf, 0.6, color=c.COLORS[FORMULATION],
                      **c.bar_kw(vals, w.predicted), zorder=2)
        for b, v in zip(bars, perf):  # inside, at the foot: clear of the
            ax.annotate(f"{v:.2f}",  # cost markers, which stay above 1/price
                        (b.get_x() + b.get_width() / 2, 0),
                        xytext=(0, 4), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="white",
                        fontweight="bold", zorder=5)
        top = max(1.1, max(v.high for v in vals) * 1.15, max(costs) * 1.1)
        ax.set_ylim(0, top)
        ax.axhline(1.0, color="#999999", linewidth=0.8, zorder=1)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([ratio_label(k, long=(k == (1, 0))).replace(
            " (", "\n(") for k in keys])
        ax.set_xlim(-0.6, len(keys) - 0.4)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        c.panel_title(ax, w.title(show_preset, w.predicted), ncol)
        twin = ax.twinx()
        twin.plot(list(xs), costs, color=c.COLORS["cost"], marker="D",
                  markersize=6, linewidth=1.6, zorder=4)
        twin.set_ylim(0, top)  # same scale: both are "relative to all fast"
        if i % ncol == 0:
            ax.set_ylabel("performance relative to all fast")
        twin.tick_params(axis="y", colors=c.COLORS["cost"])
        if i % ncol == ncol - 1 or i == len(rows) - 1:
            twin.set_ylabel("memory cost relative to all fast",
                            color=c.COLORS["cost"])
        else:  # same scale as the bars: name it once, at the right edge
            twin.tick_params(axis="y", labelright=False)
        if i >= len(rows) - ncol:
            ax.set_xlabel("slow : fast memory")

    handles = c.bar_handles([FORMULATION])
    handles[0].set_label("performance of synchronous (all fast = 1)")
    handles.append(c.line_handle(
        f"memory cost (fast memory costs {args.price_ratio:g}× slow per GB)",
        color=c.COLORS["cost"], linestyle="-", marker="D"))
    c.finish_bars(fig, "Performance and memory cost of synchronous AutoTM (Figure 9)",
                  handles, [r[0] for r in rows], used)
    return [(FIG, fig)]


def main():
    p = c.parser(FIG, __doc__)
    p.add_argument("--price-ratio", type=c.positive_float, default=2.1,
                   metavar="X",
                   help="price of fast memory per GB over slow memory's "
                        "(default 2.1)")
    c.ratios_option(p, DEFAULT_RATIOS)
    c.run_main(FIG, p, draw)


if __name__ == "__main__":
    main()
