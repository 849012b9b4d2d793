#!/usr/bin/python3
"""torch_check.py -- one SGD step in autotm against PyTorch's, on every model the suite checks,
on the CPU or on a GPU (docs/pytorch.md, "The check against PyTorch")

usage: bench/torch_check.py [--device cpu|cuda] [--models LIST] [--autotm PATH] [--json FILE]
                            [--optimizer sgd|momentum|adamw] [--steps N] [--seed N]

Each model is made (torch.manual_seed(0)), its weights and one batch written, and one step taken
in PyTorch (float32, deterministic algorithms; on a GPU without TF32) and in autotm under the
all-fast and a random placement (autotm run; on a GPU --gpu=cuda) from the same files: the
imported ones through autotm_torch.check, the zoo's transformers through autotm_torch.zoo_check.
It prints, per model and placement, the loss of each, their relative difference and the largest
relative difference of any weight after the step, and with --json writes them (atomically).

Models: small_cnn (examples/small_cnn.py, 4x3x16x16), resnet18 (torchvision, 2x3x64x64),
gpt_block (examples/gpt_block.py, 2x16 token ids), vit (examples/vit_small.py: torchvision's
VisionTransformer, small, 2x3x32x32), and the zoo's tiny_gpt, tiny_bert, tiny_vit and
tiny_llama; and one model of each torchvision family imported beside those (resnext50_32x4d,
regnet_y_400mf, shufflenet_v2_x0_5, mnasnet0_5, efficientnet_b0, mobilenet_v3_small, googlenet
without auxiliary classifiers, squeezenet1_1, convnext_tiny: 10 classes, 4x3x64x64). With --optimizer, the imported models take --steps steps (default 3) of
torch.optim's optimizer instead, each from the weights and states autotm's step before wrote
(autotm_torch.check, --optimizer); the zoo's models are checked with SGD only.
Tolerances: loss 1e-5, weights 1e-4 (relative).
Exit status: 0 every model within, 1 not, 2 bad usage, 3 a run failed, 8 no autotm or PyTorch.
"""

import argparse
import json
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

# one model of each torchvision family autotm imports beside the ResNets, VGGs, DenseNets and
# ViTs: built with 10 classes (googlenet without its auxiliary classifiers) at 4x3x64x64
TORCHVISION = ("resnext50_32x4d", "regnet_y_400mf", "shufflenet_v2_x0_5", "mnasnet0_5",
               "efficientnet_b0", "mobilenet_v3_small", "googlenet", "squeezenet1_1",
               "convnext_tiny")
MODELS = ("small_cnn", "resnet18", "gpt_block", "vit", "tiny_gpt", "tiny_bert", "tiny_vit",
          "tiny_llama") + TORCHVISION


def imported(name):
    """(model, input shape, tokens) of an imported model"""
    import torch
    import torchvision
    from autotm_torch.cli import load_callable
    torch.manual_seed(0)
    if name == "small_cnn":
        return load_callable(os.path.join(REPO, "examples", "small_cnn.py") + ":make")(), \
            (4, 3, 16, 16), False
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=10), (2, 3, 64, 64), False
    if name in TORCHVISION:
        kw = {"aux_logits": False, "init_weights": True} if name == "googlenet" else {}
        return getattr(torchvision.models, name)(num_classes=10, **kw), (4, 3, 64, 64), False
    if name == "gpt_block":
        return load_callable(os.path.join(REPO, "examples", "gpt_block.py") + ":make")(), \
            (2, 16), True
    return load_callable(os.path.join(REPO, "examples", "vit_small.py") + ":make")(), \
        (2, 3, 32, 32), False


