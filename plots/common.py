"""common.py -- what the figure scripts share beyond autotm_results: the command
line, the data folder of a figure, a workload's comparisons, measured or
predicted values, the subtitle, layout and atomic saving.

Which figure reads which folder of DATA/MACHINE/, written by which driver, is
the registry's (python/autotm_results/registry.py); reading and checking a
results file, ratios and numbers are autotm_results' too.  A run is identified
by (formulation, ratio in lowest terms).  Every value that is a ratio of two
measured steps comes from one comparison (placements trained in turns in one
process, docs/comparisons.md): the median of the per-turn ratios, with their
least and largest as an error bar.  Data measured one process a run (older
drivers) is refused with a message to rerun the driver.  Ratios are slow:fast.
"""

import argparse
import math
import os
import stat
import sys
import tempfile
import textwrap

try:
    import matplotlib
except ImportError:
    sys.exit(f"{os.path.basename(sys.argv[0])}: this Python ({sys.executable}) has no matplotlib: "
             "install python3-matplotlib (Debian) and run the script with /usr/bin/python3")

matplotlib.use("Agg")
import matplotlib.ticker  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

# the package the drivers share lives in python/ under the repository: a figure script is
# run directly (plots/fig7.py), with its own folder, not the repository, on the module path
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "python"))
from autotm_results import registry, values  # noqa: E402
from autotm_results.ratios import fast_fraction, parse_ratios, ratio_label  # noqa: E402
from autotm_results.comparisons import (check_measured,  # noqa: E402
                                        comparison_id, comparisons, exact,
                                        latest, turn_times)
from autotm_results.results import (ResultsError, read, results_files,  # noqa: E402
                                    run_key, run_ratio, warning)
from autotm_results.values import argtype, is_num, is_positive  # noqa: E402

# The order networks are shown in (the artifact's), others follow by name.
NETWORK_ORDER = ["vgg19", "resnet200", "inception_v4", "densenet264",
                 "gpt2", "vit_b_16", "bert-base", "vgg416", "test_vgg"]
NETWORK_NAMES = {
    "vgg16": "VGG16", "vgg19": "VGG19", "vgg416": "VGG416",
    "resnet50": "ResNet-50", "resnet101": "ResNet-101",
    "resnet152": "ResNet-152", "resnet200": "ResNet-200",
    "inception_v4": "Inception v4",
    "densenet121": "DenseNet-121", "densenet169": "DenseNet-169",
    "densenet201": "DenseNet-201", "densenet264": "DenseNet-264",
    "test_vgg": "test VGG", "tiny_cnn": "tiny CNN", "tiny_mlp": "tiny MLP",
    "gpt2": "GPT-2", "gpt2-medium": "GPT-2 medium", "gpt2-large": "GPT-2 large",
    "gpt2-xl": "GPT-2 XL", "bert-base": "BERT-base", "vit_b_16": "ViT-B/16",
    "tiny_gpt": "tiny GPT", "tiny_bert": "tiny BERT", "tiny_vit": "tiny ViT",
}

FORMULATION_NAMES = {
    "all-fast": "all fast", "all-slow": "all slow", "numa": "NUMA",
    "static": "static", "synchronous": "synchronous",
    "asynchronous": "asynchronous", "2lm": "2LM", "vdnn": "vDNN",
    "managed": "cudaMallocManaged", "oracle": "oracle",
    # the ILPs with recomputation (autotm --recompute), named so in a run list and its runs
    "static+recompute": "static + recomputation",
    "synchronous+recompute": "synchronous + recomputation",
    "asynchronous+recompute": "asynchronous + recomputation",
}
COLORS = {
    "numa": "#8c8c8c", "static": "#1f77b4", "synchronous": "#ff7f0e",
    "asynchronous": "#2ca02c", "2lm": "#9467bd", "oracle": "#d62728",
    "all-fast": "#444444", "cost": "#6a3d9a",
    # each ILP's hue, lighter, with recomputation
    "static+recompute": "#aec7e8", "synchronous+recompute": "#ffbb78",
    "asynchronous+recompute": "#98df8a",
}
PREDICTED_HATCH = "///"
PNG_DPI = 150


