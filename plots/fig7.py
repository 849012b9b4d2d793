#!/usr/bin/python3
"""Figure 7: speedup over all-slow of the NUMA baseline and AutoTM's static,
synchronous and asynchronous placements, per conventional network, at the
slow:fast ratios 8:1, 4:1 and 1:1, with the all-fast speedup as a dashed
line.  Data: DATA/<machine>/cpu/ (experiments/conventional.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.ratios import ratio_label

FIG = "fig7"
FORMULATIONS = ["numa", "static", "synchronous", "asynchronous"]
DEFAULT_RATIOS = "8:1,4:1,1:1"


def draw(args):
    machine, wls = c.load_dir(FIG, args)
    driver = registry.driver_of(FIG)
    wanted = set(args.ratios)
    show_preset = c.needs_preset(wls)

    # Check every network first: the baseline and at least one bar.
    rows = []
    for w in wls:
        slow = w.all_slow()
        if slow is None:
            raise c.PlotError(f"{w.name} ({w.path}): no all-slow run (1:0), "
                              f"the baseline of Figure 7; run {driver}")
        ratios = [k for k in w.ratios(FORMULATIONS) if k in wanted]
        bars = [w.run(f, k) for k in ratios for f in FORMULATIONS]
        if not any(bars):
            at = ", ".join(ratio_label(k, False) for k in args.ratios)
            raise c.PlotError(
                f"{w.name} ({w.path}): no numa/static/synchronous/"
                f"asynchronous run at {at}; run {driver}")
        fast = w.all_fast()
        mode = c.time_mode(w, bars + [slow, fast], FIG)
        rows.append((w, slow, fast, ratios, mode))

    fig = c.new_figure(10, 7 if len(rows) > 3 else 5.2)
    axes, nrow, ncol = c.panels(fig, len(rows))
    predicted_runs, used, notes, fast_lines = [], [], [], []
    for i, (ax, (w, slow, fast, ratios, mode)) in enumerate(zip(axes, rows)):
        base = c.rtime(slow, mode)
        mine = [slow, fast]
        n = len(FORMULATIONS)
        width = 0.8 / n
        top = 1.0
        for j, f in enumerate(FORMULATIONS):
            xs, ys, errs = [], [], []
            for x, k in enumerate(ratios):
                r = w.run(f, k)
                if r is None:
                    continue
                mine.append(r)
                xs.append(x + (j - (n - 1) / 2) * width)
                ys.append(base / c.rtime(r, mode))
                errs.append(c.spread(base, r, mode))
            if not xs:
                continue
            ax.bar(xs, ys, width, color=c.COLORS[f], **c.err_kw(errs),
                   hatch=c.PREDICTED_HATCH if mode == "predicted" else None,
                   edgecolor="white" if mode == "actual" else "#333333",
                   linewidth=0.6)
            top = max(top, max(ys))
        used += mine
        if mode == "predicted":
            predicted_runs += [r for r in mine if r is not None]
        if fast is not None:
            sp = base / c.rtime(fast, mode)
            top = max(top, sp)
            fast_lines.append((ax, sp))
        else:
            notes.append(f"{w.name}: no all-fast run, no line")
        ax.axhline(1.0, color="#999999", linewidth=0.8)
        ax.set_xticks(range(len(ratios)))
        ax.set_xticklabels([ratio_label(k, long=False) for k in ratios])
        ax.set_xlim(-0.6, len(ratios) - 0.4)
        ax.set_ylim(0, top * 1.15)
        c.panel_title(ax, w.title(show_preset, mode == "predicted"), ncol)
        if i % ncol == 0:
            ax.set_ylabel("speedup over all slow (×)")
        if i >= len(rows) - ncol:
            ax.set_xlabel("slow : fast memory")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    for ax, sp in fast_lines:
        c.ref_line(ax, sp, f"all fast\n{sp:.2f}×")

    handles = c.bar_handles(
        [f for f in FORMULATIONS if any(w.of(f) for w, *_ in rows)])
    if fast_lines:
        handles.append(c.line_handle("all fast (all tensors in fast memory)"))
    if predicted_runs:
        handles.append(c.bar_handles([], predicted_runs)[0])
    wls = [r[0] for r in rows]
    c.finish(fig, "Speedup over all slow memory (Figure 7)",
             c.describe(wls, used, c.all_fast_notes(wls),
                        predicted=[r[0] for r in rows if r[4] == "predicted"]),
             handles, [h.get_label() for h in handles],
             note="; ".join(notes) or None)
    return [(FIG, fig)]


def main():
    p = c.parser(FIG, __doc__)
    p.add_argument("--ratios", type=c.ratio_list,
                   default=c.ratio_list(DEFAULT_RATIOS), metavar="S:F,...",
                   help=f"ratios to show, when present (default: "
                        f"{DEFAULT_RATIOS})")
    c.run_main(FIG, [FIG], p, draw)


if __name__ == "__main__":
    main()
