#!/usr/bin/python3
"""gpu_sizes.py (test) -- bench/gpu_sizes.py picks, from autotm's H200 model, the least power-of-two
batch whose all-fast step and peak reach the minimums, the one before it reaching neither both;
a device too small gives the largest batch that fits, said; bad usage exits 2

usage: tests/bench/gpu_sizes.py AUTOTM SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile


def run(src, autotm, *args):
    return subprocess.run(["/usr/bin/python3", os.path.join(src, "bench", "gpu_sizes.py"),
                           "--autotm", autotm, *args], capture_output=True, text=True)


def plan(autotm, batch, cache):
    p = subprocess.run([autotm, "plan", "--model", "resnet200", "--batch", str(batch), "--image",
                        "224", "--gpu-model", "h200", "--estimate", "--formulation", "all-fast",
                        "--json", "--quiet", "--cache", cache], capture_output=True, text=True,
                       check=True)
    d = json.loads(p.stdout)
    return d["predicted_runtime_s"], d["fast_peak_bytes"]


def main(autotm, src):
    bad = []
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "sizes.json")
        p = run(src, autotm, "--networks", "resnet200", "--json", out)
        if p.returncode != 0:
            print(p.stdout, p.stderr)
            return 1
        with open(out) as f:
            row = json.load(f)["resnet200"]
        b = row["batch"]
        step, peak = plan(autotm, b, os.path.join(d, "c.json"))
        if b & (b - 1) or step < 0.15 or peak < 20 << 30 or abs(step - row["predicted_step_s"]) > 1e-9:
            bad.append(f"batch {b}: step {step}, peak {peak}, row {row}")
        if b > 1:
            s0, p0 = plan(autotm, b // 2, os.path.join(d, "c.json"))
            if s0 >= 0.15 and p0 >= 20 << 30:
                bad.append(f"batch {b // 2} already meets both: {s0} s, {p0} bytes")
        # minimums the device's memory cannot reach: the largest batch that fits, said
        p = run(src, autotm, "--networks", "resnet200", "--min-peak", "1000G", "--json", out)
        with open(out) as f:
            row = json.load(f)["resnet200"]
        if p.returncode != 0 or "memory ends first" not in row.get("short", "") or \
                row["peak_bytes"] > 139 << 30:
            bad.append(f"too small a device: {p.returncode} {row}")
        for args in (["--min-peak", "xyz"], ["--min-step", "0"]):
            if run(src, autotm, *args).returncode != 2:
                bad.append(f"{args} is no usage error")
    for b in bad:
        print(b)
    print("gpu_sizes: " + ("ok" if not bad else f"{len(bad)} failures"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
