#!/usr/bin/python3
"""high_water.py -- the budget bounds the real peak: every tiny network at 8:1, 4:1 and 1:1,
every placement that plans under a limit (the baselines, the three ILPs, the ILPs with
recomputation) trained one step, and the fast arena's measured high-water mark (results'
fast_memory) never above the limit; printed: the distribution of high-water over the plan's
predicted peak

usage: tests/e2e/high_water.py AUTOTM [NETWORK ...]
"""

import json
import os
import subprocess
import sys
import tempfile

NETWORKS = ("tiny_mlp", "tiny_cnn", "tiny_se", "tiny_gpt", "tiny_bert", "tiny_vit", "tiny_llama")
RATIOS = ("8:1", "4:1", "1:1")
FORMULATIONS = ("all-slow,numa,vdnn,static,synchronous,asynchronous,static+recompute,"
                "synchronous+recompute,asynchronous+recompute")


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    autotm, networks = sys.argv[1], sys.argv[2:] or NETWORKS
    failures, ratios = [], []
    with tempfile.TemporaryDirectory(prefix="autotm-high-water-") as tmp:
        cache = os.path.join(tmp, "cache.json")
        for net in networks:
            for ratio in RATIOS:
                out = os.path.join(tmp, f"{net}-{ratio.replace(':', '-')}.json")
                p = subprocess.run([autotm, "run", "--model", net, "--ratio", ratio,
                                    "--formulation", FORMULATIONS, "--turns", "1", "--iters", "1",
                                    "--warmup", "0", "--reruns", "0", "--cache", cache, "-o", out],
                                   capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    failures.append(f"{net} {ratio}: exit {p.returncode}: {p.stderr.strip()}")
                    continue
                if "fast held" not in p.stdout or "within the limit" not in p.stdout:
                    failures.append(f"{net} {ratio}: the table lacks the fast high-water marks")
                with open(out) as f:
                    runs = json.load(f)["runs"]
                for r in runs:
                    fm = r["fast_memory"]
                    who = f"{net} {ratio} {r['formulation']}"
                    limit, held = fm["limit_bytes"], fm["high_water_bytes"]
                    if not isinstance(limit, int) or not isinstance(held, int):
                        failures.append(f"{who}: limit {limit!r}, high-water {held!r}")
                        continue
                    if held > limit or fm["within_limit"] is not True:
                        failures.append(f"{who}: held {held} bytes over its limit of {limit} "
                                        f"(at {fm['high_water_at']})")
                    if held > fm["predicted_bytes"]:
                        failures.append(f"{who}: held {held} bytes, more than the plan's layout "
                                        f"of {fm['predicted_bytes']}")
                    if fm["predicted_bytes"] > 0:
                        ratios.append(held / fm["predicted_bytes"])
    n = len(ratios)
    if n:
        ratios.sort()
        within = sum(1 for x in ratios if x >= 0.95)
        print(f"high_water.py: {n} runs; high-water / the plan's predicted peak: min "
              f"{ratios[0]:.3f}, median {ratios[n // 2]:.3f}, max {ratios[-1]:.3f}; "
              f"{within} of {n} within 5%")
    for f in failures:
        print("high_water.py: " + f, file=sys.stderr)
    return 1 if failures or not n else 0


if __name__ == "__main__":
    sys.exit(main())
