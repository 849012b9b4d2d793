"""check -- one SGD step of a PyTorch model in PyTorch and in autotm, compared (docs/pytorch.md)

usage: python3 -m autotm_torch.check MODEL (--input N,C,H,W | --input-ids N,T)
                                      [--placements all-fast,random] [--autotm PATH]
                                      [--kwargs JSON] [--seed S] [--lr LR]
                                      [--optimizer sgd|momentum|adamw [--steps N]
                                       [--weight-decay X]]

The model is made (torch.manual_seed(seed)), imported (importer.to_forward), and its weights and
one batch written as safetensors. PyTorch then takes one step with deterministic algorithms:
forward in training mode (batch statistics; dropout and stochastic depth off, as autotm has
neither), mean softmax cross-entropy (over the batch, or over every position of a language model's
logits [batch, seq, vocab]), backward, p -= lr * grad. autotm takes the same step from the same files under
each placement (autotm run --graph G --weights-in W --data D --warmup 0 --iters 1
--weights-out W1). Compared: the loss, relative to PyTorch's, and every parameter after the
step, as the largest difference over the largest magnitude of PyTorch's tensor.

With --optimizer, --steps steps of torch.optim's SGD (with --weight-decay), SGD with momentum 0.9
or AdamW (PyTorch's defaults) are checked on the one batch, each from the same start: autotm run
--optimizer ... takes a step from the weights and optimizer states its step before wrote
(--weights-in, as a run resumes; the first from the weights alone, a fresh optimizer), and
PyTorch from the same, its optimizer's state set from them. Each step's loss is compared, and
every parameter and every optimizer state (momentum_buffer, exp_avg, exp_avg_sq, step) after it.
(Steps chained apart would drift: AdamW's first steps move every parameter by about lr whatever
its gradient's size, so rounding differences in small gradients grow.) AdamW divides each gradient by its
own size, so an element whose gradient is rounding noise at every step (at most 1e-6 of the
model's largest: a bias before a batch norm, attention's key bias, zero in exact arithmetic)
moves by about lr a step in a direction no implementation determines; those elements, their
parameter's and states', are left out of the comparison. With SGD, the elements whose gradient
is zero in exact arithmetic are left out: those whose gradient in float64 (the model and batch
in double, one more step in PyTorch) is at most 1e-6 of the model's largest. A batch norm's shift
that reaches only a convolution and another batch norm (MobileNetV3's, MNASNet's last block)
starts at zero and moves by lr times float32's rounding of a sum that cancels, which a small
variance can make a thousandth of the largest gradient: no two implementations agree on it.

float32 itself cannot resolve some steps: a batch norm over few values (batch 4 of a 4x4 image)
whose variance is small amplifies rounding, and PyTorch's float32 step then differs from its own
float64 step by more than the tolerance (ResNeXt-50 and ResNet-50 at 64x64: by up to 0.12). So do
ReLU inputs within rounding of zero, which each implementation's rounding puts on either side.
The float64 step judges there: where a weight is further than 1e-4 from PyTorch's, the row is
still within when autotm's largest distance of any weight from the float64 step's is no more
than PyTorch's float32 one plus 1e-4: autotm's step is as exact as PyTorch's. Rows print both
distances where a weight is further than 1e-4 ("from the float64 step"). Where autotm's is the
further, a ReLU kink may be why: an input that float64 puts within float32's error of zero (4
times the largest distance of PyTorch's float32 forward from float64's over that ReLU's input)
lies on either side in a float32 step, and a whole channel's gradient moves with it. The check
then takes the float64 step again with each of those inputs (the KINKS closest to zero) on the
other side, finds greedily the ones each float32 step took (those that bring the float64 step
nearest to it) and compares the two distances from the float64 step so taken ("with the ReLU
inputs within rounding of zero ... on the other side (A and B): autotm X, PyTorch Y"): within
when autotm's is no more than PyTorch's plus 1e-4. A weight that is further everywhere is not
explained by any kink.

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
    except (Exception, SystemExit) as e:  # noqa: BLE001 -- the model's own code
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


# The optimizers autotm's --optimizer names, as torch.optim makes them, and the state each keeps
# per parameter (the names autotm's weights files give them: "W.exp_avg", ...)
OPTIMIZERS = {"sgd": (), "momentum": ("momentum_buffer",), "adamw": ("exp_avg", "exp_avg_sq", "step")}


def make_optimizer(params, opt):
    """torch.optim's optimizer for opt ({"name", "lr", ...} as autotm_options reads it)"""
    import torch
    wd = opt.get("weight_decay", 1e-2 if opt["name"] == "adamw" else 0.0)
    if opt["name"] == "adamw":
        return torch.optim.AdamW(params, lr=opt["lr"], betas=tuple(opt.get("betas", (0.9, 0.999))),
                                 eps=opt.get("eps", 1e-8), weight_decay=wd, foreach=False)
    return torch.optim.SGD(params, lr=opt["lr"], weight_decay=wd, foreach=False,
                           momentum=opt.get("momentum", 0.9) if opt["name"] == "momentum" else 0)