class PlotError(ResultsError):
    """A problem with the input; the message names what and where."""


class OutputError(PlotError):
    """An output path that is no image file to write (a folder, a device): bad usage (exit 2),
    never renamed into one silently."""


# --------------------------------------------------------------------------
# Command line


def parser(fig, description, ratios=None):
    """The argument parser every figure script shares; with RATIOS, a figure drawn at a few
    ratios, also --ratios (ratios_option) with RATIOS its default."""
    driver = registry.driver_of(fig)
    p = argparse.ArgumentParser(
        prog=f"{fig}.py",
        description=description,
        epilog=f"The data comes from {driver} (or scripts/figures.sh). "
               "Exit status: 0 drawn, 1 bad or missing data, 2 bad usage (an --out that is "
               "not a folder, an image there that is not a regular file).")
    p.add_argument("--data", default="data", metavar="DIR",
                   help="the data folder (default: data)")
    p.add_argument("--out", default="figures", metavar="DIR",
                   help="the folder the PNG and PDF go into, made when missing (default: "
                        "figures); a path that is not a folder, or an image in it that is "
                        "not a regular file, is refused (exit 2)")
    p.add_argument("--machine", metavar="NAME",
                   help="which machine subfolder of the data folder "
                        "(default: the only one with data for this figure)")
    p.add_argument("--preset", metavar="NAME",
                   help="only workloads of this size preset (default: all)")
    if ratios is not None:
        ratios_option(p, ratios)
    return p


def image_parser(prog, description, bad, default, default_words, note=""):
    """The argument parser of a script that draws one image from the files it is given: its
    epilog (exit status 1 for BAD or missing input, then NOTE) and -o/--output (DEFAULT, said
    in the help as DEFAULT_WORDS)."""
    p = argparse.ArgumentParser(
        prog=prog, description=description,
        epilog=f"Writes OUT.png and OUT.pdf. Exit status: 0 drawn, 1 bad or missing {bad}, 2 bad "
               "usage (an OUT that is not a regular file or a new file in an existing folder: a "
               "folder, a device)." + (f" {note}" if note else ""))
    p.add_argument("-o", "--output", metavar="OUT.png", default=default,
                   help="the image to write, ending in .png or .pdf, and the other format "
                        f"beside it (default: {default_words})")
    return p


# argparse types: --ratios S:F,... (in lowest terms, as the runs are keyed), a number above 0
ratio_list = argtype(parse_ratios, True)
positive_float = argtype(values.positive_float)


# what a field of the wrong type, or a missing one, raises while drawing
MALFORMED = (KeyError, TypeError, ValueError, ArithmeticError, AttributeError)


def draw_and_save(who, malformed, draw, out=None, image=None, what="-o"):
    """DRAW() ([(name, figure)]) saved atomically as PNG and PDF, the images' paths printed:
    into the folder OUT (made when missing) as NAME.png and NAME.pdf, or, with IMAGE (one
    figure), as IMAGE itself and the other format beside it (image_paths; WHAT names where the
    path came from).  An output that is no image file to write (a folder, a device) is refused
    before anything is drawn: one line on stderr naming it, exit 2.  On a data error one line
    on stderr naming WHO (MALFORMED says what held a field of the wrong type) and exit 1,
    leaving earlier images as they were."""
    try:
        if image is not None:
            paths = image_paths(image, what)
        else:
            check_out_folder(out)
        figures = draw()
        if image is not None:
            targets = [(fig, paths) for _, fig in figures]
        else:
            targets = [(fig, [os.path.join(out, f"{name}.{ext}") for ext in ("png", "pdf")])
                       for name, fig in figures]
        save_all(targets, out, what)
    except OutputError as e:
        print(f"{who}: {e}", file=sys.stderr)
        sys.exit(2)
    except ResultsError as e:
        print(f"{who}: {e}", file=sys.stderr)
        sys.exit(1)
    except MALFORMED as e:
        print(f"{who}: {malformed} ({type(e).__name__}: {e})", file=sys.stderr)
        sys.exit(1)
    for _, paths in targets:
        for path in paths:
            print(path)


