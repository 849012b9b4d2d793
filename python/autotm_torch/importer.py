"""importer -- a PyTorch nn.Module traced into an autotm forward graph (docs/pytorch.md)

    graph, params = to_forward(model, (8, 3, 224, 224), name="resnet50")
    # graph: the "autotm-forward" JSON document; params: {state_dict key: tensor} it uses

The route: torch.fx's symbolic trace of the module's forward, recording the source line of
every node; each call is mapped to one of autotm's forward layers (conv, batch_norm, relu,
max_pool, avg_pool, global_avg_pool, flatten, linear, add, concat), and autotm builds the
training step (softmax cross-entropy, backward, SGD) from them, as it builds its zoo. A
symbolic trace keeps PyTorch's module structure, so a layer's parameters are named by the
module's state_dict keys. Shapes are propagated with a real batch (ShapeProp), so that
adaptive pooling and flattening are decided on sizes, not guessed.

Anything it cannot map is an ImportError_ naming the call, its module path and its source line,
with the list of what is supported. Dropout is left out (identity): autotm's training step is
deterministic; the caller is told.
"""

import operator
import os
import re

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.passes.shape_prop import ShapeProp

FORMAT = "autotm-forward"
SUPPORTED = (
    "modules: Conv2d (groups 1, dilation 1, zero padding, one stride), BatchNorm2d (affine), "
    "ReLU, MaxPool2d and AvgPool2d (square, no ceil_mode or dilation), "
    "AdaptiveAvgPool2d (to 1x1, or to the size it is given), Linear (with bias), Flatten, "
    "Dropout (left out), Identity; functions: torch.flatten(x, 1), x.flatten(1), x.view(n, -1), "
    "+ / torch.add / operator.iadd of two tensors of one shape, torch.cat(dim=1), F.relu / "
    "torch.relu, F.adaptive_avg_pool2d, F.avg_pool2d, F.max_pool2d, F.dropout (left out)")


class ImportError_(Exception):
    """what the importer cannot map, named: the call, the module path, the source line"""


class _Tracer(torch.fx.Tracer):
    """symbolic tracing that keeps every node's source line"""

    def __init__(self):
        super().__init__()
        self.record_stack_traces = True


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_TORCH = os.path.dirname(torch.__file__) + os.sep


def _where(node, module_path=None):
    """' (module layer1.0.conv1, at model.py:12 in forward)' for messages: the innermost frame
    of the node's recorded stack outside PyTorch's own code"""
    parts = []
    if module_path:
        parts.append(f"module {module_path}")
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    for path, line, func in _FRAME.findall(trace or getattr(node, "stack_trace", None) or ""):
        if not path.startswith(_TORCH) and not path.startswith("<frozen"):
            parts.append(f"at {path}:{line} in {func}")
            break
    return f" ({', '.join(parts)})" if parts else ""


def _pair(v, what, node, path):
    if isinstance(v, int):
        return [v, v]
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return list(v)
    raise ImportError_(f"{what} {v!r} of {node.target}{_where(node, path)}: expected an int or "
                       f"a pair of ints")


def trace(model):
    """trace -- the module's forward as a torch.fx GraphModule, its source lines recorded;
    ImportError_ with the reason when torch.fx cannot trace it"""
    try:
        graph = _Tracer().trace(model)
    except Exception as e:  # torch.fx raises TraceError, TypeError, ... for dynamic code
        raise ImportError_(
            f"torch.fx cannot trace {type(model).__name__}.forward symbolically: "
            f"{type(e).__name__}: {e}. Code that reads a tensor's size into Python values "
            f"(B, T, C = x.size()) or branches on data needs a forward written without it") from None
    return torch.fx.GraphModule(model, graph)


