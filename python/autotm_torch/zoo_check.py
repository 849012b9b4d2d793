"""zoo_check -- one SGD step of a zoo transformer in PyTorch and in autotm, compared

usage: python3 -m autotm_torch.zoo_check MODEL [--batch B] [--seq T]
                                          [--placements all-fast,random] [--autotm PATH]

MODEL is a transformer of autotm's zoo: tiny_gpt, gpt2, gpt2-medium, gpt2-large, gpt2-xl,
tiny_bert, bert-base, tiny_vit, vit_b_16, tiny_llama, tinyllama-1.1b or llama-3.2-1b. Its
PyTorch twin (examples/gpt2.py, examples/bert.py, torchvision's VisionTransformer,
examples/llama.py) is made with torch.manual_seed(seed); its
parameters, named as the zoo names them, and one batch of random tokens (or images) are written
as safetensors. PyTorch takes one step (float32, deterministic algorithms, p -= lr * grad);
autotm takes the same step of `autotm run --model MODEL` from the same files under each
placement. Compared as autotm_torch.check does: the loss, and every parameter after the step.

Exit status: 0 every placement within the tolerances, 1 not, 2 bad usage, 3 autotm failed,
8 autotm not found.
"""

import argparse
import os
import tempfile

from .check import REPO, autotm_run, compare, deterministic, find_autotm, report
from .cli import EXIT_IMPORT, EXIT_NOT_FOUND, EXIT_USAGE, exit_main, fail, load_callable

# (family, PyTorch sizes, default batch, default sequence) of each zoo transformer
MODELS = {
    "tiny_gpt": ("gpt", dict(layers=2, width=64, heads=4, positions=64, vocab=512), 2, 32),
    "gpt2": ("gpt", dict(), 2, 128),
    "gpt2-medium": ("gpt", dict(layers=24, width=1024, heads=16), 1, 128),
    "gpt2-large": ("gpt", dict(layers=36, width=1280, heads=20), 1, 64),
    "gpt2-xl": ("gpt", dict(layers=48, width=1600, heads=25), 1, 64),
    "tiny_bert": ("bert", dict(layers=2, width=64, heads=4, positions=64, vocab=512), 2, 32),
    "bert-base": ("bert", dict(), 2, 128),
    "tiny_vit": ("vit", dict(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                             hidden_dim=64, mlp_dim=256, num_classes=10), 2, 0),
    "vit_b_16": ("vit", dict(image_size=224, patch_size=16, num_layers=12, num_heads=12,
                             hidden_dim=768, mlp_dim=3072, num_classes=1000), 2, 0),
    "tiny_llama": ("llama", dict(layers=2, width=64, heads=4, kv_heads=2, mlp=96, vocab=512),
                   2, 32),
    "tinyllama-1.1b": ("llama", dict(), 1, 64),
    "llama-3.2-1b": ("llama", dict(layers=16, kv_heads=8, mlp=8192, vocab=128256,
                                   theta=500000.0, tied=True), 1, 64),
}
EXAMPLES = {"gpt": "gpt2.py", "bert": "bert.py", "llama": "llama.py"}


def make(name):
    """(family, the PyTorch model) of zoo transformer name"""
    family, sizes, _, _ = MODELS[name]
    if family == "vit":
        import torch.nn as nn
        from torchvision.models.vision_transformer import VisionTransformer
        m = VisionTransformer(**sizes)
        # torchvision's head starts at zeros, through which no gradient reaches the encoder:
        # drawn at random, one step checks every weight
        nn.init.normal_(m.heads.head.weight, std=m.hidden_dim ** -0.5)
        return family, m
    ex = os.path.join(REPO, "examples", EXAMPLES[family])
    return family, load_callable(f"{ex}:make")(**sizes)


def batch_of(family, model, batch, seq, gen):
    """one batch of inputs, named as the zoo's graph names them"""
    import torch
    if family == "vit":
        size = model.image_size
        classes = model.heads.head.out_features
        return {"image": torch.randn(batch, 3, size, size, generator=gen),
                "labels": torch.randint(0, classes, (batch, 1), generator=gen)}
    vocab = (model.transformer.wte if family == "gpt" else model.model.embed_tokens
             if family == "llama" else model.embeddings.word_embeddings)
    v = vocab.num_embeddings
    d = {"input_ids": torch.randint(0, v, (batch, seq), generator=gen),
         "labels": torch.randint(0, v, (batch, seq), generator=gen)}
    if family == "bert":
        width = model.pooler.dense.out_features
        d["token_type_ids"] = torch.randint(0, 2, (batch, seq), generator=gen)
        d["sentence_labels"] = torch.randint(0, width, (batch, 1), generator=gen)
    return d


