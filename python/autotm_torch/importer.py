"""importer -- a PyTorch nn.Module traced into an autotm forward graph (docs/pytorch.md)

    graph, params, left_out = to_forward(model, (8, 3, 224, 224), name="resnet50")
    graph, params, left_out = to_forward(gpt, (2, 128), tokens=True)
    # graph: the "autotm-forward" JSON document; params: {state_dict key: tensor} it uses

The route: torch.fx's symbolic trace of the module's forward, recording the source line of
every node, in which every traced tensor also carries its value: the forward runs for real, once,
on an example input (zeros of the given shape), as it is traced. So code that reads a tensor's
sizes into Python values (`b, t, c = x.size()`, `math.sqrt(k.size(-1))`, torchvision's ViT) traces,
and the mapping decides on shapes, not guesses; branching on a tensor's values stays an error.
Modules from torch.nn are kept whole (leaves), so a layer's parameters are named by the module's
state_dict keys; other modules are traced through.

Each call is mapped to autotm's forward layers (conv, batch_norm, relu, pooling, linear, add,
mul, scale, concat, embedding, positions, layer_norm, rms_norm, gelu, tanh, silu, sigmoid,
hardswish, hardsigmoid, relu6, softmax, matmul, permute, reshape, narrow, split, rope) through one
table, _MAPPINGS (a module class, function or method name to its handler), and autotm builds the
training step from them (loss, backward, SGD), as it builds its zoo.
Views, transposes and matmuls are mapped lazily, when something reads them, so that a view and
the transpose after it become one permute, a transpose read by a matmul becomes its trans_b,
a matmul scaled by a number takes the scale, and a -inf causal mask read by a softmax (filled,
or added as Hugging Face's models add it) becomes a causal softmax. So are the parts of rotary embeddings as LLaMA writes them, x * cos +
rotate_half(x) * sin, which become one rope layer once their constant cos and sin tables are
checked to be the rotate-half form of one base theta (recovered from them), and the key/value
heads of grouped-query attention repeated in place (x[:, :, None].expand(...).reshape(...),
repeat_interleave), which become a concat of copies of one layer.

Anything it cannot map is an ImportError_ naming the call, its module path and its source line,
with the list of what is supported. Dropout and torchvision's stochastic depth are left out
(identity): autotm's training step is deterministic; the caller is told. check_graph applies
autotm's own rules to the result (its limits, and that the output depends on a parameter), so
that nothing autotm refuses is written.
"""

import collections
import importlib
import math
import operator
import os
import re
import traceback
import types

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

FORMAT = "autotm-forward"


class ImportError_(Exception):
    """what the importer cannot map, named: the call, the module path, the source line"""


class _ControlFlow(torch.fx.proxy.TraceError):
    """a traced tensor's value used as a bool (if x.sum() > 0): control flow on data"""


_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
_TORCH = os.path.dirname(torch.__file__) + os.sep
_HERE = os.path.abspath(__file__)


def _where(node, module_path=None):
    """' (module layer1.0.conv1, at model.py:12 in forward)' for messages: the innermost frame
    of the node's recorded stack outside PyTorch's own code"""
    parts = []
    if module_path:
        parts.append(f"module {module_path}")
    trace = node.meta.get("stack_trace") if hasattr(node, "meta") else None
    for path, line, func in _FRAME.findall(trace or getattr(node, "stack_trace", None) or ""):
        if not path.startswith(_TORCH) and not path.startswith("<frozen") and path != _HERE:
            parts.append(f"at {path}:{line} in {func}")
            break
    return f" ({', '.join(parts)})" if parts else ""


def _raised_at(e):
    """' (at model.py:12 in forward)': the innermost frame of e's traceback outside PyTorch's
    code and this file, or ''"""
    for path, line, func in reversed([(f.f_code.co_filename, n, f.f_code.co_name)
                                      for f, n in traceback.walk_tb(e.__traceback__)]):
        if not path.startswith(_TORCH) and not path.startswith("<") and path != _HERE:
            return f" (at {path}:{line} in {func})"
    return ""


def _pair(v, what, node, path):
    if isinstance(v, int):
        return [v, v]
    if isinstance(v, (tuple, list)) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return list(v)
    raise ImportError_(f"{what} {v!r} of {node.target}{_where(node, path)}: expected an int or "
                       f"a pair of ints")


# ---------------------------------------------------------------------- tracing with values

class _ValueProxy(torch.fx.Proxy):
    """a traced tensor that knows its value, so that the forward may read its sizes"""

    def _value(self):
        v = self.tracer.values.get(self.node)
        if v is None:
            raise RuntimeError(f"the value of {self.node.name} is unknown")
        return v

    def size(self, dim=None):
        return self._value().size() if dim is None else self._value().size(dim)

    def dim(self):
        return self._value().dim()

    def numel(self):
        return self._value().numel()

    def __len__(self):
        return len(self._value())

    def __iter__(self):
        # q, k, v = x.split(c, dim=2): as many items as the value has (torch.fx's own way reads
        # the caller's bytecode, which Python 3.11 laid out anew)
        return iter([self[i] for i in range(len(self._value()))])

    @property
    def shape(self):
        return self._value().shape

    @property
    def ndim(self):
        return self._value().dim()

    @property
    def dtype(self):
        return self._value().dtype

    @property
    def device(self):
        return self._value().device


class _Tracer(torch.fx.Tracer):
    """symbolic tracing that keeps every node's source line and runs every node for real"""

    def __init__(self, example):
        # the table's functions written in Python (torchvision's stochastic_depth) are calls of
        # their own where a forward's module imported them by name, not traced through
        super().__init__(autowrap_functions=tuple(
            f for f in _BY_FUNCTION if isinstance(f, types.FunctionType)))
        self.record_stack_traces = True
        self.example = example
        self.values = {}
        self.running = 0  # > 0 while a value is computed: modules and attributes are plain
        self.module_paths = []  # the modules being traced through (torch.fx has a self.scope)
        self.scopes = {}  # node -> the path of the module whose forward made it
        self.failed_in = None  # the path of the innermost module whose call raised, once one did

    def proxy(self, node):
        return _ValueProxy(node, self)

    def is_leaf_module(self, m, qualname):
        # a module the table maps is kept whole, from torch.nn or not (torchvision's
        # StochasticDepth); the rest of torch.nn too, to be refused by name
        return type(m) in _BY_MODULE or super().is_leaf_module(m, qualname)

    def to_bool(self, obj):
        raise _ControlFlow(f"the traced tensor {obj.node.name} is used as a bool (control "
                           f"flow on its value)")

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self.running:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def call_module(self, m, forward, args, kwargs):
        if self.running:
            return forward(*args, **kwargs)
        self.module_paths.append(self.path_of_module(m))
        try:
            return super().call_module(m, forward, args, kwargs)
        except BaseException:
            if self.failed_in is None:
                self.failed_in = self.module_paths[-1]
            raise
        finally:
            self.module_paths.pop()

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        p = super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)
        if self.module_paths and self.module_paths[-1]:
            self.scopes[p.node] = self.module_paths[-1]
        if kind == "output":
            return p

        def val(a):
            return self.values.get(a.node) if isinstance(a, torch.fx.Proxy) else a

        a = torch.fx.node.map_aggregate(args, val)
        kw = torch.fx.node.map_aggregate(kwargs, val)
        self.running += 1
        try:
            if kind == "placeholder":
                v = self.example
            elif kind == "get_attr":
                v = self.root
                for atom in target.split("."):
                    v = getattr(v, atom)
            elif kind == "call_module":
                v = self.root.get_submodule(target)(*a, **kw)
            elif kind == "call_function":
                v = target(*a, **kw)
            else:
                v = getattr(a[0], target)(*a[1:], **kw)
        finally:
            self.running -= 1
        self.values[p.node] = v
        return p


def trace(model, example):
    """trace -- (GraphModule, {node: value}, {node: the path of the module that made it}) of
    the module's forward on example;
    ImportError_ with the reason when torch.fx cannot trace it"""
    tracer = _Tracer(example)
    was_training = model.training
    model.eval()  # shapes only: batch norm with running statistics, dropout off
    try:
        with torch.no_grad():
            graph = tracer.trace(model)
    except (ImportError_, KeyboardInterrupt):
        raise
    except SystemExit as e:  # sys.exit() in the model's code: a failure of the model, not an exit
        module = f" in module '{tracer.failed_in}'" if tracer.failed_in else ""
        raise ImportError_(
            f"tracing {type(model).__name__}.forward on an input of {list(example.shape)} "
            f"failed: SystemExit: the forward called sys.exit({e.code!r}){module}"
            f"{_raised_at(e)}; a forward that ends the program cannot be imported") from None
    except BaseException as e:  # noqa: BLE001 -- torch.fx raises TraceError, TypeError, ...
        # for dynamic code; the model's own code may raise anything
        hint, kind = "", type(e).__name__
        if isinstance(e, torch.fx.proxy.TraceError):
            kind = "TraceError"
            if isinstance(e, _ControlFlow) or "control flow" in str(e):
                hint = (". Branching on a tensor's values (if x.sum() > 0) cannot be traced; "
                        "reading its sizes can")
        raise ImportError_(
            f"tracing {type(model).__name__}.forward on an input of "
            f"{list(example.shape)} failed: {kind}: {e}{_raised_at(e)}{hint}") from None
    finally:
        model.train(was_training)
    # constants the trace made (torch.ones(t, t).tril()) are attributes of the root now
    for node in graph.nodes:
        if node.op == "get_attr" and node not in tracer.values:
            v = model
            for atom in node.target.split("."):
                v = getattr(v, atom)
            tracer.values[node] = v
    return torch.fx.GraphModule(model, graph), tracer.values, tracer.scopes


# ---------------------------------------------------------------------- what a node is

class _Expr:
    """what a traced node is in autotm's terms; name: the layer it became, once it did"""
    name = None
    shape = None  # autotm's shape (with the batch)


class _Layer(_Expr):
    def __init__(self, name, shape):
        self.name, self.shape = name, tuple(shape)


class _View(_Expr):
    """src read as another shape (view, reshape, flatten, x[:, 0]'s dropped axis)"""

    def __init__(self, src, shape):
        self.src, self.shape = src, tuple(shape)


class _Perm(_Expr):
    """src with its axes reordered"""

    def __init__(self, src, perm):
        self.src, self.perm = src, list(perm)
        self.shape = tuple(src.shape[p] for p in perm)


class _Matmul(_Expr):
    def __init__(self, a, b, shape, scale=1.0):
        self.a, self.b, self.shape, self.scale = a, b, tuple(shape), scale


# The largest value an additive mask may hold where it masks: a score this far below the others
# has exp() of exactly 0 in float32 and float64 alike (float64 underflows below -745), so the
# softmax's weight there is 0 exactly, as with -inf.
MASKED = -1e4


class _Masked(_Expr):
    """src with a causal -inf mask, for the softmax that reads it"""

    def __init__(self, src):
        self.src, self.shape = src, src.shape


class _Split(_Expr):
    def __init__(self, src, axis, parts):
        self.src, self.axis, self.parts = src, axis, parts
        self.used = set()  # the parts something reads