class _Builder:
    """the forward graph, layer by layer, with the parameters it names"""

    def __init__(self, gm, named_params):
        self.gm = gm
        self.modules = dict(gm.named_modules())
        self.named_params = named_params
        self.layers = []
        self.out = {}          # fx node -> the autotm layer name (or "input") it is
        self.used = {}         # parameter name -> tensor
        self.left_out = []     # (kind, where) of what was dropped (dropout)

    def shape(self, node):
        meta = node.meta.get("tensor_meta")
        return tuple(meta.shape) if meta is not None and hasattr(meta, "shape") else None

    def src(self, node, arg):
        if not isinstance(arg, torch.fx.Node) or arg not in self.out:
            raise ImportError_(f"{node.op} {node.target}{_where(node)}: reads {arg!r}, which is "
                               f"not a tensor autotm computes")
        return self.out[arg]

    def add(self, node, op, inputs, params=None, **fields):
        layer = {"name": node.name, "op": op}
        if len(inputs) == 1 and op not in ("add", "concat"):
            layer["input"] = inputs[0]
        else:
            layer["inputs"] = inputs
        layer.update(fields)
        if params:
            layer["params"] = [p for p in params]
            for p in params:
                self.used[p] = self.named_params[p]
        self.layers.append(layer)
        self.out[node] = node.name

    def alias(self, node, arg, kind=None):
        """node computes what arg holds (flatten before a linear layer, dropout, identity)"""
        self.out[node] = self.src(node, arg)
        if kind:
            self.left_out.append((kind, _where(node, node.target if node.op == "call_module" else None)))

    def unsupported(self, node, what, path=None):
        raise ImportError_(f"{what}{_where(node, path)} is not supported. Supported: {SUPPORTED}")

    # ------------------------------------------------------------------ modules

    def module(self, node):
        path = node.target
        m = self.modules[path]
        x = node.args[0] if node.args else None
        if isinstance(m, nn.Conv2d):
            if m.groups != 1 or tuple(m.dilation) != (1, 1) or m.padding_mode != "zeros" \
                    or isinstance(m.padding, str) or m.stride[0] != m.stride[1]:
                self.unsupported(node, f"Conv2d with groups {m.groups}, dilation {m.dilation}, "
                                 f"padding {m.padding!r} ({m.padding_mode}), stride {m.stride}", path)
            params = [f"{path}.weight"] + ([f"{path}.bias"] if m.bias is not None else [])
            self.add(node, "conv", [self.src(node, x)], params, out_channels=m.out_channels,
                     kernel=list(m.kernel_size), stride=m.stride[0], pad=list(m.padding),
                     bias=m.bias is not None)
        elif isinstance(m, nn.BatchNorm2d):
            if not m.affine:
                self.unsupported(node, "BatchNorm2d without affine (autotm's has scale and "
                                 "shift)", path)
            self.add(node, "batch_norm", [self.src(node, x)], [f"{path}.weight", f"{path}.bias"],
                     epsilon=float(m.eps))
        elif isinstance(m, nn.ReLU):
            self.add(node, "relu", [self.src(node, x)])
        elif isinstance(m, (nn.MaxPool2d, nn.AvgPool2d)):
            self.pool(node, x, isinstance(m, nn.MaxPool2d), m.kernel_size, m.stride, m.padding,
                      getattr(m, "dilation", 1), m.ceil_mode, getattr(m, "count_include_pad", True),
                      getattr(m, "divisor_override", None), path)
        elif isinstance(m, nn.AdaptiveAvgPool2d):
            self.adaptive(node, x, m.output_size, path)
        elif isinstance(m, nn.Linear):
            if m.bias is None:
                self.unsupported(node, "Linear without bias", path)
            self.add(node, "linear", [self.src(node, x)], [f"{path}.weight", f"{path}.bias"],
                     out_features=m.out_features)
        elif isinstance(m, nn.Flatten):
            if m.start_dim != 1 or m.end_dim != -1:
                self.unsupported(node, f"Flatten(start_dim={m.start_dim}, end_dim={m.end_dim})", path)
            self.flatten(node, x)
        elif isinstance(m, (nn.Dropout, nn.Dropout2d)):
            self.alias(node, x, "dropout")
        elif isinstance(m, nn.Identity):
            self.alias(node, x)
        else:
            self.unsupported(node, f"module {type(m).__name__}", path)

    def pool(self, node, x, is_max, k, s, p, dilation, ceil, include, divisor, path=None):
        k = _pair(k, "kernel", node, path)
        s = _pair(s if s not in (None, ()) else k, "stride", node, path)
        p = _pair(p, "padding", node, path)
        d = _pair(dilation, "dilation", node, path)
        if k[0] != k[1] or s[0] != s[1] or p[0] != p[1] or d != [1, 1] or ceil or divisor:
            self.unsupported(node, f"{'max' if is_max else 'average'} pooling {k}, stride {s}, "
                             f"padding {p}, dilation {d}, ceil_mode {ceil}, divisor_override "
                             f"{divisor}", path)
        fields = {"kernel": k[0], "stride": s[0], "pad": p[0]}
        if not is_max:
            fields["count_include_pad"] = bool(include)
        self.add(node, "max_pool" if is_max else "avg_pool", [self.src(node, x)], **fields)

    def adaptive(self, node, x, size, path=None):
        size = _pair(size, "output_size", node, path) if size is not None else None
        shape = self.shape(x)
        if size == [1, 1]:
            self.add(node, "global_avg_pool", [self.src(node, x)])
        elif shape is not None and size is not None and list(shape[2:]) == size:
            self.alias(node, x)  # pooling an image to its own size: nothing to do
        else:
            self.unsupported(node, f"adaptive average pooling of {shape and list(shape[2:])} to "
                             f"{size}", path)

    def flatten(self, node, x):
        out = self.shape(node)
        if out is not None and len(out) != 2:
            self.unsupported(node, f"flattening to {list(out)} (only to [batch, features])")
        self.alias(node, x)

    # ------------------------------------------------------------------ functions and methods

    def function(self, node):
        f, a, kw = node.target, node.args, node.kwargs
        if f in (torch.flatten,) or (node.op == "call_method" and f == "flatten"):
            start = a[1] if len(a) > 1 else kw.get("start_dim", 0 if f is torch.flatten else 0)
            end = a[2] if len(a) > 2 else kw.get("end_dim", -1)
            if start != 1 or end != -1:
                self.unsupported(node, f"flatten(start_dim={start}, end_dim={end})")
            self.flatten(node, a[0])
        elif node.op == "call_method" and f in ("view", "reshape"):
            out = self.shape(node)
            if out is None or len(out) != 2 or out[0] != self.shape(a[0])[0]:
                self.unsupported(node, f"x.{f}(...) to {out and list(out)} (only to [batch, -1])")
            self.alias(node, a[0])
        elif f in (operator.add, torch.add, operator.iadd) or (node.op == "call_method" and f in ("add", "add_")):
            if len(a) != 2 or kw.get("alpha", 1) != 1 or not all(isinstance(v, torch.fx.Node) for v in a):
                self.unsupported(node, "add of other than two tensors")
            self.add(node, "add", [self.src(node, a[0]), self.src(node, a[1])])
        elif f is torch.cat:
            tensors = a[0]
            dim = a[1] if len(a) > 1 else kw.get("dim", 0)
            if dim != 1:
                self.unsupported(node, f"torch.cat along dim {dim} (only along channels, dim 1)")
            if len(tensors) == 1:
                self.alias(node, tensors[0])
            else:
                self.add(node, "concat", [self.src(node, t) for t in tensors])
        elif f in (F.relu, torch.relu) or (node.op == "call_method" and f in ("relu", "relu_")):
            self.add(node, "relu", [self.src(node, a[0])])
        elif f is F.adaptive_avg_pool2d:
            self.adaptive(node, a[0], a[1] if len(a) > 1 else kw.get("output_size"))
        elif f in (F.avg_pool2d, F.max_pool2d):
            names = ("input", "kernel_size", "stride", "padding")
            v = dict(zip(names, a))
            v.update(kw)
            if f is F.max_pool2d:
                self.pool(node, a[0], True, v["kernel_size"], v.get("stride"), v.get("padding", 0),
                          v.get("dilation", 1), v.get("ceil_mode", False), True, None)
            else:
                self.pool(node, a[0], False, v["kernel_size"], v.get("stride"), v.get("padding", 0),
                          1, v.get("ceil_mode", False), v.get("count_include_pad", True),
                          v.get("divisor_override"))
        elif f is F.dropout:
            self.alias(node, a[0], "dropout")
        else:
            name = f if isinstance(f, str) else getattr(f, "__name__", repr(f))
            self.unsupported(node, f"{'method' if node.op == 'call_method' else 'function'} {name}")