def ratios_option(p, default):
    """The --ratios option of a figure drawn at a few ratios, DEFAULT when present."""
    p.add_argument("--ratios", type=ratio_list, default=ratio_list(default),
                   metavar="S:F,...",
                   help=f"ratios to show, when present (default: {default})")


def run_main(fig, parse, draw):
    """Parse the command line, then draw_and_save the figure script's images."""
    args = parse.parse_args()
    draw_and_save(fig, f"malformed results under '{args.data}'", lambda: draw(args), args.out)


# --------------------------------------------------------------------------
# Loading


def no_results(fig, data, sub, why=""):
    driver = registry.driver_of(fig)
    where = os.path.join(data, "*", sub, "")
    return PlotError(f"no results in {where}{why}; run {driver} "
                     "(or scripts/figures.sh)")


def machine_dir(fig, args, sub=None):
    """The machine folder to read: --machine, or the only one holding
    results for this figure."""
    data = args.data
    sub = sub or registry.folder_of(fig)
    driver = registry.driver_of(fig)
    if not os.path.isdir(data):
        raise PlotError(f"no data folder '{data}'; run {driver} "
                        "(or scripts/figures.sh), or give --data DIR")
    machines = sorted(d for d in os.listdir(data)
                      if os.path.isdir(os.path.join(data, d))
                      and not d.startswith("."))
    if not machines:
        raise PlotError(f"data folder '{data}' is empty; run {driver} "
                        "(or scripts/figures.sh)")
    if args.machine is not None:
        if args.machine not in machines:
            raise PlotError(f"no machine '{args.machine}' in '{data}' "
                            f"(there: {', '.join(machines)})")
        return os.path.join(data, args.machine)
    with_data = [m for m in machines if results_files(os.path.join(data, m, sub))]
    if not with_data:
        raise no_results(fig, data, sub)
    if len(with_data) > 1:
        raise PlotError(f"several machines in '{data}' have {sub}/ results "
                        f"({', '.join(with_data)}); pick one with --machine")
    return os.path.join(data, with_data[0])


