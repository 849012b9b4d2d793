#!/usr/bin/python3
"""Figure 11: accuracy of the optimizer's runtime prediction: the error
100 × (predicted − measured) / measured of AutoTM's static, synchronous and
asynchronous placements, per conventional network and slow:fast ratio.
Data: DATA/<machine>/cpu/ (experiments/conventional.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.ratios import ratio_label
from autotm_results.values import is_num

FIG = "fig11"
FORMULATIONS = ["static", "synchronous", "asynchronous"]
WIDE = 6  # networks with more ratios than this get a full-width row


def error(run):
    p, a = run.get("predicted_runtime"), run.get("actual_runtime")
    if not (is_num(p) and is_num(a)) or a <= 0:
        return None
    return 100.0 * (p - a) / a


def draw(args):
    machine, wls = c.load_dir(FIG, args)
    driver = registry.driver_of(FIG)
    show_preset = c.needs_preset(wls)
    wanted = set(args.ratios) if args.ratios else None
    nets, skipped, used = [], [], []
    for w in wls:
        keys = [k for k in w.ratios(FORMULATIONS)
                if (wanted is None or k in wanted)
                and any(w.run(f, k) and error(w.run(f, k)) is not None
                        for f in FORMULATIONS)]
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
    errs = {f: [] for f in FORMULATIONS}
    lims = {}  # y limit of each panel: symmetric, the ±10% band in view
    for w, keys in nets:
        lims[id(w)] = 12.0
        for k in keys:
            for f in FORMULATIONS:
                r = w.run(f, k)
                e = error(r) if r else None
                if e is not None:
                    errs[f].append(e)
                    lims[id(w)] = max(lims[id(w)], abs(e) * 1.18)
    n = len(FORMULATIONS)
    width = 0.8 / n
    for i, row in enumerate(rows):
        for j, (w, keys) in enumerate(row):
            ax = fig.add_subplot(gs[i, :] if len(row) == 1 else gs[i, j])
            ax.axhspan(-10, 10, color="#e8e8e8", zorder=0)
            for b in (-10, 10):
                ax.axhline(b, color="#aaaaaa", linewidth=0.8,
                           linestyle=":", zorder=1)
            ax.axhline(0, color="#333333", linewidth=0.9, zorder=1)
            for m, f in enumerate(FORMULATIONS):
                xs, ys, bars_err = [], [], []
                for x, k in enumerate(keys):
                    r = w.run(f, k)
                    e = error(r) if r else None
                    if e is not None:
                        xs.append(x + (m - (n - 1) / 2) * width)
                        ys.append(e)
                        # error = 100 (p / a - 1): its spread is p's ratio's, scaled
                        lo, hi = c.spread(r["predicted_runtime"], r, "actual")
                        bars_err.append((100 * lo, 100 * hi))
                if xs:
                    ax.bar(xs, ys, width, color=c.COLORS[f], zorder=2,
                           **c.err_kw(bars_err),
                           edgecolor="white", linewidth=0.4)
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

    handles = c.bar_handles([f for f in FORMULATIONS if errs[f]])
    for h in handles:
        f = next(f for f in FORMULATIONS
                 if c.FORMULATION_NAMES[f] == h.get_label())
        mean = sum(abs(e) for e in errs[f]) / len(errs[f])
        h.set_label(f"{h.get_label()} (mean |error| {mean:.1f}%, "
                    f"{len(errs[f])} runs)")
    handles.append(c.Patch(facecolor="#e8e8e8", label="±10%"))
    extra = ["error = (predicted − measured) / measured"]
    note = None
    if skipped:
        note = ("not shown, no measured runs (predicted only): "
                + ", ".join(c.NETWORK_NAMES.get(w.name, w.name)
                            for w in skipped))
    c.finish(fig, "Runtime prediction error (Figure 11)",
             c.describe([n[0] for n in nets], used, extra), handles,
             [h.get_label() for h in handles], note=note)
    return [(FIG, fig)]


def main():
    p = c.parser(FIG, __doc__)
    p.add_argument("--ratios", type=c.ratio_list, metavar="S:F,...",
                   help="only these ratios (default: every ratio present)")
    c.run_main(FIG, [FIG], p, draw)


if __name__ == "__main__":
    main()
