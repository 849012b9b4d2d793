#!/usr/bin/python3
"""Figure 10 (three images): one network (Inception v4 by default) under
AutoTM's static and synchronous placements over many slow:fast ratios,
against the fast-memory limit.  (a) slowdown against all fast memory, each
point the median of the per-turn ratios of one comparison (all fast, static
and synchronous trained in turns in one process), its error bar their range;
(b) share of the kernels' input and output bytes in fast memory;
(c) bytes the synchronous placement moves to slow and to fast memory per
step.  Data: DATA/<machine>/cpu/ (experiments/inception.py)."""

import common as c  # first: it puts python/ on the module path
from autotm_results import registry
from autotm_results.values import is_num

FIG = "fig10"
FORMULATIONS = ["static", "synchronous"]
DEFAULT_NETWORK = "inception_v4"


def pick(wls, network):
    """The workload to draw: --network, else inception_v4, else the network
    with the most static/synchronous ratios."""
    driver = registry.driver_of(FIG)
    if network is not None:
        mine = [w for w in wls if w.name == network]
        if not mine:
            raise c.PlotError(
                f"no results of network '{network}' in cpu/ (there: "
                f"{', '.join(sorted({w.name for w in wls}))}); run {driver}")
    else:
        mine = [w for w in wls if w.name == DEFAULT_NETWORK] or wls
    return max(mine, key=lambda w: len(w.keys(FORMULATIONS)))


def limit_bytes(w, run, add_io):
    """The fast-memory limit of a run in bytes; no limit (all fast): the
    all-fast footprint."""
    lim = run.get("dram_limit")
    if lim is None:
        return w.default_alloc_size
    return lim + (w.io_size or 0) if add_io else lim


