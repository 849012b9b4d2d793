#!/usr/bin/python3
"""recompute.py -- placement alone against placement with recomputation, at the same limits.

VGG19, ResNet-200, Inception v4, DenseNet-264 and GPT-2 (preset small): per
network and ratio (8:1, 4:1) one comparison of all-fast, synchronous,
synchronous+recompute, asynchronous and asynchronous+recompute, trained in turns
in one process, so that each ILP is measured beside itself with recomputation
(autotm plan/run --recompute: a tensor may also be dropped after a use and its
producing kernel run again before a later one). Slow memory is emulated as
Optane unless --emulate says otherwise. Results:
DATA/MACHINE/recompute/NETWORK-PRESET.json, runs appended (with the kernels
recomputed per step and their time); a comparison already there is not run
again.
"""

import sys

import common

NETWORKS = common.PAPER_NETWORKS + ("gpt2",)
DEFAULT_RATIOS = [(8, 1), (4, 1)]
# the tightest of the drivers' ratios: where the tiny networks have the least room, and
# recomputation the most to win
QUICK_RATIOS = [(8, 1)]
# each ILP beside itself with recomputation; all-fast is the figure's baseline
FORMULATIONS = ("all-fast", "synchronous", "synchronous" + common.RECOMPUTE,
                "asynchronous", "asynchronous" + common.RECOMPUTE)

EPILOG = """\
comparisons, per network (autotm run --formulation LIST --turns N, one process each):
  at every --ratios   all-fast,synchronous,synchronous+recompute,asynchronous,asynchronous+recompute
With --estimate every placement of a comparison is planned alone instead
(autotm plan --estimate, with --recompute for the '+recompute' ones): predictions,
nothing run.
With --estimate --gpu-model NAME the plans are the GPU formulation's on that GPU
model (DATA/MACHINE/recompute/NETWORK-PRESET-NAME.json).
--quick: tiny_cnn, tiny_mlp and tiny_gpt, ratio 8:1, 2 turns of 1 step: the whole
pipeline in seconds, for CI.

data: DATA/MACHINE/recompute/NETWORK-PRESET.json (experiments/README.md)
exit status: 0 all done or in data, 1 a run failed, 2 bad usage, 130 interrupted
"""


def validate(parser, args):
    if args.gpu_model and not args.estimate:
        parser.error("--gpu-model plans for a GPU this machine need not have: give --estimate "
                     "too (predictions, nothing run)")


def build(args, zoo):
    preset = args.preset or ("gpu" if args.gpu_model else "small")
    if args.gpu_model:
        # one file per network and GPU model: predictions of that GPU, apart from this machine's
        return [t for net in args.networks for r in args.ratios
                for t in common.tasks_for(args, net, preset,
                                          args.folder / f"{net}-{preset}-{args.gpu_model}.json",
                                          r, FORMULATIONS, gpu=common.GPU_MODEL + args.gpu_model)]
    common.warn_big_preset(preset, args.estimate)
    return common.grid(args, preset, FORMULATIONS)


def main():
    parser = common.make_parser(
        "recompute.py", __doc__.split("\n\n", 1)[1].strip(), EPILOG, common.PRESET_HELP,
        NETWORKS, DEFAULT_RATIOS,
        "CI: networks tiny_cnn,tiny_mlp,tiny_gpt, ratio 8:1, --turns 2 --iters 1")
    parser.add_argument("--gpu-model", metavar="NAME",
                        help="with --estimate: plan the GPU formulation as that GPU would run it "
                             "(autotm plan --gpu-model NAME: h100, h200, a100, rtx2080ti; "
                             "docs/gpu.md), preset gpu unless --preset says otherwise; e.g. "
                             "--estimate --gpu-model h100 --ratios 1:1")
    return common.main("recompute", parser, build, common.QUICK_NETWORKS, QUICK_RATIOS,
                       NETWORKS, DEFAULT_RATIOS, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