def losses(family, model, data):
    """(the loss the step reports, the loss whose gradient it takes) of one batch"""
    import torch.nn.functional as F
    if family == "vit":
        loss = F.cross_entropy(model(data["image"]), data["labels"].reshape(-1))
        return loss, loss
    if family in ("gpt", "llama"):
        logits = model(data["input_ids"])
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), data["labels"].reshape(-1))
        return loss, loss
    bert = load_callable(os.path.join(REPO, "examples", "bert.py") + ":step_loss")
    return bert(model, data["input_ids"], data["token_type_ids"], data["labels"],
                data["sentence_labels"])


def torch_loss(family, model, data):
    """the loss whose gradient a step takes (bench/torch_step.py times its steps with it)"""
    return losses(family, model, data)[1]


def torch_step(family, model, data, lr, device="cpu"):
    """PyTorch's step on device: (the reported loss, {name: parameter after the update, on the
    CPU}); the model is left on the CPU"""
    import torch
    deterministic(device)
    model.to(device)
    data = {k: v.to(device) for k, v in data.items()}
    model.train()
    loss, total = losses(family, model, data)
    params = dict(model.named_parameters())  # a tied parameter once
    grads = torch.autograd.grad(total, list(params.values()))
    with torch.no_grad():
        after = {k: (p - lr * g).detach().cpu().clone()
                 for (k, p), g in zip(params.items(), grads)}
    model.to("cpu")
    return float(loss), after


def check(name, batch, seq, placements, autotm, lr=0.01, seed=0, threads=None, device="cpu"):
    """[(placement, loss autotm, loss torch, loss rel. diff, worst weight, its diff)], on the CPU
    or, device "cuda", on a GPU (autotm run --gpu=cuda)"""
    import torch
    from . import safetensors
    torch.manual_seed(seed)
    family, model = make(name)
    gen = torch.Generator().manual_seed(seed + 1)
    data = batch_of(family, model, batch, seq, gen)
    params = {k: p.detach().clone() for k, p in model.named_parameters()}
    loss_t, after_t = torch_step(family, model, data, lr, device)
    rows = []
    with tempfile.TemporaryDirectory(prefix="autotm-zoo-check-") as tmp:
        w, d = os.path.join(tmp, "w.safetensors"), os.path.join(tmp, "d.safetensors")
        safetensors.write(w, params)
        safetensors.write(d, data)
        env = dict(os.environ)
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        for pl in placements:
            r, w1 = os.path.join(tmp, f"r-{pl}.json"), os.path.join(tmp, f"w1-{pl}.safetensors")
            cmd = [autotm, "run", "--model", name, "--batch", str(batch),
                   "--placement", pl, "--weights-in", w, "--data", d, "--warmup", "0",
                   "--iters", "1", "--weights-out", w1, "--quiet", "-o", r]
            if seq:
                cmd += ["--seq", str(seq)]
            loss_a = autotm_run(cmd, r, env, device, f"autotm run ({pl})")["losses"][0]
            k, dw = compare(after_t, safetensors.read(w1))
            rows.append((pl, loss_a, loss_t, abs(loss_a - loss_t) / max(abs(loss_t), 1e-30), k, dw))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m autotm_torch.zoo_check",
                                description="One SGD step of a zoo transformer in PyTorch and "
                                            "in autotm, compared.")
    p.add_argument("model", metavar="MODEL", help=", ".join(MODELS))
    p.add_argument("--batch", type=int, help="batch (default: the small preset's)")
    p.add_argument("--seq", type=int, help="sequence of a language model (default: the preset's)")
    p.add_argument("--placements", default="all-fast,random")
    p.add_argument("--autotm", help="the autotm binary (default: $AUTOTM, the build folders)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    if a.model not in MODELS:
        return fail(EXIT_USAGE, f"unknown model '{a.model}'; valid: {', '.join(MODELS)}")
    try:
        import torch
    except ImportError:
        return fail(EXIT_IMPORT, "PyTorch is missing: install python3-torch (Debian)")
    autotm = find_autotm(a.autotm)
    if not autotm:
        return fail(EXIT_NOT_FOUND, "no autotm binary: build it (scripts/demo.sh) or give --autotm")
    _, _, batch, seq = MODELS[a.model]
    batch, seq = a.batch or batch, (a.seq or seq) if seq else 0
    try:
        rows = check(a.model, batch, seq, a.placements.split(","), autotm, a.lr, a.seed)
    except RuntimeError as e:
        return fail(EXIT_IMPORT, str(e))
    print(f"{a.model} batch {batch}{f', sequence {seq}' if seq else ''}: one SGD step (lr {a.lr}), "
          f"autotm against PyTorch {torch.__version__}")
    ok = report(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    exit_main(main)