def autotm_options(opt):
    """autotm run's options for opt"""
    args = ["--optimizer", opt["name"], "--lr", repr(opt["lr"])]
    if "momentum" in opt:
        args += ["--momentum", repr(opt["momentum"])]
    if "betas" in opt:
        args += ["--betas", ",".join(repr(b) for b in opt["betas"])]
    if "eps" in opt:
        args += ["--eps", repr(opt["eps"])]
    if "weight_decay" in opt:
        args += ["--weight-decay", repr(opt["weight_decay"])]
    return args


# A gradient element at most this times the model's largest is rounding noise (float32's epsilon
# is 1.2e-7; a gradient that is zero in exact arithmetic comes out within a few of it)
NOISE = 1e-6


def training_loss(model, data, device):
    """the mean cross-entropy of model (moved to device, in training mode with dropout and
    torchvision's stochastic depth off, as autotm has neither) on data's batch"""
    import torch
    import torch.nn.functional as F
    model.to(device)
    data = {k: v.to(device) for k, v in data.items()}
    model.train()
    drops = (torch.nn.Dropout, torch.nn.Dropout2d)
    try:  # torchvision's stochastic depth is left out as dropout is
        from torchvision.ops import StochasticDepth
        drops += (StochasticDepth,)
    except ImportError:
        pass
    for m in model.modules():
        if isinstance(m, drops):
            m.eval()
    out = model(data["input"])
    return F.cross_entropy(out.reshape(-1, out.shape[-1]), data["labels"].reshape(-1))


def torch_update(model, data, opt, start, device="cpu"):
    """one step of torch.optim's optimizer opt on device from start (autotm's weights: every
    parameter, and their optimizer states when start has them, else a fresh optimizer): (loss,
    {name: each parameter after the step and each of its states, on the CPU}, {name: mask of
    the elements whose gradient is rounding noise, adamw only}); the model is left on the CPU
    with the parameters after the step"""
    import torch
    deterministic(device)
    params = dict(model.named_parameters())
    with torch.no_grad():
        for k, p in params.items():
            p.copy_(start[k].reshape(p.shape))
    o = make_optimizer(list(params.values()), opt)
    o.zero_grad(set_to_none=True)
    for k, p in params.items():
        states = OPTIMIZERS[opt["name"]]
        if states and all(f"{k}.{st}" in start for st in states):
            o.state[p] = {st: (torch.tensor(float(start[f"{k}.{st}"].reshape(-1)[0]))
                               if st == "step" else
                               start[f"{k}.{st}"].reshape(p.shape).clone().to(device))
                          for st in states}
    loss = training_loss(model, data, device)
    loss.backward()
    grads = {k: p.grad.detach().abs() for k, p in params.items()}
    o.step()
    after, noise = {}, {}
    top = max(float(g.max()) for g in grads.values())
    with torch.no_grad():
        for k, p in params.items():
            after[k] = p.detach().cpu().clone()
            for st in OPTIMIZERS[opt["name"]]:
                after[f"{k}.{st}"] = torch.as_tensor(o.state[p][st]).detach().cpu().clone()
            # AdamW divides a gradient by its own size: one that is rounding noise (a bias before
            # a batch norm, attention's key bias: zero in exact arithmetic) moves its parameter
            # by about lr in a direction no implementation determines
            if opt["name"] == "adamw":
                noise[k] = (grads[k] <= NOISE * top).cpu()
    model.to("cpu")
    return float(loss), after, noise


