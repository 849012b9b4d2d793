#!/usr/bin/python3
"""gpu_sizes.py -- sizes at which a network's training step is bound by the GPU, not by launches
and Python: for each network the least batch whose all-fast step the device model prices at
--min-step seconds or more and whose peak footprint is --min-peak or more, within the device's
memory (docs/gpu.md, "The baselines at equal memory")

usage: bench/gpu_sizes.py [--gpu-model h200] [--networks LIST] [--min-step S] [--min-peak SIZE]
                          [--autotm PATH] [--json FILE]

The device model is autotm's (autotm plan --gpu-model M --estimate --formulation all-fast: the
roofline of the GPU's datasheet, docs/gpu.md, "GPU models"), so the sizes are a prediction,
made here on the CPU, for the first GPU call to check: scripts/gpu-check.sh hands them to
bench/torch_baselines.py (--sizes), which measures PyTorch's plain step and peak at them. The
batch doubles from 1; the image networks keep their own input size (224, 299 for Inception v4),
the language models the sequence they are trained at (GPT-2 1024, LLaMA 2048); a batch whose peak passes the device's memory (as
autotm gives a plan: its memory less the CUDA context's reserve) is not taken. Where the memory
runs out first the largest batch that fits is taken, and the row says so.

Exit status: 0 sized, 1 autotm failed, 2 bad usage, 130 interrupted.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NETWORKS = "resnet200,densenet264,gpt2-medium,llama-3.2-1b"
# the update each network is trained with where it is not SGD (LLaMA's recipes: AdamW), and the
# sequence the language models are trained at (GPT-2's context; Llama 3.2's pretraining length)
OPTIMIZER = {"llama-3.2-1b": "adamw"}
IMAGE = {"vgg19": 224, "resnet200": 224, "densenet264": 224, "inception_v4": 299}
SEQ = {"gpt2": 1024, "gpt2-medium": 1024, "gpt2-large": 1024, "gpt2-xl": 1024,
       "llama-3.2-1b": 2048, "tinyllama-1.1b": 2048}
MAX_BATCH = 4096


def parse_size(text):
    """"20G" -> bytes"""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().rstrip("B").rstrip("I")
    return int(float(t[:-1]) * units[t[-1]]) if t and t[-1] in units else int(t)


def price(autotm, net, batch, model, cache):
    """(predicted all-fast step s, peak bytes) of net at batch on model, or an error text"""
    cmd = [autotm, "plan", "--model", net, "--batch", str(batch), "--gpu-model", model,
           "--estimate", "--formulation", "all-fast", "--json", "--quiet", "--cache", cache]
    if net in OPTIMIZER:
        cmd += ["--optimizer", OPTIMIZER[net]]
    if net in SEQ:
        cmd += ["--seq", str(SEQ[net])]
    if net in IMAGE:
        cmd += ["--image", str(IMAGE[net])]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"
    d = json.loads(p.stdout)
    return d["predicted_runtime_s"], d["fast_peak_bytes"]


def device_memory(autotm, model, cache):
    """the device memory a plan may use on model (autotm's own figure: its memory less the
    CUDA context's reserve, the limit of a plan given none), or None"""
    p = subprocess.run([autotm, "plan", "--model", "tiny_mlp", "--gpu-model", model, "--estimate",
                        "--formulation", "synchronous", "--json", "--quiet", "--cache", cache],
                       capture_output=True, text=True)
    try:
        return json.loads(p.stdout).get("fast_limit_bytes") or None
    except ValueError:
        return None


def size(autotm, net, model, min_step, min_peak, memory, cache):
    """the row of net: the least batch meeting both minimums, or the largest that fits"""
    row, fits = {"network": net, "gpu_model": model}, None
    if net in IMAGE:
        row["image"] = IMAGE[net]
    if net in SEQ:
        row["seq"] = SEQ[net]
    batch = 1
    while batch <= MAX_BATCH:
        got = price(autotm, net, batch, model, cache)
        if isinstance(got, str):
            if fits:
                break  # the next batch does not fit (or cannot be built): the last one stands
            row["error"] = got
            return row
        step, peak = got
        if memory and peak > memory:
            break
        fits = {"batch": batch, "predicted_step_s": step, "peak_bytes": peak}
        if step >= min_step and peak >= min_peak:
            row.update(fits)
            return row
        batch *= 2
    if not fits:
        row["error"] = "batch 1 does not fit the device"
        return row
    row.update(fits)
    row["short"] = (f"the device's memory ends first: batch {fits['batch']} is the largest that "
                    f"fits, its step {fits['predicted_step_s']:.3f} s, peak "
                    f"{fits['peak_bytes'] / 2**30:.1f} GiB")
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].split(" -- ")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu-model", default="h200", help="autotm's GPU model (default h200)")
    ap.add_argument("--networks", default=NETWORKS)
    ap.add_argument("--min-step", type=float, default=0.15, help="seconds (default 0.15)")
    ap.add_argument("--min-peak", default="20G", help="bytes, K/M/G suffixes (default 20G)")
    ap.add_argument("--autotm", default=os.path.join(REPO, "build-release", "cli", "autotm"))
    ap.add_argument("--json", help="write the rows as JSON, {network: row}")
    a = ap.parse_args()
    try:
        min_peak = parse_size(a.min_peak)
    except (ValueError, IndexError):
        print(f"gpu_sizes.py: --min-peak '{a.min_peak}' is not a size (20G)", file=sys.stderr)
        return 2
    if a.min_step <= 0 or min_peak <= 0 or not os.access(a.autotm, os.X_OK):
        print("gpu_sizes.py: --min-step and --min-peak take values above 0, and --autotm an "
              f"autotm binary ({a.autotm} is none)", file=sys.stderr)
        return 2
    rows, failed = {}, False
    try:
        with tempfile.TemporaryDirectory() as d:
            cache = os.path.join(d, "profiles.json")
            memory = device_memory(a.autotm, a.gpu_model, cache)
            within = f"{memory / 2**30:.1f} GiB" if memory else "the device's memory"
            print(f"{a.gpu_model}: the least batch whose all-fast step is >= {a.min_step} s and "
                  f"peak >= {min_peak / 2**30:.0f} GiB, within {within} (autotm's device model)")
            for net in a.networks.split(","):
                row = size(a.autotm, net, a.gpu_model, a.min_step, min_peak, memory, cache)
                rows[net] = row
                if "error" in row:
                    failed = True
                    print(f"  {net:<14} {row['error']}")
                else:
                    print(f"  {net:<14} batch {row['batch']:<5} step {row['predicted_step_s']:.3f} s"
                          f"  peak {row['peak_bytes'] / 2**30:6.1f} GiB"
                          f"{'  (' + row['short'] + ')' if 'short' in row else ''}")
    except KeyboardInterrupt:
        print("gpu_sizes.py: interrupted", file=sys.stderr)
        return 130
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump(rows, f, indent=1)
        os.replace(tmp, a.json)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