def main(argv=None):
    p = argparse.ArgumentParser(prog="bench/torch_check.py",
                                description="One SGD step in autotm against PyTorch's, on every "
                                            "model the suite checks.")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--models", default=",".join(MODELS), help=f"of {', '.join(MODELS)}")
    p.add_argument("--seed", type=int, default=0,
                   help="the batch's seed (default 0; the weights' is 0 whatever it is)")
    p.add_argument("--autotm", help="the autotm binary (default: $AUTOTM, the build folders)")
    p.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    p.add_argument("--optimizer", choices=("sgd", "momentum", "adamw"),
                   help="torch.optim's optimizer, PyTorch's defaults (imported models only)")
    p.add_argument("--steps", type=int, default=3, help="steps with --optimizer (default 3)")
    a = p.parse_args(argv)
    if a.models == ",".join(MODELS) and a.optimizer:
        a.models = "small_cnn,resnet18,gpt_block,vit"
    models = a.models.split(",")
    if not 1 <= a.steps <= 100:
        print(f"torch_check.py: --steps {a.steps}: expected 1 to 100", file=sys.stderr)
        return 2
    bad = [m for m in models if m not in MODELS]
    if bad:
        print(f"torch_check.py: unknown model {', '.join(bad)} (valid: {', '.join(MODELS)})",
              file=sys.stderr)
        return 2
    zoo = [m for m in models if m.startswith("tiny_")]
    if zoo and a.optimizer:
        print(f"torch_check.py: --optimizer checks the imported models; {', '.join(zoo)} "
              "take SGD only (leave them out)", file=sys.stderr)
        return 2
    from autotm_torch.cli import torch_or_none
    torch = torch_or_none("torch_check.py")
    if torch is None:
        return 8
    from autotm_torch import check as icheck, zoo_check
    from autotm_torch.files import write_atomic
    autotm = icheck.find_autotm(a.autotm)
    if not autotm:
        print("torch_check.py: no autotm binary: build it or give --autotm", file=sys.stderr)
        return 8
    if a.device == "cuda" and not torch.cuda.is_available():
        print("torch_check.py: --device cuda: this PyTorch sees no GPU", file=sys.stderr)
        return 2
    device_name = torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu"
    opt = None
    if a.optimizer:
        opt = {"name": a.optimizer, "lr": 1e-3 if a.optimizer == "adamw" else 0.01}
    what = f"{a.steps} steps of torch.optim's {a.optimizer}" if opt else "one SGD step"
    print(f"{what}, autotm ({autotm}) against PyTorch {torch.__version__} on {device_name}")
    results, ok = [], True
    for name in models:
        t = time.time()
        try:
            if name in zoo_check.MODELS:
                _, _, batch, seq = zoo_check.MODELS[name]
                rows = zoo_check.check(name, batch, seq, ["all-fast", "random"], autotm,
                                       device=a.device)
            else:
                model, shape, tokens = imported(name)
                rows = icheck.check(model, shape, ["all-fast", "random"], autotm, name=name,
                                    seed=a.seed,
                                    tokens=tokens, device=a.device, optimizer=opt,
                                    steps=a.steps if opt else 1)
        except RuntimeError as e:
            print(f"torch_check.py: {name}: {e}", file=sys.stderr)
            return 3
        print(f"{name} ({time.time() - t:.1f} s)")
        ok = icheck.report(rows) and ok
        for row in rows:
            pl, la, lt, dl, k, dw, *rest = row
            results.append({"model": name, "placement": pl, "loss_autotm": la, "loss_torch": lt,
                            "loss_rel_diff": dl, "worst_weight": k, "weight_rel_diff": dw,
                            "from_float64": (dict(zip(("autotm", "torch", "autotm_kinks",
                                                       "torch_kinks", "autotm_kinks_taken",
                                                       "torch_kinks_taken"), rest[0]))
                                             if rest else None),
                            "within": icheck.within(row)})
    if a.json:
        doc = {"device": a.device, "device_name": device_name, "torch": torch.__version__,
               "optimizer": opt, "steps": a.steps if opt else 1, "seed": a.seed,
               "loss_tol": icheck.LOSS_TOL, "weight_tol": icheck.WEIGHT_TOL, "rows": results}
        write_atomic(a.json, (json.dumps(doc, indent=1) + "\n").encode())
    return 0 if ok else 1


if __name__ == "__main__":
    from autotm_torch.cli import exit_main
    exit_main(main)