def torch_step(model, data, lr, device="cpu"):
    """PyTorch's step on device: (loss, {name: parameter after the update, on the CPU}, {name:
    mask of the elements whose gradient is zero in exact arithmetic}, the float64 step (a
    Float64Step)); the model is left on the CPU"""
    import torch
    deterministic(device)
    relus = []
    with _Relus(record=relus):
        loss = training_loss(model, data, device)
    params = dict(model.named_parameters())
    grads = torch.autograd.grad(loss, list(params.values()))
    with torch.no_grad():
        after = {k: (p - lr * g).detach().cpu().clone()
                 for (k, p), g in zip(params.items(), grads)}
    model.to("cpu")
    exact = Float64Step(model, data, lr, device, relus)
    return float(loss), after, exact.noise, exact


# A ReLU input that the float64 step puts within KINK_MARGIN times float32's own error of zero
# (the largest difference of PyTorch's float32 forward from float64's over that ReLU's input) may
# lie on either side of zero in a float32 step, and its gradient passes or not with it; the check
# tries at most KINKS of them, those closest to zero
KINK_MARGIN = 4.0
KINKS = 16


class _Relus:
    """in a with block, torch.relu and torch.relu_ (F.relu and nn.ReLU call them; also as Tensor
    methods) record a copy of each call's input in record, or, given flip (call, flat index),
    give that call's gradient as if that element lay on the other side of zero"""

    def __init__(self, record=None, flip=None):
        self.record, self.flip, self.calls, self.saved = record, flip, 0, []

    def _wrap(self, orig, inplace):
        import torch
        outer = self

        class Flipped(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, index):  # noqa: D401 -- autograd's signature
                mask = (x > 0).reshape(-1)
                mask[index] = ~mask[index]
                ctx.save_for_backward(mask.reshape(x.shape))
                return x.clamp_min(0)

            @staticmethod
            def backward(ctx, g):
                (mask,) = ctx.saved_tensors
                return g * mask, None

        def relu(x, *args, **kwargs):
            call = outer.calls
            outer.calls += 1
            if outer.record is not None:
                outer.record.append(x.detach().clone())
            if outer.flip is not None and outer.flip[0] == call:
                y = Flipped.apply(x, outer.flip[1])
                return x.copy_(y) if inplace else y
            return orig(x, *args, **kwargs)
        return relu

    def __enter__(self):
        import torch
        for owner in (torch, torch.Tensor):
            for name, inplace in (("relu", False), ("relu_", True)):
                orig = getattr(owner, name)
                self.saved.append((owner, name, orig))
                setattr(owner, name, self._wrap(orig, inplace))
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self.saved):
            setattr(owner, name, orig)
        self.saved = []
        return False


