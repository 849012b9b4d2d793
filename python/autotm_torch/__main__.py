"""python3 -m autotm_torch -- a PyTorch model into an autotm forward graph (docs/pytorch.md)

usage: python3 -m autotm_torch MODEL (--input N,C,H,W | --input-ids N,T) -o GRAPH.json [options]

MODEL is module:callable (torchvision.models:resnet50) or file.py:callable
(examples/small_cnn.py:make), called with --kwargs to make the nn.Module.
Exit status: 0 written, 2 bad usage, 3 the model cannot be imported (the message names the
call, its module path and source line), 8 MODEL not found, 130 interrupted. Nothing is written
unless everything succeeded.
"""

import argparse
import json
import os
import sys

from .cli import (EXIT_IMPORT, EXIT_NOT_FOUND, EXIT_USAGE, fail, ids_arg, load_callable,
                  shape_arg, write_text_atomic)


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m autotm_torch",
        description="Trace a PyTorch nn.Module (torch.fx) into an autotm forward graph; autotm "
                    "builds its training step (softmax cross-entropy per sample or per "
                    "position, backward, SGD). "
                    "Parameters keep their state_dict names.",
        epilog="exit status: 0 written, 2 bad usage, 3 the model cannot be imported, 8 MODEL "
               "not found, 130 interrupted; nothing is written unless everything succeeded")
    p.add_argument("model", metavar="MODEL", help="module:callable or file.py:callable that "
                   "returns the nn.Module (torchvision.models:resnet18)")
    inp = p.add_mutually_exclusive_group(required=True)
    inp.add_argument("--input", type=shape_arg, metavar="N,C,H,W",
                     help="the shape of the image batch the forward takes")
    inp.add_argument("--input-ids", type=ids_arg, metavar="N,T",
                     help="the forward takes token ids [batch, sequence] (a language model)")
    p.add_argument("-o", "--output", required=True, metavar="GRAPH.json",
                   help="the forward graph (autotm run --graph GRAPH.json)")
    p.add_argument("--kwargs", default="{}", metavar="JSON",
                   help="keyword arguments of MODEL's callable, as JSON ('{\"num_classes\": 10}')")
    p.add_argument("--name", help="the graph's name (default: the callable's)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD's learning rate (default 0.01)")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before the model is "
                   "made and the data drawn (default 0)")
    p.add_argument("--weights-out", metavar="FILE", help="the model's parameters, safetensors "
                   "(autotm run --weights-in FILE)")
    p.add_argument("--data-out", metavar="FILE", help="a batch: 'input' drawn from a normal "
                   "distribution (token ids: uniformly below the vocabulary), 'labels' class "
                   "indices drawn uniformly, per sample or per position (autotm run --data FILE)")
    a = p.parse_args(argv)
    try:
        kwargs = json.loads(a.kwargs)
        if not isinstance(kwargs, dict):
            raise ValueError("not an object")
    except ValueError as e:
        return fail(EXIT_USAGE, f"--kwargs '{a.kwargs}': expected a JSON object ({e})")
    if not (a.lr > 0 and a.lr <= 1e6):
        return fail(EXIT_USAGE, f"--lr {a.lr}: expected above 0 and at most 1e6")
    outs = [o for o in (a.output, a.weights_out, a.data_out) if o]
    if len({os.path.abspath(o) for o in outs}) != len(outs):
        return fail(EXIT_USAGE, "-o, --weights-out and --data-out must be different files")
    for o in outs:
        folder = os.path.dirname(os.path.abspath(o))
        if not os.path.isdir(folder):
            return fail(EXIT_USAGE, f"{o}: the folder {folder} does not exist")
    try:
        import torch
    except ImportError:
        return fail(EXIT_IMPORT, "PyTorch is missing: install python3-torch (Debian) and run "
                    "with /usr/bin/python3")
    from . import safetensors
    from .check import make_batch
    from .importer import ImportError_, to_forward
    try:
        make = load_callable(a.model)
    except ValueError as e:
        return fail(EXIT_USAGE, str(e))
    except LookupError as e:
        return fail(EXIT_NOT_FOUND, f"MODEL {a.model}: {e}")
    torch.manual_seed(a.seed)
    try:
        model = make(**kwargs)
    except TypeError as e:
        return fail(EXIT_USAGE, f"{a.model}(**{kwargs}): {e}")
    if not isinstance(model, torch.nn.Module):
        return fail(EXIT_USAGE, f"{a.model} returned {type(model).__name__}, not an nn.Module")
    name = a.name or a.model.rsplit(":", 1)[1]
    shape, tokens = a.input or a.input_ids, a.input_ids is not None
    try:
        graph, params, left_out = to_forward(model, shape, name=name, lr=a.lr, tokens=tokens)
    except ImportError_ as e:
        return fail(EXIT_IMPORT, f"{a.model}: {e}")
    for kind, where in left_out:
        print(f"autotm_torch: warning: {kind}{where} left out (autotm trains without it, "
              f"deterministically)", file=sys.stderr)
    data = make_batch(model, graph, shape, tokens) if a.data_out else None
    if a.weights_out:
        safetensors.write(a.weights_out, params)
    if data is not None:
        safetensors.write(a.data_out, data)
    write_text_atomic(a.output, json.dumps(graph, indent=1) + "\n")
    n = sum(t.numel() for t in params.values())
    print(f"{name}: {len(graph['layers'])} layers, {n:,} parameters -> {a.output}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
