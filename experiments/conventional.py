#!/usr/bin/python3
"""conventional.py -- the conventional networks under every placement: Figures 7, 9 and 11.

VGG19, ResNet-200, Inception v4 and DenseNet-264 (preset small) with the
baselines all-slow and all-fast (once each), numa, and the static, synchronous
and asynchronous ILPs at 8:1, 4:1 and 1:1, plus synchronous at 1:0 (all slow,
Figure 9's first point). Slow memory is emulated as Optane unless --emulate says
otherwise. Results: DATA/MACHINE/cpu/NETWORK-PRESET.json, runs appended;
a run already there is not run again.
"""

import sys

import common

DEFAULT_RATIOS = [(8, 1), (4, 1), (1, 1)]
QUICK_RATIOS = [(4, 1)]
FORMULATIONS = ("numa", "static", "synchronous", "asynchronous")

EPILOG = """\
runs, per network:
  all-fast      --formulation all-fast --ratio 0:1     (once)
  all-slow      --formulation all-slow --ratio 1:0     (once)
  numa, static, synchronous, asynchronous at every --ratios
  synchronous   at 1:0 (Figure 9's all-slow point)
--quick: tiny_cnn and tiny_mlp, ratio 4:1 (and the four runs above at 0:1 and
1:0), --iters 1: the whole pipeline in seconds, for CI.

data: DATA/MACHINE/cpu/NETWORK-PRESET.json (experiments/README.md)
exit status: 0 all done or in data, 1 a run failed, 2 bad usage, 130 interrupted
"""


def build(args, zoo):
    preset = args.preset or "small"
    common.warn_big_preset(preset, args.estimate)
    return common.grid(args, preset, FORMULATIONS,
                       before=[("all-fast", (0, 1)), ("all-slow", (1, 0))],
                       after=[("synchronous", (1, 0))])


def main():
    parser = common.make_parser(
        "conventional.py", __doc__.split("\n\n", 1)[1].strip(), EPILOG, common.PRESET_HELP,
        common.PAPER_NETWORKS, DEFAULT_RATIOS,
        "CI: networks tiny_cnn,tiny_mlp, ratio 4:1, --iters 1")
    return common.main("conventional", parser, build, common.QUICK_NETWORKS, QUICK_RATIOS,
                       common.PAPER_NETWORKS, DEFAULT_RATIOS)


if __name__ == "__main__":
    sys.exit(main())