class Workload:
    """One results file: the workload, its sizes, and its runs: the comparisons measured in
    turns (drawn as medians of per-turn ratios) or, where none was measured, plans alone
    (drawn from their predictions: --estimate)."""

    def __init__(self, results, fig):
        check_measured(results, registry.driver_of(fig))
        self.path = path = results.path
        self.doc = doc = results.doc
        wl = results.workload
        self.name = wl.get("name") or os.path.basename(path).split("-")[0]
        self.batch = wl.get("batch")
        self.preset = wl.get("preset")
        self.image = wl.get("image")
        self.io_size = doc.get("io_size")
        self.default_alloc_size = doc.get("default_alloc_size")
        self.gpu_managed_runtime = doc.get("gpu_managed_runtime")
        self.machine = doc.get("machine") or {}
        self.comparisons = comparisons(results.runs)
        # plans alone, not run: key -> the last of each key
        self.plans = {run_key(r): r for r in results.runs if comparison_id(r) is None}
        self.mode = "actual" if self.comparisons else "predicted"

    # A short name, with the preset when several of a network are shown.
    def title(self, with_preset=False, predicted=False):
        name = NETWORK_NAMES.get(self.name, self.name)
        bits = []
        if with_preset and self.preset:
            bits.append(f"preset {self.preset}")
        if self.batch is not None:
            bits.append(f"batch {self.batch}")
        if self.image is not None:
            bits.append(f"{self.image}×{self.image}")
        if predicted:
            bits.append("predicted")
        return f"{name} ({', '.join(bits)})" if bits else name

    @property
    def predicted(self):
        return self.mode == "predicted"

    def keys(self, formulations, exclude_ends=False):
        """The ratios at which any of FORMULATIONS was compared (or planned), by fast fraction."""
        if self.predicted:
            keys = {k for f, k in self.plans if f in formulations and k is not None}
        else:
            keys = {c.ratio for c in self.comparisons if c.ratio is not None
                    and any(f in c.runs for f in formulations)}
        if exclude_ends:
            keys -= {(1, 0), (0, 1)}
        return sorted(keys, key=fast_fraction)

    def run(self, formulation, key):
        """The run of FORMULATION at ratio KEY: of the last comparison there that has it (or the
        plan alone)."""
        if self.predicted:
            return self.plans.get((formulation, key))
        c = latest(self.comparisons, key, formulation)
        return c.runs[formulation] if c else None

    def value(self, num, den, key):
        """NUM's step over DEN's (formulations) at ratio KEY as a Spread: the median and range of
        the per-turn ratios of the last comparison there that has both; from plans alone, the
        ratio of the predictions (DEN, a baseline, at another ratio when it was planned at one
        only); None when there is nothing to divide."""
        if not self.predicted:
            c = latest(self.comparisons, key, num, den)
            return c.ratio_of(num, den) if c else None
        a = self.plans.get((num, key))
        b = self.plans.get((den, key))
        if b is None:
            others = [r for (f, _), r in self.plans.items() if f == den]
            b = others[-1] if len(others) == 1 else None
        if a is None or b is None:
            return None
        pa, pb = a.get("predicted_runtime"), b.get("predicted_runtime")
        if not (is_positive(pa) and is_positive(pb)):
            raise PlotError(f"{self.path}: {self.name}: run '{run_name(a if not is_positive(pa) else b)}'"
                            " has neither a measured nor a predicted runtime; rerun its driver")
        return exact(pa / pb)

    def runs_at(self, key, formulations):
        """The runs drawn at ratio KEY for FORMULATIONS (for describe())."""
        return [r for r in (self.run(f, key) for f in formulations) if r is not None]


def err(s):
    """The error bar of Spread S: (below, above) its median."""
    if s is None:
        return (0.0, 0.0)
    return (max(0.0, s.median - s.low), max(0.0, s.high - s.median))


def err_kw(spreads):
    """bar() keywords for error bars from Spreads; none when flat."""
    errs = [err(s) for s in spreads]
    if not any(lo or hi for lo, hi in errs):
        return {}
    return {"yerr": [[lo for lo, _ in errs], [hi for _, hi in errs]],
            "error_kw": {"elinewidth": 0.8, "capsize": 2, "ecolor": "#333333"}}


def bar_kw(spreads, predicted):
    """bar() keywords for bars of SPREADS: their error bars (err_kw), and the hatch and edge of
    bars drawn from predicted times (PREDICTED)."""
    return {**err_kw(spreads), "hatch": PREDICTED_HATCH if predicted else None,
            "edgecolor": "#333333" if predicted else "white", "linewidth": 0.6}


def formulation_bars(ax, w, ratios, bars, f, offset, width):
    """Formulation F's bars of workload W at RATIOS (x: a ratio's place plus OFFSET), from
    BARS[(F, ratio)] (None: no bar there): (the bars drawn, their Spreads, their ratios), or
    None when F has none."""
    xs, vals, ks = [], [], []
    for x, k in enumerate(ratios):
        v = bars[(f, k)]
        if v is not None:
            xs.append(x + offset)
            vals.append(v)
            ks.append(k)
    if not xs:
        return None
    drawn = ax.bar(xs, [v.median for v in vals], width, color=COLORS[f],
                   **bar_kw(vals, w.predicted))
    return drawn, vals, ks


def turns_note(runs, bars=True):
    """Subtitle words for values that are medians of per-turn ratios: over how many turns (with
    error bars from the least to the largest when the figure draws them)."""
    counts = [len(turn_times(r)) for r in runs if r is not None and comparison_id(r)]
    counts = [n for n in counts if n > 0]
    if not counts:
        return None
    lo, hi = min(counts), max(counts)
    n = f"{lo}" if lo == hi else f"{lo} to {hi}"
    return (f"each ratio the median over {n} turns of steps measured side by side in one process"
            + (", bars from the least to the largest" if bars else ""))


