#!/usr/bin/python3
"""torch_baselines.py -- what a PyTorch user does today when a network does not fit the GPU, at
the memory it takes: the plain step, activation checkpointing per block, and saved activations
offloaded to pinned host memory; then autotm's plans given each one's peak as their device
memory (docs/gpu.md, "The baselines at equal memory")

usage: bench/torch_baselines.py [--networks LIST] [--device cpu|cuda] [--batch N] [--sizes FILE] [--turns N]
                                [--iters N] [--autotm PATH] [--formulations LIST]
                                [--time-limit S] [--json FILE]

For each network (torch_step.py's: the zoo's layouts in plain PyTorch at the small preset's
image size) one training step (forward, mean cross-entropy, backward, SGD) is timed three ways,
in turns, the order rotated from turn to turn:
  plain        PyTorch eager as it is
  checkpoint   torch.utils.checkpoint (non-reentrant) around every block: the innermost modules
               defined outside torch.nn (a ResNet's Bottleneck, a DenseNet's _DenseLayer, an
               Inception block's convolution), or every convolution and linear layer where the
               network has none (VGG)
  save_on_cpu  torch.autograd.graph.save_on_cpu(pin_memory=True): every tensor saved for the
               backward pass waits in pinned host memory
Each mode's step is the fastest of --iters after one warm-up, its peak device memory
torch.cuda.max_memory_allocated over those steps (on the CPU there is none to measure: the
table says so). A mode that runs out of device memory is reported as such.

With --device cuda and an autotm binary, autotm then plans and trains the same network (autotm
run --model NAME --gpu=cuda) with --gpu-memory set to each mode's peak: autotm's device arena
and every kernel's cuDNN workspace count in that budget, as PyTorch's caching allocator counts
its workspaces in its peak; neither counts the CUDA context. Its placements
(--formulations, default synchronous,asynchronous,asynchronous+recompute) are compared in turns
by autotm run, and the table sets the fastest beside the PyTorch mode of that memory. With an
autotm binary autotm's all-device step (--placement all-fast, every tensor in device memory;
on the CPU the simulated GPU's) is measured too, in as many turns, and kept in the plain row
as autotm_all_device_s: the reference Figure 12 against memory draws as a line.

On a GPU each row also has the device's energy per step (joules_per_step; autotm's in
autotm_joules_per_step), from NVML's total-energy counter, which autotm reads too; null where
NVML or the counter is absent.

--sizes FILE takes each network's batch and image from bench/gpu_sizes.py's JSON (the sizes at
which the device model says a step is bound by the GPU), over --batch and the small preset.

Exit status: 0 measured, 1 a run failed, 2 bad usage, 130 interrupted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "bench"))

MODES = ("plain", "checkpoint", "save_on_cpu")


def blocks(model):
    """the modules checkpointing wraps: the innermost ones defined outside torch.nn that hold
    parameters, else every convolution and linear layer"""
    import torch.nn as nn

    def custom(m):
        return m is not model and not type(m).__module__.startswith("torch.nn") and \
            any(True for _ in m.parameters())

    found = [m for m in model.modules()
             if custom(m) and not any(custom(c) for c in m.modules() if c is not m)]
    return found or [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))]


def checkpointed(model):
    """model with every block's forward run under torch.utils.checkpoint"""
    import torch.utils.checkpoint as cp
    for m in blocks(model):
        f = m.forward

        def fwd(*args, _f=f, **kw):
            return cp.checkpoint(_f, *args, use_reentrant=False, **kw)
        m.forward = fwd
    return model


def step_fn(mode, model, x, y, device):
    """one training step of model in mode: torch_step.py's step, its saved tensors in pinned
    host memory for save_on_cpu"""
    import torch
    import torch_step

    def step():
        if mode == "save_on_cpu":
            with torch.autograd.graph.save_on_cpu(pin_memory=device == "cuda"):
                torch_step.torch_step(model, x, y)
        else:
            torch_step.torch_step(model, x, y)
    return step


