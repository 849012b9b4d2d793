#!/usr/bin/python3
"""precision_speed.py -- each network's all-fast training step on the CPU in bf16 mixed precision
(autotm run --precision bf16) over its float32 step, measured side by side

usage: bench/precision_speed.py [--networks LIST] [--turns N] [--iters N] [--autotm PATH]
                                [--json FILE]

Each turn runs the f32 step and then the bf16 step (autotm run --placement all-fast --iters N,
the fastest step of each run) and takes their ratio; a row is the median ratio over the turns
and its range, beside the median times. On the CPU the convolutions and inner products of a
bf16 step run on oneDNN's bf16 kernels where the CPU has bf16 units (AVX512-BF16, AMX), the
other ops in f32 on widened copies of their bf16 operands (docs/graph-format.md, "bf16"); the
casts are extra kernels. No target is set for a CPU.

Exit status: 0 measured, 1 autotm failed, 2 bad usage.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from precision_peaks import write_rows  # noqa: E402 -- beside this script
from torch_step import find_autotm  # noqa: E402

NETWORKS = "resnet50,densenet121,inception_v4,gpt2,vit_b_16,tiny_llama"


def step_s(autotm, name, precision, iters, tmp):
    """the fastest all-fast step of one autotm run of name in precision"""
    out = os.path.join(tmp, "r.json")
    p = subprocess.run([autotm, "run", "--model", name, "--precision", precision, "--placement",
                        "all-fast", "--warmup", "1", "--iters", str(iters), "--quiet", "-o", out],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"autotm run --model {name} --precision {precision}: "
                           f"{p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)["runs"][0]["actual_runtime"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--networks", default=NETWORKS)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--autotm")
    ap.add_argument("--json", help="write the rows here too")
    a = ap.parse_args(argv)
    autotm = find_autotm(a.autotm)
    if not autotm or a.turns < 1 or a.iters < 1:
        print("precision_speed.py: needs an autotm binary (--autotm) and --turns, --iters >= 1",
              file=sys.stderr)
        return 2
    rows = []
    print("| network (small preset) | f32 step | bf16 step | bf16 / f32 [range] |")
    print("| --- | ---: | ---: | ---: |")
    try:
        with tempfile.TemporaryDirectory(prefix="autotm-precision-") as tmp:
            for name in a.networks.split(","):
                f, b = [], []
                for _ in range(a.turns):
                    f.append(step_s(autotm, name, "f32", a.iters, tmp))
                    b.append(step_s(autotm, name, "bf16", a.iters, tmp))
                r = [y / x for x, y in zip(f, b)]
                row = {"network": name, "f32_s": statistics.median(f),
                       "bf16_s": statistics.median(b), "ratio": statistics.median(r),
                       "ratio_min": min(r), "ratio_max": max(r)}
                rows.append(row)
                print(f"| {name} | {row['f32_s']:.4f} s | {row['bf16_s']:.4f} s | "
                      f"{row['ratio']:.2f} [{row['ratio_min']:.2f}, {row['ratio_max']:.2f}] |",
                      flush=True)
    except RuntimeError as e:
        print(f"precision_speed.py: {e}", file=sys.stderr)
        return 1
    write_rows(a.json, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