class _Part(_Expr):
    def __init__(self, split, i, shape):
        self.split, self.i, self.shape = split, i, tuple(shape)


class _Param(_Expr):
    """a parameter the forward reads itself (a class token, a position table)"""

    def __init__(self, pname, tensor):
        self.pname, self.tensor, self.shape = pname, tensor, tuple(tensor.shape)


class _Const(_Expr):
    """a tensor that does not depend on the input (a mask, position ids); what: how messages
    name it (the buffer shift, a constant tensor)"""

    def __init__(self, value, what):
        self.value, self.what, self.shape = value, what, tuple(value.shape)


class _Square(_Expr):
    """src * src (x.pow(2), x ** 2, x * x): an RMS norm's start, or a product of one shape"""

    def __init__(self, src):
        self.src, self.shape = src, src.shape


class _MeanSq(_Expr):
    """the mean over the last dimension of src squared (keepdim), plus eps once added"""

    def __init__(self, src, eps=None):
        self.src, self.eps = src, eps
        self.shape = tuple(src.shape[:-1]) + (1,)


class _Rstd(_Expr):
    """rsqrt(mean of src^2 over the last dimension + eps)"""

    def __init__(self, src, eps):
        self.src, self.eps, self.shape = src, eps, tuple(src.shape[:-1]) + (1,)


class _RmsNormed(_Expr):
    """src * rsqrt(mean of src^2 + eps): an RMS norm waiting for its scale"""

    def __init__(self, src, eps):
        self.src, self.eps, self.shape = src, eps, src.shape


