#!/usr/bin/python3
"""A picture of one plan: fast-memory occupancy over the training step, by
tensor kind, with the fast-memory limit, every move and the kernels that run
with operands in slow memory.  Data: the timeline file that
'autotm plan ... --timeline FILE.json' writes (docs/plan-timeline.md)."""

import json
import os

import common as c  # first: it puts python/ on the module path
from autotm_results.ratios import norm_ratio, ratio_label
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

FORMAT = "autotm-timeline"
VERSION = 1

# The graph's tensor kinds drawn as a few groups, bottom up: what lives all
# step first, then what comes and goes.  Kinds a later autotm adds fall into
# "other".
GROUPS = [
    ("parameters", ("param",), "#4c72b0"),
    ("optimizer state", ("optimizer_state",), "#8172b2"),
    ("inputs, constants, loss", ("input", "constant", "output"), "#937860"),
    ("activations", ("activation",), "#55a868"),
    ("gradients", ("grad",), "#dd8452"),
    ("workspace", ("workspace",), "#c44e52"),
]
OTHER_COLOR = "#999999"
LIMIT_COLOR = "#d62728"
SLOW_SHADE = "#f4c7c3"
TO_FAST_COLOR = "#1b7837"
TO_SLOW_COLOR = "#762a83"


# --------------------------------------------------------------------------
# Reading


