#!/usr/bin/python3
"""Figure 12 against memory: the training step's time against the device
memory it is given, per network.  PyTorch's three ways (the plain step,
activation checkpointing per block, saved activations offloaded with
save_on_cpu) are points at the peak each took; autotm's placements, planned
and trained with each of those peaks as their device memory, are lines
through them, and autotm's step with every tensor on the device a dashed line.  Data: the JSON that bench/torch_baselines.py --device cuda
--autotm ... --json FILE writes (scripts/gpu-check.sh's torch_baselines.json);
several files are drawn together, a network's rows from the last file that
has it."""

import json

import common as c  # first: it puts python/ on the module path
from matplotlib.lines import Line2D

MODES = [  # PyTorch's ways, as bench/torch_baselines.py names them
    ("plain", "PyTorch eager", "o"),
    ("checkpoint", "PyTorch, checkpointing per block", "s"),
    ("save_on_cpu", "PyTorch, save_on_cpu (pinned)", "^"),
]
PYTORCH_COLOR = "#444444"
PLANS = ["synchronous", "asynchronous", "synchronous+recompute", "asynchronous+recompute"]
ALL_DEVICE_COLOR = "#d62728"
GIB = float(1 << 30)


def load(paths):
    """{network: {mode: row}} and the rows' device and torch version, from every file"""
    nets, devices, torches, left_out = {}, set(), set(), 0
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except OSError as e:
            raise c.PlotError(f"{path}: cannot read it ({e.strerror})")
        except ValueError as e:
            raise c.PlotError(f"{path}: not JSON ({e})")
        rows = doc.get("rows") if isinstance(doc, dict) else None
        if not isinstance(rows, list) or not rows:
            raise c.PlotError(f"{path}: no 'rows' (bench/torch_baselines.py --json writes them)")
        by_net = {}
        for i, r in enumerate(rows):
            if not isinstance(r, dict) or not isinstance(r.get("network"), str) \
                    or r.get("mode") not in [m for m, _, _ in MODES]:
                raise c.PlotError(f"{path}: rows[{i}] has no network or no mode of "
                                  f"{', '.join(m for m, _, _ in MODES)}")
            row = f"{path}: rows[{i}] ({r['network']}, {r['mode']})"
            why = unusable(r)
            if why:
                c.warning(f"{row} left out: {why}")
                left_out += 1
                continue
            drop_bad_plans(r, row)
            by_net.setdefault(r["network"], {})[r["mode"]] = r
            if r.get("device"):
                devices.add(str(r["device"]))
            if r.get("torch"):
                torches.add(str(r["torch"]))
        nets.update(by_net)  # a later file's network replaces an earlier one's
    if not nets and left_out:
        raise c.PlotError(f"{', '.join(paths)}: no row left to draw (each is left out above)")
    drawable = {n: m for n, m in nets.items()
                if any(c.is_num(r.get("peak_bytes")) for r in m.values())}
    if not drawable:
        raise c.PlotError(f"{', '.join(paths)}: no row has a peak of device memory (a run "
                          "with --device cpu measures none): nothing to draw against memory")
    return drawable, sorted(devices), sorted(torches)


def unusable(r):
    """why row R cannot be drawn (a step that is not a positive number, a peak that is not a
    number of at least 0), as autotm_results leaves out a run whose step cannot be used; None
    when it can, or when it did not run (its error is named under the panels)"""
    if r.get("error"):
        return None
    s, peak = r.get("step_s"), r.get("peak_bytes")
    if not c.is_positive(s):
        return f"step_s {s!r} is not a positive number"
    if peak is not None and not (c.is_num(peak) and peak >= 0):
        return f"peak_bytes {peak!r} is not a number of at least 0"
    return None


def drop_bad_plans(r, row):
    """row R without autotm's steps that are not positive numbers, each left out with a warning
    naming ROW and the plan"""
    got = r.get("autotm")
    if got is not None and not isinstance(got, dict):
        c.warning(f"{row}: autotm's steps left out: {got!r} is not an object of plans")
        del r["autotm"]
    for plan, s in list((r.get("autotm") or {}).items()):
        if not c.is_positive(s):
            c.warning(f"{row}: autotm's {plan} step left out: {s!r} is not a positive number")
            del r["autotm"][plan]
    s = r.get("autotm_all_device_s")
    if s is not None and not c.is_positive(s):
        c.warning(f"{row}: autotm's all-device step left out: autotm_all_device_s {s!r} is "
                  "not a positive number")
        del r["autotm_all_device_s"]


def autotm_points(modes):
    """{plan: [(peak bytes, step s)]}, each plan's steps at the PyTorch modes' peaks"""
    pts = {}
    for mode, _, _ in MODES:
        r = modes.get(mode)
        if not r or not c.is_num(r.get("peak_bytes")) or not isinstance(r.get("autotm"), dict):
            continue
        for plan, s in r["autotm"].items():
            if c.is_num(s) and s > 0:
                pts.setdefault(plan, []).append((r["peak_bytes"], s))
    return {p: sorted(v) for p, v in pts.items()}


