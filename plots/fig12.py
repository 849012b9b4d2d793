#!/usr/bin/python3
"""Figure 12: AutoTM on a GPU: speedup of the synchronous and asynchronous
placements (and, where measured, both with recomputation) over every tensor on
the device, and the oracle (every kernel at its profiled time, no copies), per
network and batch.  The all-device step is --placement managed, which is never
oversubscribed (more managed memory than the device has free can hang a GPU),
so where it fits it is every tensor on the device: not the paper's paging
baseline (docs/gpu.md).  Every bar is the median of the per-turn ratios of one
comparison (all trained in turns in one process), its error bar their range;
the oracle's against each turn's all-device step.  Data: DATA/<machine>/gpu/
(experiments/gpu.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results.comparisons import spread, turn_times
from autotm_results.values import is_num

FIG = "fig12"
PLANNED = ["synchronous", "asynchronous", "synchronous+recompute", "asynchronous+recompute"]
BARS = PLANNED + ["oracle"]
# the bars a comparison must have; the recomputing ones are drawn where measured
REQUIRED = ["synchronous", "asynchronous"]


def draw(args):
    wls, driver, show_preset = c.load_workloads(FIG, args)
    groups, used, unfinished = [], [], []
    for w in wls:
        label = f"{c.NETWORK_NAMES.get(w.name, w.name)}"
        if w.batch is not None:
            label += f"\nbatch {w.batch}"
        if show_preset and w.preset:
            label += f"\n{w.preset}"
        if w.predicted:
            raise c.PlotError(
                f"{w.name} batch {w.batch} ({w.path}): no comparison measured with "
                f"cudaMallocManaged (the baseline of Figure 12); run {driver}")
        keys = [k for k in w.keys(PLANNED)
                if any(w.value("managed", f, k) for f in PLANNED)]
        if not keys:
            raise c.PlotError(
                f"{w.name} batch {w.batch} ({w.path}): no synchronous or asynchronous "
                f"run compared with managed (the baseline of Figure 12); run {driver}")
        k = keys[-1]  # GPU runs take one limit; with several, the largest
        values = {f: w.value("managed", f, k) for f in PLANNED}
        used += w.runs_at(k, PLANNED + ["managed"])
        # the oracle (every kernel at its profiled time, no copies) against each turn's
        # managed step
        managed = w.run("managed", k)
        oracles = [r.get("oracle_time") for r in w.runs_at(k, PLANNED)]
        oracle = next((o for o in oracles if is_num(o) and o > 0), None)
        if oracle is not None and managed is not None:
            values["oracle"] = spread([t / oracle for t in turn_times(managed)])
        groups.append((w, label, {f: v for f, v in values.items() if v is not None}))
        # a bar whose plan the solver did not finish (a time limit, a heuristic) says so
        for r in w.runs_at(k, PLANNED):
            st = r.get("solver_status") or ""
            if st not in ("", "optimal", "within gap"):
                gap = r.get("mip_gap")
                unfinished.append(
                    f"{c.NETWORK_NAMES.get(w.name, w.name)} b{w.batch} {r.get('formulation')}: "
                    f"{(r.get('solver') or 'the solver').upper()} stopped ({st}"
                    + (f", gap {100 * gap:.1f}%)" if is_num(gap) else ")"))

    fig = c.new_figure(10, 6.5)
    ax = fig.subplots()
    shown = [f for f in BARS if any(f in g[2] for g in groups)]
    n = len(shown)
    width = 0.8 / n
    top = 1.0
    for x, (w, label, values) in enumerate(groups):
        for j, f in enumerate(shown):
            if f not in values:
                continue
            v = values[f]
            top = max(top, v.high)
            b = ax.bar(x + (j - (n - 1) / 2) * width, v.median, width,
                       color=c.COLORS[f], **c.err_kw([v]),
                       edgecolor="white", linewidth=0.6)
            c.bar_labels(ax, b, [v.median])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[1] for g in groups])
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("speedup over the all-device step (×)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    c.ref_line(ax, 1.0, "all on\nthe device")

    simulated = any(r.get("simulated") or r.get("backend") == "gpu-sim"
                    for r in used)
    title = ("Speedup over every tensor on the device, on a simulated GPU (Figure 12)"
             if simulated else
             "GPU: speedup over every tensor on the device (Figure 12)")
    missing = [f"{g[0].name} b{g[0].batch}: no {f}" for g in groups
               for f in REQUIRED if f not in g[2]]
    missing += unfinished
    handles = c.bar_handles(shown)
    for h in handles:
        if h.get_label() == "oracle":
            h.set_label("oracle (profiled kernel times, no copies)")
    handles.append(c.line_handle("all-device: every tensor in managed memory, never "
                                 "oversubscribed (1×)"))
    c.finish(fig, title, c.describe(wls, used), handles,
             [h.get_label() for h in handles],
             note="; ".join(missing) if missing else None)
    return [(FIG, fig)]


def main():
    c.run_main(FIG, c.parser(FIG, __doc__), draw)


if __name__ == "__main__":
    main()
