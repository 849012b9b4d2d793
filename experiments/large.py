#!/usr/bin/python3
"""large.py -- the large networks, AutoTM against Memory Mode (2LM): Figure 8.

VGG416, ResNet-200, Inception v4 and DenseNet-264: per network one comparison
of the static and synchronous ILPs and of 2LM (Figure 8's baseline: fast memory
used as a hardware cache in front of slow memory), trained in turns in one
process. The paper's sizes (about 650 GB a step, the 'large' preset) cannot
run on a small machine, so the default preset is small with fast memory at a
quarter of each step's footprint (--ratio 3:1); slow memory is emulated as
Optane, and so is 2LM where the machine is not in Memory Mode
('--formulation 2lm --ratio 3:1 --emulate optane' emulates a fast-memory cache of
the limit's size in front of slow memory). Results:
DATA/MACHINE/large/NETWORK-PRESET.json.
"""

import sys

import common

NETWORKS = ("vgg416", "resnet200", "inception_v4", "densenet264")
DEFAULT_RATIOS = [(3, 1)]
FORMULATIONS = ("static", "synchronous", "2lm")
PRESETS = {
    "small": "every network sized to train a step on a 2-core, 24 GB machine",
    "paper": "the paper's large sizes (autotm's 'large' preset, about 650 GB a step): give --estimate "
             "on a machine that cannot hold them",
    "large": "the same as paper",
}

EPILOG = """\
comparisons, per network: autotm run --formulation static,synchronous,2lm
--turns N at every --ratios (default 3:1: fast memory a quarter of the step's
footprint)
--quick: tiny_cnn at 3:1, 2 turns of 1 step.

data: DATA/MACHINE/large/NETWORK-PRESET.json (PRESET small or large)
exit status: 0 all done or in data, 1 a run failed, 2 bad usage, 130 interrupted
"""


def build(args, zoo):
    preset = args.preset or "small"
    if preset == "paper":
        preset = "large"
    common.warn_big_preset(preset, args.estimate)
    return common.grid(args, preset, FORMULATIONS)


def main():
    parser = common.make_parser(
        "large.py", __doc__.split("\n\n", 1)[1].strip(), EPILOG, PRESETS, NETWORKS, DEFAULT_RATIOS,
        "CI: network tiny_cnn, ratio 3:1, --turns 2 --iters 1")
    return common.main("large", parser, build, ("tiny_cnn",), DEFAULT_RATIOS, NETWORKS, DEFAULT_RATIOS)


if __name__ == "__main__":
    sys.exit(main())