def draw(args):
    wls, driver, _ = c.load_workloads(FIG, args)
    w = pick(wls, args.network)
    if not is_num(w.default_alloc_size):
        raise c.PlotError(f"{w.path}: no default_alloc_size (the all-fast "
                          "footprint)")
    keys = w.keys(FORMULATIONS)
    if len(keys) < 2:
        raise c.PlotError(f"{w.name} ({w.path}): static/synchronous runs at "
                          f"{len(keys)} ratio(s), Figure 10 sweeps many; "
                          f"run {driver}")
    series = {f: [(k, w.run(f, k)) for k in keys if w.run(f, k)]
              for f in FORMULATIONS}
    # (a): each placement's step over all fast's, turn by turn in its comparison
    slowdown = {(f, k): w.value(f, "all-fast", k) for f in FORMULATIONS for k in keys}
    if not any(slowdown.values()):
        raise c.PlotError(f"{w.name} ({w.path}): no static or synchronous run compared "
                          f"with all-fast (the baseline of Figure 10a); run {driver}")
    all_runs = [r for f in FORMULATIONS for _, r in series[f]]
    predicted = [w] if w.predicted else []
    style = "--" if w.predicted else "-"
    used = [r for k in keys for r in w.runs_at(k, FORMULATIONS + ["all-fast"])]

    xs_all = [limit_bytes(w, r, args.add_io_size) for r in all_runs]
    div, unit = c.fmt_bytes_unit(max(xs_all + [w.default_alloc_size]))
    foot = w.default_alloc_size / div
    how = "dashed lines" if predicted else ""
    sub = c.describe([w], used, predicted=predicted, how=how)
    name = w.title()
    xlabel = (f"fast-memory limit ({unit})" if not args.add_io_size else
              f"fast-memory limit + always-live bytes ({unit})")

    def frame(ax, ylabel, label_at="bottom"):
        ax.axvline(foot, color="#444444", linestyle="--", linewidth=1.2)
        top = label_at == "top"
        ax.annotate("all fast footprint", xy=(foot, 1.0 if top else 0.0),
                    xycoords=("data", "axes fraction"),
                    xytext=(-4, -6 if top else 6),
                    textcoords="offset points", rotation=90, ha="right",
                    va="top" if top else "bottom", fontsize=8.5,
                    color="#444444",
                    bbox=dict(boxstyle="round,pad=0.2", fc="white",
                              ec="none", alpha=0.8))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_xlim(0, foot * 1.06)
        ax.grid(alpha=0.3)
        ax.set_axisbelow(True)

    def pts(f, value):
        out = []
        for k, r in series[f]:
            v = value(r)
            if v is not None and is_num(v):
                out.append((limit_bytes(w, r, args.add_io_size) / div, v))
        out.sort()
        return [p[0] for p in out], [p[1] for p in out]

    pred_note = " (predicted)" if predicted else ""
    figures = []

    # (a) slowdown against all fast
    fig = c.new_figure(10, 6)
    ax = fig.subplots()
    top = 1.0
    handles = []
    for f, marker in zip(FORMULATIONS, ["s", "o"]):
        pts_a = sorted((limit_bytes(w, r, args.add_io_size) / div, slowdown[(f, k)])
                       for k, r in series[f] if slowdown[(f, k)] is not None)
        if not pts_a:
            continue
        x = [p[0] for p in pts_a]
        vals = [p[1] for p in pts_a]
        top = max(top, max(v.high for v in vals))
        kw = c.err_kw(vals)
        h = ax.errorbar(x, [v.median for v in vals], yerr=kw.get("yerr"), marker=marker,
                        linestyle=style, color=c.COLORS[f], linewidth=1.6, markersize=5,
                        elinewidth=0.8, capsize=2,
                        label=c.FORMULATION_NAMES[f] + pred_note)
        handles.append(h)
    h, = ax.plot([foot], [1.0], marker="*", markersize=12, linestyle="none",
                 color=c.COLORS["all-fast"], zorder=5,
                 label="all fast" + pred_note)
    handles.append(h)
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    ax.set_ylim(0, top * 1.08)
    frame(ax, "slowdown against all fast (×)")
    c.finish(fig, f"{name}: slowdown against all fast memory (Figure 10a)",
             sub, handles, [h.get_label() for h in handles])
    figures.append(("fig10a", fig))

    # (b) share of kernel inputs / outputs in fast memory
    fig = c.new_figure(10, 6)
    ax = fig.subplots()
    handles = []

    def share(num, den):
        def get(r):
            n, d = r.get(num), r.get(den)
            if not (is_num(n) and is_num(d)) or d <= 0:
                return None
            return 100.0 * n / d
        return get

    for f, marker in zip(FORMULATIONS, ["s", "o"]):
        for what, ls, mk in [("input", "-", marker), ("output", ":", marker)]:
            x, y = pts(f, share(f"bytes_dram_{what}_tensors",
                                f"bytes_{what}_tensors"))
            if not x:
                continue
            h, = ax.plot(x, y, marker=mk, linestyle=ls, color=c.COLORS[f],
                         linewidth=1.6, markersize=5,
                         markerfacecolor=c.COLORS[f] if what == "input"
                         else "white",
                         label=f"{c.FORMULATION_NAMES[f]}: kernel {what}s")
            handles.append(h)
    if not handles:
        raise c.PlotError(f"{w.name} ({w.path}): no run has bytes_input_"
                          "tensors / bytes_dram_input_tensors; rerun "
                          f"{driver}")
    ax.set_ylim(0, 105)
    frame(ax, "kernel IO bytes in fast memory (%)")
    c.finish(fig, f"{name}: kernel inputs and outputs in fast memory "
                  "(Figure 10b)", sub, handles,
             [h.get_label() for h in handles])
    figures.append(("fig10b", fig))

    # (c) bytes moved by the synchronous placement
    fig = c.new_figure(10, 6)
    ax = fig.subplots()
    handles = []
    moved = [r.get(k) for _, r in series["synchronous"]
             for k in ("bytes_moved_pmem", "bytes_moved_dram")]
    moved = [m for m in moved if is_num(m)]
    if not moved:
        raise c.PlotError(f"{w.name} ({w.path}): no synchronous run with "
                          f"bytes_moved_pmem / bytes_moved_dram; run {driver}")
    mdiv, munit = c.fmt_bytes_unit(max(moved) or 1)
    for field, label, marker, color in [
            ("bytes_moved_pmem", "to slow memory", "v", "#1b9e77"),
            ("bytes_moved_dram", "to fast memory", "^", "#d95f02")]:
        x, y = pts("synchronous",
                   lambda r, fl=field: r.get(fl) / mdiv
                   if is_num(r.get(fl)) else None)
        h, = ax.plot(x, y, marker=marker, linestyle="-", color=color,
                     linewidth=1.6, markersize=6,
                     label=f"synchronous: moved {label}")
        handles.append(h)
    ax.set_ylim(0, max(max(moved) / mdiv * 1.12, 1e-9))
    frame(ax, f"bytes moved per step ({munit})", label_at="top")
    c.finish(fig, f"{name}: data moved by synchronous AutoTM (Figure 10c)",
             c.describe([w], [r for _, r in series["synchronous"]], bars=False),
             handles, [h.get_label() for h in handles])
    figures.append(("fig10c", fig))
    return figures


def main():
    p = c.parser(FIG, __doc__)
    p.add_argument("--network", metavar="NAME",
                   help="network to draw (default: inception_v4 if present, "
                        "else the one with the most ratios)")
    p.add_argument("--add-io-size", action="store_true",
                   help="put runs at dram_limit + io_size on the x axis (the "
                        "original artifact's axis) instead of dram_limit, "
                        "which here already counts every fast-memory byte")
    c.run_main(FIG, p, draw)


if __name__ == "__main__":
    main()