def load(path):
    """Read and check a timeline file: the fields the picture uses."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as e:
        raise c.PlotError(f"{path}: not valid JSON (line {e.lineno}: "
                          f"{e.msg}); expected an '{FORMAT}' version "
                          f"{VERSION} file (autotm plan --timeline); a "
                          "truncated file?")
    except RecursionError:
        raise c.PlotError(f"{path}: not a timeline: JSON nested too deeply")
    except (OSError, UnicodeDecodeError) as e:
        raise c.PlotError(f"{path}: cannot read ({e})")
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        got = doc.get("format") if isinstance(doc, dict) \
            else type(doc).__name__
        raise c.PlotError(f"{path}: format {got!r}, expected '{FORMAT}' "
                          "(the file 'autotm plan --timeline FILE' writes)")
    if doc.get("version") != VERSION:
        raise c.PlotError(f"{path}: '{FORMAT}' version "
                          f"{doc.get('version')!r}, expected {VERSION}")
    for key, kind in (("graph", dict), ("kernels", list), ("moves", list),
                      ("kinds", list), ("formulation", str)):
        if not isinstance(doc.get(key), kind):
            raise c.PlotError(f"{path}: no '{key}' "
                              f"{'list' if kind is list else 'field'}")
    if not doc["kernels"]:
        raise c.PlotError(f"{path}: the graph has no kernels to draw")
    for i, k in enumerate(doc["kernels"]):
        if not isinstance(k, dict) or k.get("index") != i or \
                not isinstance(k.get("fast_bytes"), dict):
            raise c.PlotError(f"{path}: kernels[{i}] is not kernel {i} "
                              "with its 'fast_bytes'")
    for i, m in enumerate(doc["moves"]):
        if not isinstance(m, dict) or m.get("to") not in ("fast", "slow") \
                or m.get("mode") not in ("sync", "async"):
            raise c.PlotError(f"{path}: moves[{i}] has no 'to' (fast or "
                              "slow) or no 'mode' (sync or async)")
    return doc


# --------------------------------------------------------------------------
# Words


def byte_unit(top):
    """Binary units, as autotm prints them: GiB from 2 GiB up, else MiB
    (KiB for the tiniest graphs)."""
    if top >= 2 * 2**30:
        return 2**30, "GiB"
    if top >= 2**20:
        return 2**20, "MiB"
    return 2**10, "KiB"


def fmt_bytes(n):
    div, unit = byte_unit(n)
    v = n / div
    return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"


def fmt_s(s):
    if s is None or not c.is_num(s):
        return "unknown"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.3f} s"


def fmt_ratio(r):
    if not isinstance(r, dict) or not c.is_num(r.get("slow")) \
            or not c.is_num(r.get("fast")):
        return None
    key = norm_ratio(r["slow"], r["fast"])
    return ratio_label(key, long=True) if key else None


def title_of(doc):
    g = doc["graph"]
    name = c.NETWORK_NAMES.get(g.get("name"), g.get("name") or "graph")
    bits = []
    if g.get("preset"):
        bits.append(f"preset {g['preset']}")
    if c.is_num(g.get("batch")):
        bits.append(f"batch {g['batch']}")
    if c.is_num(g.get("image")):
        bits.append(f"{g['image']}×{g['image']}")
    net = f"{name} ({', '.join(bits)})" if bits else name
    form = c.FORMULATION_NAMES.get(doc["formulation"], doc["formulation"])
    limit = doc.get("fast_limit_bytes")
    lim = f"fast limit {fmt_bytes(limit)}" if c.is_num(limit) and limit > 0 \
        else "no fast limit"
    ratio = fmt_ratio(doc.get("ratio"))
    if ratio:
        lim += f" ({ratio})"
    pred = doc.get("predicted_runtime_s")
    how = "estimated" if doc.get("estimated") else "predicted"
    return f"{net}: {form} plan, {lim}, {how} step {fmt_s(pred)}"


def subtitle_of(doc, n_slow, n_kernels):
    parts = []
    prof = doc.get("profile")
    if isinstance(prof, dict):
        m = prof.get("cpu") or "unknown CPU"
        if c.is_num(prof.get("n_threads")):
            n = prof["n_threads"]
            m += f", {n} thread{'s' if n != 1 else ''}"
        if prof.get("backend"):
            m += f", {prof['backend']}"
        parts.append(m)
        emu = prof.get("emulation")
        if emu:
            # the profile's key: "optane x0.622@1a2b3c4d" (its scale, a hash of its rates)
            parts.append(f"slow memory: emulating {emu.split('@')[0]}")
        elif prof.get("slow_tier"):
            parts.append(f"slow memory: {prof['slow_tier']} (not emulated)")
    if doc.get("estimated") or (isinstance(prof, dict)
                                and prof.get("estimated")):
        parts.append("estimated (roofline) profile: times are estimates, "
                     "nothing was measured")
    else:
        parts.append("times predicted from a measured profile")
    # copies as autotm plan counts its moves, then evictions that copy nothing
    copies = [m for m in doc["moves"] if m.get("copied", True)]
    n_async = sum(1 for m in copies if m["mode"] == "async")
    moved = sum(m.get("bytes", 0) for m in copies)
    n_drops = len(doc["moves"]) - len(copies)
    parts.append(f"{len(copies)} move{'s' if len(copies) != 1 else ''}"
                 + (f" ({n_async} overlapped)" if n_async else "")
                 + (f" copying {fmt_bytes(moved)}" if moved else "")
                 + (f", {n_drops} eviction{'s' if n_drops != 1 else ''} of a "
                    "valid slow copy" if n_drops else ""))
    parts.append(f"{n_slow} of {n_kernels} kernels with slow operands")
    return " · ".join(parts)


# --------------------------------------------------------------------------
# Drawing


def spans(flags):
    """Runs of consecutive True as (first, last) index pairs."""
    out, start = [], None
    for i, f in enumerate(flags + [False]):
        if f and start is None:
            start = i
        elif not f and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def groups_of(kinds):
    """(label, kinds, color) for every group with kinds the file has, then
    'other' for kinds no group knows."""
    known = set()
    out = []
    for label, ks, color in GROUPS:
        known.update(ks)
        have = tuple(k for k in ks if k in kinds)
        if have:
            out.append((label, have, color))
    other = tuple(k for k in kinds if k not in known)
    if other:
        out.append(("other: " + ", ".join(other), other, OTHER_COLOR))
    return out


def gap_peaks(doc):
    """(x, bytes) of the moments between two kernels when fast memory holds
    more than while either of them runs: moves to fast memory start before
    the copies the last kernel was the last to use are freed."""
    kernels = doc["kernels"]
    out = []
    held = [k["fast_total_bytes"] - k["fast_bytes"].get("workspace", 0)
            for k in kernels] + [0]
    gaps = [k.get("gap_high_bytes", 0) for k in kernels[1:]] + \
        [doc.get("end_gap_high_bytes", 0)]
    for i, g in enumerate(gaps):
        if c.is_num(g) and g > max(held[i], held[i + 1]):
            out.append((i + 0.5, g))
    return out


def phase_runs(kernels):
    """(first, last, name): the forward pass, the backward pass with the
    parameter updates it interleaves, and updates after it, if any."""
    phases = [k.get("phase") for k in kernels]
    n = len(phases)
    back = [i for i, p in enumerate(phases) if p == "backward"]
    if not back:
        return [(0, n - 1, phases[0] if phases else "?")]
    first, last = back[0], back[-1]
    runs = []
    if first > 0:
        runs.append((0, first - 1, "forward"))
    mixed = any(p == "update" for p in phases[first:last + 1])
    runs.append((first, last, "backward + updates" if mixed else "backward"))
    if last + 1 < n:
        tail = set(phases[last + 1:])
        runs.append((last + 1, n - 1, tail.pop() if len(tail) == 1
                     else "after backward"))
    return runs


def draw_phases(ax, kernels, top):
    """A line where the phase changes, its name at the top."""
    runs = phase_runs(kernels)
    for j, (a, b, ph) in enumerate(runs):
        if j:
            ax.axvline(a - 0.5, color="#555555", linewidth=0.8, linestyle=":",
                       zorder=4)
        if (b - a + 1) >= 0.04 * len(kernels):
            ax.text((a + b) / 2, top, ph or "?",
                    ha="center", va="top", fontsize=8.5, color="#333333",
                    zorder=6,
                    bbox={"facecolor": "white", "edgecolor": "none",
                          "alpha": 0.7, "pad": 1.5})


def draw(doc):
    kernels = doc["kernels"]
    n = len(kernels)
    xs = list(range(n))
    kinds = [k for k in doc["kinds"] if isinstance(k, str)]
    groups = groups_of(kinds)
    limit = doc.get("fast_limit_bytes")
    limit = limit if c.is_num(limit) and limit > 0 else None

    totals = [k["fast_total_bytes"] for k in kernels]
    tops = [k.get("arena_top_bytes", 0) for k in kernels]
    gaps = gap_peaks(doc)
    top_bytes = max([limit or 0] + totals + tops + [b for _, b in gaps] + [1])
    div, unit = byte_unit(top_bytes)

    moves = doc["moves"]
    slow = [bool(k.get("slow_inputs")) or bool(k.get("slow_outputs"))
            for k in kernels]

    fig = c.new_figure(12, 7.2)
    ax, axm = fig.subplots(2, 1, sharex=True,
                           gridspec_kw={"height_ratios": [3.2, 1.4]})

    # kernels with slow operands, shaded on both panels
    for a, b in spans(slow):
        for x, alpha in ((ax, 1.0), (axm, 0.6)):
            x.axvspan(a - 0.5, b + 0.5, color=SLOW_SHADE, alpha=alpha,
                      linewidth=0, zorder=0)

    # occupancy by kind, stacked; a step per kernel
    # (each kernel a step from index - 0.5 to index + 0.5: the edges, and
    # every series with its last value again for the last edge)
    edges = [x - 0.5 for x in xs] + [n - 0.5]
    ys = [[sum(k["fast_bytes"].get(kind, 0) for kind in ks) / div
           for k in kernels] for _, ks, _ in groups]
    handles = []
    drawn = [(g, y) for g, y in zip(groups, ys) if any(y)]
    if drawn:
        ax.stackplot(edges, [y + y[-1:] for _, y in drawn],
                     colors=[g[2] for g, _ in drawn], step="post",
                     linewidth=0, zorder=2)
    for (label, _, color), _ in reversed(drawn):
        handles.append(Patch(facecolor=color, label=label))
    if any(t > h for t, h in zip(tops, totals)):
        ax.step(edges, [t / div for t in tops + tops[-1:]], where="post",
                color="#222222", linewidth=0.8, zorder=3)
        handles.append(Line2D([], [], color="#222222", linewidth=0.8,
                              label="arena extent (highest byte in use)"))
    if gaps:
        # a dash about a kernel wide (the axes are about 10.5 inches)
        dash = max(2.0, min(9.0, 0.9 * 10.5 * 72 / n))
        ax.plot([x for x, _ in gaps], [b / div for _, b in gaps], marker="_",
                markersize=dash, markeredgewidth=1.4, linestyle="none",
                color="#222222", zorder=4)
        handles.append(Line2D([], [], marker="_", markersize=9,
                              markeredgewidth=1.4, linestyle="none",
                              color="#222222",
                              label="held for a moment between kernels"))
    if limit:
        ax.axhline(limit / div, color=LIMIT_COLOR, linestyle="--",
                   linewidth=1.3, zorder=5)
        handles.append(Line2D([], [], color=LIMIT_COLOR, linestyle="--",
                              linewidth=1.3,
                              label=f"fast-memory limit ({fmt_bytes(limit)})"))
    ymax = top_bytes / div * 1.12
    ax.set_ylim(0, ymax)
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylabel(f"fast memory ({unit})")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.tick_params(labelbottom=False)
    draw_phases(ax, kernels, ymax * 0.985)
    if any(slow):
        handles.append(Patch(facecolor=SLOW_SHADE,
                             label="kernel runs with slow operands"))

    # moves: size up (to fast) or down (to slow) at the gap after the
    # kernel they follow; an overlapped one with a line over the kernels
    # it overlaps
    biggest = max([m.get("bytes", 0) for m in moves] + [1])
    mdiv, munit = byte_unit(biggest)
    style = {
        ("fast", "sync"): ("^", TO_FAST_COLOR, True),
        ("fast", "async"): ("^", TO_FAST_COLOR, False),
        ("slow", "sync"): ("v", TO_SLOW_COLOR, True),
        ("slow", "async"): ("v", TO_SLOW_COLOR, False),
    }
    size = 5.5 if len(moves) < 150 else 4 if len(moves) < 600 else 3
    used = set()
    for m in moves:
        x = m.get("after", -1) + 0.5
        sign = 1 if m["to"] == "fast" else -1
        y = sign * m.get("bytes", 0) / mdiv
        if not m.get("copied", True):
            axm.plot([x], [y], marker="x", color="#777777", markersize=size,
                     linestyle="none", zorder=4)
            used.add("drop")
            continue
        marker, color, filled = style[(m["to"], m["mode"])]
        done = m.get("done_after", m.get("after", -1)) + 0.5
        if m["mode"] == "async" and done > x:
            axm.plot([x, done], [y, y], color=color, linewidth=0.9,
                     alpha=0.7, zorder=3)
        axm.plot([x], [y], marker=marker, markersize=size, linestyle="none",
                 markeredgecolor=color, markeredgewidth=0.9,
                 markerfacecolor=color if filled else "white", zorder=4)
        used.add((m["to"], m["mode"]))
    names = {
        ("fast", "sync"): "to fast, synchronous",
        ("fast", "async"): "to fast, overlapped (line: kernels it overlaps)",
        ("slow", "sync"): "to slow, synchronous",
        ("slow", "async"): "to slow, overlapped",
    }
    for key in [("fast", "sync"), ("fast", "async"), ("slow", "sync"),
                ("slow", "async")]:
        if key in used:
            marker, color, filled = style[key]
            handles.append(Line2D([], [], marker=marker, linestyle="none",
                                  markeredgecolor=color,
                                  markerfacecolor=color if filled else "white",
                                  label=names[key]))
    if "drop" in used:
        handles.append(Line2D([], [], marker="x", linestyle="none",
                              color="#777777",
                              label="to slow, nothing copied "
                                    "(slow copy valid)"))
    if moves:
        axm.axhline(0, color="#666666", linewidth=0.7, zorder=2)
        lim = biggest / mdiv * 1.2
        axm.set_ylim(-lim, lim)
        # the sign is the direction: ticks say it with the markers' shapes
        axm.yaxis.set_major_formatter(c.matplotlib.ticker.FuncFormatter(
            lambda v, _: f"{v:g} ▲" if v > 0 else f"{-v:g} ▼" if v < 0
            else "0"))
        axm.set_ylabel(f"moved ({munit})")
    else:
        axm.set_ylim(-1, 1)
        axm.set_yticks([])
        axm.text(0.5, 0.5, "no moves: every tensor stays where it starts",
                 transform=axm.transAxes, ha="center", va="center",
                 fontsize=9, color="#555555")
        axm.set_ylabel("moves", fontsize=9)
    axm.set_xlabel("kernel (schedule order)")
    axm.xaxis.set_major_locator(
        c.matplotlib.ticker.MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    axm.grid(axis="y", alpha=0.3)
    axm.set_axisbelow(True)

    c.finish(fig, title_of(doc), subtitle_of(doc, sum(slow), n), handles,
             [h.get_label() for h in handles], ncol=3)
    return fig


# --------------------------------------------------------------------------
# Command line


def main():
    p = c.image_parser("plan.py", __doc__, "timeline", None,
                       "the timeline's path with .png and .pdf")
    p.add_argument("timeline", metavar="TIMELINE.json",
                   help="a timeline file (autotm plan --timeline FILE)")
    args = p.parse_args()
    image, what = args.output, "-o"
    if image is None:
        image, what = os.path.splitext(args.timeline)[0] + ".png", "the image beside the timeline,"
    c.draw_and_save("plan", f"{args.timeline}: malformed timeline",
                    lambda: [("plan", draw(load(args.timeline)))], image=image, what=what)


if __name__ == "__main__":
    main()