class Float64Step:
    """the step in float64 (a copy of the model and the batch in double): noise ({name: mask of
    the elements whose gradient is zero in exact arithmetic, at most NOISE times the model's
    largest}), after ({name: the parameter after the step}); and, asked, the step as it is where
    a ReLU input within float32's rounding of zero lies on the other side (flipped)"""

    def __init__(self, model, data, lr, device, relus32=None):
        import copy
        self.twin = copy.deepcopy(model).double()
        self.batch = {k: (v.double() if v.is_floating_point() else v) for k, v in data.items()}
        self.lr, self.device, self.relus32, self.kinks, self.flipped = lr, device, relus32, None, {}
        relus = [] if relus32 is not None else None
        grads = self._grads(_Relus(record=relus))
        top = max(float(g.abs().max()) for g in grads.values())
        self.noise = {k: (g.abs() <= NOISE * top).cpu() for k, g in grads.items()}
        self.after = self._after(grads)
        self.relus64 = relus
        self.twin.to("cpu")

    def _grads(self, relus):
        import torch
        params = dict(self.twin.named_parameters())
        with relus:
            loss = training_loss(self.twin, self.batch, self.device)
        return dict(zip(params, torch.autograd.grad(loss, list(params.values()))))

    def _after(self, grads):
        import torch
        params = dict(self.twin.named_parameters())
        with torch.no_grad():
            return {k: (params[k] - self.lr * g).detach().cpu() for k, g in grads.items()}

    def kink_list(self):
        """[(call, flat index)] of the ReLU inputs within float32's rounding of zero, closest
        first, at most KINKS; none where the float32 and float64 forwards called relu apart"""
        if self.kinks is None:
            self.kinks = []
            r32, r64 = self.relus32 or [], self.relus64 or []
            if r32 and len(r32) == len(r64) and all(a.shape == b.shape for a, b in zip(r32, r64)):
                found = []
                for call, (a, b) in enumerate(zip(r32, r64)):
                    b = b.reshape(-1)
                    tau = KINK_MARGIN * float((b - a.reshape(-1).double()).abs().max())
                    if tau == 0:
                        continue  # float32 computed this input exactly: no kink to take
                    near = (b.abs() <= tau).nonzero().reshape(-1)
                    near = near[b[near].abs().argsort()[:KINKS]]
                    found += [(float(b[i].abs()) / tau, call, int(i)) for i in near]
                self.kinks = [(c, i) for _, c, i in sorted(found)[:KINKS]]
            self.relus32 = self.relus64 = None  # the copies are no longer needed
        return self.kinks

    def flipped_after(self, kink):
        """the float64 step's parameters with kink's ReLU input on the other side of zero"""
        if kink not in self.flipped:
            self.flipped[kink] = self._after(self._grads(_Relus(flip=kink)))
            self.twin.to("cpu")
        return self.flipped[kink]

    def resolve(self, got, noise):
        """(distance, kinks taken) of got from the float64 step with the kinks got's rounding
        took: greedily, the flip that brings the float64 step nearest to got (in the sum of
        squares of every parameter's relative distance, as two kinks taken each leave the
        largest distance where the other put it), while one takes a quarter of that sum away"""
        scale = _scales(self.after, noise)
        ref = dict(self.after)
        best, taken = _distance(got, ref, noise, scale, squares=True), []
        while True:
            step = None
            for kink in self.kink_list():
                if kink in taken:
                    continue
                flip = self.flipped_after(kink)
                cand = {k: ref[k] + (flip[k] - self.after[k]) for k in ref}
                d = _distance(got, cand, noise, scale, squares=True)
                if d < 0.75 * best and (step is None or d < step[0]):
                    step = (d, kink, cand)
            if step is None:
                return _distance(got, ref, noise, scale), taken
            best, ref = step[0], step[2]
            taken.append(step[1])


def _kept(t, k, noise):
    """t without the elements noise marks in parameter k"""
    return t[~noise[k]] if k in noise and noise[k].shape == t.shape else t


def _scales(after, noise):
    """{name: the largest magnitude of the parameter after the float64 step, noise left out}"""
    return {k: (float(_kept(e, k, noise).abs().max()) if _kept(e, k, noise).numel() else 0.0)
            or 1.0 for k, e in after.items()}


def _distance(got, ref, noise, scale, squares=False):
    """the largest distance of any parameter of got from ref's, relative to scale's (squares:
    the sum of the squares of all)"""
    worst = 0.0
    for k, e in ref.items():
        g, e = _kept(got[k].reshape(e.shape).double(), k, noise), _kept(e, k, noise)
        if e.numel():
            d = (g - e) / scale[k]
            worst = worst + float((d * d).sum()) if squares else max(worst, float(d.abs().max()))
    return worst


def from_float64(want, got, exact, noise):
    """(autotm's, PyTorch's) largest distance of any parameter after the step from the float64
    step's (exact: a Float64Step), relative to its largest magnitude: where float32 cannot
    resolve a step (a batch norm over few values whose small variance amplifies rounding, a
    ReLU's input within rounding of zero), the two float32 results part, and float64 says how far
    each is from exact. Where autotm's is the further, by more than WEIGHT_TOL, the two are
    judged again against the float64 step with the ReLU kinks each one's rounding took
    (Float64Step.resolve): (autotm's, PyTorch's, autotm's so, PyTorch's so, kinks autotm took,
    kinks PyTorch took)"""
    scale = _scales(exact.after, noise)
    a = _distance(got, exact.after, noise, scale)
    t = _distance(want, exact.after, noise, scale)
    if a <= t + WEIGHT_TOL:
        return a, t
    (ra, ka), (rt, kt) = exact.resolve(got, noise), exact.resolve(want, noise)
    return a, t, ra, rt, len(ka), len(kt)