def to_forward(model, input_shape, name=None, lr=0.01):
    """to_forward -- (graph, params, left_out): the forward graph document of model's training
    step at input_shape (batch, channels, height, width), the parameters it names by their
    state_dict keys, and what was left out ([(kind, where)]: dropout). ImportError_ when a call
    cannot be mapped."""
    if len(input_shape) != 4:
        raise ImportError_(f"input {list(input_shape)}: autotm's forward graphs take one image "
                           f"input [batch, channels, height, width]")
    gm = trace(model)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise ImportError_(f"{type(model).__name__}.forward takes {len(placeholders)} inputs "
                           f"({', '.join(n.target for n in placeholders)}); one image is supported")
    was_training = model.training
    model.eval()  # shapes only: batch norm with running statistics, dropout off
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(torch.zeros(tuple(input_shape)))
    except Exception as e:
        raise ImportError_(f"running {type(model).__name__} on an input of {list(input_shape)} "
                           f"failed: {type(e).__name__}: {e}") from None
    finally:
        model.train(was_training)
    named = dict(model.named_parameters())
    b = _Builder(gm, named)
    output = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            b.out[node] = "input"
        elif node.op == "get_attr":
            raise ImportError_(f"the forward reads the attribute {node.target}{_where(node)} as a "
                               f"tensor; only layers' own parameters are supported")
        elif node.op == "call_module":
            b.module(node)
        elif node.op in ("call_function", "call_method"):
            b.function(node)
        elif node.op == "output":
            arg = node.args[0]
            if not isinstance(arg, torch.fx.Node):
                raise ImportError_(f"{type(model).__name__}.forward returns {type(arg).__name__}; "
                                   f"it must return the logits tensor alone")
            output = b.src(node, arg)
    if output is None or output == "input":
        raise ImportError_(f"{type(model).__name__}.forward computes nothing autotm can train")
    last = next((l for l in b.layers if l["name"] == output), None)
    if last is None or last["op"] != "linear":
        shape = b.shape(next(n for n in gm.graph.nodes if n.op == "output").args[0])
        if shape is None or len(shape) != 2:
            raise ImportError_(f"the output is {shape and list(shape)}; autotm trains logits "
                               f"[batch, classes] with softmax cross-entropy")
    unused = [k for k in named if k not in b.used]
    if unused:
        raise ImportError_(f"{len(unused)} parameter(s) the traced forward never uses, so autotm "
                           f"could not train them: {', '.join(unused[:5])}"
                           f"{', ...' if len(unused) > 5 else ''}")
    graph = {
        "format": FORMAT, "version": 1,
        "name": name or type(model).__name__.lower(),
        "batch": int(input_shape[0]), "lr": float(lr),
        "input": {"shape": [int(v) for v in input_shape[1:]]},
        "layers": b.layers, "output": output,
    }
    return graph, {k: named[k] for k in named}, b.left_out