def load(path, fig):
    """Read and check one results file."""
    return Workload(read(path).check(), fig)


def load_dir(fig, args, sub=None):
    """Every workload of the figure's folder (--preset filters)."""
    sub = sub or registry.folder_of(fig)
    mdir = machine_dir(fig, args, sub)
    files = results_files(os.path.join(mdir, sub))
    if not files:
        raise no_results(fig, args.data, sub,
                         f" (machine {os.path.basename(mdir)})")
    wls = [load(f, fig) for f in files]
    if args.preset is not None:
        wls = [w for w in wls if w.preset == args.preset]
        if not wls:
            raise no_results(fig, args.data, sub,
                             f" with preset '{args.preset}'")
    wls.sort(key=network_sort_key)
    return os.path.basename(mdir), wls


def network_sort_key(w):
    try:
        i = NETWORK_ORDER.index(w.name)
    except ValueError:
        i = len(NETWORK_ORDER)
    return (i, w.name, w.preset or "", w.batch or 0)


def needs_preset(wls):
    """Whether a network appears with several presets (then say which)."""
    presets = {}
    for w in wls:
        presets.setdefault(w.name, set()).add(w.preset)
    return any(len(p) > 1 for p in presets.values())


def load_workloads(fig, args):
    """The workloads of the figure's folder (load_dir), the driver that measures them (for the
    messages) and whether a title must name the preset (needs_preset)."""
    _, wls = load_dir(fig, args)
    return wls, registry.driver_of(fig), needs_preset(wls)


# --------------------------------------------------------------------------
# Predicted values: for a whole network when it was only planned (--estimate)


def run_name(run):
    key = run_ratio(run)
    f = run.get("formulation")
    return f if key is None else f"{f} {ratio_label(key, long=False)}"


def predicted_label(runs):
    """Legend words for hatched (predicted) bars."""
    if any(r.get("estimated_profile") for r in runs):
        return "predicted (estimated profile)"
    return "predicted (planned, not run)"


# --------------------------------------------------------------------------
# Describing what the data is: machine, presets, emulation


def emulation_label(run):
    """What an emulated slow tier was, with the rates it waited for: "optane x0.622 of
    this machine's 62.2 GB/s (read 18.1, write 7.47 GB/s)", or "optane, absolute
    (read 29, write 12 GB/s)"; the preset's name alone for results from before the
    rates were recorded."""
    name = (run.get("emulation") or "").replace("+2lm", "")
    rates = run.get("emulation_rates")
    if not name or not isinstance(rates, dict):
        return name
    try:
        rw = f"read {rates['read_gbps']:.3g}, write {rates['write_gbps']:.3g} GB/s"
        if rates.get("form") == "absolute":
            return f"{name}, absolute ({rw})"
        return (f"{name} x{rates['scale']:.3g} of this machine's "
                f"{rates['fast_gbps']:.1f} GB/s ({rw})")
    except (KeyError, TypeError, ValueError):
        return name


