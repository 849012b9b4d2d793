#!/usr/bin/python3
"""gpu.py -- the GPU networks against cudaMallocManaged: Figure 12.

VGG19, ResNet-200, Inception v4 and DenseNet-264: per network and batch one
comparison of the cudaMallocManaged baseline (every tensor in managed memory)
and the synchronous and asynchronous ILPs with half of each step's working set
on the device (ratio 1:1), trained in turns in one process. The oracle of the
figure (every kernel at its profiled time, no copies) is in every planned run.

--gpu sim (the default) is a simulated GPU: the CPU's kernels, with the host
link's copies emulated (PCIe 4 unless autotm is told otherwise); its results
say "simulated": true and the figure labels them simulated. It runs the small
preset by default (one batch per network, the preset's). --gpu cuda runs on an
NVIDIA GPU, by default the gpu preset: every batch it lists (Figure 12's).
Results: DATA/MACHINE/gpu/NETWORK-PRESET-bBATCH.json, one file per network and
batch.
"""

import sys

import common

DEFAULT_RATIOS = [(1, 1)]
# a tiny network's largest kernels take most of its peak, and on a GPU every operand of a
# kernel must be on the device: 1:1 is infeasible for tiny_cnn and tiny_mlp, 1:8 is not
QUICK_RATIOS = [(1, 8)]
FORMULATIONS = ("managed", "synchronous", "asynchronous")
RECOMPUTE = ("synchronous+recompute", "asynchronous+recompute")
PRESETS = {
    "small": "one batch per network, the small preset's (the default with --gpu sim)",
    "gpu": "the paper's GPU batches, every one 'autotm zoo' lists: vgg19 64/128, resnet200 32/64/128, "
           "inception_v4 64/128/256, densenet264 32/64/128 (the default with --gpu cuda)",
    "paper": "the same as gpu",
}

EPILOG = """\
comparisons, per network and batch: autotm run --formulation
managed,synchronous,asynchronous --turns N at every --ratios (default 1:1: the
device holds half the step's peak); --recompute adds synchronous+recompute and
asynchronous+recompute
--quick: tiny_cnn, tiny_mlp and tiny_gpt at 1:8 (their kernels do not fit half their
peak), 2 turns of 1 step, on the simulated GPU unless --gpu cuda.

data: DATA/MACHINE/gpu/NETWORK-PRESET-bBATCH.json
exit status: 0 all done or in data, 1 a run failed, 2 bad usage, 130 interrupted
"""


def build(args, zoo):
    preset = args.preset or ("gpu" if args.gpu == "cuda" else "small")
    if preset == "paper":
        preset = "gpu"
    runs = []
    for net in args.networks:
        batches = args.batches or zoo.batches(preset, net)
        if not batches:
            say_missing(net, preset)
            sys.exit(common.EXIT_USAGE)
        for b in batches:
            # the small preset runs its own batch (no --batch); other presets name each batch
            pass_batch = b if (args.batches or preset != "small") else None
            f = args.folder / f"{net}-{preset}-b{b}.json"
            for ratio in args.ratios:
                forms = FORMULATIONS + (RECOMPUTE if args.recompute else ())
                runs.append(common.Compare(net, preset, f, forms, ratio, batch=pass_batch,
                                           gpu=args.gpu, shown_batch=b))
    return runs


def say_missing(net, preset):
    common.say(f"gpu.py: the {preset} preset has no batch for {net}: give --batches B,... "
               f"(see 'autotm zoo')")


def header(args):
    if args.gpu == "sim":
        return ["GPU: simulated (CPU kernels, host link emulated; results say \"simulated\": true)"]
    return ["GPU: CUDA (an NVIDIA GPU)"]


def validate(parser, args):
    if args.estimate:
        parser.error("--estimate: Figure 12 compares measured steps with the measured cudaMallocManaged "
                     "baseline, which cannot be estimated; run gpu.py without --estimate")


def main():
    parser = common.make_parser(
        "gpu.py", __doc__.split("\n\n", 1)[1].strip(), EPILOG, PRESETS, common.PAPER_NETWORKS,
        DEFAULT_RATIOS, "CI: networks tiny_cnn,tiny_mlp,tiny_gpt, ratio 1:8, --turns 2 --iters 1", emulate=False,
        default_preset="small with --gpu sim, gpu with --gpu cuda")
    parser.add_argument("--gpu", choices=("sim", "cuda"), default="sim",
                        help="sim (default): a simulated GPU, the CPU's kernels with the host link "
                             "emulated, labelled \"simulated\" in the results and the figure; "
                             "cuda: an NVIDIA GPU (autotm built with CUDA)")
    parser.add_argument("--batches", type=common.parse_batches, metavar="B,...",
                        help="batch sizes, for every network (default: the preset's)")
    parser.add_argument("--recompute", action="store_true",
                        help="also synchronous+recompute and asynchronous+recompute: the ILPs that "
                             "may drop a tensor and compute it again (docs/optimizer.md)")
    return common.main("gpu", parser, build, common.QUICK_NETWORKS, QUICK_RATIOS,
                       common.PAPER_NETWORKS, DEFAULT_RATIOS, validate=validate, header=header)


if __name__ == "__main__":
    sys.exit(main())