def within(row):
    """a check row is within: the loss within LOSS_TOL, and every weight within WEIGHT_TOL of
    PyTorch's, or (where the step was also taken in float64) autotm's weights no farther from
    float64's than PyTorch's float32 weights are, give or take WEIGHT_TOL"""
    pl, la, lt, dl, k, dw, *rest = row
    exact = rest[0] if rest else None
    return dl <= LOSS_TOL and (dw <= WEIGHT_TOL or (exact is not None and (
        exact[0] <= exact[1] + WEIGHT_TOL or (len(exact) > 2 and exact[2] <= exact[3] + WEIGHT_TOL))))


def compare(want, got, noise=None):
    """(name, relative difference) of the parameter or optimizer state that differs most: a
    parameter's relative to its own largest magnitude, a state's to the largest of its kind in
    the model (a gradient that is rounding noise, as a bias's before a batch norm, leaves states
    of noise); the elements noise marks are left out"""
    kinds = {}
    for k, w in want.items():
        kind = next((s for states in OPTIMIZERS.values() for s in states
                     if k.endswith("." + s)), None)
        if kind:
            kinds[kind] = max(kinds.get(kind, 0.0), float(w.abs().max()))
    worst = ("", 0.0)
    for k, w in want.items():
        g = got[k].reshape(w.shape)
        kind = next((s for s in kinds if k.endswith("." + s)), None)
        param = k[:-len(kind) - 1] if kind else k
        if noise and param in noise and noise[param].shape == w.shape and noise[param].any():
            keep = ~noise[param]
            w, g = w[keep], g[keep]
            if w.numel() == 0:
                continue
        scale = (kinds[kind] if kind else float(w.abs().max())) or 1.0
        d = float((g - w).abs().max()) / scale
        if d > worst[1] or not worst[0]:
            worst = (k, d)
    return worst


def write_step_files(folder, graph, params, data):
    """the forward graph, its weights and the batch written into folder: their paths (graph,
    weights, data) for autotm run --graph --weights-in --data"""
    from . import safetensors
    g, w, d = (os.path.join(folder, f) for f in ("g.json", "w.safetensors", "d.safetensors"))
    with open(g, "w") as f:
        json.dump(graph, f)
    safetensors.write(w, params)
    safetensors.write(d, data)
    return g, w, d


def check(model, input_shape, placements, autotm, lr=0.01, seed=0, name="model", quiet=False,
          threads=None, tokens=False, device="cpu", optimizer=None, steps=1):
    """check -- [(placement, loss autotm, loss torch, loss rel. diff, worst weight, its diff)]
    for one step of model at input_shape (token ids [batch, seq] when tokens), on the CPU or,
    device "cuda", on a GPU (PyTorch's step there, autotm run --gpu=cuda); RuntimeError when
    autotm fails. With optimizer ({"name": "sgd", "momentum" or "adamw", "lr", and any of
    "momentum", "betas", "eps", "weight_decay"}) steps steps of torch.optim's on one batch
    against autotm run --optimizer ...: the losses are the last step's, the loss difference
    the largest of any step's, the weights' the largest of any parameter's or state's."""
    import torch
    from . import safetensors
    from .importer import ImportError_, check_graph, to_forward
    graph, params, _ = to_forward(model, input_shape, name=name, lr=lr, tokens=tokens)
    check_graph(graph)
    torch.manual_seed(seed + 1)
    data = make_batch(model, graph, input_shape, tokens)
    rows = []
    with tempfile.TemporaryDirectory(prefix="autotm-check-") as tmp:
        g, w, d = write_step_files(tmp, graph, params, data)
        before = {k: v.detach().clone() for k, v in params.items()}
        if optimizer:
            try:
                return _check_steps(model, data, before, tmp, g, d, w, placements, autotm,
                                    optimizer, steps, threads, device)
            finally:
                with torch.no_grad():  # the model as it was, for anyone who runs it again
                    for k, p in model.named_parameters():
                        p.copy_(before[k])
        try:
            loss_t, after_t, noise, exact = torch_step(model, data, lr, device)
        except (Exception, SystemExit) as e:  # noqa: BLE001 -- the model's own code
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
            loss_a = autotm_step(autotm, g, pl, w, d, w1, r, env, device)
            got = safetensors.read(w1)
            k, dw = compare(after_t, got, noise)
            rows.append((pl, loss_a, loss_t, abs(loss_a - loss_t) / max(abs(loss_t), 1e-30), k, dw,
                         from_float64(after_t, got, exact, noise)))
    return rows