def describe(wls, runs, extra=(), predicted=(), how="hatched", bars=True):
    """The subtitle: machine, presets, and what was emulated, simulated or
    estimated, from the workloads and the runs drawn.  PREDICTED: the
    workloads drawn with predicted times (HOW says how they are marked)."""
    parts = []
    machines = []
    for w in wls:
        m = w.machine
        text = m.get("cpu") or "unknown CPU"
        if m.get("n_cpus") is not None:
            n = m["n_cpus"]
            text += f", {n} CPU{'s' if n != 1 else ''}"
        if text not in machines:
            machines.append(text)
    # plans for a GPU model ran nowhere: the machine that planned them is no part of the figure
    modelled = [r for r in runs if r is not None]
    if not modelled or any(r.get("backend") != "gpu-model" for r in modelled):
        parts.extend(machines)
    presets = sorted({w.preset for w in wls if w.preset})
    if presets:
        parts.append(("preset " if len(presets) == 1 else "presets ")
                     + ", ".join(presets))
    devices, emul, slow_real = [], [], False
    two_lm, simulated, estimated = set(), [], False
    for r in runs:
        if r is None:
            continue
        if r.get("estimated_profile") and not is_num(r.get("actual_runtime")):
            estimated = True
        backend = r.get("backend")
        if r.get("memory_mode"):
            two_lm.add(r["memory_mode"])
        if r.get("simulated") or backend == "gpu-sim":
            if r.get("emulation") and r["emulation"] not in simulated:
                simulated.append(r["emulation"])
            elif not simulated:
                simulated.append("")
            continue
        if backend == "cuda":
            d = r.get("device")
            if d and "GPU: " + d not in devices:
                devices.append("GPU: " + d)
            continue
        if backend == "gpu-model":
            # planned for a GPU this machine need not have, from its datasheet (docs/gpu.md)
            d = f"planned for the {r.get('device') or '?'} GPU model (datasheet rates)"
            if d not in devices:
                devices.append(d)
            continue
        if backend == "cpu" or "emulated" in r:
            if r.get("emulated") and r.get("emulation"):
                e = emulation_label(r)
                if e and e not in emul:
                    emul.append(e)
            elif r.get("emulated") is False:
                slow_real = True
    parts.extend(devices)
    if emul:
        parts.append("slow memory: emulating " + ", ".join(emul))
    if slow_real:
        parts.append("slow memory: not emulated")
    if "emulated" in two_lm:
        parts.append("2LM emulated")
    if "hardware" in two_lm:
        parts.append("2LM on hardware (Memory Mode)")
    if simulated:
        links = ", ".join(s for s in simulated if s)
        parts.append("simulated GPU: CPU kernels with an emulated "
                     + (f"{links} " if links else "")
                     + "host link, not GPU measurements")
    if predicted:
        names = ", ".join(dict.fromkeys(
            NETWORK_NAMES.get(w.name, w.name) for w in predicted))
        est = any(r.get("estimated_profile") for r in runs if r is not None
                  and not is_num(r.get("actual_runtime")))
        parts.append(f"{names}: predicted times"
                     + (" (estimated profile)" if est else "")
                     + f", not measured, {how}")
    elif estimated:
        parts.append("estimated profile: predicted times, not measured")
    note = turns_note(runs, bars)
    if note:
        parts.append(note)
    parts.extend(extra)
    return " · ".join(parts)


# --------------------------------------------------------------------------
# Layout and saving


def ratio_panel(ax, ratios, top, title, ylabel, i, n, ncol):
    """A panel of bars at RATIOS: their labels along x, y from 0 to TOP, the TITLE, YLABEL on
    the first column and the x label on the last row (panel I of N), a grid behind."""
    ax.set_xticks(range(len(ratios)))
    ax.set_xticklabels([ratio_label(k, long=False) for k in ratios])
    ax.set_xlim(-0.6, len(ratios) - 0.4)
    ax.set_ylim(0, top)
    panel_title(ax, title, ncol)
    if i % ncol == 0:
        ax.set_ylabel(ylabel)
    if i >= n - ncol:
        ax.set_xlabel("slow : fast memory")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def panel_title(ax, text, ncol, fig_width=10.0):
    """A panel title, broken before its details when the panel is narrow."""
    fits = fig_width / ncol * 10.5  # characters at 10.5 pt
    if len(text) > fits and " (" in text:
        head, tail = text.split(" (", 1)
        text = head + "\n(" + tail
    ax.set_title(text, fontsize=10.5)


def grid(n):
    if n <= 3:
        return 1, n
    if n == 4:
        return 2, 2
    if n <= 6:
        return 2, 3
    if n <= 9:
        return 3, 3
    return math.ceil(n / 4), 4


def new_figure(width=10, height=7):
    return Figure(figsize=(width, height))


def panels(fig, n, sharey=False):
    rows, cols = grid(n)
    axes = fig.subplots(rows, cols, squeeze=False, sharey=sharey)
    flat = [a for row in axes for a in row]
    for a in flat[n:]:
        a.set_visible(False)
    return flat[:n], rows, cols