class _Half(_Expr):
    """x[..., :h] (i 0) or x[..., h:] (i 1) of x's last dimension 2h, negated when neg: the
    halves rotate_half joins"""

    def __init__(self, src, i, neg=False):
        self.src, self.i, self.neg = src, i, neg
        self.shape = tuple(src.shape[:-1]) + (src.shape[-1] // 2,)


class _Rotated(_Expr):
    """rotate_half(src): torch.cat((-src[..., h:], src[..., :h]), dim=-1)"""

    def __init__(self, src):
        self.src, self.shape = src, src.shape


class _ConstProduct(_Expr):
    """src * a constant table (rotary embeddings' x * cos, rotate_half(x) * sin); at: the node
    of the product, for messages"""

    def __init__(self, src, const, at):
        self.src, self.const, self.at, self.shape = src, const, at, src.shape


class _Expand(_Expr):
    """src with its axis `axis` of size 1 repeated `times` times (expand), not made yet:
    grouped-query attention's key/value heads repeated for their query heads"""

    def __init__(self, src, axis, times, shape):
        self.src, self.axis, self.times, self.shape = src, axis, times, tuple(shape)
        self.repeated = None  # the concat layer holding its data, once made


class _NotATensor(Exception):
    """a tuple or a missing result read as a tensor: _Builder.map names the call"""


class _Tuple(_Expr):
    def __init__(self, items):
        self.items = items

    @property
    def shape(self):
        raise _NotATensor(f"reading a tuple of {len(self.items)} results as one tensor")


class _Nothing(_Expr):
    """a result a layer does not give (MultiheadAttention's weights without need_weights)"""

    @property
    def shape(self):
        raise _NotATensor("reading a result the layer does not give (MultiheadAttention's "
                          "weights: autotm's attention gives none)")


def _swaps_last_two(perm):
    n = len(perm)
    return n >= 3 and list(perm) == list(range(n - 2)) + [n - 1, n - 2]


class _Builder:
    """the forward graph, layer by layer, with the parameters it names"""

    def __init__(self, gm, values, scopes, canonical, input_shape, tokens):
        self.gm = gm
        self.values = values
        self.scopes = scopes        # node -> the path of the module whose forward made it
        self.modules = dict(gm.named_modules())
        self.canonical = canonical  # id(parameter) -> its name in named_parameters()
        self.batch = int(input_shape[0])
        self.input = _Layer("input", input_shape)
        self.tokens = tokens        # the input is token ids
        self.layers = []
        self.names = set()
        self.ex = {}           # fx node -> _Expr
        self.used = {}         # parameter name -> tensor
        self.left_out = []     # (kind, where) of what was dropped (dropout)
        self.node = None       # the node being mapped, for messages

    # ------------------------------------------------------------------ plumbing

    def tshape(self, node):
        v = self.values.get(node)
        return tuple(v.shape) if isinstance(v, torch.Tensor) else None

    def unsupported(self, what, path=None, node=None):
        raise ImportError_(f"{what}{_where(node or self.node, path)} is not supported. "
                           f"Supported: {SUPPORTED}")

    def pname(self, tensor):
        return self.canonical[id(tensor)]

    def fresh(self, base):
        name, k = base, 1
        while name in self.names or name == "input":
            k += 1
            name = f"{base}_{k}"
        self.names.add(name)
        return name

    def emit(self, base, op, inputs, dims, params=(), **fields):
        """a layer; its _Layer"""
        name = self.fresh(base)
        layer = {"name": name, "op": op}
        if len(inputs) == 1:
            layer["input"] = inputs[0]
        elif inputs:
            layer["inputs"] = list(inputs)
        layer.update(fields)
        if params:
            layer["params"] = [self.pname(p) for p in params]
            for p in params:
                self.used[self.pname(p)] = p
        self.layers.append(layer)
        return _Layer(name, dims)

    def expr(self, arg):
        if not isinstance(arg, torch.fx.Node) or arg not in self.ex:
            raise ImportError_(f"{self.node.op} {self.node.target}{_where(self.node)}: reads "
                               f"{arg!r}, which is not a tensor autotm computes")
        return self.ex[arg]

    def base(self):
        """the name of the node's layer: its module's path, or its call's name within the
        module that made it (transformer.h.0.attn.softmax)"""
        n = self.node
        if n.op == "call_module":
            return n.target
        scope = self.scopes.get(n)
        return f"{scope}.{n.name}" if scope else n.name

    # ------------------------------------------------------------------ materialising

    def get(self, e):
        """the layer e is, made now if it is not yet"""
        if e.name is not None:
            return e.name
        if isinstance(e, _View):
            s = e.src
            if isinstance(s, _Expand) and s.name is None:
                s = self.repeat(s, e.shape)  # its data, laid out as the view reads it
            if s.shape == e.shape:
                e.name = self.get(s)
                return e.name
            self.batch_first(e.shape)
            src, perm = self.chain(s)
            if perm is not None and not (isinstance(src, _View) and src.name is None):
                made = self.permute(e.origin, src, perm, shape=e.shape)
            else:
                made = self.emit(e.origin, "reshape", [self.get(s)], e.shape,
                                 shape=list(e.shape[1:]))
        elif isinstance(e, _Perm):
            src, perm = self.chain(e)
            made = self.permute(e.origin, src, perm)
        elif isinstance(e, _Matmul):
            ops, flags = [], {}
            for side, x in (("a", e.a), ("b", e.b)):
                if isinstance(x, _Perm) and x.name is None and _swaps_last_two(x.perm):
                    flags[f"trans_{side}"] = True
                    x = x.src
                ops.append(self.get(x))
            if e.scale != 1.0:
                flags["scale"] = e.scale
            made = self.emit(e.origin, "matmul", ops, e.shape, **flags)
        elif isinstance(e, _Part):
            sp = e.split
            if sp.name is None:
                sp.name = self.emit(sp.origin, "split", [self.get(sp.src)], (),
                                    axis=sp.axis, parts=sp.parts).name
                if len(sp.used) != sp.parts:
                    self.unsupported(f"a split into {sp.parts} parts of which {len(sp.used)} "
                                     f"are used (autotm's backward needs each)")
            e.name = f"{sp.name}.{e.i}"
            return e.name
        elif isinstance(e, _Masked):
            self.unsupported("a masked_fill read by anything but a softmax over the last "
                             "dimension")
        elif isinstance(e, _Param):
            self.unsupported(f"reading the parameter {e.pname} {list(e.shape)} other than "
                             f"added to an activation or expanded over the batch")
        elif isinstance(e, (_Const, _ConstProduct)):
            # a causal mask, position ids or rotary tables are taken by what reads them; as
            # data, no
            c, at = (e, self.node) if isinstance(e, _Const) else (e.const, e.at)
            raise ImportError_(f"{c.what} {list(c.value.shape)}{_where(at)} is read as "
                               f"data: autotm's forward graphs hold the input and parameters, "
                               f"no other tensors (a constant is taken only as a causal mask "
                               f"before a softmax, as position ids of an embedding, or as the "
                               f"cos and sin tables of rotary embeddings written "
                               f"x * cos + rotate_half(x) * sin)")
        elif isinstance(e, _Expand):
            r = self.repeat(e, e.shape)
            if r.shape == e.shape:
                e.name = r.name
                return e.name
            made = self.emit(e.origin, "reshape", [r.name], e.shape, shape=list(e.shape[1:]))
        elif isinstance(e, _Half):
            if e.i or e.neg:
                self.unsupported(f"{'-' if e.neg else ''}x[..., {'h:' if e.i else ':h'}] (h = "
                                 f"{e.shape[-1]}, half the last dimension) read by anything but "
                                 f"rotate_half's torch.cat((-x[..., h:], x[..., :h]), dim=-1) "
                                 f"(of rotary embeddings)")
            n = len(e.src.shape)
            made = self.emit(e.origin, "narrow", [self.get(e.src)], e.shape, axis=n - 1,
                             length=e.shape[-1])
        elif isinstance(e, _Rotated):
            self.unsupported("rotate_half(x), torch.cat((-x[..., h:], x[..., :h]), dim=-1), "
                             "read by anything but rotary embeddings x * cos + "
                             "rotate_half(x) * sin (cos and sin constant tables)")
        elif isinstance(e, _Square):
            made = self.emit(e.origin, "mul", [self.get(e.src), self.get(e.src)], e.shape)
        elif isinstance(e, (_MeanSq, _Rstd, _RmsNormed)):
            self.unsupported("a part of an RMS norm read by anything but the next step of "
                             "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight "
                             "(weight: a parameter [C])")
        elif isinstance(e, _Nothing):
            self.unsupported("reading a result the layer does not give (MultiheadAttention's "
                             "weights: autotm's attention gives none)")
        else:
            self.unsupported("a tuple read as a tensor")
        e.name = made.name
        return e.name

    def batch_first(self, shape):
        if not shape or shape[0] != self.batch:
            self.unsupported(f"a view to {list(shape)}, which does not keep the batch "
                             f"({self.batch}) first (autotm's activations lead with it)")

    def chain(self, e):
        """(src, perm): e is src with its axes in perm's order (perm None: e is no permute);
        permutes not made yet are one"""
        if not isinstance(e, _Perm) or e.name is not None:
            return e, None
        src, perm = e.src, e.perm
        while isinstance(src, _Perm) and src.name is None:
            perm = [src.perm[p] for p in perm]
            src = src.src
        return src, perm

    def permute(self, base, src, perm, shape=None):
        """a permute layer of src (read through its view, if it is one), written as shape"""
        if perm[0] != 0:
            self.unsupported(f"a permutation {perm} that moves the batch axis")
        fields = {"perm": list(perm)}
        out = tuple(src.shape[p] for p in perm)
        if isinstance(src, _View) and src.name is None and shape is None:
            self.batch_first(src.shape)
            fields["view"] = list(src.shape[1:])
            x = self.repeat(src.src, src.shape).name if isinstance(src.src, _Expand) and \
                src.src.name is None else self.get(src.src)
        else:
            x = self.get(src)
        if shape is not None:
            fields["shape"] = list(shape[1:])
            out = shape
        return self.emit(base, "permute", [x], out, **fields)

    def positions(self, p, length=None, base=None):
        """a parameter broadcast over the batch: [batch, rows, dim] of its first length rows;
        the layer named base (default: the parameter's name)"""
        shape = list(p.shape)
        if len(shape) == 3 and shape[0] != 1 or len(shape) not in (2, 3):
            self.unsupported(f"broadcasting the parameter {p.pname} {shape} over the batch "
                             f"(it must be [rows, dim] or [1, rows, dim])")
        rows = shape[-2]
        length = rows if length is None else length
        return self.emit(base or p.pname, "positions", [], (self.batch, length, shape[-1]),
                         params=[p.tensor], table=shape, length=length)

    def repeat(self, e, target):
        """the concat layer holding the data of the _Expand e (made once), for a reader of it
        as target: its source's copies joined along the axis after the repeated one, so that
        each block is repeated in place (heads 0, 0, 1, 1, as repeat_interleave and Hugging
        Face's repeat_kv give). The source is joined as it is, or read as [batch, outer,
        inner] or [batch, outer, 1, inner] first: autotm reshapes between shapes of different
        ranks only (a permute with a view), so each step must change the rank or nothing"""
        if e.repeated is not None:
            if len(e.repeated.shape) == len(target) and e.repeated.shape != tuple(target):
                self.unsupported(f"reading {list(e.shape)}, repeated as "
                                 f"{list(e.repeated.shape)}, as {list(target)} too")
            return e.repeated
        src = e.src
        while isinstance(src, _View) and src.name is None:
            src = src.src  # a view of contiguous data: the same data
        g, b = e.times, self.batch
        outer = math.prod(e.shape[1:e.axis])  # the blocks each repeated, past the batch
        inner = math.prod(e.shape[e.axis + 1:])
        choices = []
        axis = next((j for j in range(1, len(src.shape))
                     if math.prod(src.shape[1:j]) == outer), None)
        if axis is not None:
            choices.append((None, axis, tuple(src.shape[:axis]) + (g * src.shape[axis],)
                            + tuple(src.shape[axis + 1:])))
        choices += [((b, outer, inner), 2, (b, outer, g * inner)),
                    ((b, outer, 1, inner), 2, (b, outer, g, inner))]

        def fits(x, y):
            return tuple(x) == tuple(y) or len(x) != len(y)

        for flat, axis, shape in choices:
            if (flat is None or fits(src.shape, flat)) and fits(shape, target):
                break
        else:
            self.unsupported(f"repeating {list(src.shape)} into {list(target)}")
        if flat is not None:
            src = _View(src, flat)
            src.origin = f"{e.origin}_flat"
        fields = {} if axis == 1 else {"axis": axis}
        e.repeated = self.emit(e.origin, "concat", [self.get(src)] * g, shape, **fields)
        return e.repeated

    def rope(self, x, cos, sin):
        """x * cos + rotate_half(x) * sin as autotm's rope layer, the base theta recovered from
        the tables and the whole of both checked against the rotate-half form of it"""
        shape = tuple(x.shape)
        where = _where(self.node)
        what = (f"rotary embeddings of {list(shape)} with cos {list(cos.value.shape)} and sin "
                f"{list(sin.value.shape)}{where}")
        if len(shape) < 3 or shape[-1] % 2:
            self.unsupported(f"{what}: autotm's rope takes x [batch, ..., T, D] with D even")
        t, d = shape[-2], shape[-1]
        tables = []
        for c in (cos, sin):
            v = c.value
            if not v.is_floating_point() or v.dim() < 2 or \
                    torch.broadcast_shapes(v.shape, shape) != torch.Size(shape):
                raise ImportError_(f"{what}: each table must broadcast into x, its positions "
                                   f"along x's axis -2 and its frequencies along axis -1")
            first = v.reshape(-1, *v.shape[-2:])[0]
            if not torch.equal(first.expand_as(v), v):
                raise ImportError_(f"{what}: a table differs between samples or heads; "
                                   f"autotm's rope takes one [T, D] table for all")
            tables.append(first.double().expand(t, d))
        c, s = tables
        h = d // 2
        if t >= 2 and h >= 2:
            # at position 1 the angle of column i is theta^(-2i/D); the last pair's the most
            # exactly (its exponent's factor D/(2i) is the smallest)
            a = math.atan2(float(s[1, h - 1]), float(c[1, h - 1]))
            theta = a ** (-d / (2.0 * (h - 1))) if a > 0 else math.nan
        else:
            theta = 10000.0  # one position or one frequency: every base gives these tables
        usable = math.isfinite(theta) and 1 < theta <= 1e30  # the rope layer's rule
        ok = usable
        if usable:
            # the tables the rope layer computes: its theta is float32, its angles double
            for nice in (float(round(theta)), theta):
                th = float(torch.tensor(nice, dtype=torch.float32))
                freq = th ** (-2.0 * (torch.arange(d, dtype=torch.float64) % h) / d)
                ang = torch.arange(t, dtype=torch.float64)[:, None] * freq
                # to 1e-6 and float32's rounding of the angle, as tables computed in float32
                # carry it
                tol = 1e-6 * (1 + ang.abs())
                err = torch.maximum((c - ang.cos()).abs() - tol, (s - ang.sin()).abs() - tol)
                if float(err.max()) <= 0:
                    break
            ok = float(err.max()) <= 0
            theta = nice
        if not ok:
            ang = torch.atan2(s, c)  # the tables' own angles (modulo 2 pi), to say how
            half = ((c[:, :h] - c[:, h:]).abs() + (s[:, :h] - s[:, h:]).abs()
                    - 1e-6 * (1 + ang[:, :h].abs()))
            if float(half.max()) > 0:
                p, i = divmod(int(half.argmax()), h)
                why = (f"at position {p} columns {i} and {i + h} have the angles "
                       f"{float(ang[p, i]):.6g} and {float(ang[p, i + h]):.6g} (modulo 2 pi); "
                       f"the rotate-half form turns columns i and i + D/2 by one angle")
            elif t >= 2 and abs(float(ang[1, 0]) - 1) > 1e-6:
                why = (f"the angle of column 0 at position 1 is {float(ang[1, 0]):.6g}; the "
                       f"rotate-half form's is 1 (t * theta^0)")
            elif usable:
                p, i = divmod(int(err.argmax()), d)
                ref = math.remainder(p * float(torch.tensor(theta, dtype=torch.float32)) ** (
                    -2.0 * (i % h) / d), 2 * math.pi)
                why = (f"with theta {theta:.6g} (from position 1) the angle of column {i} at "
                       f"position {p} would be {ref:.6g} (modulo 2 pi); the tables' is "
                       f"{float(ang[p, i]):.6g}")
            else:
                why = f"no base above 1 gives column {h - 1}'s angle at position 1"
            raise ImportError_(f"{what}: the cos and sin tables are not rotary embeddings in "
                               f"the rotate-half form (angle t * theta^(-2i/D) at columns i and "
                               f"i + D/2 of position t) for any base theta: {why}. Interleaved "
                               f"pairs, scaled positions or frequencies are not supported")
        scope = self.scopes.get(self.node)
        return self.emit(f"{scope}.rope" if scope else "rope", "rope", [self.get(x)], shape,
                         theta=theta)

    # ------------------------------------------------------------------ the table's handlers
    # Each takes the call c (_Call) and gives the _Expr it is; _MAPPINGS below says which calls
    # each handler takes

    def map(self, node):
        """the _Expr of a call: the handler _MAPPINGS gives its module class (or a base class),
        function or method name; a refusal naming it when there is none"""
        if node.op == "call_module":
            m, path = self.modules[node.target], node.target
            h = next((_BY_MODULE[t] for t in type(m).__mro__ if t in _BY_MODULE), None)
            what = f"module {type(m).__name__}"
        else:
            m, path, f = None, None, node.target
            method = node.op == "call_method"
            h = (_BY_METHOD if method else _BY_FUNCTION).get(f)
            name = f if isinstance(f, str) else getattr(f, "__name__", repr(f))
            what = f"{'method' if method else 'function'} {name}"
        if h is None:
            self.unsupported(what, path)
        a = node.args
        try:
            return h(self, _Call(m, a[0] if a else None, a, node.kwargs, self.tshape(node),
                                 path))
        except _NotATensor as e:
            self.unsupported(f"{what} {e}", path)

    def is_method(self, *names):
        return self.node.op == "call_method" and self.node.target in names

    def map_conv(self, c):
        m = c.m
        if tuple(m.dilation) != (1, 1) or m.padding_mode != "zeros" \
                or isinstance(m.padding, str) or m.stride[0] != m.stride[1]:
            self.unsupported(f"Conv2d with dilation {m.dilation}, padding {m.padding!r} "
                             f"({m.padding_mode}), stride {m.stride}", c.path)
        params = [m.weight] + ([m.bias] if m.bias is not None else [])
        fields = {"groups": m.groups} if m.groups != 1 else {}
        return self.emit(c.path, "conv", [self.get(self.expr(c.x))], c.out, params,
                         out_channels=m.out_channels, kernel=list(m.kernel_size),
                         stride=m.stride[0], pad=list(m.padding), bias=m.bias is not None,
                         **fields)

    def map_batch_norm(self, c):
        m = c.m
        if not m.affine:
            self.unsupported("BatchNorm2d without affine (autotm's has scale and shift)", c.path)
        return self.emit(c.path, "batch_norm", [self.get(self.expr(c.x))], c.out,
                         [m.weight, m.bias], epsilon=float(m.eps))

    def map_max_pool(self, c):
        v = _arguments(c, ("input", "kernel_size", "stride", "padding", "dilation", "ceil_mode",
                           "return_indices"))
        if v.get("return_indices"):
            self.unsupported("max pooling with return_indices", c.path)
        return self.pool(c.x, c.out, True, v["kernel_size"], v.get("stride"),
                         v.get("padding", 0), v.get("dilation", 1), v.get("ceil_mode", False),
                         True, None, c.path)

    def map_avg_pool(self, c):
        v = _arguments(c, ("input", "kernel_size", "stride", "padding", "ceil_mode",
                           "count_include_pad", "divisor_override"))
        return self.pool(c.x, c.out, False, v["kernel_size"], v.get("stride"),
                         v.get("padding", 0), 1, v.get("ceil_mode", False),
                         v.get("count_include_pad", True), v.get("divisor_override"), c.path)

    def map_adaptive_avg_pool(self, c):
        if c.m is not None:
            return self.adaptive(c.x, c.m.output_size, c.path)
        return self.adaptive(c.x, c.a[1] if len(c.a) > 1 else c.kw.get("output_size"))

    def map_linear(self, c):
        return self.linear(c.x, c.m, c.path)

    def map_layer_norm(self, c):
        m = c.m
        if m is not None:
            if len(m.normalized_shape) != 1 or not m.elementwise_affine:
                self.unsupported(f"LayerNorm over {list(m.normalized_shape)}, "
                                 f"elementwise_affine {m.elementwise_affine} (autotm's: over "
                                 f"the last dimension, with scale and shift)", c.path)
            return self.emit(c.path, "layer_norm", [self.get(self.expr(c.x))], c.out,
                             [m.weight, m.bias], epsilon=float(m.eps))
        v = _arguments(c, ("input", "normalized_shape", "weight", "bias", "eps"))
        e = self.expr(c.x)
        over = v.get("normalized_shape")
        over = [over] if isinstance(over, int) else list(over or ())
        w, b = (self.expr(v[k]) if isinstance(v.get(k), torch.fx.Node) else None
                for k in ("weight", "bias"))
        if over != [e.shape[-1]] or not all(isinstance(t, _Param) and t.shape == (over[0],)
                                            for t in (w, b)):
            self.unsupported(f"layer_norm of {list(e.shape)} over {over} with weight "
                             f"{w and list(w.shape)} and bias {b and list(b.shape)} (autotm's: "
                             f"over the last dimension, with a scale and a shift parameter of "
                             f"its size)")
        # named as the module that holds the parameters (LayerNorm2d's path)
        return self.emit(self.scopes.get(self.node) or self.base(), "layer_norm",
                         [self.get(e)], e.shape, [w.tensor, b.tensor],
                         epsilon=float(v.get("eps", 1e-5)))

    def map_gelu(self, c):
        form = c.m.approximate if c.m is not None else \
            c.kw.get("approximate", c.a[1] if len(c.a) > 1 else "none")
        return self.emit(self.base(), "gelu", [self.get(self.expr(c.x))], c.out,
                         approximate=form)

    def map_softmax(self, c):
        if c.m is not None:
            return self.softmax(c.x, c.m.dim, c.path)
        dim = c.a[1] if len(c.a) > 1 else c.kw.get("dim")
        return self.softmax(c.x, dim, dtype=c.kw.get("dtype"))

    def map_masked_fill(self, c):
        return self.masked(c.a)

    def map_embedding(self, c):
        return self.embedding(c.x, c.m, c.path)

    def map_attention(self, c):
        return self.attention(self.node, c.m, c.path)

    def map_dropout(self, c):
        return self.left_out_if(c, "dropout", 0.5)

    def map_stochastic_depth(self, c):
        return self.left_out_if(c, "stochastic depth", None)

    def left_out_if(self, c, kind, default_p):
        """the input itself: a random drop left out, and the caller told when its p is above 0"""
        p = c.m.p if c.m is not None else c.a[1] if len(c.a) > 1 else c.kw.get("p", default_p)
        if p > 0:
            self.left_out.append((kind, _where(self.node, c.path)))
        return self.expr(c.x)

    def map_same(self, c):
        """a call that changes nothing autotm sees (Identity, contiguous, clone)"""
        return self.expr(c.x)

    def map_float32(self, c):
        if self.is_method("to") and not (c.a[1:] in ((torch.float32,), ()) and
                                         c.kw.get("dtype", torch.float32) is torch.float32):
            self.unsupported("method to")
        return self.expr(c.x)  # to float32, which autotm's tensors are

    def map_view(self, c):
        return self.view(c.x, c.out)

    def map_transpose(self, c):
        e = self.expr(c.x)
        n = len(e.shape)
        perm = list(range(n))
        d0, d1 = (v % n for v in c.a[1:3])
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return _Perm(e, perm)

    def map_permute(self, c):
        e = self.expr(c.x)
        a = c.a
        dims = a[1] if len(a) == 2 and isinstance(a[1], (tuple, list)) else a[1:]
        return _Perm(e, [d % len(e.shape) for d in dims])

    def map_split(self, c):
        return self.split(self.node, c.a, c.kw)

    def map_getitem(self, c):
        return self.getitem(c.a[0], c.a[1])

    def map_add(self, c):
        return self.add(c.a, c.kw)

    def map_mul(self, c):
        f = self.node.target
        return self.scale(c.a, c.kw, f in (operator.truediv, torch.div) or self.is_method("div"))

    def map_cat(self, c):
        return self.cat(c.a, c.kw)

    def map_matmul(self, c):
        return self.matmul(c.a[0], c.a[1], c.out)

    def map_pow(self, c):
        if len(c.a) != 2 or c.a[1] != 2:
            self.unsupported("a power other than x ** 2 (in an RMS norm)")
        return _Square(self.expr(c.x))

    def map_mean(self, c):
        """x.mean([2, 3]) of an image: a global average pool (MNASNet's, ShuffleNet's); else
        the mean square of an RMS norm"""
        e = self.expr(c.x)
        v = _arguments(c, ("input", "dim", "keepdim"))
        dim = v.get("dim")
        if len(e.shape) == 4 and isinstance(dim, (list, tuple)) and \
                sorted(d % 4 for d in dim if isinstance(d, int)) == [2, 3] and \
                v.get("dtype") is None:
            pooled = self.emit(self.base(), "global_avg_pool", [self.get(e)],
                               tuple(e.shape[:2]) + (1, 1))
            return pooled if v.get("keepdim") else _View(pooled, c.out)
        return self.mean_square(c.a, c.kw)

    def map_rsqrt(self, c):
        e = self.expr(c.x)
        if not isinstance(e, _MeanSq) or e.eps is None:
            self.unsupported("rsqrt of other than the mean of x^2 over the last dimension "
                             "plus eps (an RMS norm)")
        return _Rstd(e.src, e.eps)

    def map_neg(self, c):
        e = self.expr(c.x)
        if not isinstance(e, _Half):
            self.unsupported("negation other than of x[..., h:] in rotate_half "
                             "(torch.cat((-x[..., h:], x[..., :h]), dim=-1))")
        return _Half(e.src, e.i, not e.neg)

    def map_expand(self, c):
        return self.expand(c.a, c.out)

    def map_repeat_interleave(self, c):
        return self.repeat_interleave(c.a, c.kw, c.out)

    # ------------------------------------------------------------------ what handlers share

    def pool(self, x, out, is_max, k, s, p, dilation, ceil, include, divisor, path=None):
        node = self.node
        k = _pair(k, "kernel", node, path)
        s = _pair(s if s not in (None, ()) else k, "stride", node, path)
        p = _pair(p, "padding", node, path)
        d = _pair(dilation, "dilation", node, path)
        if k[0] != k[1] or s[0] != s[1] or p[0] != p[1] or d != [1, 1] or divisor:
            self.unsupported(f"{'max' if is_max else 'average'} pooling {k}, stride {s}, "
                             f"padding {p}, dilation {d}, divisor_override {divisor}", path)
        fields = {"kernel": k[0], "stride": s[0], "pad": p[0]}
        shape = self.tshape(x)
        # ceil_mode: PyTorch's output rounded up (no window starting in the far padding); where
        # that adds a window, an average counting the padding divides it by its part inside the
        # padding but not past it, which autotm's does not; without padding that is the part
        # inside the image, which excluding padding gives
        more = ceil and any(o != (n + 2 * p[0] - k[0]) // s[0] + 1
                            for n, o in zip(shape[2:], out[2:]))
        if not is_max and more and include and p[0]:
            self.unsupported(f"average pooling {k}, stride {s}, padding {p} with ceil_mode and "
                             f"count_include_pad (its last windows divided by their part inside "
                             f"the padding but not past it: autotm counts all of a window or "
                             f"none of the padding)", path)
        if not is_max:
            fields["count_include_pad"] = bool(include) and not (more and not p[0])
        if ceil:
            fields["ceil_mode"] = True
        return self.emit(path or self.base(), "max_pool" if is_max else "avg_pool",
                         [self.get(self.expr(x))], out, **fields)

    def adaptive(self, x, size, path=None):
        size = _pair(size, "output_size", self.node, path) if size is not None else None
        shape = self.tshape(x)
        if size == [1, 1]:
            return self.emit(path or self.base(), "global_avg_pool", [self.get(self.expr(x))],
                             self.tshape(self.node))
        if shape is not None and size is not None and list(shape[2:]) == size:
            return self.expr(x)  # pooling an image to its own size: nothing to do
        self.unsupported(f"adaptive average pooling of {shape and list(shape[2:])} to {size}",
                         path)

    def linear(self, x, m, path):
        e = self.expr(x)
        out = self.tshape(self.node)
        params = [m.weight] + ([m.bias] if m.bias is not None else [])
        fields = {"out_features": m.out_features}
        if m.bias is None:
            fields["bias"] = False
        if len(e.shape) == 2:
            # [batch, features]: autotm's flattening linear reads every dimension past the batch
            # of what the view was taken of, with no copy
            src = e
            while isinstance(src, _View) and src.name is None and src.src.shape \
                    and src.src.shape[0] == self.batch:
                src = src.src
            if m.bias is not None:
                return self.emit(path, "linear", [self.get(src)], out, params, **fields)
            return self.emit(path, "linear", [self.get(e)], out, params, flatten=False, **fields)
        return self.emit(path, "linear", [self.get(e)], out, params, flatten=False, **fields)

    def softmax(self, x, dim, path=None, dtype=None):
        e = self.expr(x)
        if dim is None or dim not in (-1, len(e.shape) - 1) or dtype is not None:
            self.unsupported(f"softmax over dim {dim}{' to ' + str(dtype) if dtype else ''} "
                             f"(only over the last one)", path)
        causal = isinstance(e, _Masked)
        src = e.src if causal else e
        fields = {"causal": True} if causal else {}
        return self.emit(path or self.base(), "softmax", [self.get(src)], e.shape, **fields)

    def embedding(self, x, m, path):
        if m.padding_idx is not None or m.max_norm is not None or m.scale_grad_by_freq \
                or m.sparse:
            self.unsupported(f"Embedding with padding_idx {m.padding_idx}, max_norm "
                             f"{m.max_norm}, scale_grad_by_freq {m.scale_grad_by_freq}, sparse "
                             f"{m.sparse}", path)
        e = self.expr(x)
        if isinstance(e, _Const):  # position ids: the table's first rows, the same per sample
            ids = e.value.reshape(-1)
            if e.value.dim() > 2 or e.value.dim() == 2 and e.value.shape[0] != 1 \
                    or not torch.equal(ids, torch.arange(len(ids), dtype=ids.dtype)):
                self.unsupported(f"an embedding of constant ids other than 0, 1, ..., n-1 (of "
                                 f"shape {list(e.value.shape)})", path)
            p = _Param(self.pname(m.weight), m.weight)
            return self.positions(p, len(ids), path)
        if e is not self.input or not self.tokens:
            self.unsupported("an embedding of other than the token ids the forward takes", path)
        return self.emit(path, "embedding", [self.get(e)], e.shape + (m.embedding_dim,),
                         [m.weight], num_embeddings=m.num_embeddings,
                         embedding_dim=m.embedding_dim)

    def attention(self, node, m, path):
        """nn.MultiheadAttention as autotm composes it: one q, k, v projection, a split, the
        heads by permutes, scaled scores, softmax, weighted values, the heads joined, the
        output projection (the zoo's ViT has the same layers)"""
        a = dict(zip(("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask",
                      "average_attn_weights"), node.args))
        a.update(node.kwargs)
        q, k, v = a.get("query"), a.get("key"), a.get("value")
        if not m.batch_first or not m._qkv_same_embed_dim or m.in_proj_bias is None \
                or m.bias_k is not None or m.add_zero_attn or not (q is k is v) \
                or a.get("key_padding_mask") is not None or a.get("attn_mask") is not None \
                or a.get("need_weights", True):
            self.unsupported("MultiheadAttention other than self-attention (query, key and value "
                             "one tensor) with batch_first=True, biases, no masks, no bias_k or "
                             "add_zero_attn, called with need_weights=False", path)
        if m.dropout > 0:
            self.left_out.append(("attention dropout", _where(node, path)))
        e = self.expr(q)
        x = self.get(e)
        b, t, width = e.shape
        h = m.num_heads
        hd = width // h
        qkv = self.emit(f"{path}.in_proj", "linear", [x], (b, t, 3 * width),
                        [m.in_proj_weight, m.in_proj_bias], out_features=3 * width,
                        flatten=False)
        split = self.emit(f"{path}.qkv_split", "split", [qkv.name], (), axis=2, parts=3)
        heads = [self.emit(f"{path}.{c}_heads", "permute", [f"{split.name}.{i}"], (b, h, t, hd),
                           perm=[0, 2, 1, 3], view=[t, h, hd]) for i, c in enumerate("qkv")]
        s = self.emit(f"{path}.scores", "matmul", [heads[0].name, heads[1].name], (b, h, t, t),
                      trans_b=True, scale=1.0 / math.sqrt(hd))
        s = self.emit(f"{path}.softmax", "softmax", [s.name], s.shape)
        c = self.emit(f"{path}.context", "matmul", [s.name, heads[2].name], (b, h, t, hd))
        c = self.emit(f"{path}.join_heads", "permute", [c.name], (b, t, width),
                      perm=[0, 2, 1, 3], shape=[t, width])
        o = m.out_proj
        y = self.emit(f"{path}.out_proj", "linear", [c.name], (b, t, width), [o.weight, o.bias],
                      out_features=width, flatten=False)
        return _Tuple([y, _Nothing()])

    def view(self, x, shape):
        e = self.expr(x)
        if isinstance(e, _View) and e.name is None:
            e = e.src  # a view of a view is one view
        return e if tuple(shape) == e.shape else _View(e, shape)

    def mean_square(self, a, kw):
        """x.pow(2).mean(-1, keepdim=True): an RMS norm's mean square"""
        e = self.expr(a[0])
        dim = a[1] if len(a) > 1 else kw.get("dim")
        keep = a[2] if len(a) > 2 else kw.get("keepdim", False)
        if isinstance(dim, (list, tuple)) and len(dim) == 1:
            dim = dim[0]
        if not isinstance(e, _Square) or not isinstance(dim, int) or not keep or \
                dim % len(e.shape) != len(e.shape) - 1:
            self.unsupported("a mean other than of x^2 over the last dimension with keepdim "
                             "(an RMS norm)")
        return _MeanSq(e.src)

    def add(self, a, kw):
        if len(a) == 2 and not kw:  # mean of x^2 + eps, an RMS norm's
            for t, c in ((a[0], a[1]), (a[1], a[0])):
                if isinstance(t, torch.fx.Node) and isinstance(c, (int, float)) and \
                        not isinstance(c, bool) and isinstance(self.expr(t), _MeanSq):
                    e = self.expr(t)
                    if e.eps is not None or not c > 0:
                        self.unsupported(f"adding {c!r} to an RMS norm's mean square (autotm's "
                                         f"takes one epsilon above 0)")
                    return _MeanSq(e.src, float(c))
        if len(a) != 2 or kw.get("alpha", 1) != 1 or not all(isinstance(v, torch.fx.Node)
                                                             for v in a):
            self.unsupported("add of other than two tensors")
        es = [self.expr(v) for v in a]
        for x, r in ((es[0], es[1]), (es[1], es[0])):  # x * cos + rotate_half(x) * sin
            if isinstance(x, _ConstProduct) and isinstance(r, _ConstProduct) and \
                    isinstance(r.src, _Rotated) and r.src.src is x.src:
                return self.rope(x.src, x.const, r.const)
        for x, m in ((es[0], es[1]), (es[1], es[0])):  # scores + an additive attention mask
            if isinstance(m, _Const) and not isinstance(x, (_Const, _Param)):
                return self.additive_mask(x, m)
        for i, e in enumerate(es):
            if isinstance(e, _Const):
                self.get(e)  # refused, named
            if isinstance(e, _Param):  # x + pos_embedding: the table broadcast over the batch
                other = es[1 - i].shape
                if len(other) != 3 or tuple(e.shape[-2:]) != tuple(other[1:]):
                    self.unsupported(f"adding the parameter {e.pname} {list(e.shape)} to "
                                     f"{list(other)}")
                es[i] = self.positions(e)
        if es[0].shape != es[1].shape:
            self.unsupported(f"adding {list(es[0].shape)} and {list(es[1].shape)} (broadcasting "
                             f"other than a parameter over the batch)")
        return self.emit(self.base(), "add", [self.get(e) for e in es], es[0].shape)

    def cat(self, a, kw):
        tensors = a[0]
        dim = a[1] if len(a) > 1 else kw.get("dim", 0)
        es = [self.expr(t) for t in tensors]
        n = len(es[0].shape)
        dim = dim % n if isinstance(dim, int) else dim
        if len(es) == 2 and dim == n - 1 and all(isinstance(e, _Half) for e in es) and \
                es[0].src is es[1].src and (es[0].i, es[0].neg, es[1].i, es[1].neg) == \
                (1, True, 0, False):
            return _Rotated(es[0].src)
        if dim == 0:
            self.unsupported("torch.cat along the batch (dim 0)")
        if len(es) == 1:
            return es[0]
        shape = list(es[0].shape)
        shape[dim] = sum(e.shape[dim] for e in es)
        fields = {} if dim == 1 else {"axis": dim}
        return self.emit(self.base(), "concat", [self.get(e) for e in es], shape, **fields)

    def matmul(self, x, y, out):
        a, b = self.expr(x), self.expr(y)
        if len(a.shape) < 3 or len(a.shape) != len(b.shape) or a.shape[:-2] != b.shape[:-2]:
            self.unsupported(f"matmul of {list(a.shape)} and {list(b.shape)} (autotm's is "
                             f"batched: two tensors of one rank >= 3, the leading dimensions "
                             f"equal)")
        return _Matmul(a, b, out)

    def product(self, a, out):
        """a * b of two tensors: autotm's mul, the larger first, the other broadcast into it"""
        es = [self.expr(v) for v in a]
        if a[0] is a[1]:
            return _Square(es[0])
        for x, y in ((es[0], es[1]), (es[1], es[0])):
            if isinstance(y, _Rstd) and y.src is x:
                return _RmsNormed(x, y.eps)
            if isinstance(x, _RmsNormed) and isinstance(y, _Param):
                if tuple(y.shape) != (x.shape[-1],):
                    self.unsupported(f"an RMS norm's scale {y.pname} {list(y.shape)} (autotm's "
                                     f"is a vector over the last dimension, {x.shape[-1]})")
                scope = self.scopes.get(self.node)
                return self.emit(scope or self.base(), "rms_norm", [self.get(x.src)], x.shape,
                                 [y.tensor], epsilon=x.eps)
        for x, y in ((es[0], es[1]), (es[1], es[0])):
            if isinstance(y, _Const) and not isinstance(x, (_Const, _Param)):
                return _ConstProduct(x, y, self.node)  # x * cos: refused unless a rope's
        for x, y in ((es[0], es[1]), (es[1], es[0])):
            if isinstance(y, _Param) and not isinstance(x, (_Param, _Const)):
                return self.scaled(x, y)
        big, small = (es[0], es[1]) if tuple(es[0].shape) == tuple(out) else (es[1], es[0])
        n, m = len(big.shape), len(small.shape)
        fits = tuple(big.shape) == tuple(out) and m <= n and all(
            small.shape[m - i] in (1, big.shape[n - i]) for i in range(1, m + 1))
        if not fits:
            self.unsupported(f"multiplying {list(es[0].shape)} and {list(es[1].shape)} (autotm "
                             f"multiplies a tensor by one of its shape or one broadcast into it: "
                             f"its trailing dims, each equal or 1)")
        return self.emit(self.base(), "mul", [self.get(big), self.get(small)], big.shape)

    def scaled(self, x, p):
        """x times a learned parameter broadcast into it (ConvNeXt's layer scale, [C, 1, 1] on
        [N, C, H, W]): autotm's scale layer"""
        n, m = len(x.shape), len(p.shape)
        if not (m < n and all(p.shape[m - i] in (1, x.shape[n - i]) for i in range(1, m + 1))):
            self.unsupported(f"multiplying {list(x.shape)} by the parameter {p.pname} "
                             f"{list(p.shape)} (autotm's scale takes a parameter of the "
                             f"activation's trailing dims past the batch, each equal or 1)")
        return self.emit(p.pname, "scale", [self.get(x)], x.shape, [p.tensor],
                         shape=list(p.shape))

    def scale(self, a, kw, divide):
        if not divide and len(a) == 2 and not kw and all(isinstance(v, torch.fx.Node)
                                                         for v in a):
            return self.product(a, out=self.tshape(self.node))
        if len(a) != 2 or kw:
            self.unsupported("multiplication of other than a tensor by a number")
        t, c = (a[0], a[1]) if isinstance(a[0], torch.fx.Node) else (a[1], a[0])
        e = self.expr(t)
        for v in (t, c):
            if isinstance(v, torch.fx.Node) and isinstance(self.expr(v), _Const):
                self.get(self.expr(v))  # a buffer as a factor: refused, named
        if not isinstance(c, (int, float)) or isinstance(c, bool) or not isinstance(e, _Matmul) \
                or e.name is not None or (divide and t is not a[0]) or c == 0:
            self.unsupported("multiplication or division other than of a matmul's result by a "
                             "number")
        return _Matmul(e.a, e.b, e.shape, e.scale * (1.0 / c if divide else c))

    def split(self, node, a, kw):
        e = self.expr(a[0])
        n = len(e.shape)
        dim = a[2] if len(a) > 2 else kw.get("dim", 0)
        dim %= n
        size = a[1] if len(a) > 1 else kw.get("split_size_or_sections", kw.get("chunks"))
        chunk = (node.op == "call_method" and node.target == "chunk") or node.target is torch.chunk
        parts = size if chunk else (e.shape[dim] // size if isinstance(size, int) else 0)
        if not isinstance(size, int) or parts < 1 or e.shape[dim] % parts or dim == 0:
            self.unsupported(f"a split of {list(e.shape)} by {size!r} along dim {dim} (only into "
                             f"equal parts, not along the batch)")
        sp = _Split(e, dim, parts)
        sp.origin = self.base()
        part = list(e.shape)
        part[dim] //= parts
        return _Tuple([_Part(sp, i, part) for i in range(parts)])

    def getitem(self, x, index):
        e = self.expr(x)
        if isinstance(e, _Tuple):
            if not isinstance(index, int) or not -len(e.items) <= index < len(e.items):
                self.unsupported(f"item {index!r} of a layer's results")
            item = e.items[index]
            if isinstance(item, _Part):
                if self.node.users:  # q, k, v = x.split(...) takes every part; reads count
                    item.split.used.add(item.i)
            return item
        index = index if isinstance(index, tuple) else (index,)
        if any(ix is Ellipsis for ix in index):  # x[..., :h]: the axes it stands for, whole
            k = index.index(Ellipsis)
            n = len(e.shape) - sum(ix is not None and ix is not Ellipsis for ix in index)
            index = index[:k] + (slice(None),) * n + index[k + 1:]
        if any(ix is None for ix in index):  # x[:, :, None]: an axis of 1 inserted
            if not all(ix is None or ix == slice(None) for ix in index):
                self.unsupported(f"indexing {list(e.shape)} by {index!r} (None only among "
                                 f"whole axes: x[:, :, None])")
            return self.view(x, self.tshape(self.node))
        last = len(e.shape) - 1
        if len(index) == len(e.shape) and all(ix == slice(None) for ix in index[:-1]) and \
                isinstance(index[-1], slice) and index[-1].step in (None, 1) and last >= 1 and \
                e.shape[-1] % 2 == 0:
            h, ix = e.shape[-1] // 2, index[-1]
            if ix.start in (None, 0) and ix.stop == h:
                return _Half(e, 0)  # a narrow unless rotate_half reads it
            if ix.start == h and ix.stop in (None, 2 * h):
                return _Half(e, 1)
        shape, axis, cut = list(e.shape), None, None
        for d, ix in enumerate(index):
            if ix == slice(None):
                continue
            if axis is None and d >= 1 and (ix == 0 or isinstance(ix, slice) and ix.start in (
                    None, 0) and ix.step in (None, 1) and isinstance(ix.stop, int)
                    and 0 < ix.stop <= shape[d]):
                axis, cut = d, ix
                continue
            self.unsupported(f"indexing {list(e.shape)} by {index!r} (supported: x[:, i] with "
                             f"i = 0 and x[:, :k], on one axis past the batch)")
        if axis is None:
            return e
        length = 1 if cut == 0 else cut.stop
        shape[axis] = length
        y = self.emit(self.base(), "narrow", [self.get(e)], shape, axis=axis, length=length)
        if cut == 0:
            return _View(y, shape[:axis] + shape[axis + 1:])
        return y

    def masked(self, a):
        e, mask, value = self.expr(a[0]), self.expr(a[1]), a[2]
        if not isinstance(mask, _Const) or not (isinstance(value, float) and value == -math.inf):
            self.unsupported("masked_fill other than of a constant causal mask with -inf")
        t = e.shape[-1]
        m = mask.value
        want = torch.ones(t, t, dtype=torch.bool).triu(1)
        if m.dtype != torch.bool or m.shape[-2:] != (t, t) or m.numel() != t * t \
                or not torch.equal(m.reshape(t, t), want) or e.shape[-2] != t:
            self.unsupported(f"masked_fill with a mask {list(m.shape)} that is not the causal "
                             f"one (True above the diagonal)")
        return _Masked(e)

    def additive_mask(self, e, mask):
        """scores + a constant mask, as Hugging Face's models write it: 0 on and below the
        diagonal, -inf or at most MASKED above is the causal mask of the softmax that reads it;
        0 everywhere is no mask"""
        m, t = mask.value, e.shape[-1]
        form = (f"adding {mask.what} {list(m.shape)} to {list(e.shape)}: a constant is added only "
                f"as an attention mask, [T, T] (leading axes of 1), 0 on and below the diagonal "
                f"and -inf or at most {MASKED:g} above, before a softmax")
        if not m.is_floating_point() or len(e.shape) < 2 or e.shape[-2] != t or \
                tuple(m.shape[-2:]) != (t, t) or m.numel() != t * t or m.dim() > len(e.shape):
            self.unsupported(form)
        m = m.reshape(t, t).double()
        if bool(torch.all(m == 0)):
            return e
        above = torch.ones(t, t, dtype=torch.bool).triu(1)
        if not bool(torch.all(m[~above] == 0)) or not bool(torch.all(m[above] <= MASKED)):
            self.unsupported(form + " (a padding mask, or another pattern, is not the causal one)")
        return _Masked(e)

    def expand(self, a, out):
        e = self.expr(a[0])
        if isinstance(e, _Param) and len(out) == 3 and out[0] == self.batch \
                and tuple(out[1:]) == tuple(e.shape[-2:]):
            return self.positions(e)
        grown = [k for k in range(len(out)) if len(out) == len(e.shape) and out[k] != e.shape[k]]
        if not isinstance(e, (_Param, _Const)) and len(out) == len(e.shape) and \
                len(grown) <= 1 and all(k >= 1 and e.shape[k] == 1 for k in grown):
            return _Expand(e, grown[0], out[grown[0]], out) if grown else e
        self.unsupported(f"expand of {list(e.shape)} to {list(out)} (only a parameter "
                         f"[1, rows, dim] over the batch, or one axis of 1 past the batch of an "
                         f"activation: x[:, :, None].expand(b, kv, n_rep, t, d))")

    def repeat_interleave(self, a, kw, out):
        """torch.repeat_interleave(x, n, dim): each entry along dim n times in place, as
        x.unsqueeze(dim + 1).expand(...) read as out"""
        e = self.expr(a[0])
        n = a[1] if len(a) > 1 else kw.get("repeats")
        dim = a[2] if len(a) > 2 else kw.get("dim")
        if not isinstance(n, int) or isinstance(n, bool) or n < 1 or not isinstance(dim, int) \
                or kw.get("output_size") is not None or dim % len(e.shape) == 0:
            self.unsupported(f"repeat_interleave of {list(e.shape)} by {n!r} along dim {dim!r} "
                             f"(supported: a number of times, along a dim past the batch)")
        dim %= len(e.shape)
        if n == 1:
            return e
        one = list(e.shape)
        one.insert(dim + 1, 1)
        grown = list(one)
        grown[dim + 1] = n
        v = _View(e, one)
        v.origin = self.base()
        x = _Expand(v, dim + 1, n, grown)
        x.origin = self.base()
        return _View(x, out)


# ---------------------------------------------------------------------- the table

class _Call(collections.namedtuple("_Call", "m x a kw out path")):
    """what a handler is given: the module (None for a function or method), its first argument
    (None without one), the arguments and keyword arguments, the output's shape as PyTorch
    computed it (None when not a tensor), the module's path (None for a function or method)"""


class _Mapping:
    """one row of the importer's table, as C's op tables have an entry per op: the calls it maps,
    each by its handler (a _Builder method taking a _Call), and its row of docs/pytorch.md's
    table. A call is an nn.Module class (kept whole, not traced through, even from outside
    torch.nn; a torch.nn subclass of it without a row maps to its handler), a function (by
    identity) or a tensor method's name, and maps to one handler: _Mapping(doc, layer, handler,
    *calls); parts gives more (handler, calls) pairs where one row documents a pattern of several
    calls (an RMS norm), and a row with neither only documents what other rows' handlers do. The
    refusal message lists the doc of every row that is supported"""

    def __init__(self, doc, layer, handler=None, *calls, parts=(), supported=True):
        self.doc, self.layer = doc, layer  # the cells of docs/pytorch.md, in markdown
        self.parts = (((handler, calls),) if handler else ()) + tuple(parts)
        self.supported = supported  # False: a row that refuses its calls, saying why


def _arguments(c, names):
    """{name: value} of a call's arguments, positional or keyword, or of its module's
    attributes of those names"""
    if c.m is not None:
        return {k: getattr(c.m, k) for k in names[1:] if hasattr(c.m, k)}
    v = dict(zip(names, c.a))
    v.update(c.kw)
    return v


def _refuses(why):
    """the handler of a call refused by name, for the reason why"""
    def handler(b, c):
        what = type(c.m).__name__ if c.m is not None else getattr(
            b.node.target, "__name__", str(b.node.target))
        raise ImportError_(f"{what}{_where(b.node, c.path)} is not supported: {why}")
    return handler


def _torchvision(*names):
    """torchvision's objects of those names (ops.StochasticDepth), none without torchvision"""
    try:
        return tuple(getattr(importlib.import_module("torchvision." + n.rpartition(".")[0]),
                             n.rpartition(".")[2]) for n in names)
    except ImportError:
        return ()


_SWIN = ("its relative position bias gathers a learned table by a constant index (Swin v2's is "
         "computed by an MLP from a constant table), and its shifted windows roll the image "
         "(torch.roll) and add a constant mask to the attention scores: autotm has no layer "
         "that gathers by constant indices, rolls, or adds a constant")
_MAXVIT = ("its relative position bias gathers a learned table by a constant index "
           "(relative_position_bias_table[relative_position_index]): autotm has no layer that "
           "gathers by constant indices")


def _emits(op):
    """the handler of an elementwise call that is one layer op of autotm's, with no fields"""
    def handler(b, c):
        return b.emit(b.base(), op, [b.get(b.expr(c.x))], c.out)
    handler.__name__ = f"map_{op}"
    return handler


B = _Builder
_MAPPINGS = (
    _Mapping("`Conv2d` (dilation 1, zero padding, one stride for both sides; any groups)",
             "`conv` (`groups` where above 1: grouped and depthwise convolutions)",
             B.map_conv, nn.Conv2d),
    _Mapping("`BatchNorm2d` (affine)", "`batch_norm` (batch statistics: training mode)",
             B.map_batch_norm, nn.BatchNorm2d),
    _Mapping("`ReLU`, `F.relu`, `torch.relu`", "`relu`",
             _emits("relu"), nn.ReLU, F.relu, torch.relu, "relu", "relu_"),
    _Mapping("`MaxPool2d`, `F.max_pool2d` (square, no dilation, no `return_indices`)",
             "`max_pool` (`ceil_mode` where set)", B.map_max_pool, nn.MaxPool2d, F.max_pool2d),
    _Mapping("`AvgPool2d`, `F.avg_pool2d` (square, no `divisor_override`; where `ceil_mode` "
             "adds a window, with padding only `count_include_pad=False`)",
             "`avg_pool` (`ceil_mode` where set)", B.map_avg_pool, nn.AvgPool2d, F.avg_pool2d),
    _Mapping("`AdaptiveAvgPool2d((1, 1))`, `F.adaptive_avg_pool2d`",
             "`global_avg_pool` (to the input's own size: nothing)",
             B.map_adaptive_avg_pool, nn.AdaptiveAvgPool2d, F.adaptive_avg_pool2d),
    _Mapping("`x.mean([2, 3])` of an image (MNASNet, ShuffleNet); `mean(-1, keepdim=True)` in "
             "an RMS norm (below)", "`global_avg_pool` (and a view to `[N, C]`)",
             B.map_mean, torch.mean, "mean"),
    _Mapping("`Linear` on `[batch, features]`", "`linear`; a flatten before it is no layer: "
             "`linear` reads every dimension past the batch", B.map_linear, nn.Linear),
    _Mapping("`Linear` on `[batch, seq, features]`, or without bias",
             "`linear` with `\"flatten\": false`"),
    _Mapping("`LayerNorm`, `F.layer_norm` (over the last dimension, affine); ConvNeXt's "
             "`LayerNorm2d` is `permute`, `F.layer_norm`, `permute`",
             "`layer_norm` (between two `permute` for `LayerNorm2d`)",
             B.map_layer_norm, nn.LayerNorm, F.layer_norm),
    _Mapping("`GELU`, `F.gelu` (`approximate` `\"none\"` or `\"tanh\"`)", "`gelu`",
             B.map_gelu, nn.GELU, F.gelu, "gelu"),
    _Mapping("`Tanh`, `torch.tanh`", "`tanh`",
             _emits("tanh"), nn.Tanh, torch.tanh, F.tanh, "tanh"),
    _Mapping("`SiLU`, `F.silu`", "`silu`", _emits("silu"), nn.SiLU, F.silu, "silu"),
    _Mapping("`Sigmoid`, `torch.sigmoid`", "`sigmoid`",
             _emits("sigmoid"), nn.Sigmoid, torch.sigmoid, F.sigmoid, "sigmoid"),
    _Mapping("`Hardswish`, `F.hardswish`", "`hardswish`",
             _emits("hardswish"), nn.Hardswish, F.hardswish),
    _Mapping("`Hardsigmoid`, `F.hardsigmoid`", "`hardsigmoid`",
             _emits("hardsigmoid"), nn.Hardsigmoid, F.hardsigmoid),
    _Mapping("`ReLU6`, `F.relu6`", "`relu6`", _emits("relu6"), nn.ReLU6, F.relu6),
    _Mapping("RMSNorm as LLaMA writes it: `x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + "
             "eps) * self.weight` (`x ** 2` or `x * x` too; either order of the products; "
             "`.float()` and `.type_as(x)` around it are float32 throughout)",
             "`rms_norm` (its scale the module's `weight`)",
             parts=((B.map_pow, (torch.pow, operator.pow, "pow")),
                    (B.map_rsqrt, (torch.rsqrt, "rsqrt")))),
    _Mapping("Rotary embeddings as LLaMA writes them: `x * cos + rotate_half(x) * sin` with "
             "`rotate_half(x) = torch.cat((-x[..., h:], x[..., :h]), dim=-1)` (either order of "
             "the sum and of each product); `cos` and `sin` constant tables `[T, D]`, or "
             "`[1, 1, T, D]` and the like, computed in the forward (`examples/llama.py`) or cut "
             "from a registered buffer (Hugging Face's `LlamaRotaryEmbedding`: "
             "`cos_cached[:, :, :T]`, gathered by `torch.arange` position ids)",
             "`rope` with the base `theta` recovered from the tables (below)",
             B.map_neg, operator.neg, torch.neg, "neg"),
    _Mapping("Key/value heads repeated for grouped-query attention: `x[:, :, None].expand(b, kv, "
             "n_rep, t, d).reshape(b, kv * n_rep, t, d)` (Hugging Face's `repeat_kv`), "
             "`torch.repeat_interleave(x, n_rep, dim=1)`; in general an `expand` of one axis of "
             "1 past the batch, or `repeat_interleave` by a number along a dimension past the "
             "batch",
             "`concat` of `n_rep` copies of one layer (read as `[batch, kv, t·d]`), then "
             "`reshape`: heads 0, 0, 1, 1, ... as both give",
             parts=((B.map_expand, ("expand",)),
                    (B.map_repeat_interleave, (torch.repeat_interleave, "repeat_interleave")))),
    _Mapping("`x[:, 0]`, `x[:, :k]` (one axis past the batch, from the start); `x[..., :h]`, "
             "`x[:, :, None]`", "`narrow`; `narrow` (on the last axis), nothing (a view)",
             B.map_getitem, operator.getitem),
    _Mapping("`Softmax(dim=-1)`, `F.softmax(x, dim=-1)`",
             "`softmax`; `causal` after a causal `-inf` `masked_fill`, or after adding a causal "
             "mask (0 on and below the diagonal, `-inf` or at most -1e4 above, as Hugging Face's "
             "models add it; a mask of zeros is none)",
             parts=((B.map_softmax, (nn.Softmax, F.softmax, torch.softmax, "softmax")),
                    (B.map_masked_fill, ("masked_fill", "masked_fill_")))),
    _Mapping("`Embedding` of the token ids (no `padding_idx`, `max_norm`)", "`embedding`",
             B.map_embedding, nn.Embedding),
    _Mapping("`Embedding` of `torch.arange(T)`; a parameter `expand`ed over the batch or added to "
             "an activation", "`positions` (the table's first rows, one copy per sample)"),
    _Mapping("`MultiheadAttention` (`batch_first`, self-attention, biases, no masks, "
             "`need_weights=False`)", "`linear`, `split`, three `permute`, `matmul`, `softmax`, "
             "`matmul`, `permute`, `linear`", B.map_attention, nn.MultiheadAttention),
    _Mapping("`@`, `torch.matmul`, `torch.bmm` of two tensors of one rank ≥ 3",
             "`matmul` (a transpose of the last two axes read by it: `trans_a`/`trans_b`; `*` or "
             "`/` by a number after it: `scale`)",
             B.map_matmul, operator.matmul, torch.matmul, torch.bmm, "matmul", "bmm"),
    _Mapping("`view`, `reshape`, `flatten`, `Flatten`, `squeeze`, `unsqueeze` (the batch stays "
             "first)", "nothing, or `reshape`, or part of a `permute`",
             B.map_view, nn.Flatten, torch.flatten, torch.reshape, torch.squeeze,
             torch.unsqueeze, "flatten", "view", "reshape", "unflatten", "squeeze", "unsqueeze"),
    _Mapping("`transpose`, `swapaxes`, `permute` (the batch stays first; torchvision's "
             "`Permute` module is `torch.permute`); ShuffleNet's channel shuffle `x.view(b, g, "
             "c // g, h, w)`, `torch.transpose(x, 1, 2).contiguous()`, `x.view(b, -1, h, w)`",
             "`permute`; for the shuffle a `permute` with a `view` and a `reshape`",
             parts=((B.map_transpose, (torch.transpose, torch.swapaxes, torch.swapdims,
                                       "transpose", "swapaxes", "swapdims")),
                    (B.map_permute, (torch.permute, "permute")))),
    _Mapping("`split`, `chunk` into equal parts", "`split` (every part must be used)",
             B.map_split, torch.split, torch.chunk, "split", "chunk"),
    _Mapping("`a + b`, `torch.add`, `add_` of two tensors of one shape", "`add`",
             B.map_add, operator.add, torch.add, operator.iadd, "add", "add_"),
    _Mapping("`a * b`, `torch.mul` of two tensors: one shape (a gate), or the smaller broadcast "
             "into the larger (its trailing dims, each equal or 1: a squeeze-and-excitation's "
             "`[N, C, 1, 1]` scale)", "`mul`",
             B.map_mul, operator.mul, torch.mul, operator.truediv, torch.div, "mul", "div"),
    _Mapping("`p * x`, `x * p` of a parameter `p` broadcast into an activation (its trailing "
             "dims past the batch, each equal or 1: ConvNeXt's layer scale `self.layer_scale * "
             "x`, `[C, 1, 1]`)", "`scale`"),
    _Mapping("`torch.cat(xs, d)` (`d` past the batch)", "`concat`", B.map_cat, torch.cat),
    _Mapping("`Dropout`, `F.dropout`",
             "left out; with a warning when `p > 0`: autotm's step is deterministic",
             B.map_dropout, nn.Dropout, nn.Dropout2d, F.dropout),
    _Mapping("torchvision's `StochasticDepth`, `torchvision.ops.stochastic_depth` (EfficientNet, "
             "ConvNeXt)", "left out, as dropout: the block's branch is always taken (as in "
             "evaluation); with a warning when `p > 0`",
             B.map_stochastic_depth, *_torchvision("ops.StochasticDepth",
                                                   "ops.stochastic_depth")),
    _Mapping("`float()`, `type_as`, `to(torch.float32)`", "nothing: autotm's tensors are float32",
             B.map_float32, "float", "type_as", "to"),
    _Mapping("`Identity`, `contiguous`, `clone`", "nothing",
             B.map_same, nn.Identity, "contiguous", "clone"),
    _Mapping("torchvision's Swin Transformer attention (`ShiftedWindowAttention`, "
             "`ShiftedWindowAttentionV2`: `swin_t`, `swin_v2_t`, ...)",
             "refused, named: " + _SWIN, _refuses(_SWIN), *_torchvision(
                 "models.swin_transformer.ShiftedWindowAttention",
                 "models.swin_transformer.ShiftedWindowAttentionV2"), supported=False),
    _Mapping("torchvision's MaxViT attention (`RelativePositionalMultiHeadAttention`: "
             "`maxvit_t`)", "refused, named: " + _MAXVIT, _refuses(_MAXVIT), *_torchvision(
                 "models.maxvit.RelativePositionalMultiHeadAttention"), supported=False),
)
del B


def _dispatch(mappings):
    """({module class: handler}, {function: handler}, {method name: handler}) of the table"""
    by_module, by_function, by_method = {}, {}, {}
    for row in mappings:
        for handler, calls in row.parts:
            for k in calls:
                d = by_method if isinstance(k, str) else by_module if isinstance(k, type) \
                    else by_function
                assert k not in d, f"{k!r} has two rows in the importer's table"
                d[k] = handler
    return by_module, by_function, by_method


_BY_MODULE, _BY_FUNCTION, _BY_METHOD = _dispatch(_MAPPINGS)
SUPPORTED = "; ".join(row.doc.replace("`", "") for row in _MAPPINGS if row.supported)


def docs_table():
    """docs_table -- the markdown table of what the importer maps, as docs/pytorch.md has it"""
    rows = ["| PyTorch | autotm layer |", "| --- | --- |"]
    rows += [f"| {row.doc} | {row.layer} |" for row in _MAPPINGS]
    return "\n".join(rows) + "\n"


_INPLACE_OPERATORS = (operator.iadd, operator.isub, operator.imul, operator.itruediv)


def _check_inplace(gm, node, order):
    """ImportError_ when node changes its first argument in place (relu_, x += y, inplace=True)
    and a later call reads that argument: autotm's layers make new tensors, so the later reader
    would see the value from before the change"""
    if node.op == "call_module":
        inplace = getattr(gm.get_submodule(node.target), "inplace", False)
    elif node.op == "call_method":
        inplace = node.target.endswith("_") and not node.target.endswith("__")
    elif node.op == "call_function":
        inplace = node.target in _INPLACE_OPERATORS or node.kwargs.get("inplace", False)
    else:
        inplace = False
    x = node.args[0] if inplace and node.args else None
    if not isinstance(x, torch.fx.Node):
        return
    later = [u for u in x.users if u is not node and order[u] > order[node]]
    if later:
        what = node.target if isinstance(node.target, str) else getattr(
            node.target, "__name__", repr(node.target))
        raise ImportError_(f"{what}{_where(node, node.target if node.op == 'call_module' else None)} "
                           f"changes {x.name} in place, and {later[0].name}{_where(later[0])} "
                           f"reads it afterwards: autotm's layers make new tensors and cannot "
                           f"order that; write the forward without the in-place change there")


def to_forward(model, input_shape, name=None, lr=0.01, tokens=False):
    """to_forward -- (graph, params, left_out): the forward graph document of model's training
    step at input_shape (an image [batch, channels, height, width], or token ids [batch, seq]
    when tokens), the parameters it names by their state_dict keys, and what was left out
    ([(kind, where)]: dropout). ImportError_ when a call cannot be mapped."""
    if tokens and len(input_shape) != 2:
        raise ImportError_(f"token ids {list(input_shape)}: expected [batch, sequence]")
    if not tokens and len(input_shape) != 4:
        raise ImportError_(f"input {list(input_shape)}: autotm's forward graphs take one image "
                           f"[batch, channels, height, width] or token ids [batch, sequence]")
    frozen = [k for k, p in model.named_parameters() if not p.requires_grad]
    if frozen:
        raise ImportError_(f"{len(frozen)} frozen parameter(s) (requires_grad False): "
                           f"{', '.join(frozen[:5])}{', ...' if len(frozen) > 5 else ''}: autotm's "
                           f"step updates every parameter of a forward graph and would train "
                           f"them; make them trainable (requires_grad_(True)) to train them "
                           f"all, or make the model without them")
    example = torch.zeros(tuple(input_shape), dtype=torch.int64 if tokens else torch.float32)
    gm, values, scopes = trace(model, example)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != 1:
        raise ImportError_(f"{type(model).__name__}.forward takes {len(placeholders)} inputs "
                           f"({', '.join(n.target for n in placeholders)}); one is supported")
    named = dict(model.named_parameters())  # a tied parameter once, by its first name
    canonical = {id(p): k for k, p in named.items()}
    buffers = {id(v): k for k, v in model.named_buffers()}
    b = _Builder(gm, values, scopes, canonical, input_shape, tokens)
    output = None
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    for node in gm.graph.nodes:
        b.node = node
        _check_inplace(gm, node, order)
        if node.op == "placeholder":
            b.ex[node] = b.input
        elif node.op == "get_attr":
            v = values[node]
            if isinstance(v, nn.Parameter) and id(v) in canonical:
                b.ex[node] = _Param(canonical[id(v)], v)
            elif isinstance(v, torch.Tensor):
                b.ex[node] = _Const(v, f"the buffer {buffers[id(v)]}" if id(v) in buffers
                                    else "a constant tensor")
            else:
                raise ImportError_(f"the forward reads the attribute {node.target}{_where(node)}, "
                                   f"a {type(v).__name__}; only tensors are supported")
        elif node.op in ("call_module", "call_function", "call_method"):
            e = b.map(node)
            if getattr(e, "origin", None) is None:
                e.origin = b.base()  # a lazy one's layer is named after the call it stands for
            b.ex[node] = e
        elif node.op == "output":
            arg = node.args[0]
            if not isinstance(arg, torch.fx.Node):
                raise ImportError_(f"{type(model).__name__}.forward returns {type(arg).__name__}; "
                                   f"it must return the logits tensor alone")
            e = b.expr(arg)
            shape = b.tshape(arg)
            if shape is None or e is b.input or len(shape) != 2 and not (
                    tokens and len(shape) == 3):
                raise ImportError_(f"the output is {shape and list(shape)}; autotm trains logits "
                                   f"[batch, classes] (a class per sample) or, from token ids, "
                                   f"[batch, seq, vocab] (a class per position) with softmax "
                                   f"cross-entropy")
            output = b.get(e)
    unused = [k for k in named if k not in b.used]
    if unused:
        raise ImportError_(f"{len(unused)} parameter(s) the traced forward never uses, so autotm "
                           f"could not train them: {', '.join(unused[:5])}"
                           f"{', ...' if len(unused) > 5 else ''} (the forward is traced as "
                           f"evaluation runs it: a branch only training takes, such as the "
                           f"auxiliary classifiers of inception_v3 and googlenet, is not seen; "
                           f"make the model without it: aux_logits=False)")
    inp = {"tokens": int(input_shape[1])} if tokens else {
        "shape": [int(v) for v in input_shape[1:]]}
    graph = {
        "format": FORMAT, "version": 1,
        "name": name or type(model).__name__.lower(),
        "batch": int(input_shape[0]), "lr": float(lr),
        "input": inp,
        "layers": b.layers, "output": output,
    }
    return graph, dict(named), b.left_out


# ---------------------------------------------------------------------- autotm's rules

# zoo/forward.c's limits (docs/graph-format.md, "Forward graphs")
MAX_NAME_BYTES = 200
MAX_BATCH = 1000000
MAX_LAYERS = 1000000
MAX_SIZE = 1 << 24     # channels, features, image sides, sequence, table rows
MAX_WINDOW = 1 << 16   # kernel, stride, pad
MAX_INPUTS = 4096
MAX_DIMS = 6
MAX_PARTS = 64

_SIZES = {"out_channels": 1, "out_features": 1, "num_embeddings": 1, "embedding_dim": 1,
          "length": 1}
_WINDOWS = {"kernel": 1, "stride": 1, "pad": 0}


def _name_ok(name):
    if not isinstance(name, str) or "\0" in name:
        return False
    try:
        return 1 <= len(name.encode("utf-8")) <= MAX_NAME_BYTES
    except UnicodeEncodeError:
        return False


def _show(name):
    """name for a message, cut to 40 characters"""
    return repr(name if len(name) <= 40 else name[:40] + "...")


def _refs(layer):
    if "input" in layer:
        return [layer["input"]]
    return list(layer.get("inputs", []))


def check_graph(g):
    """check_graph -- ImportError_ naming the first rule of autotm's forward graphs that g (a
    to_forward document) breaks, so that what autotm would refuse is never written: the limits
    of zoo/forward.c on names, the batch, sizes, windows and parts, and the builder's (a layer
    with parameters must reach the output, as must every part of a split; the output must
    depend on a parameter, else there is nothing to train)"""
    def bad(where, msg):
        raise ImportError_(f"the graph autotm would refuse: {where}{': ' if where else ''}{msg}")

    if not _name_ok(g["name"]):
        bad("", f"its name {_show(g['name'])} must be 1 to {MAX_NAME_BYTES} characters (bytes "
                f"of UTF-8), without NUL (give --name)")
    if not 1 <= g["batch"] <= MAX_BATCH:
        bad("", f"the batch {g['batch']} must be from 1 to {MAX_BATCH}")
    dims = g["input"].get("shape") or [g["input"].get("tokens")]
    if not all(isinstance(d, int) and 1 <= d <= MAX_SIZE for d in dims):
        bad("input", f"{dims}: each dimension must be from 1 to {MAX_SIZE}")
    layers = g["layers"]
    if not 1 <= len(layers) <= MAX_LAYERS:
        bad("", f"{len(layers)} layers: autotm takes 1 to {MAX_LAYERS}")
    ids, by_name = {"input"}, {}
    for i, l in enumerate(layers):
        at = f"layers[{i}] ({_show(l['name'])})"
        if not _name_ok(l["name"]):
            bad(f"layers[{i}]", f"the name {_show(l['name'])} must be 1 to {MAX_NAME_BYTES} "
                                f"characters (bytes of UTF-8), without NUL")
        for k, lo in _SIZES.items():
            if k in l and not lo <= l[k] <= MAX_SIZE:
                bad(at, f"'{k}' {l[k]} must be from {lo} to {MAX_SIZE}")
        for k, lo in _WINDOWS.items():
            v = l.get(k, lo)
            if not all(lo <= x <= MAX_WINDOW for x in (v if isinstance(v, list) else [v])):
                bad(at, f"'{k}' {v} must be from {lo} to {MAX_WINDOW}")
        for k in ("table", "view", "shape"):
            if k in l and not (len(l[k]) < MAX_DIMS and all(1 <= d <= MAX_SIZE for d in l[k])):
                bad(at, f"'{k}' {l[k]} must be at most {MAX_DIMS - 1} dimensions past the batch, "
                        f"each from 1 to {MAX_SIZE}")
        if l["op"] == "split" and not 2 <= l["parts"] <= MAX_PARTS:
            bad(at, f"a split into {l['parts']} parts: autotm splits into 2 to {MAX_PARTS}")
        if len(_refs(l)) > MAX_INPUTS:
            bad(at, f"{len(_refs(l))} inputs: autotm takes at most {MAX_INPUTS}")
        if any(not _name_ok(p) for p in l.get("params", [])):
            bad(at, "a parameter's name must be a non-empty name")
        names = [f"{l['name']}.{k}" for k in range(l["parts"])] if l["op"] == "split" \
            else [l["name"]]
        for n in [l["name"]] + names:
            if n in ids:
                bad(at, f"the name {n!r} is taken by "
                        f"{'the input' if n == 'input' else 'an earlier layer or part'}")
        ids.update(names)
        by_name[l["name"]] = l
    # as autotm's builder walks back from the loss: a layer that depends on a parameter must
    # reach the output (and a split's every part), and the output must depend on one
    def layer_of(ref):
        """(the layer ref names, the part of a split it is or None); None for the input"""
        base, _, part = ref.rpartition(".")
        if ref not in by_name and by_name.get(base, {}).get("op") == "split":
            return base, int(part)
        return (ref if ref in by_name else None), None

    needs = {}  # layer -> it depends on a parameter
    for l in layers:
        needs[l["name"]] = bool(l.get("params")) or any(
            needs.get(layer_of(r)[0], False) for r in _refs(l))
    reach, parts = set(), {}
    todo = [g["output"]]
    while todo:
        name, part = layer_of(todo.pop())
        if part is not None:
            parts.setdefault(name, set()).add(part)
        if name is None or name in reach:
            continue
        reach.add(name)
        todo.extend(_refs(by_name[name]))
    if not needs.get(layer_of(g["output"])[0], False):
        bad("output", f"the logits {g['output']!r} depend on no parameter: nothing to train")
    for i, l in enumerate(layers):
        at = f"layers[{i}] ({_show(l['name'])})"
        if needs[l["name"]] and l["name"] not in reach:
            bad(at, "its output depends on a parameter but does not reach the output (a result "
                    "the forward computes and drops), so autotm's backward pass has no gradient "
                    "for it")
        n_parts = len(parts.get(l["name"], ()))
        if l["op"] == "split" and needs[l["name"]] and n_parts != l["parts"]:
            bad(at, f"{n_parts} of its {l['parts']} parts reach the output; autotm's backward "
                    f"pass needs every part")


if __name__ == "__main__":
    import sys
    if sys.argv[1:] != ["--docs-table"]:
        sys.exit("usage: python3 -m autotm_torch.importer --docs-table")
    print(docs_table(), end="")
