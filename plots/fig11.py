#!/usr/bin/python3
"""Figure 11: accuracy of the optimizer's runtime prediction, for AutoTM's
static, synchronous and asynchronous placements per conventional network and
slow:fast ratio, two errors side by side: the absolute error
100 × (predicted − measured) / measured step (its bar the range over the
turns), and the slowdown error: the same for the slowdown against all fast
memory, predicted from the two plans and measured turn by turn against all
fast in the same comparison (slowdown_error; its bar the range of the
per-turn slowdowns).  The caption gives the mean and largest |error| of each.
Data: DATA/<machine>/cpu/ (experiments/conventional.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results.ratios import ratio_label
from autotm_results.comparisons import (absolute_error, error_stats,
                                        slowdown_error)

FIG = "fig11"
FORMULATIONS = ["static", "synchronous", "asynchronous"]
WIDE = 6  # networks with more ratios than this get a full-width row


KINDS = [("absolute", absolute_error, None),
         ("slowdown", slowdown_error, c.PREDICTED_HATCH)]
KIND_NAMES = {"absolute": "step time", "slowdown": "slowdown against all fast"}


def errors(run):
    """Both errors of a run as Spreads (None where it has not that one)."""
    return {kind: fn(run) if run else None for kind, fn, _ in KINDS}


def draw(args):
    wls, driver, show_preset = c.load_workloads(FIG, args)
    wanted = set(args.ratios) if args.ratios else None
    nets, skipped, used = [], [], []
    for w in wls:
        keys = [k for k in w.keys(FORMULATIONS)
                if (wanted is None or k in wanted)
                and any(v is not None for f in FORMULATIONS
                        for v in errors(w.run(f, k)).values())]
        if keys:
            nets.append((w, keys))
            used += [w.run(f, k) for f in FORMULATIONS for k in keys]
        else:
            skipped.append(w)
    if not nets:
        raise c.PlotError(
            "no static/synchronous/asynchronous run with both a predicted "
            f"and a measured runtime in {', '.join(w.path for w in wls)}; "
            f"run {driver}")

    # Layout: networks with many ratios get a full row, others share one.
    rows, half = [], None
    for n in nets:
        if len(n[1]) > WIDE:
            rows.append([n])
        elif half is None:
            half = [n]
            rows.append(half)
        else:
            half.append(n)
            half = None
    fig = c.new_figure(10, min(11.0, max(5.2, 1.9 + 2.5 * len(rows))))
    gs = fig.add_gridspec(len(rows), 2)
    errs = {(f, kind): [] for f in FORMULATIONS for kind, _, _ in KINDS}
    lims = {}  # y limit of each panel: symmetric, the ±10% band in view
    for w, keys in nets:
        lims[id(w)] = 12.0
        for k in keys:
            for f in FORMULATIONS:
                for kind, e in errors(w.run(f, k)).items():
                    if e is not None:
                        errs[(f, kind)].append(e)
                        lims[id(w)] = max(lims[id(w)], abs(e.low) * 1.18,
                                          abs(e.high) * 1.18)
    n = len(FORMULATIONS) * len(KINDS)
    width = 0.84 / n
    for i, row in enumerate(rows):
        for j, (w, keys) in enumerate(row):
            ax = fig.add_subplot(gs[i, :] if len(row) == 1 else gs[i, j])
            ax.axhspan(-10, 10, color="#e8e8e8", zorder=0)
            for b in (-10, 10):
                ax.axhline(b, color="#aaaaaa", linewidth=0.8,
                           linestyle=":", zorder=1)
            ax.axhline(0, color="#333333", linewidth=0.9, zorder=1)
            for m, f in enumerate(FORMULATIONS):
                for q, (kind, _, hatch) in enumerate(KINDS):
                    slot = m * len(KINDS) + q
                    xs, vals = [], []
                    for x, k in enumerate(keys):
                        e = errors(w.run(f, k))[kind]
                        if e is not None:
                            xs.append(x + (slot - (n - 1) / 2) * width)
                            vals.append(e)
                    if xs:
                        ax.bar(xs, [v.median for v in vals], width,
                               color=c.COLORS[f], zorder=2, hatch=hatch,
                               **c.err_kw(vals),
                               edgecolor="white" if hatch is None else "#333333",
                               linewidth=0.4)
            ax.set_xticks(range(len(keys)))
            many = len(keys) > 10
            ax.set_xticklabels([ratio_label(k, long=False) for k in keys],
                               rotation=60 if many else 0,
                               fontsize=8 if many else 10)
            ax.set_xlim(-0.6, len(keys) - 0.4)
            ax.set_ylim(-lims[id(w)], lims[id(w)])
            ax.set_title(w.title(show_preset), fontsize=10.5)
            if j == 0:
                ax.set_ylabel("prediction error (%)")
            if i == len(rows) - 1:
                ax.set_xlabel("slow : fast memory")
            ax.grid(axis="y", alpha=0.3)
            ax.set_axisbelow(True)

    shown = [f for f in FORMULATIONS
             if any(errs[(f, kind)] for kind, _, _ in KINDS)]
    handles = c.bar_handles(shown)
    for kind, _, hatch in KINDS:
        handles.append(c.Patch(facecolor="white" if hatch else "#777777",
                               edgecolor="#333333", hatch=hatch,
                               label=f"error of the {KIND_NAMES[kind]}"))
    handles.append(c.Patch(facecolor="#e8e8e8", label="±10%"))
    stats = []
    for f in shown:
        parts = []
        for kind, _, _ in KINDS:
            st = error_stats(errs[(f, kind)])
            if st:
                parts.append(f"{KIND_NAMES[kind]} mean {st[0]:.1f}%, "
                             f"largest {st[1]:.1f}% ({st[2]} runs)")
        stats.append(f"{c.FORMULATION_NAMES[f]}: |error| of the "
                     + "; of the ".join(parts))
    extra = ["error = (predicted − measured) / measured"]
    notes = list(stats)
    if skipped:
        notes.append("not shown, no measured runs (predicted only): "
                     + ", ".join(c.NETWORK_NAMES.get(w.name, w.name)
                                 for w in skipped))
    note = " · ".join(notes) or None
    c.finish(fig, "Runtime prediction error (Figure 11)",
             c.describe([n[0] for n in nets], used, extra), handles,
             [h.get_label() for h in handles], note=note)
    return [(FIG, fig)]


def main():
    p = c.parser(FIG, __doc__)
    p.add_argument("--ratios", type=c.ratio_list, metavar="S:F,...",
                   help="only these ratios (default: every ratio present)")
    c.run_main(FIG, p, draw)


if __name__ == "__main__":
    main()