def finish(fig, title, subtitle, handles=None, labels=None, ncol=None,
           note=None):
    """Title and subtitle on top, the legend below the panels (so it never
    covers them), an optional note at the very bottom, then lay out."""
    w, h = fig.get_size_inches()
    chars = int(w * 13)  # characters per line of the 9 pt subtitle
    sub = textwrap.wrap(subtitle, chars) if subtitle else []
    lines = textwrap.wrap(title, int(w * 9.2)) or [""]  # of the 13 pt bold title
    extra = 0.24 * (len(lines) - 1)
    top_in = 0.18 + 0.3 + extra + 0.19 * len(sub) + 0.12
    fig.text(0.5, 1 - 0.18 / h, "\n".join(lines), ha="center", va="top",
             fontsize=13, fontweight="bold", linespacing=1.2)
    if sub:
        fig.text(0.5, 1 - (0.18 + 0.32 + extra) / h, "\n".join(sub), ha="center",
                 va="top", fontsize=9, color="#333333", linespacing=1.3)
    bottom_in = 0.1
    note_lines = textwrap.wrap(note, chars) if note else []
    if note_lines:
        fig.text(0.5, 0.08 / h, "\n".join(note_lines), ha="center",
                 va="bottom", fontsize=8, color="#555555", linespacing=1.3)
        bottom_in += 0.17 * len(note_lines) + 0.05
    if handles:
        if ncol is None:
            # as many columns as fit the width
            chars = sum(len(h.get_label()) + 8 for h in handles)
            nrow = math.ceil(chars / (w * 11.5))
            ncol = math.ceil(len(handles) / nrow)
        nrow = math.ceil(len(handles) / ncol)
        fig.legend(handles, labels, loc="lower center", ncol=ncol,
                   bbox_to_anchor=(0.5, bottom_in / h), frameon=False,
                   fontsize=9, handlelength=2.2, columnspacing=1.6)
        bottom_in += 0.24 * nrow + 0.12
    fig.tight_layout(rect=(0, bottom_in / h, 1, 1 - top_in / h),
                     h_pad=1.6, w_pad=1.2)


def bar_handles(formulations, predicted_runs=None):
    hs = [Patch(facecolor=COLORS[f], label=FORMULATION_NAMES.get(f, f))
          for f in formulations]
    if predicted_runs:
        hs.append(Patch(facecolor="white", edgecolor="#444444",
                        hatch=PREDICTED_HATCH,
                        label=predicted_label(predicted_runs)))
    return hs


def _kind(mode):
    """what a file of MODE (st_mode) is, in words"""
    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a pipe"),
                        (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return words
    return "not a regular file"


def check_image_path(path, what):
    """PATH as an image to write: a regular file (replaced) or a new file in an existing folder;
    OutputError naming it (WHAT: where it came from) otherwise"""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):
            raise OutputError(f"{what} '{path}': no folder '{folder}' to write it in") from None
        return
    except OSError as e:
        raise OutputError(f"{what} '{path}': cannot be looked at ({e.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(f"{what} '{path}' is {_kind(st.st_mode)}, not an image file: give "
                          "the path of the image to write")


def image_paths(path, what="-o"):
    """[PNG, PDF] that an image named PATH writes: PATH itself, which must end in .png or .pdf,
    and the other format beside it (OUT.png and OUT.pdf), each a regular file or a new file in
    an existing folder; OutputError naming the path otherwise (never another name silently)"""
    check_image_path(path, what)
    stem, ext = os.path.splitext(path)
    if ext.lower() not in (".png", ".pdf") or not os.path.basename(stem):
        raise OutputError(f"{what} '{path}': name the image OUT.png or OUT.pdf (both are "
                          "written, the other beside it)")
    other = stem + (".pdf" if ext.lower() == ".png" else ".png")
    check_image_path(other, f"{what} '{path}': the {other[-3:].upper()} beside it,")
    return [path, other] if ext.lower() == ".png" else [other, path]


