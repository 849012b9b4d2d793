#!/usr/bin/python3
"""Figure 12: AutoTM on a GPU: speedup of the synchronous and asynchronous
placements over cudaMallocManaged (every tensor in managed memory), and the
oracle (every kernel at its profiled time, no copies), per network and
batch.  Data: DATA/<machine>/gpu/ (experiments/gpu.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.values import is_num

FIG = "fig12"
BARS = ["synchronous", "asynchronous", "oracle"]


def last_of(w, formulation):
    """The run of a formulation (GPU runs take the device's memory as the
    limit, so there is normally one; with several, the last appended)."""
    runs = w.of(formulation)
    return list(runs.values())[-1] if runs else None


def draw(args):
    machine, wls = c.load_dir(FIG, args)
    driver = registry.driver_of(FIG)
    show_preset = c.needs_preset(wls)
    groups, used, predicted, predicted_runs = [], [], [], []
    for w in wls:
        label = f"{c.NETWORK_NAMES.get(w.name, w.name)}"
        if w.batch is not None:
            label += f"\nbatch {w.batch}"
        if show_preset and w.preset:
            label += f"\n{w.preset}"
        managed = w.gpu_managed_runtime
        if not (is_num(managed) and managed > 0):
            raise c.PlotError(
                f"{w.name} batch {w.batch} ({w.path}): no cudaMallocManaged "
                "run (gpu_managed_runtime is null), the baseline of Figure "
                f"12; run {driver}")
        sync, asyn = last_of(w, "synchronous"), last_of(w, "asynchronous")
        if sync is None and asyn is None:
            raise c.PlotError(
                f"{w.name} batch {w.batch} ({w.path}): no synchronous or "
                f"asynchronous run; run {driver}")
        runs = [r for r in (sync, asyn) if r is not None]
        mode = c.time_mode(w, runs, FIG)
        values, errs = {}, {}
        for f, r in (("synchronous", sync), ("asynchronous", asyn)):
            if r is not None:
                values[f] = managed / c.rtime(r, mode)
                errs[f] = c.spread(managed, r, mode)
        oracle = sync.get("oracle_time") if sync is not None else None
        if is_num(oracle) and oracle > 0:
            values["oracle"] = managed / oracle
        used += runs
        if mode == "predicted":
            predicted.append(w)
            predicted_runs += runs
        groups.append((w, label, values, errs, mode))

    fig = c.new_figure(10, 6.5)
    ax = fig.subplots()
    n = len(BARS)
    width = 0.8 / n
    top = 1.0
    for x, (w, label, values, errs, mode) in enumerate(groups):
        for j, f in enumerate(BARS):
            if f not in values:
                continue
            v = values[f]
            top = max(top, v)
            hatch = c.PREDICTED_HATCH if (mode == "predicted"
                                          and f != "oracle") else None
            b = ax.bar(x + (j - (n - 1) / 2) * width, v, width,
                       color=c.COLORS[f], hatch=hatch,
                       **c.err_kw([errs.get(f, (0.0, 0.0))]),
                       edgecolor="#333333" if hatch else "white",
                       linewidth=0.6)
            c.bar_labels(ax, b, [v])
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([g[1] for g in groups])
    ax.set_xlim(-0.6, len(groups) - 0.4)
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("speedup over cudaMallocManaged (×)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    c.ref_line(ax, 1.0, "cudaMalloc-\nManaged")

    simulated = any(r.get("simulated") or r.get("backend") == "gpu-sim"
                    for r in used)
    title = ("Speedup over cudaMallocManaged on a simulated GPU (Figure 12)"
             if simulated else
             "GPU: speedup over cudaMallocManaged (Figure 12)")
    missing = [f"{g[0].name} b{g[0].batch}: no {f}" for g in groups
               for f in BARS if f not in g[2]]
    handles = c.bar_handles([f for f in BARS if any(f in g[2]
                                                    for g in groups)])
    for h in handles:
        if h.get_label() == "oracle":
            h.set_label("oracle (profiled kernel times, no copies)")
    handles.append(c.line_handle("cudaMallocManaged (baseline, 1×)"))
    if predicted_runs:
        handles.append(c.bar_handles([], predicted_runs)[0])
    c.finish(fig, title, c.describe(wls, used, predicted=predicted), handles,
             [h.get_label() for h in handles],
             note=("missing: " + "; ".join(missing)) if missing else None)
    return [(FIG, fig)]


def main():
    c.run_main(FIG, [FIG], c.parser(FIG, __doc__), draw)


if __name__ == "__main__":
    main()
