#!/usr/bin/python3
"""Figure 8: speedup of AutoTM's static and synchronous placements over
2LM (Memory Mode: fast memory as a hardware cache of slow memory) on the
large networks.  Every bar is the median of the per-turn ratios of one
comparison (static, synchronous and 2LM trained in turns in one process),
its error bar their range.  Data: DATA/<machine>/large/ (experiments/large.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results.ratios import ratio_label

FIG = "fig8"
FORMULATIONS = ["static", "synchronous"]


def two_lm_name(runs):
    modes = {r.get("memory_mode") for r in runs if r is not None}
    if modes == {"emulated"}:
        return "2LM emulated"
    if modes == {"hardware"}:
        return "2LM (hardware Memory Mode)"
    if "emulated" in modes:
        return "2LM (emulated and hardware)"
    return "2LM"


def draw(args):
    wls, driver, show_preset = c.load_workloads(FIG, args)

    # One group per network and ratio that has static/synchronous runs beside 2LM.
    groups = []
    for w in wls:
        keys = [k for k in w.keys(FORMULATIONS)
                if any(w.value("2lm", f, k) for f in FORMULATIONS)]
        if not keys:
            raise c.PlotError(f"{w.name} ({w.path}): no static or synchronous run "
                              f"compared with 2lm (the baseline of Figure 8); run {driver}")
        for k in keys:
            groups.append((w, k, w.run("2lm", k),
                           [w.value("2lm", f, k) for f in FORMULATIONS]))
    several_keys = {}
    for w, k, *_ in groups:
        several_keys.setdefault(id(w), set()).add(k)

    fig = c.new_figure(10, 6.5)
    ax = fig.subplots()
    n = len(FORMULATIONS)
    width = 0.7 / n
    used, top = [], 1.0
    labels = []
    for x, (w, k, base, bars) in enumerate(groups):
        used += w.runs_at(k, FORMULATIONS + ["2lm"])
        for j, v in enumerate(bars):
            if v is None:
                continue
            top = max(top, v.high)
            b = ax.bar(x + (j - (n - 1) / 2) * width, v.median, width,
                       color=c.COLORS[FORMULATIONS[j]], **c.bar_kw([v], w.predicted))
            c.bar_labels(ax, b, [v.median])
        label = c.NETWORK_NAMES.get(w.name, w.name)
        if w.batch is not None:
            label += f"\nbatch {w.batch}"
        if show_preset and w.preset:
            label += f", {w.preset}"
        if len(several_keys[id(w)]) > 1 and k is not None:
            label += f"\n{ratio_label(k, False)}"
        labels.append(label)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(labels)
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("speedup over 2LM (×)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    lm_name = two_lm_name([g[2] for g in groups])
    c.ref_line(ax, 1.0, lm_name.replace(" (", "\n("), linestyle="--")

    # Fast-memory limits, as the 2LM cache size, when one ratio throughout.
    keys = {g[1] for g in groups}
    extra = []
    if len(keys) == 1 and None not in keys:
        extra.append("slow:fast " + ratio_label(next(iter(keys)), False))
    handles = c.bar_handles(FORMULATIONS)
    handles.append(c.line_handle(f"{lm_name} (baseline, 1×)"))
    c.finish_bars(fig, "Large networks: speedup over 2LM (Figure 8)", handles, wls, used,
                  extra)
    return [(FIG, fig)]


def main():
    c.run_main(FIG, c.parser(FIG, __doc__), draw)


if __name__ == "__main__":
    main()