def panel(ax, net, modes):
    """one network: PyTorch's points, autotm's lines; the notes of what did not run"""
    notes, plans = [], []
    top = right = 0.0
    for mode, label, marker in MODES:
        r = modes.get(mode)
        if not r:
            continue
        if r.get("error"):
            notes.append(f"{c.NETWORK_NAMES.get(net, net)} {mode}: {r['error']}")
            continue
        if c.is_num(r.get("peak_bytes")) and c.is_num(r.get("step_s")):
            x, y = r["peak_bytes"] / GIB, r["step_s"] * 1e3
            ax.plot([x], [y], marker=marker, markersize=9, color=PYTORCH_COLOR,
                    markerfacecolor="white", markeredgewidth=1.6, linestyle="none", zorder=4)
            top, right = max(top, y), max(right, x)
            best = min((s for s in (r.get("autotm") or {}).values() if c.is_num(s) and s > 0),
                       default=None)
            if best:  # autotm's best plan at this memory, against this way's step
                ax.annotate(f"autotm {best / r['step_s']:.2f}×", (x, y), xytext=(7, 5),
                            textcoords="offset points", fontsize=8, color=PYTORCH_COLOR)
        if r.get("autotm_error"):
            notes.append(f"{c.NETWORK_NAMES.get(net, net)}, autotm at the {mode} peak: "
                         f"{r['autotm_error']}")
    pts = autotm_points(modes)
    for plan in PLANS + sorted(p for p in pts if p not in PLANS):
        if plan not in pts:
            continue
        xs = [b / GIB for b, _ in pts[plan]]
        ys = [s * 1e3 for _, s in pts[plan]]
        ax.plot(xs, ys, marker="o", markersize=5, linewidth=1.6,
                color=c.COLORS.get(plan, "#17becf"), zorder=3)
        top, right = max([top] + ys), max([right] + xs)
    plain = modes.get("plain", {})
    all_device = plain.get("autotm_all_device_s")
    if c.is_num(all_device) and all_device > 0:
        ax.axhline(all_device * 1e3, color=ALL_DEVICE_COLOR, linestyle="--", linewidth=1.2,
                   zorder=2)
        top = max(top, all_device * 1e3)
    r = next((modes[m] for m, _, _ in MODES if m in modes), {})
    title = c.NETWORK_NAMES.get(net, net)
    if c.is_num(r.get("batch")):
        title += f", batch {r['batch']}"
    if c.is_num(r.get("image")):
        title += f", {r['image']}×{r['image']}"
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("device memory: PyTorch's peak, autotm's budget (GiB)")
    ax.set_ylabel("training step (ms)")
    ax.set_ylim(0, top * 1.15 or 1)
    if c.is_num(all_device) and all_device > 0:
        plans.append("all-device")
    ax.set_xlim(0, right * 1.2 or 1)
    ax.grid(True, color="#e5e5e5", linewidth=0.8)
    ax.set_axisbelow(True)
    return notes, [p for p in PLANS if p in pts] + sorted(p for p in pts if p not in PLANS) + plans


def draw(nets, devices, torches):
    order = sorted(nets, key=lambda n: (c.NETWORK_ORDER.index(n)
                                        if n in c.NETWORK_ORDER else len(c.NETWORK_ORDER), n))
    rows, cols = c.grid(len(order))
    fig = c.new_figure(5.2 * cols + 0.6, 4.3 * rows + 2.2)
    axes, _, _ = c.panels(fig, len(order))
    notes, plans = [], []
    for ax, net in zip(axes, order):
        n, p = panel(ax, net, nets[net])
        notes += n
        plans += [x for x in p if x not in plans]
    handles = [Line2D([], [], marker=m, markersize=8, color=PYTORCH_COLOR,
                      markerfacecolor="white", markeredgewidth=1.5, linestyle="none", label=l)
               for _, l, m in MODES]
    handles += [Line2D([], [], marker="o", markersize=5, linewidth=1.6,
                       color=c.COLORS.get(p, "#17becf"),
                       label="autotm, " + c.FORMULATION_NAMES.get(p, p))
                for p in plans if p != "all-device"]
    if "all-device" in plans:
        handles.append(Line2D([], [], color=ALL_DEVICE_COLOR, linestyle="--", linewidth=1.2,
                              label="autotm, every tensor on the device (its own peak)"))
    sub = (f"{', '.join(devices) or 'device not recorded'} · PyTorch "
           f"{', '.join(torches) or '?'} · each point the fastest step of its turns (PyTorch) "
           "or the median over turns (autotm), float32 without TF32; autotm's budget counts its "
           "device arena and its kernels' workspaces, as PyTorch's peak counts its own; beside "
           "each PyTorch point, autotm's best plan at that memory over PyTorch's step")
    c.finish(fig, "Step time against device memory: autotm's plans and what PyTorch users "
             "pick (Figure 12)", sub, handles, [h.get_label() for h in handles], ncol=2,
             note="; ".join(notes) if notes else None)
    return fig


def main():
    p = c.image_parser("baselines.py", __doc__, "data", "fig12-memory.png", "fig12-memory.png",
                       "A row that cannot be drawn (a step that is not a positive number, a "
                       "negative peak) is left out with a warning naming it.")
    p.add_argument("data", nargs="+", metavar="BASELINES.json",
                   help="bench/torch_baselines.py's --json output (one or more)")
    args = p.parse_args()
    c.draw_and_save("baselines", f"{', '.join(args.data)}: malformed rows",
                    lambda: [("fig12-memory", draw(*load(args.data)))], image=args.output)


if __name__ == "__main__":
    main()