def check_out_folder(out):
    """--out OUT as a folder to write images into: one, or nothing yet (it is made); OutputError
    naming it when it is something else (a file, a device)"""
    try:
        st = os.stat(out)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as e:
        raise OutputError(f"--out '{out}': cannot be looked at ({e.strerror})") from None
    if not stat.S_ISDIR(st.st_mode):
        kind = "a regular file" if stat.S_ISREG(st.st_mode) else _kind(st.st_mode)
        raise OutputError(f"--out '{out}' is {kind}, not a folder: give the folder the images "
                          "go into")


def save_all(targets, out=None, what="-o"):
    """Write every figure of TARGETS ([(figure, [PNG path, PDF path])]) under temporary names
    beside its paths, then rename them all into place; on failure nothing is left.  OUT: the
    folder they go into, made first when missing (None: the paths' folders exist).  A path that
    is no image file to write is refused (OutputError, naming WHAT gave it where there is no
    OUT) before anything is written."""
    if out is not None:
        check_out_folder(out)
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as e:
            raise PlotError(f"cannot make the output folder '{out}' ({e})")
    for _, paths in targets:
        for path in paths:
            check_image_path(path, "the image" if out is not None else what)
    temps = []
    mask = os.umask(0)
    os.umask(mask)
    try:
        for fig, paths in targets:
            for final in paths:
                ext = os.path.splitext(final)[1][1:].lower()
                folder, name = os.path.split(final)
                fd, tmp = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}.",
                                           suffix=".tmp")
                os.close(fd)
                temps.append((tmp, final))
                meta = {"CreationDate": None} if ext == "pdf" else {}
                fig.savefig(tmp, format=ext, dpi=PNG_DPI, metadata=meta)
                os.chmod(tmp, 0o666 & ~mask)  # mkstemp makes it 0600
        for tmp, final in temps:
            os.replace(tmp, final)
    except Exception as e:
        for tmp, _ in temps:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        where = out if out is not None else os.path.dirname(targets[0][1][0]) or "."
        raise PlotError(f"cannot write the images in '{where}' ({e})")


def fmt_bytes_unit(max_bytes):
    """A unit (divisor, name) fitting values up to max_bytes."""
    if max_bytes >= 0.5e9:
        return 1e9, "GB"
    if max_bytes >= 0.5e6:
        return 1e6, "MB"
    return 1e3, "kB"


def bar_labels(ax, bars, values, fmt="{:.2f}×", fontsize=7.5):
    for b, v in zip(bars, values):
        if v is None or not is_num(v):
            continue
        ax.annotate(fmt.format(v), (b.get_x() + b.get_width() / 2,
                                    b.get_height()),
                    xytext=(0, 2), textcoords="offset points", ha="center",
                    va="bottom", fontsize=fontsize)


def ref_line(ax, y, label, color="#444444", linestyle="--"):
    """A horizontal reference line, named by a tick on the right edge (so
    the name never covers a bar).  Call after the y limits are final."""
    ax.axhline(y, color=color, linestyle=linestyle, linewidth=1.2, zorder=3)
    twin = ax.twinx()
    twin.set_ylim(ax.get_ylim())
    twin.set_yscale(ax.get_yscale())
    twin.set_yticks([y])
    twin.set_yticklabels([label], fontsize=8, color=color)
    twin.tick_params(axis="y", length=3, color=color)
    twin.yaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    return twin


def finish_bars(fig, title, handles, wls, used, extra=()):
    """finish a bar figure: the legend's HANDLES, and the hatch's where some of the
    workloads WLS were drawn with predicted times; the subtitle from WLS and the runs USED."""
    predicted = [w for w in wls if w.predicted]
    if predicted:
        handles = handles + [bar_handles([], used)[-1]]
    finish(fig, title, describe(wls, used, extra, predicted=predicted), handles,
           [h.get_label() for h in handles])


def line_handle(label, color="#444444", linestyle="--", marker=None):
    from matplotlib.lines import Line2D
    return Line2D([], [], color=color, linestyle=linestyle, marker=marker,
                  linewidth=1.2, label=label)
