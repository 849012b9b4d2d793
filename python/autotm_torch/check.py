"""check -- one SGD step of a PyTorch model in PyTorch and in autotm, compared (docs/pytorch.md)

usage: python3 -m autotm_torch.check MODEL (--input N,C,H,W | --input-ids N,T)
                                      [--placements all-fast,random] [--autotm PATH]
                                      [--kwargs JSON] [--seed S] [--lr LR]

The model is made (torch.manual_seed(seed)), imported (importer.to_forward), and its weights and
one batch written as safetensors. PyTorch then takes one step with deterministic algorithms:
forward in training mode (batch statistics; dropout off, as autotm has none), mean softmax
cross-entropy (over the batch, or over every position of a language model's logits
[batch, seq, vocab]), backward, p -= lr * grad. autotm takes the same step from the same files under
each placement (autotm run --graph G --weights-in W --data D --warmup 0 --iters 1
--weights-out W1). Compared: the loss, relative to PyTorch's, and every parameter after the
step, as the largest difference over the largest magnitude of PyTorch's tensor.

Exit status: 0 every placement within the tolerances (loss 1e-5, weights 1e-4), 1 not, 2 bad
usage, 3 the model cannot be imported or autotm failed, 8 MODEL or autotm not found, 130
interrupted; never a traceback.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from .cli import (EXIT_IMPORT, EXIT_NOT_FOUND, EXIT_USAGE, fail, ids_arg, import_torch,
                  kwargs_arg, make_model, run, shape_arg, where)

LOSS_TOL = 1e-5
WEIGHT_TOL = 1e-4
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_autotm(given):
    """the autotm binary: given, $AUTOTM, the build folders, PATH"""
    if given:
        return given if os.access(given, os.X_OK) else None
    if os.environ.get("AUTOTM"):
        return shutil.which(os.environ["AUTOTM"])
    for sub in ("build-release", "build", "build-test"):
        p = os.path.join(REPO, sub, "cli", "autotm")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("autotm")


def make_batch(model, graph, input_shape, tokens, gen=None):
    """one batch for model's imported graph: 'input' (an image from a normal distribution, or
    token ids below the smallest vocabulary its input is looked up in) and 'labels' (a class
    per sample, or per position of a language model's logits), drawn with generator gen"""
    import torch
    from .importer import ImportError_
    out = tuple(_output_shape(model, input_shape, tokens))
    if tokens:
        vocabs = [l["num_embeddings"] for l in graph["layers"]
                  if l["op"] == "embedding" and l.get("input") == "input"]
        if not vocabs:
            raise ImportError_("no embedding reads the token ids: token ids for it cannot be "
                               "drawn below a vocabulary")
        vocab = min(vocabs)
        x = torch.randint(0, vocab, tuple(input_shape), generator=gen)
    else:
        x = torch.randn(tuple(input_shape), generator=gen)
    return {"input": x, "labels": torch.randint(0, out[-1], tuple(out[:-1]), generator=gen)}


def _output_shape(model, input_shape, tokens):
    """the shape of model's output on zeros of input_shape, in evaluation mode"""
    import torch
    from .importer import ImportError_
    was = model.training
    model.eval()
    try:
        with torch.no_grad():
            example = torch.zeros(tuple(input_shape),
                                  dtype=torch.int64 if tokens else torch.float32)
            return model(example).shape
    except Exception as e:  # noqa: BLE001 -- the model's own code
        raise ImportError_(f"the forward on zeros of {list(input_shape)} failed: "
                           f"{type(e).__name__}: {e}{where(e)}") from None
    finally:
        model.train(was)


def deterministic(device):
    """PyTorch as autotm computes: deterministic algorithms, and on a GPU no TF32"""
    import torch
    torch.use_deterministic_algorithms(True)
    if device == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def torch_step(model, data, lr, device="cpu"):
    """PyTorch's step on device: (loss, {name: parameter after the update, on the CPU}); the
    model is left on the CPU"""
    import torch
    import torch.nn.functional as F
    deterministic(device)
    model.to(device)
    data = {k: v.to(device) for k, v in data.items()}
    model.train()
    for m in model.modules():
        if isinstance(m, (torch.nn.Dropout, torch.nn.Dropout2d)):
            m.eval()
    out = model(data["input"])
    loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), data["labels"].reshape(-1))
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(loss, list(params.values()))
    with torch.no_grad():
        after = {k: (p - lr * g).detach().cpu().clone()
                 for (k, p), g in zip(params.items(), grads)}
    model.to("cpu")
    return float(loss), after


def compare(want, got):
    """(name, relative difference) of the parameter that differs most"""
    worst = ("", 0.0)
    for k, w in want.items():
        g = got[k].reshape(w.shape)
        scale = float(w.abs().max()) or 1.0
        d = float((g - w).abs().max()) / scale
        if d > worst[1] or not worst[0]:
            worst = (k, d)
    return worst


