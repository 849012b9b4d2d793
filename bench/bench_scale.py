#!/usr/bin/python3
"""bench_scale.py -- data parallelism's scaling: one process, then 2, 4, ... ranks under mpirun
on this machine at one total batch, and the step the same model predicts for a cluster you
describe (docs/many-machines.md, docs/benchmarks.md "Many machines")

usage: bench/bench_scale.py [--model M] [--batch B] [--ranks 1,2,4] [--placement P |
                            --ratio S:F --formulation F] [--iters N] [--turns N]
                            [--cluster-ranks N --link-gbps G --latency-us L] [--autotm PATH]
                            [--mpirun PATH] [--cache FILE] [--json FILE]

For each count of ranks n it runs autotm run at the total batch B (n = 1: one process; more:
mpirun -np n --oversubscribe, the other ranks' cores shared), --turns times in turn order, and
prints the fastest step of each (the median over turns), its ratio to one process's, the
allreduce's measured time a step (without what it waited for the other ranks to arrive, which
is printed apart: the ranks' skew) and the plan's prediction of it (with the optimizer's
options). Each rank runs with OMP_NUM_THREADS = cores / n (at least 1), as mpirun's binding
gives it its share of the cores. Every run profiles into one cache (--cache; default a fresh
one), so that the prediction is of the machine as it runs now, not as some earlier hour of a
shared machine left it.

The cluster estimate: N ranks, each a machine like this one, linked at G Gb/s with a latency
of L us per message. A rank's step is its compute at batch B/N (the plan's prediction, or
all-fast's, from this machine's profile: autotm plan at that batch, one process) plus, for
every bucket of gradients the step averages (the rule the run uses: in update order, at most
25 MiB and 32 gradients), 2 (N - 1) latencies and 2 (N - 1) / N of its bytes over the link, as
a ring all-reduce moves them; the allreduce does not overlap the step (autotm runs its nodes
in order on one stream). The speed-up is N times one rank's work over that step.
Exit status: 0 measured, 1 a run failed, 2 bad usage, 130 interrupted.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUCKET_BYTES, BUCKET_TENSORS = 25 << 20, 32
UPDATES = ("sgd", "sgd_momentum", "adamw")


def autotm_path(given):
    for p in ([given] if given else []) + [os.path.join(REPO, d, "cli", "autotm")
                                           for d in ("build-release", "build")]:
        if p and os.access(p, os.X_OK):
            return p
    return shutil.which("autotm")


def run_once(a, n, out):
    """one run of n ranks into out; its results' run"""
    cores = os.cpu_count() or 1
    env = dict(os.environ, OMP_NUM_THREADS=str(max(1, cores // n)),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    cmd = [a.autotm, "run", "--model", a.model, "--batch", str(a.batch), "--iters",
           str(a.iters), "-o", out, "--quiet", "--cache", a.cache]
    cmd += ["--ratio", a.ratio, "--formulation", a.formulation] if a.ratio else \
        ["--placement", a.placement]
    if n > 1:
        cmd = [a.mpirun, "-np", str(n), "--oversubscribe", "--timeout", "3600"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} ... exited {p.returncode}: {p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)["runs"][0]


def buckets(graph):
    """the bytes of each bucket of gradients the run averages, from a graph file's updates"""
    tensors = {t["id"]: t for t in graph["tensors"]}
    out, cur, n = [], 0, 0
    for node in graph["nodes"]:
        if node["op"] not in UPDATES:
            continue
        t = tensors[node["inputs"][1]]
        dims = t["shape"]
        size = 4
        for d in dims:
            size *= graph.get("parameters", {}).get("batch", 1) if d == "batch" else d
        if n and (cur + size > BUCKET_BYTES or n == BUCKET_TENSORS):
            out.append(cur)
            cur, n = 0, 0
        cur += size
        n += 1
    if n:
        out.append(cur)
    return out


def cluster(a, tmp):
    """the predicted step of one rank of a described cluster, its compute and allreduce"""
    n = a.cluster_ranks
    if a.batch % n:
        raise RuntimeError(f"--batch {a.batch} does not divide among --cluster-ranks {n}")
    g = os.path.join(tmp, "g.json")
    p = subprocess.run([a.autotm, "zoo", "--model", a.model, "--batch", str(a.batch // n),
                        "--export", g], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"autotm zoo --export: {p.stderr.strip()}")
    with open(g) as f:
        sizes = buckets(json.load(f))
    r = os.path.join(tmp, "plan.json")
    cmd = [a.autotm, "plan", "--model", a.model, "--batch", str(a.batch // n), "--results", r,
           "-o", os.path.join(tmp, "p.json"), "--quiet", "--cache", a.cache]
    cmd += ["--ratio", a.ratio, "--formulation", a.formulation] if a.ratio else \
        ["--dram-limit", "1T", "--formulation", "all-fast"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"autotm plan: {p.stderr.strip()}")
    with open(r) as f:
        compute = json.load(f)["runs"][0]["predicted_runtime"]
    link = a.link_gbps * 1e9 / 8
    allreduce = sum(2 * (n - 1) * a.latency_us * 1e-6 + 2 * (n - 1) / n * b / link
                    for b in sizes)
    return compute, allreduce, sizes


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench_scale.py", description=__doc__.split("\n")[0])
    p.add_argument("--model", default="tiny_gpt")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--ranks", default="1,2", help="counts of ranks to run here (default 1,2)")
    p.add_argument("--placement", default="all-fast")
    p.add_argument("--ratio", help="plan with the optimizer at this ratio (S:F)")
    p.add_argument("--formulation", default="synchronous")
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--turns", type=int, default=3)
    p.add_argument("--cluster-ranks", type=int, default=8)
    p.add_argument("--link-gbps", type=float, default=100.0)
    p.add_argument("--latency-us", type=float, default=5.0)
    p.add_argument("--autotm")
    p.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    p.add_argument("--cache", help="the profile cache every run uses (default: a fresh one)")
    p.add_argument("--json", help="write the measurements here (atomically)")
    a = p.parse_args(argv)
    try:
        counts = [int(x) for x in a.ranks.split(",")]
    except ValueError:
        p.error(f"--ranks '{a.ranks}': expected counts such as 1,2,4")
    if any(c < 1 or a.batch % c for c in counts):
        p.error(f"--batch {a.batch} must divide among every count of --ranks {a.ranks}")
    a.autotm = autotm_path(a.autotm)
    if not a.autotm:
        p.error("no autotm: build it (scripts/test.sh) or give --autotm")
    rows = {c: [] for c in counts}
    with tempfile.TemporaryDirectory(prefix="autotm-scale-") as tmp:
        a.cache = a.cache or os.path.join(tmp, "profiles.json")
        try:
            for t in range(a.turns):
                order = counts if t % 2 == 0 else counts[::-1]
                for c in order:
                    rows[c].append(run_once(a, c, os.path.join(tmp, f"r{c}-{t}.json")))
            comp, ar, sizes = cluster(a, tmp)
        except RuntimeError as e:
            print(f"bench_scale.py: {e}", file=sys.stderr)
            return 1
    what = f"{a.ratio} {a.formulation}" if a.ratio else a.placement
    print(f"{a.model}, total batch {a.batch}, {what}; {a.turns} turns, the fastest of "
          f"{a.iters} steps a turn; {os.cpu_count()} cores here")
    print(f"{'ranks':>5} {'step s':>10} {'/ one':>7} {'range':>17} {'allreduce s':>12} "
          f"{'predicted s':>12} {'error':>7} {'waited s':>10}")
    base = statistics.median(r["actual_runtime"] for r in rows[counts[0]])
    out = []
    for c in counts:
        steps = [r["actual_runtime"] for r in rows[c]]
        med = statistics.median(steps)
        dp = [r.get("data_parallel") for r in rows[c]]
        ar_m = statistics.median(d["allreduce_time"] for d in dp) if c > 1 else 0.0
        ar_p = dp[0]["predicted_allreduce_time"] if c > 1 else None
        wait = statistics.median(d.get("allreduce_wait_time") or 0 for d in dp) if c > 1 else 0.0
        err = f"{(ar_p / ar_m - 1) * 100:+6.1f}%" if ar_p and ar_m else "-"
        print(f"{c:>5} {med:>10.6f} {med / base:>7.3f} "
              f"{min(steps):>8.6f}-{max(steps):<8.6f} {ar_m:>12.6f} "
              f"{(f'{ar_p:.6f}' if ar_p else '-'):>12} {err:>7} {wait:>10.6f}")
        out.append({"ranks": c, "steps": steps, "median_step": med, "over_one": med / base,
                     "allreduce": ar_m, "predicted_allreduce": ar_p, "allreduce_wait": wait,
                     "allreduce_runs": [d["allreduce_time"] for d in dp] if c > 1 else []})
    n = a.cluster_ranks
    step = comp + ar
    print(f"cluster: {n} ranks like this machine, {a.link_gbps:g} Gb/s links, "
          f"{a.latency_us:g} us a message: batch {a.batch // n} a rank")
    print(f"  compute {comp:.6f} s + allreduce {ar:.6f} s ({len(sizes)} buckets, "
          f"{sum(sizes) / 2**20:.1f} MiB) = {step:.6f} s a step; "
          f"{n * comp / step:.2f}x one rank's work ({100 * comp / step:.0f}% efficient)")
    if a.json:
        doc = {"model": a.model, "batch": a.batch, "placement": what, "runs": out,
               "cluster": {"ranks": n, "link_gbps": a.link_gbps, "latency_us": a.latency_us,
                           "compute_s": comp, "allreduce_s": ar, "bucket_bytes": sizes,
                           "step_s": step, "speedup": n * comp / step}}
        fd, t = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(a.json)) or ".")
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(t, a.json)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
