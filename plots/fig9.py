#!/usr/bin/python3
"""Figure 9: the cost/performance trade-off of AutoTM's synchronous
placement at slow:fast ratios 1:0 (all slow), 8:1, 4:1 and 1:1.  Bars:
performance relative to all fast memory; markers and line: memory cost
relative to all fast memory, (S/price + F)/(S + F), with fast memory PRICE
times as dear per GB as slow memory.  Data: DATA/<machine>/cpu/
(experiments/conventional.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.ratios import fast_fraction, ratio_label

FIG = "fig9"
FORMULATION = "synchronous"
DEFAULT_RATIOS = "1:0,8:1,4:1,1:1"


def cost(key, price):
    s, f = key
    return (s / price + f) / (s + f)


def draw(args):
    machine, wls = c.load_dir(FIG, args)
    driver = registry.driver_of(FIG)
    show_preset = c.needs_preset(wls)
    rows = []
    for w in wls:
        fast = w.all_fast()
        if fast is None:
            raise c.PlotError(f"{w.name} ({w.path}): no all-fast run (0:1), "
                              f"the baseline of Figure 9; run {driver}")
        runs = w.of(FORMULATION)
        keys = sorted((k for k in runs if k in args.ratios),
                      key=fast_fraction)
        if not keys:
            raise c.PlotError(
                f"{w.name} ({w.path}): no synchronous run at "
                f"{', '.join(ratio_label(k, False) for k in args.ratios)}"
                f"; run {driver}")
        mode = c.time_mode(w, [runs[k] for k in keys] + [fast], FIG)
        rows.append((w, fast, keys, mode))

    fig = c.new_figure(10, 7 if len(rows) > 3 else 5.2)
    axes, nrow, ncol = c.panels(fig, len(rows))
    used, predicted, predicted_runs = [], [], []
    for i, (ax, (w, fast, keys, mode)) in enumerate(zip(axes, rows)):
        runs = w.of(FORMULATION)
        t0 = c.rtime(fast, mode)
        perf = [t0 / c.rtime(runs[k], mode) for k in keys]
        costs = [cost(k, args.price_ratio) for k in keys]
        used += [fast] + [runs[k] for k in keys]
        if mode == "predicted":
            predicted.append(w)
            predicted_runs += [fast] + [runs[k] for k in keys]
        xs = range(len(keys))
        bars = ax.bar(xs, perf, 0.6, color=c.COLORS[FORMULATION],
                      **c.err_kw([c.spread(t0, runs[k], mode) for k in keys]),
                      hatch=c.PREDICTED_HATCH if mode == "predicted" else None,
                      edgecolor="white" if mode == "actual" else "#333333",
                      linewidth=0.6, zorder=2)
        for b, v in zip(bars, perf):  # inside, at the foot: clear of the
            ax.annotate(f"{v:.2f}",  # cost markers, which stay above 1/price
                        (b.get_x() + b.get_width() / 2, 0),
                        xytext=(0, 4), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="white",
                        fontweight="bold", zorder=5)
        top = max(1.1, max(perf) * 1.15, max(costs) * 1.1)
        ax.set_ylim(0, top)
        ax.axhline(1.0, color="#999999", linewidth=0.8, zorder=1)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([ratio_label(k, long=(k == (1, 0))).replace(
            " (", "\n(") for k in keys])
        ax.set_xlim(-0.6, len(keys) - 0.4)
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
        c.panel_title(ax, w.title(show_preset, mode == "predicted"), ncol)
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
    if predicted_runs:
        handles.append(c.bar_handles([], predicted_runs)[0])
    c.finish(fig, "Performance and memory cost of synchronous AutoTM "
                  "(Figure 9)",
             c.describe([r[0] for r in rows], used,
                        c.all_fast_notes([r[0] for r in rows]),
                        predicted=predicted),
             handles, [h.get_label() for h in handles])
    return [(FIG, fig)]


def main():
    p = c.parser(FIG, __doc__)
    p.add_argument("--price-ratio", type=c.positive_float, default=2.1,
                   metavar="X",
                   help="price of fast memory per GB over slow memory's "
                        "(default 2.1)")
    p.add_argument("--ratios", type=c.ratio_list,
                   default=c.ratio_list(DEFAULT_RATIOS), metavar="S:F,...",
                   help=f"ratios to show, when present (default: "
                        f"{DEFAULT_RATIOS})")
    c.run_main(FIG, [FIG], p, draw)


if __name__ == "__main__":
    main()