def check(model, input_shape, placements, autotm, lr=0.01, seed=0, name="model", quiet=False,
          threads=None, tokens=False, device="cpu"):
    """check -- [(placement, loss autotm, loss torch, loss rel. diff, worst weight, its diff)]
    for one step of model at input_shape (token ids [batch, seq] when tokens), on the CPU or,
    device "cuda", on a GPU (PyTorch's step there, autotm run --gpu=cuda); RuntimeError when
    autotm fails"""
    import torch
    from . import safetensors
    from .importer import ImportError_, check_graph, to_forward
    graph, params, _ = to_forward(model, input_shape, name=name, lr=lr, tokens=tokens)
    check_graph(graph)
    torch.manual_seed(seed + 1)
    data = make_batch(model, graph, input_shape, tokens)
    rows = []
    with tempfile.TemporaryDirectory(prefix="autotm-check-") as tmp:
        g, w, d = (os.path.join(tmp, f) for f in ("g.json", "w.safetensors", "d.safetensors"))
        with open(g, "w") as f:
            json.dump(graph, f)
        safetensors.write(w, params)
        safetensors.write(d, data)
        before = {k: v.detach().clone() for k, v in params.items()}
        try:
            loss_t, after_t = torch_step(model, data, lr, device)
        except Exception as e:  # noqa: BLE001 -- the model's own code
            raise ImportError_(f"PyTorch's training step failed: {type(e).__name__}: {e}"
                               f"{where(e)}") from None
        with torch.no_grad():  # the model as it was, for anyone who runs it again
            for k, p in model.named_parameters():
                p.copy_(before[k])
        env = dict(os.environ)
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        for pl in placements:
            r, w1 = os.path.join(tmp, f"r-{pl}.json"), os.path.join(tmp, f"w1-{pl}.safetensors")
            cmd = [autotm, "run", "--graph", g, "--placement", pl, "--weights-in", w, "--data", d,
                   "--warmup", "0", "--iters", "1", "--weights-out", w1, "--quiet", "-o", r]
            if device == "cuda":
                cmd.append("--gpu=cuda")
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if p.returncode != 0:
                raise RuntimeError(f"autotm run ({pl}) exited {p.returncode}: {p.stderr.strip()}")
            with open(r) as f:
                loss_a = json.load(f)["runs"][0]["losses"][0]
            k, dw = compare(after_t, safetensors.read(w1))
            rows.append((pl, loss_a, loss_t, abs(loss_a - loss_t) / max(abs(loss_t), 1e-30), k, dw))
    return rows


def report(rows):
    """print each placement's row (check's); True when every one is within the tolerances"""
    ok = True
    print(f"  {'placement':<12} {'loss autotm':>12} {'loss torch':>12} {'rel. diff':>10}   "
          f"largest weight difference (relative)")
    for pl, la, lt, dl, k, dw in rows:
        good = dl <= LOSS_TOL and dw <= WEIGHT_TOL
        ok = ok and good
        print(f"  {pl:<12} {la:>12.7f} {lt:>12.7f} {dl:>10.2e}   {dw:.2e} ({k})"
              f"{'' if good else '   NOT within ' + str(LOSS_TOL) + ' / ' + str(WEIGHT_TOL)}")
    return ok


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m autotm_torch.check",
                                description="One SGD step in PyTorch and in autotm, compared.")
    p.add_argument("model", metavar="MODEL", help="module:callable or file.py:callable")
    inp = p.add_mutually_exclusive_group(required=True)
    inp.add_argument("--input", type=shape_arg, metavar="N,C,H,W", help="an image batch's shape")
    inp.add_argument("--input-ids", type=ids_arg, metavar="N,T",
                     help="token ids [batch, sequence] of a language model")
    p.add_argument("--kwargs", default="{}", metavar="JSON")
    p.add_argument("--placements", default="all-fast,random",
                   help="autotm placements to run the step under (default all-fast,random)")
    p.add_argument("--autotm", help="the autotm binary (default: $AUTOTM, the build folders)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where both steps run: cpu, or cuda (PyTorch on the GPU, autotm run "
                        "--gpu=cuda)")
    a = p.parse_args(argv)
    kwargs = kwargs_arg(a.kwargs)
    if not (a.lr > 0 and a.lr <= 1e6):
        return fail(EXIT_USAGE, f"--lr {a.lr}: expected above 0 and at most 1e6")
    torch = import_torch()
    if a.device == "cuda" and not torch.cuda.is_available():
        return fail(EXIT_USAGE, "--device cuda: this PyTorch sees no GPU")
    from .importer import ImportError_
    autotm = find_autotm(a.autotm)
    if not autotm:
        return fail(EXIT_NOT_FOUND, "no autotm binary: build it (scripts/demo.sh) or give --autotm")
    model, _ = make_model(a.model, kwargs, a.seed)
    name = a.model.rsplit(":", 1)[1]
    try:
        rows = check(model, a.input or a.input_ids, a.placements.split(","), autotm, a.lr,
                     a.seed, name, tokens=a.input_ids is not None, device=a.device)
    except ImportError_ as e:
        return fail(EXIT_IMPORT, f"{a.model}: {e}")
    except RuntimeError as e:
        return fail(EXIT_IMPORT, str(e))
    print(f"{name} {a.input or a.input_ids}: one SGD step (lr {a.lr}) on {a.device}, autotm "
          f"against PyTorch {torch.__version__}")
    ok = report(rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run(main))
