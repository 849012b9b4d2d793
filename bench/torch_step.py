#!/usr/bin/python3
"""torch_step.py -- autotm's all-fast training step against PyTorch eager's, on the same network,
shapes, weights, batch and threads, measured in turns (docs/benchmarks.md, "Kernels against
PyTorch")

usage: bench/torch_step.py [--networks LIST] [--turns N] [--iters N] [--threads N]
                           [--device cpu|cuda] [--batch N] [--autotm PATH] [--breakdown] [--top N]
                           [--optimizer sgd|adamw]

Each network is made in PyTorch at the zoo's small preset (batch and image size, 1000 classes)
and imported into autotm (autotm_torch: the same layers, so both run the same network); its
weights and one batch are written once and both start from them. A turn times PyTorch's step
(forward, cross-entropy, backward, p -= lr * grad; the fastest of --iters after one warm-up
step, in this process) and autotm's all-fast step (autotm run --placement all-fast: the fastest
of --iters after one warm-up, as it reports it), the two in alternating order from turn to
turn. It prints, per network, autotm / PyTorch: the median over turns and the range. With
--breakdown, where each one's step goes: autotm's kernels by op (step_kernel_times of its
fastest step) and PyTorch's by aten op (torch.profiler, self CPU time of one step).

--optimizer adamw ends both steps in AdamW (torch.optim.AdamW and autotm run --optimizer adamw,
PyTorch's defaults) instead of p -= lr * grad.

The transformers (gpt2, bert-base, vit_b_16, the LLaMA-style tinyllama-1.1b and llama-3.2-1b,
and the tiny ones) are the zoo's own networks
(autotm run --model NAME) and their PyTorch twins (autotm_torch.zoo_check: examples/gpt2.py,
examples/bert.py, torchvision's VisionTransformer) from the same weights and batch, at the small
preset (gpt2 and bert-base: batch 2, sequence 128; vit_b_16: 2 images of 224).

With --device cuda both run on the GPU: PyTorch eager on CUDA without TF32 (autotm's cuBLAS
and cuDNN calls use none), each step timed to torch.cuda.synchronize(), and autotm run
--gpu=cuda all-fast. --batch N replaces every network's small-preset batch (a GPU wants more).

The target: autotm / PyTorch <= 1.00 on every network.
Networks: vgg16, vgg19, resnet50, resnet200, densenet121, densenet264 (torchvision's layouts),
inception_v4 (examples/inception_v4.py: torchvision has none, so the zoo's layout in plain
PyTorch), resnet18 (a quick check), mobilenet_v2 and efficientnet_b0 (torchvision's, at 8 x 112,
their depthwise convolutions), and the transformers.
Exit status: 0 measured, 1 a run failed, 2 bad usage, 130 interrupted.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

# name -> (batch, image) of the zoo's small preset ('autotm zoo')
SMALL = {
    "vgg16": (8, 64), "vgg19": (8, 64), "resnet50": (8, 112), "resnet200": (4, 112),
    "densenet121": (8, 112), "densenet264": (4, 112), "resnet18": (8, 64),
    "inception_v4": (4, 149),
    # torchvision's mobile networks (not in the zoo): ResNet-50's small preset
    "mobilenet_v2": (8, 112), "efficientnet_b0": (8, 112),
}
LR = 0.01
# the zoo's transformers, measured as the zoo builds them (autotm_torch.zoo_check's twins)
TRANSFORMERS = ("gpt2", "bert-base", "vit_b_16", "tiny_gpt", "tiny_bert", "tiny_vit", "tiny_llama",
                "tinyllama-1.1b", "llama-3.2-1b")
# --optimizer adamw: torch.optim.AdamW with PyTorch's defaults on both sides
OPTIMIZER = {"name": "sgd"}


def make(name, image):
    """the network as torchvision lays it out, sized as the zoo's: VGG without its adaptive
    pooling (the zoo's first fully connected layer reads 512 x (image/32)^2 features)"""
    import torch.nn as nn
    import torchvision.models as tv
    from torchvision.models.densenet import DenseNet
    from torchvision.models.resnet import Bottleneck, ResNet
    if name in ("vgg16", "vgg19"):
        m = getattr(tv, name)()
        m.avgpool = nn.Identity()
        m.classifier[0] = nn.Linear(512 * (image // 32) ** 2, 4096)
        return m
    if name == "resnet200":
        return ResNet(Bottleneck, [3, 24, 36, 3])
    if name == "densenet264":
        return DenseNet(32, (6, 12, 64, 48), 64)
    if name == "inception_v4":  # torchvision has none: the zoo's layout in plain PyTorch
        from autotm_torch.cli import load_callable
        return load_callable(os.path.join(REPO, "examples", "inception_v4.py") + ":make")()
    return getattr(tv, name)()


def update(model):
    """the step's update: p -= LR * grad, or torch.optim.AdamW's step (made on first use and
    kept on the model, as a training loop keeps it)"""
    import torch
    if OPTIMIZER["name"] == "adamw":
        if not hasattr(model, "_bench_optimizer"):
            model._bench_optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        model._bench_optimizer.step()
        model._bench_optimizer.zero_grad(set_to_none=True)
        return
    with torch.no_grad():
        for p in model.parameters():
            p -= LR * p.grad
            p.grad = None


def torch_step(model, x, y):
    """one training step: forward, mean cross-entropy, backward, the update"""
    import torch.nn.functional as F
    F.cross_entropy(model(x), y).backward()
    update(model)


def transformer_step(family, model, data):
    """one training step of a zoo transformer's twin, as autotm_torch.zoo_check takes it"""
    from autotm_torch.zoo_check import torch_loss
    torch_loss(family, model, data).backward()
    update(model)


def gpu_energy_j(index=None, lib="libnvidia-ml.so.1"):
    """the GPU's total-energy counter in joules, through NVML as autotm reads it (the device
    PyTorch uses, by its PCI bus id; index: NVML's own numbering), or None where NVML, the GPU or
    its counter is absent"""
    import ctypes
    try:
        nv = ctypes.CDLL(lib)
        if nv.nvmlInit_v2() != 0:
            return None
        dev, mj = ctypes.c_void_p(), ctypes.c_ulonglong()
        if index is None:
            import torch
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            bus = getattr(props, "pci_bus_id", None)
            dom = getattr(props, "pci_domain_id", 0)
            devn = getattr(props, "pci_device_id", 0)
            if bus is None:
                return None
            busid = f"{dom:08x}:{bus:02x}:{devn:02x}.0".encode()
            if nv.nvmlDeviceGetHandleByPciBusId_v2(busid, ctypes.byref(dev)) != 0:
                return None
        elif nv.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(dev)) != 0:
            return None
        if nv.nvmlDeviceGetTotalEnergyConsumption(dev, ctypes.byref(mj)) != 0:
            return None
        return mj.value * 1e-3
    except (OSError, AttributeError, ImportError, RuntimeError):
        return None


def time_fn(step, iters, sync=lambda: None):
    """the fastest of iters calls of step after one, each timed until sync() returns"""
    step()
    sync()
    best = float("inf")
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        sync()
        best = min(best, time.perf_counter() - t0)
    return best


def time_autotm(autotm, graph, weights, data, iters, out, env, device="cpu"):
    """graph: a graph file, or ["--model", NAME, ...] for a zoo network"""
    from autotm_torch.check import autotm_run
    src = graph if isinstance(graph, list) else ["--graph", graph]
    cmd = [autotm, "run", *src, "--weights-in", weights, "--data", data,
           "--placement", "all-fast", "--warmup", "1", "--iters", str(iters), "--quiet", "-o", out]
    if OPTIMIZER["name"] != "sgd":
        cmd += ["--optimizer", OPTIMIZER["name"]]
    return autotm_run(cmd, out, env, device)


def breakdown_autotm(autotm, graph, run, top):
    """autotm's fastest step by op: {op: seconds}"""
    src = graph if isinstance(graph, list) else ["--graph", graph]
    p = subprocess.run([autotm, "zoo", *src, "--export", "-"], capture_output=True, text=True)
    ops = {n["name"]: n["op"] for n in json.loads(p.stdout)["nodes"]}
    by = {}
    for node, s in (run.get("step_kernel_times") or {}).items():
        if s is not None:
            by[ops.get(node, "?")] = by.get(ops.get(node, "?"), 0.0) + s
    return sorted(by.items(), key=lambda kv: -kv[1])[:top]


def breakdown_torch(step, top, device="cpu"):
    """PyTorch's step by op: [(op, seconds)], self CPU time of its aten ops, or on a GPU the
    self time of its CUDA kernels"""
    from torch.profiler import ProfilerActivity, profile
    step()
    act = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=act) as prof:
        step()
    if device == "cuda":  # self_device_time_total since PyTorch 2.4, self_cuda_time_total before
        rows = [(e.key, getattr(e, "self_device_time_total", None)
                 or getattr(e, "self_cuda_time_total", 0)) for e in prof.key_averages()]
        rows = [(k[:34], t / 1e6) for k, t in rows if t]
    else:
        rows = [(e.key, e.self_cpu_time_total / 1e6) for e in prof.key_averages()]
    return sorted(rows, key=lambda kv: -kv[1])[:top]


def find_autotm(given):
    for p in ([given] if given else []) + [os.environ.get("AUTOTM", "")] + [
            os.path.join(REPO, d, "cli", "autotm") for d in ("build-release", "build")]:
        if p and os.access(p, os.X_OK):
            return p
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--networks", default="vgg16,vgg19,resnet50,resnet200,inception_v4,"
                    "densenet121,densenet264",
                    help="comma-separated, of: " + ", ".join(list(SMALL) + list(TRANSFORMERS)))
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2, help="threads of both (default 2)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="cpu (default), or cuda: both on the GPU (autotm run --gpu=cuda)")
    ap.add_argument("--batch", type=int, help="every network's batch (default: the small preset's)")
    ap.add_argument("--autotm", help="the autotm binary (default: $AUTOTM, build-release, build)")
    ap.add_argument("--breakdown", action="store_true", help="where each one's step goes, by op")
    ap.add_argument("--top", type=int, default=8, help="rows of the breakdown (default 8)")
    ap.add_argument("--optimizer", choices=("sgd", "adamw"), default="sgd",
                    help="the update of both: p -= 0.01 * grad (default), or AdamW with "
                         "PyTorch's defaults (torch.optim.AdamW; autotm run --optimizer adamw)")
    a = ap.parse_args()
    OPTIMIZER["name"] = a.optimizer
    nets = a.networks.split(",")
    bad = [n for n in nets if n not in SMALL and n not in TRANSFORMERS]
    if bad or a.turns < 1 or a.iters < 1 or a.threads < 1 or (a.batch is not None and a.batch < 1):
        print(f"torch_step.py: unknown network {', '.join(bad)} (valid: "
              f"{', '.join(list(SMALL) + list(TRANSFORMERS))})"
              if bad else "torch_step.py: --turns, --iters, --threads and --batch take 1 or more",
              file=sys.stderr)
        return 2
    autotm = find_autotm(a.autotm)
    if not autotm:
        print("torch_step.py: no autotm binary: build build-release (scripts/test.sh) or give "
              "--autotm", file=sys.stderr)
        return 1
    from autotm_torch.cli import torch_or_none
    torch = torch_or_none("torch_step.py")
    if torch is None:
        return 1
    from autotm_torch import safetensors
    from autotm_torch.importer import to_forward
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_step.py: --device cuda: this PyTorch sees no GPU", file=sys.stderr)
        return 2
    torch.set_num_threads(a.threads)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    env.setdefault("OMP_WAIT_POLICY", "passive")
    dev, sync, where = a.device, (lambda: None), f"{a.threads} threads"
    if dev == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        sync, where = torch.cuda.synchronize, torch.cuda.get_device_name(0) + ", no TF32"
    print(f"autotm all-fast against PyTorch {torch.__version__} eager, one training step "
          f"({'AdamW' if a.optimizer == 'adamw' else 'SGD'}), {where}, float32; {a.turns} turns, "
          f"fastest of {a.iters} steps a turn")
    print(f"{'network':<12} {'batch, input':>16} {'autotm s':>9} {'PyTorch s':>10} "
          f"{'autotm / PyTorch':>17}  {'range':>13}")
    failed = 0
    for name in nets:
        with tempfile.TemporaryDirectory(prefix="autotm-bench-") as tmp:
            g, w, d, r = (os.path.join(tmp, f) for f in ("g.json", "w.st", "d.st", "r.json"))
            if name in TRANSFORMERS:
                from autotm_torch.zoo_check import MODELS, batch_of, make as make_twin
                family, _, batch, seq = MODELS[name]
                batch = a.batch or batch
                torch.manual_seed(0)
                family, model = make_twin(name)
                data = batch_of(family, model, batch, seq, torch.Generator().manual_seed(1))
                params = {k: p.detach().clone() for k, p in model.named_parameters()}
                g = ["--model", name, "--batch", str(batch)] + (["--seq", str(seq)] if seq else [])
                size = f"{batch}, seq {seq}" if seq else f"{batch}, {model.image_size}x{model.image_size}"
            else:
                batch, image = SMALL[name]
                batch = a.batch or batch
                torch.manual_seed(0)
                model = make(name, image)
                shape = (batch, 3, image, image)
                x = torch.randn(shape)
                y = torch.randint(0, 1000, (batch,))
                graph, params, _ = to_forward(model, shape, name=name, lr=LR)
                with open(g, "w") as f:
                    json.dump(graph, f)
                data = {"input": x, "labels": y}
                size = f"{batch}, {image}x{image}"
            safetensors.write(w, params)
            safetensors.write(d, data)
            model.to(dev)
            if name in TRANSFORMERS:
                data = {k: v.to(dev) for k, v in data.items()}
                step = (lambda m=model, f=family, dd=data: transformer_step(f, m, dd))
            else:
                x, y = x.to(dev), y.to(dev)
                step = (lambda m=model, xx=x, yy=y: torch_step(m, xx, yy))
            model.train()
            ta, tt, ratios, last = [], [], [], None
            try:
                for t in range(a.turns):
                    for side in ((0, 1) if t % 2 == 0 else (1, 0)):
                        if side == 0:
                            tt.append(time_fn(step, a.iters, sync))
                        else:
                            last = time_autotm(autotm, g, w, d, a.iters, r, env, dev)
                            ta.append(last["actual_runtime"])
                    ratios.append(ta[-1] / tt[-1])
            except RuntimeError as e:
                print(f"{name:<12} {e}", file=sys.stderr)
                failed += 1
                continue
            med = statistics.median(ratios)
            print(f"{name:<12} {size:>16} {statistics.median(ta):>9.3f} "
                  f"{statistics.median(tt):>10.3f} {med:>17.3f}  [{min(ratios):.3f}, "
                  f"{max(ratios):.3f}]  {'met' if med <= 1.0 else 'NOT met'}", flush=True)
            if a.breakdown:
                rows_a = breakdown_autotm(autotm, g, last, a.top)
                rows_t = breakdown_torch(step, a.top, dev)
                for i in range(max(len(rows_a), len(rows_t))):
                    la = f"{rows_a[i][0]:<18} {rows_a[i][1]:>8.4f}" if i < len(rows_a) else " " * 27
                    lt = f"{rows_t[i][0]:<34} {rows_t[i][1]:>8.4f}" if i < len(rows_t) else ""
                    print(f"    autotm {la}   PyTorch {lt}")
    return 1 if failed else 0


if __name__ == "__main__":
    from autotm_torch.cli import exit_main
    exit_main(main)
