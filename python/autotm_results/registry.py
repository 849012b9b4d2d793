"""registry -- the experiments and the figures: the one list of them.

An experiment is a driver of experiments/ that writes results files into one
folder of DATA/MACHINE/; a figure is a plot script of plots/ that draws one or
more images from one experiment's folder. scripts/figures.sh runs every
experiment in order, then draws every figure, in the order listed here; the
end-to-end test checks every image; the plot scripts name their driver from
here. docs/extending.md says how to add one.

As a command (PYTHONPATH=python /usr/bin/python3 -m autotm_results.registry):
    table        the figures, their scripts, experiments and data folders
    experiments  per line, tab-separated: name, driver, gpu or -, why it has no --estimate or -
    figures      per line, tab-separated: name, script, why it has no --estimate or -, images
    images       every image name, one a line
"""

import argparse
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Experiment:
    name: str            # what figures.sh calls its step
    driver: str          # the script, from the repository's root
    folder: str          # where it writes under DATA/MACHINE/
    gpu: bool = False    # takes figures.sh's --gpu
    measured_only: str = ""  # why it cannot plan from an estimated profile ("": it can)


@dataclass(frozen=True)
class Figure:
    name: str            # figN (or a name of its own): what the plot script calls it
    script: str          # the plot script, from the repository's root
    experiment: str      # the Experiment whose data it draws
    images: tuple        # the images it writes, each as PNG and PDF
    shows: str           # what it shows, in a few words
    measured_only: str = ""  # why it is not drawn from estimated runs ("": it is)


EXPERIMENTS = (
    Experiment("conventional", "experiments/conventional.py", "cpu"),
    Experiment("inception", "experiments/inception.py", "cpu"),
    Experiment("large", "experiments/large.py", "large"),
    Experiment("gpu", "experiments/gpu.py", "gpu", gpu=True,
               measured_only="Figure 12 compares measured steps with the measured "
                             "cudaMallocManaged baseline"),
    Experiment("recompute", "experiments/recompute.py", "recompute"),
)

FIGURES = (
    Figure("fig7", "plots/fig7.py", "conventional", ("fig7",),
           "speedup over all slow of numa, static, synchronous and asynchronous at 8:1, 4:1, 1:1"),
    Figure("fig8", "plots/fig8.py", "large", ("fig8",),
           "the large networks: static and synchronous against 2LM"),
    Figure("fig9", "plots/fig9.py", "conventional", ("fig9",),
           "synchronous relative to all fast, with the memory's cost"),
    Figure("fig10", "plots/fig10.py", "inception", ("fig10a", "fig10b", "fig10c"),
           "Inception v4 over 18 ratios: slowdown, kernel IO in fast memory, bytes moved"),
    Figure("fig11", "plots/fig11.py", "conventional", ("fig11",),
           "predicted against measured: the step time and the slowdown against all fast",
           measured_only="Figure 11 compares predictions with measured steps"),
    Figure("fig12", "plots/fig12.py", "gpu", ("fig12",),
           "the GPU: synchronous, asynchronous and the oracle against cudaMallocManaged",
           measured_only="Figure 12 compares measured steps with the measured "
                         "cudaMallocManaged baseline"),
    # not a figure of the paper: issue #28's comparison at Figure 7's limits
    Figure("recompute", "plots/recompute.py", "recompute", ("recompute",),
           "synchronous and asynchronous alone and with recomputation against all fast, "
           "with the kernels recomputed"),
)


# Not a figure of the paper: the picture of one plan, drawn from the timeline file
# `autotm plan --timeline` writes (docs/plan-timeline.md); figures.sh draws one per Figure 7
# network.
PLAN_PICTURE = "plots/plan.py"
# Figure 12 against memory: PyTorch's ways and autotm's plans at their peaks, drawn from
# bench/torch_baselines.py's JSON (a GPU's: scripts/gpu-check.sh draws it after its baselines).
BASELINES_PICTURE = "plots/baselines.py"
# What else plots/ holds: the helpers every plot script imports.
PLOT_HELPERS = ("plots/common.py",)


def experiment(name):
    """experiment -- the Experiment called NAME (KeyError naming the known ones)"""
    for e in EXPERIMENTS:
        if e.name == name:
            return e
    raise KeyError(f"no experiment '{name}' (known: {', '.join(e.name for e in EXPERIMENTS)})")


def figure(name):
    """figure -- the Figure called NAME (KeyError naming the known ones)"""
    for f in FIGURES:
        if f.name == name:
            return f
    raise KeyError(f"no figure '{name}' (known: {', '.join(f.name for f in FIGURES)})")


def driver_of(fig):
    """driver_of -- the driver that writes the data of figure FIG (a name)"""
    return experiment(figure(fig).experiment).driver


def folder_of(fig):
    """folder_of -- the folder of DATA/MACHINE/ that figure FIG (a name) reads"""
    return experiment(figure(fig).experiment).folder


def images():
    """images -- every image name of every figure, in order"""
    return [i for f in FIGURES for i in f.images]


def table():
    """table -- the figures as a text table: images, script, driver, data folder, what it shows"""
    rows = [("images", "script", "data from", "folder", "shows")]
    for f in FIGURES:
        e = experiment(f.experiment)
        rows.append((", ".join(f.images), f.script, e.driver, e.folder + "/", f.shows))
    width = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r[:4], width)) + "  " + r[4]
                     for r in rows)


def main(argv=None):
    """main -- the registry as text for the shell scripts"""
    p = argparse.ArgumentParser(prog="python3 -m autotm_results.registry",
                                description="The experiments and figures autotm reproduces.")
    p.add_argument("what", choices=("table", "experiments", "figures", "images"))
    args = p.parse_args(argv)
    if args.what == "table":
        print(table())
    elif args.what == "experiments":
        for e in EXPERIMENTS:
            print("\t".join((e.name, e.driver, "gpu" if e.gpu else "-", e.measured_only or "-")))
    elif args.what == "figures":
        for f in FIGURES:
            print("\t".join((f.name, f.script, f.measured_only or "-", " ".join(f.images))))
    else:
        print("\n".join(images()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
