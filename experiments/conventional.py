#!/usr/bin/python3
"""conventional.py -- the conventional networks under every placement: Figures 7, 9 and 11.

VGG19, ResNet-200, Inception v4 and DenseNet-264, and Figure 7's transformer
panel, GPT-2 and ViT-B/16 (preset small): per network and
ratio (8:1, 4:1, 1:1) one comparison of all-fast, all-slow, numa and the static,
synchronous and asynchronous ILPs, trained in turns in one process, plus one of
all-fast and synchronous at 1:0 (all slow, Figure 9's first point). Slow memory
is emulated as Optane unless --emulate says otherwise. Results:
DATA/MACHINE/cpu/NETWORK-PRESET.json, runs appended; a comparison already there
is not run again.
"""

import sys

import common

NETWORKS = common.PAPER_NETWORKS + common.TRANSFORMER_NETWORKS
DEFAULT_RATIOS = [(8, 1), (4, 1), (1, 1)]
QUICK_RATIOS = [(4, 1)]
FORMULATIONS = ("all-fast", "all-slow", "numa", "static", "synchronous", "asynchronous")
# Figure 9's all-slow point: synchronous at the least any plan needs, against all-fast
ALL_SLOW_POINT = ((1, 0), ("all-fast", "synchronous"))

EPILOG = """\
comparisons, per network (autotm run --formulation LIST --turns N, one process each):
  at every --ratios   all-fast,all-slow,numa,static,synchronous,asynchronous
  at 1:0              all-fast,synchronous (Figure 9's all-slow point)
With --estimate every placement of a comparison is planned alone instead
(autotm plan --estimate): predictions, nothing run.
--quick: tiny_cnn, tiny_mlp and tiny_gpt, ratio 4:1 (and 1:0), 2 turns of 1 step: the
whole pipeline in seconds, for CI.

data: DATA/MACHINE/cpu/NETWORK-PRESET.json (experiments/README.md)
exit status: 0 all done or in data, 1 a run failed, 2 bad usage, 130 interrupted
"""


def build(args, zoo):
    preset = args.preset or "small"
    common.warn_big_preset(preset, args.estimate)
    return common.grid(args, preset, FORMULATIONS, extra=[ALL_SLOW_POINT])


def main():
    parser = common.make_parser(
        "conventional.py", __doc__.split("\n\n", 1)[1].strip(), EPILOG, common.PRESET_HELP,
        NETWORKS, DEFAULT_RATIOS,
        "CI: networks tiny_cnn,tiny_mlp,tiny_gpt, ratio 4:1, --turns 2 --iters 1")
    return common.main("conventional", parser, build, common.QUICK_NETWORKS, QUICK_RATIOS,
                       NETWORKS, DEFAULT_RATIOS)


if __name__ == "__main__":
    sys.exit(main())
