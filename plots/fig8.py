#!/usr/bin/python3
"""Figure 8: speedup of AutoTM's static and synchronous placements over
2LM (Memory Mode: fast memory as a hardware cache of slow memory) on the
large networks.  Data: DATA/<machine>/large/ (experiments/large.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.ratios import fast_fraction, ratio_label

FIG = "fig8"
FORMULATIONS = ["static", "synchronous"]


def two_lm_name(runs):
    modes = {r.get("memory_mode") for r in runs}
    if modes == {"emulated"}:
        return "2LM emulated"
    if modes == {"hardware"}:
        return "2LM (hardware Memory Mode)"
    if "emulated" in modes:
        return "2LM (emulated and hardware)"
    return "2LM"


def draw(args):
    machine, wls = c.load_dir(FIG, args)
    driver = registry.driver_of(FIG)
    show_preset = c.needs_preset(wls)

    # One group per network and ratio that has static/synchronous runs.
    groups = []
    for w in wls:
        lms = w.of("2lm")
        if not lms:
            raise c.PlotError(f"{w.name} ({w.path}): no 2lm run, the "
                              f"baseline of Figure 8; run {driver}")
        keys = sorted({k for f in FORMULATIONS for k in w.of(f)},
                      key=lambda k: -1 if k is None else fast_fraction(k))
        if not keys:
            raise c.PlotError(f"{w.name} ({w.path}): no static or "
                              f"synchronous run; run {driver}")
        for k in keys:
            base = lms.get(k)
            if base is None:
                if len(lms) != 1:
                    raise c.PlotError(
                        f"{w.name} ({w.path}): no 2lm run at "
                        f"{ratio_label(k, False)} to compare with; "
                        f"run {driver}")
                base = next(iter(lms.values()))
            bars = [w.run(f, k) for f in FORMULATIONS]
            mode = c.time_mode(w, bars + [base], FIG)
            groups.append((w, k, base, bars, mode))
    several_keys = {}
    for w, k, *_ in groups:
        several_keys.setdefault(id(w), set()).add(k)

    fig = c.new_figure(10, 6.5)
    ax = fig.subplots()
    n = len(FORMULATIONS)
    width = 0.7 / n
    used, predicted, predicted_runs, top = [], [], [], 1.0
    labels = []
    for x, (w, k, base, bars, mode) in enumerate(groups):
        used.append(base)
        t0 = c.rtime(base, mode)
        for j, r in enumerate(bars):
            if r is None:
                continue
            used.append(r)
            sp = t0 / c.rtime(r, mode)
            top = max(top, sp)
            b = ax.bar(x + (j - (n - 1) / 2) * width, sp, width,
                       color=c.COLORS[FORMULATIONS[j]],
                       **c.err_kw([c.spread(t0, r, mode)]),
                       hatch=(c.PREDICTED_HATCH if mode == "predicted"
                              else None),
                       edgecolor="white" if mode == "actual" else "#333333",
                       linewidth=0.6)
            c.bar_labels(ax, b, [sp])
        if mode == "predicted":
            predicted.append(w)
            predicted_runs += [r for r in bars + [base] if r is not None]
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
    if predicted_runs:
        handles.append(c.bar_handles([], predicted_runs)[0])
    c.finish(fig, "Large networks: speedup over 2LM (Figure 8)",
             c.describe(wls, used, extra, predicted=predicted), handles,
             [h.get_label() for h in handles])
    return [(FIG, fig)]


def main():
    c.run_main(FIG, [FIG], c.parser(FIG, __doc__), draw)


if __name__ == "__main__":
    main()