def out_of_memory(e):
    """e is the device running out of memory"""
    return "out of memory" in str(e).lower()


def measure(mode, model, x, y, device, iters):
    """(the fastest step's seconds, the peak device bytes or None, joules per step or None: the
    GPU's NVML energy counter, as autotm reads it, over the warm-up and the timed steps); running
    out of memory is raised through (out_of_memory tells it)"""
    import torch
    import torch_step
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    e0 = torch_step.gpu_energy_j() if device == "cuda" else None
    best = torch_step.time_fn(step_fn(mode, model, x, y, device), iters, sync)
    e1 = torch_step.gpu_energy_j() if e0 is not None else None
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    return best, peak, (e1 - e0) / (iters + 1) if e1 is not None else None


def autotm_at(autotm, name, batch, image, peak, formulations, turns, iters, device,
              time_limit=None):
    """autotm's placements at peak bytes of device memory (None: every tensor on the device,
    all-fast), compared in turns: {formulation: median step}, what was wrong, if anything, and
    {formulation: joules per step (None where not measured)}"""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        cmd = [autotm, "run", "--model", name, "--batch", str(batch), "--image", str(image),
               f"--gpu={'cuda' if device == 'cuda' else 'sim'}", "--turns", str(turns),
               "--iters", str(iters), "--quiet", "-o", out]
        cmd += ["--placement", "all-fast"] if peak is None else \
            ["--gpu-memory", str(peak), "--formulation", formulations]
        if time_limit:
            cmd += ["--time-limit", str(time_limit)]
        p = subprocess.run(cmd, capture_output=True, text=True,
                           env=dict(os.environ, OMP_WAIT_POLICY="passive"))
        if p.returncode != 0:
            return {}, p.stderr.strip().splitlines()[-1] if p.stderr.strip() else \
                f"exit {p.returncode}", {}
        with open(out) as f:
            runs = json.load(f)["runs"]
        return {r["formulation"]: r["actual_runtime"] for r in runs}, None, \
            {r["formulation"]: r.get("energy_per_step_j") for r in runs}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="vgg19,resnet200,inception_v4,densenet264")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--batch", type=int, help="every network's batch (default: the small preset's)")
    ap.add_argument("--sizes", help="each network's batch and image: bench/gpu_sizes.py's JSON")
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="PyTorch's CPU threads (default 2)")
    ap.add_argument("--autotm", help="the autotm binary: with --device cuda, plan at each peak")
    ap.add_argument("--formulations", default="synchronous,asynchronous,asynchronous+recompute")
    ap.add_argument("--time-limit", type=int,
                    help="each of autotm's ILPs' time limit in seconds (default autotm's, 60)")
    ap.add_argument("--json", help="write the rows as JSON")
    a = ap.parse_args()
    try:
        import torch
        import torch_step
    except ImportError as e:
        print(f"torch_baselines.py: {e}: install python3-torch and python3-torchvision "
              "(Debian), run with /usr/bin/python3", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    sizes = {}
    if a.sizes:
        try:
            with open(a.sizes) as f:
                sizes = json.load(f)
            if not isinstance(sizes, dict) or not all(
                    isinstance(v, dict) and isinstance(v.get("batch", 1), int) and
                    isinstance(v.get("image", 1), int) for v in sizes.values()):
                raise ValueError("not {network: {\"batch\": N, \"image\": N}}")
        except (OSError, ValueError) as e:
            print(f"torch_baselines.py: --sizes {a.sizes}: {e}", file=sys.stderr)
            return 2
    nets = a.networks.split(",")
    bad = [n for n in nets if n not in torch_step.SMALL]
    if bad or a.turns < 1 or a.iters < 1 or (a.batch is not None and a.batch < 1) or \
            (a.time_limit is not None and a.time_limit < 1):
        print(f"torch_baselines.py: unknown network {', '.join(bad)} (valid: "
              f"{', '.join(torch_step.SMALL)})" if bad else
              "torch_baselines.py: --turns, --iters, --batch and --time-limit take 1 or more",
              file=sys.stderr)
        return 2
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_baselines.py: --device cuda, but PyTorch sees no GPU", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    if a.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rows, failed = [], False
    dev = torch.cuda.get_device_name() if a.device == "cuda" else "CPU"
    print(f"PyTorch {torch.__version__} on {dev}: a training step three ways, {a.turns} turns, "
          f"the fastest of {a.iters} steps a turn; peak = torch.cuda.max_memory_allocated")
    print(f"{'network':<14}{'mode':<13}{'step s':>10}  {'range':<19}{'peak':>11}  autotm at that peak")
    try:
        for name in nets:
            batch, image = torch_step.SMALL[name]
            batch = a.batch or batch
            if "batch" in sizes.get(name, {}):
                batch, image = sizes[name]["batch"], sizes[name].get("image", image)
            torch.manual_seed(1)
            x = torch.randn(batch, 3, image, image, device=a.device)
            y = torch.randint(0, 1000, (batch,), device=a.device)
            times = {m: [] for m in MODES}
            peaks, why, joules = {}, {}, {}
            models = {}
            for m in MODES:
                torch.manual_seed(1)
                net = torch_step.make(name, image)
                models[m] = (checkpointed(net) if m == "checkpoint" else net).to(a.device)
            for t in range(a.turns):
                for m in MODES[t % 3:] + MODES[:t % 3]:
                    if m in why:
                        continue
                    try:
                        s, peak, j = measure(m, models[m], x, y, a.device, a.iters)
                        times[m].append(s)
                        if j is not None:
                            joules.setdefault(m, []).append(j)
                        if peak is not None:
                            peaks[m] = max(peaks.get(m, 0), peak)
                    except RuntimeError as e:
                        if not out_of_memory(e):
                            raise
                        why[m] = "out of memory"
                        if a.device == "cuda":
                            torch.cuda.empty_cache()
            for m in MODES:
                row = {"network": name, "batch": batch, "image": image, "mode": m,
                       "device": dev, "torch": torch.__version__}
                if m in why:
                    row["error"] = why[m]
                    print(f"{name:<14}{m:<13}{'-':>10}  {why[m]}")
                    rows.append(row)
                    continue
                med = statistics.median(times[m])
                row.update(step_s=med, turns_s=times[m], peak_bytes=peaks.get(m),
                           joules_per_step=statistics.median(joules[m]) if m in joules else None)
                rng = f"[{min(times[m]):.4f}, {max(times[m]):.4f}]"
                peak = f"{peaks[m] / 2**30:.2f} GiB" if m in peaks else "n/a (CPU)"
                extra = ""
                if a.autotm and m in peaks:
                    got, err, row["autotm_joules_per_step"] = autotm_at(
                        a.autotm, name, batch, image, peaks[m], a.formulations, a.turns, a.iters,
                        a.device, a.time_limit)
                    row["autotm"] = got
                    if err:
                        row["autotm_error"] = err
                        extra = f"autotm: {err}"
                    elif got:
                        best = min(got, key=got.get)
                        extra = f"{best} {got[best]:.4f} s ({got[best] / med:.2f}x)"
                if a.autotm and m == "plain":
                    got, err, _ = autotm_at(a.autotm, name, batch, image, None, None, a.turns,
                                            a.iters, a.device)
                    if got:
                        row["autotm_all_device_s"] = next(iter(got.values()))
                        extra += f"{'; ' if extra else ''}autotm all on the device " \
                                 f"{row['autotm_all_device_s']:.4f} s"
                    elif err:
                        row["autotm_all_device_error"] = err
                        extra += f"{'; ' if extra else ''}autotm all on the device: {err}"
                print(f"{name:<14}{m:<13}{med:>10.4f}  {rng:<19}{peak:>11}  {extra}")
                rows.append(row)
    except KeyboardInterrupt:
        print("torch_baselines.py: interrupted", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"torch_baselines.py: {e}", file=sys.stderr)
        failed = True
    if a.json:
        tmp = a.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
        os.replace(tmp, a.json)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