def autotm_run(cmd, results, env, device="cpu", what="autotm run"):
    """autotm_run -- the first run of the results file RESULTS that the autotm run command CMD
    writes (on a GPU, --gpu=cuda, with device "cuda"); RuntimeError naming WHAT when it fails"""
    if device == "cuda":
        cmd = [*cmd, "--gpu=cuda"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{what} exited {p.returncode}: {p.stderr.strip()}")
    with open(results) as f:
        return json.load(f)["runs"][0]


def autotm_step(autotm, graph, placement, weights, data, weights_out, results, env, device,
                extra=()):
    """the loss of one step of autotm run from the files given; RuntimeError when it fails"""
    cmd = [autotm, "run", "--graph", graph, "--placement", placement, "--weights-in", weights,
           "--data", data, "--warmup", "0", "--iters", "1", "--weights-out", weights_out,
           "--quiet", "-o", results, *extra]
    if device == "cuda":
        cmd.append("--gpu=cuda")
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    except OSError as e:
        raise RuntimeError(f"cannot run {autotm}: {e.strerror}") from None
    if p.returncode != 0:
        raise RuntimeError(f"autotm run ({placement}) exited {p.returncode}: {p.stderr.strip()}")
    with open(results) as f:
        return json.load(f)["runs"][0]["losses"][0]


def _check_steps(model, data, params, tmp, graph, data_file, weights, placements, autotm,
                 optimizer, steps, threads, device):
    """check's rows for steps of optimizer: each step taken by autotm from the weights and
    states its step before wrote (resumed with --weights-in), and by PyTorch from the same"""
    from . import safetensors
    from .importer import ImportError_
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    rows = []
    for pl in placements:
        start, w_in, worst_l, worst_w, loss_a, loss_t = dict(params), weights, 0.0, ("", 0.0), 0, 0
        for step in range(steps):
            try:
                loss_t, after_t, noise = torch_update(model, data, optimizer, start, device)
            except (Exception, SystemExit) as e:  # noqa: BLE001 -- the model's own code
                raise ImportError_(f"PyTorch's training step failed: {type(e).__name__}: {e}"
                                   f"{where(e)}") from None
            w_out = os.path.join(tmp, f"w{step + 1}-{pl}.safetensors")
            loss_a = autotm_step(autotm, graph, pl, w_in, data_file, w_out,
                                 os.path.join(tmp, f"r{step + 1}-{pl}.json"), env, device,
                                 autotm_options(optimizer))
            start, w_in = safetensors.read(w_out), w_out
            worst_l = max(worst_l, abs(loss_a - loss_t) / max(abs(loss_t), 1e-30))
            k, dw = compare(after_t, start, noise)
            if dw >= worst_w[1]:
                worst_w = (f"{k}, step {step + 1}" if steps > 1 else k, dw)
        rows.append((pl, loss_a, loss_t, worst_l, *worst_w))
    return rows


def report(rows):
    """print each placement's row (check's); True when every one is within the tolerances"""
    ok = True
    print(f"  {'placement':<12} {'loss autotm':>12} {'loss torch':>12} {'rel. diff':>10}   "
          f"largest weight difference (relative)")
    for row in rows:
        pl, la, lt, dl, k, dw, *rest = row
        good = within(row)
        ok = ok and good
        exact = "" if dw <= WEIGHT_TOL or not rest else \
            f"; from the float64 step: autotm {rest[0][0]:.2e}, PyTorch {rest[0][1]:.2e}"
        if exact and len(rest[0]) > 2:
            ra, rt, ka, kt = rest[0][2:]
            exact += (f"; with the ReLU inputs within rounding of zero each one's rounding put "
                      f"on the other side ({ka} and {kt}): autotm {ra:.2e}, PyTorch {rt:.2e}")
        print(f"  {pl:<12} {la:>12.7f} {lt:>12.7f} {dl:>10.2e}   {dw:.2e} ({k}){exact}"
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
    p.add_argument("--lr", type=float, help="learning rate (default 0.01; adamw 0.001)")
    p.add_argument("--optimizer", choices=tuple(OPTIMIZERS),
                   help="torch.optim's optimizer against autotm run --optimizer (default: one "
                        "plain SGD step, p -= lr * grad)")
    p.add_argument("--weight-decay", type=float, help="the optimizer's (default: PyTorch's)")
    p.add_argument("--steps", type=int, default=1, help="steps on one batch (with --optimizer)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                   help="bf16: autotm run --precision bf16 against torch.autocast's bf16 step, "
                        "both judged against the float64 step (one SGD step, on the CPU)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                   help="where both steps run: cpu, or cuda (PyTorch on the GPU, autotm run "
                        "--gpu=cuda)")
    a = p.parse_args(argv)
    kwargs = kwargs_arg(a.kwargs)
    if a.lr is None:
        a.lr = 1e-3 if a.optimizer == "adamw" else 0.01
    if not (a.lr > 0 and a.lr <= 1e6):
        return fail(EXIT_USAGE, f"--lr {a.lr}: expected above 0 and at most 1e6")
    if not 1 <= a.steps <= 100 or (a.steps > 1 and not a.optimizer):
        return fail(EXIT_USAGE, f"--steps {a.steps}: expected 1 to 100, more than 1 with "
                                "--optimizer")
    if a.weight_decay is not None and not (a.optimizer and 0 <= a.weight_decay <= 1e6):
        return fail(EXIT_USAGE, "--weight-decay: expected 0 to 1e6, with --optimizer")
    if a.precision == "bf16" and a.device != "cpu":
        return fail(EXIT_USAGE, "--precision bf16 checks steps on the CPU; leave out --device")
    opt = None
    if a.optimizer:
        opt = {"name": a.optimizer, "lr": a.lr}
        if a.weight_decay is not None:
            opt["weight_decay"] = a.weight_decay
    torch = import_torch()
    if a.device == "cuda" and not torch.cuda.is_available():
        return fail(EXIT_USAGE, "--device cuda: this PyTorch sees no GPU")
    from .importer import ImportError_
    autotm = find_autotm(a.autotm)
    if not autotm:
        return fail(EXIT_NOT_FOUND, "no autotm binary: build it (scripts/demo.sh) or give --autotm")
    model, _ = make_model(a.model, kwargs, a.seed)
    name = a.model.rsplit(":", 1)[1]
    shape, tokens, bf16 = a.input or a.input_ids, a.input_ids is not None, a.precision == "bf16"
    try:
        if bf16:
            from .check_bf16 import check_bf16
            rows = check_bf16(model, shape, a.placements.split(","), autotm, a.lr, a.seed, name,
                              tokens=tokens, optimizer=opt, steps=a.steps)
        else:
            rows = check(model, shape, a.placements.split(","), autotm, a.lr, a.seed, name,
                         tokens=tokens, device=a.device, optimizer=opt, steps=a.steps)
    except ImportError_ as e:
        return fail(EXIT_IMPORT, f"{a.model}: {e}")
    except RuntimeError as e:
        return fail(EXIT_IMPORT, str(e))
    what = (f"{a.steps} step{'s' if a.steps > 1 else ''} of torch.optim's {a.optimizer}"
            if opt else "one SGD step")
    where = "in bf16 mixed precision, autotm against torch.autocast, PyTorch" if bf16 else \
        f"on {a.device}, autotm against PyTorch"
    print(f"{name} {shape}: {what} (lr {a.lr}) {where} {torch.__version__}")
    if bf16:
        from .check_bf16 import report as report_bf16
        return 0 if report_bf16(rows) else 1
    return 0 if report(rows) else 1


if __name__ == "__main__":
    sys.exit(run(main))
