"""python3 -m autotm_torch -- a PyTorch model into an autotm forward graph (docs/pytorch.md)

usage: python3 -m autotm_torch MODEL (--input N,C,H,W | --input-ids N,T) -o GRAPH.json [options]

MODEL is module:callable (torchvision.models:resnet50) or file.py:callable
(examples/small_cnn.py:make), called with --kwargs to make the nn.Module.
Exit status: 0 written, 2 bad usage, 3 the model cannot be imported (the message names the
call, its module path and source line), 6 an output cannot be written, 8 MODEL not found, 130
interrupted; never a traceback. Every output is checked first and written only once everything
succeeded, all or none (files.write_all).
"""

import argparse
import json
import sys

from .cli import (EXIT_IMPORT, EXIT_USAGE, Failure, fail, ids_arg, kwargs_arg, make_model,
                  model_file, name_arg, run, shape_arg)
from .files import check_files, check_writable, write_all


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="python3 -m autotm_torch",
        description="Trace a PyTorch nn.Module (torch.fx) into an autotm forward graph; autotm "
                    "builds its training step (softmax cross-entropy per sample or per "
                    "position, backward, SGD). "
                    "Parameters keep their state_dict names.",
        epilog="exit status: 0 written, 2 bad usage, 3 the model cannot be imported, 6 an "
               "output cannot be written, 8 MODEL not found, 130 interrupted; nothing is "
               "written unless everything succeeded")
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
    p.add_argument("--name", help="the graph's name, 1 to 200 characters (default: the "
                   "callable's)")
    p.add_argument("--lr", type=float, default=0.01, help="SGD's learning rate (default 0.01)")
    p.add_argument("--precision", choices=("f32", "bf16"), default="f32",
                   help="the step autotm trains: f32, or bf16 mixed precision as torch.autocast "
                        "runs it (the graph's \"precision\"; the weights stay f32, the master "
                        "copy)")
    p.add_argument("--seed", type=int, default=0, help="torch.manual_seed before the model is "
                   "made and the data drawn (default 0)")
    p.add_argument("--weights-out", metavar="FILE", help="the model's parameters, safetensors "
                   "(autotm run --weights-in FILE)")
    p.add_argument("--data-out", metavar="FILE", help="a batch: 'input' drawn from a normal "
                   "distribution (token ids: uniformly below the vocabulary), 'labels' class "
                   "indices drawn uniformly, per sample or per position (autotm run --data FILE)")
    a = p.parse_args(argv)
    kwargs = kwargs_arg(a.kwargs)
    if not (a.lr > 0 and a.lr <= 1e6):
        return fail(EXIT_USAGE, f"--lr {a.lr}: expected above 0 and at most 1e6")
    if a.name is not None:
        name_arg("--name", a.name)
    # every output checked before any work, and written only once everything succeeded
    outs = [("-o", a.output), ("--weights-out", a.weights_out), ("--data-out", a.data_out)]
    check_files(outs, [("MODEL", model_file(a.model))])
    for _, o in outs:
        if o:
            check_writable(o)
    model, source = make_model(a.model, kwargs, a.seed)
    check_files(outs, [("MODEL", source)])  # a module's file is known once it is loaded
    from . import safetensors
    from .check import make_batch
    from .importer import ImportError_, check_graph, to_forward
    name = a.name or a.model.rsplit(":", 1)[1]
    shape, tokens = a.input or a.input_ids, a.input_ids is not None
    try:
        graph, params, left_out = to_forward(model, shape, name=name, lr=a.lr, tokens=tokens)
        check_graph(graph)
        if a.precision == "bf16":
            graph["precision"] = "bf16"
        data = make_batch(model, graph, shape, tokens) if a.data_out else None
    except ImportError_ as e:
        raise Failure(EXIT_IMPORT, f"{a.model}: {e}") from None
    for kind, where in left_out:
        print(f"autotm_torch: warning: {kind}{where} left out (autotm trains without it, "
              f"deterministically)", file=sys.stderr)
    files = [(a.output, (json.dumps(graph, indent=1) + "\n").encode())]
    if a.weights_out:
        files.append((a.weights_out, safetensors.dumps(params, {"format": "pt"})))
    if data is not None:
        files.append((a.data_out, safetensors.dumps(data, {"format": "pt"})))
    write_all(files)
    n = sum(t.numel() for t in params.values())
    print(f"{name}: {len(graph['layers'])} layers, {n:,} parameters -> {a.output}",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(run(main))
