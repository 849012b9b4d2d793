#!/usr/bin/python3
"""torchvision_imports.py -- which of torchvision's classification models import into autotm
(issue #48; docs/pytorch.md, "What torchvision's models give")

usage: bench/torchvision_imports.py [--models NAME,...] [--input N,C,H,W] [--autotm PATH]
                                    [--json FILE] [--timeout S]

Every model of torchvision.models.list_models(module=torchvision.models) (torchvision 0.14 has
list_models: its 80 classification builders; detection, segmentation, video, optical flow and the
quantized models live in submodules and are not listed) is made with its builder's defaults
(weights=None), in training mode, and imported at --input (default 2,3,224,224) as
`python3 -m autotm_torch` imports it (importer.to_forward and check_graph); googlenet and
inception_v3 are made with aux_logits=False, since autotm trains one output and their auxiliary
classifiers are a second and a third (with them the import is refused, naming their unused
parameters). autotm then builds the training step from the graph (autotm zoo --graph G --json),
and its parameter count must be the model's sum(p.numel()).

Each model runs in a process of its own (a model that exhausts memory or crashes costs itself
alone), one at a time. It prints a markdown table, a row per model: imported or refused and why,
the parameters, the layers, the seconds the import took; and the count. --json writes the rows
(atomically) after every model; with --models, the other models' rows already in the file are
kept, so a run of a few updates it.
Exit status: 0 every model run (imported or refused by name), 1 a model crashed, timed out, or
was counted differently by autotm, 2 bad usage, 8 no autotm or torchvision.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))

# builder arguments other than the defaults, and why
KWARGS = {"googlenet": {"aux_logits": False, "init_weights": False},
          "inception_v3": {"aux_logits": False, "init_weights": False}}
WHY = {"googlenet": "aux_logits=False", "inception_v3": "aux_logits=False"}


def one(name, shape, autotm):
    """the row of one model: {model, status, reason, params, layers, import_s, check_s, ...};
    status imported, refused (the importer's named refusal), or failed (autotm refused the
    graph, counted other parameters, or the importer raised what it does not expect)"""
    import warnings
    warnings.simplefilter("ignore")  # builders' FutureWarnings, torch.meshgrid's
    import torch
    import torchvision
    from autotm_torch.importer import ImportError_, check_graph, to_forward
    torch.set_num_threads(int(os.environ.get("ATM_THREADS", "2")))
    row = {"model": name, "kwargs": KWARGS.get(name, {}), "input": list(shape)}
    torch.manual_seed(0)
    m = torchvision.models.get_model(name, weights=None, **KWARGS.get(name, {}))
    m.train()
    row["params"] = sum(p.numel() for p in m.parameters())
    t = time.monotonic()
    try:
        g, _, left = to_forward(m, shape, name=name)
        check_graph(g)
    except ImportError_ as e:
        row.update(status="refused", reason=str(e).split(" Supported: ")[0],
                   import_s=round(time.monotonic() - t, 2))
        return row
    except Exception as e:  # a bug of the importer's: named as one, the run goes on
        row.update(status="failed", reason=f"the importer raised {type(e).__name__}: {e}",
                   import_s=round(time.monotonic() - t, 2))
        return row
    row["import_s"] = round(time.monotonic() - t, 2)
    row["layers"] = len(g["layers"])
    row["left_out"] = sorted({kind for kind, _ in left})
    t = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"{name}.json")
        with open(path, "w") as f:
            json.dump(g, f)
        p = subprocess.run([autotm, "zoo", "--graph", path, "--json"], capture_output=True,
                           text=True)
    row["check_s"] = round(time.monotonic() - t, 2)
    if p.returncode != 0:
        row.update(status="failed", reason=f"autotm zoo --graph: exit {p.returncode}: "
                                           f"{p.stderr.strip()}")
        return row
    n = json.loads(p.stdout)["n_params"]
    if n != row["params"]:
        row.update(status="failed", reason=f"autotm counts {n:,} parameters; PyTorch "
                                           f"{row['params']:,}")
        return row
    row["status"] = "imported"
    return row


def run_one(name, shape, autotm, timeout):
    """one() in a process of its own; a crash or a timeout is a failed row"""
    t = time.monotonic()
    cmd = [sys.executable, os.path.abspath(__file__), "--one", name, "--input",
           ",".join(map(str, shape)), "--autotm", autotm]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": name, "status": "failed", "reason": f"no answer in {timeout} s"}
    lines = [x for x in p.stdout.splitlines() if x.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"model": name, "status": "failed",
                "reason": f"exit {p.returncode} after {time.monotonic() - t:.0f} s: {tail}"}
    return json.loads(lines[-1])


def reason_cell(row):
    """the table's last cell: why it was refused, or what was left out and the arguments"""
    if row["status"] != "imported":
        r = row.get("reason", "")
        # the message's location is the model's code in torchvision; keep the file and line
        r = r.replace("/usr/lib/python3/dist-packages/", "")
        return r if len(r) <= 500 else r[:497] + "..."
    notes = []
    if row["model"] in WHY:
        notes.append(WHY[row["model"]])
    if row.get("left_out"):
        notes.append(", ".join(row["left_out"]) + " left out")
    return "; ".join(notes)


def table(rows):
    out = ["| model | imports | parameters | layers | import (s) | notes |",
           "| --- | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        status = {"imported": "yes", "refused": "no"}.get(r["status"], "**failed**")
        params = f"{r['params']:,}" if "params" in r else ""
        layers = f"{r['layers']:,}" if "layers" in r else ""
        secs = f"{r['import_s']:.1f}" if "import_s" in r else ""
        notes = reason_cell(r).replace("|", "\\|")
        out.append(f"| `{r['model']}` | {status} | {params} | {layers} | {secs} | {notes} |")
    return "\n".join(out) + "\n"


def summary(rows):
    n = sum(r["status"] == "imported" for r in rows)
    return f"{n} of {len(rows)} import"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", help="comma-separated names (default: every one)")
    p.add_argument("--input", default="2,3,224,224", help="N,C,H,W (default 2,3,224,224)")
    p.add_argument("--autotm", help="the autotm binary (default: $ATM_BINARY_DIR/cli/autotm, "
                                    "else build-release/cli/autotm)")
    p.add_argument("--json", metavar="FILE", help="write the rows as JSON")
    p.add_argument("--timeout", type=int, default=1800, help="seconds a model may take")
    p.add_argument("--one", help=argparse.SUPPRESS)  # the child's one model
    a = p.parse_args(argv)
    try:
        shape = tuple(int(v) for v in a.input.split(","))
        if len(shape) != 4 or min(shape) < 1:
            raise ValueError
    except ValueError:
        p.error(f"--input {a.input}: expected N,C,H,W")
    autotm = a.autotm or os.path.join(os.environ.get("ATM_BINARY_DIR") or
                                      os.path.join(REPO, "build-release"), "cli", "autotm")
    if not os.access(autotm, os.X_OK):
        print(f"torchvision_imports: no autotm binary at {autotm} (--autotm)", file=sys.stderr)
        return 8
    if a.one:
        print(json.dumps(one(a.one, shape, autotm)))
        return 0
    try:
        import torchvision
    except ImportError:
        print("torchvision_imports: torchvision is not installed", file=sys.stderr)
        return 8
    names = torchvision.models.list_models(module=torchvision.models)
    if a.models:
        wanted = a.models.split(",")
        unknown = [n for n in wanted if n not in names]
        if unknown:
            p.error(f"--models: not torchvision classification models: {', '.join(unknown)}")
        names = [n for n in names if n in wanted]
    from autotm_torch.files import write_atomic
    kept = {}
    if a.json and a.models and os.path.exists(a.json):
        with open(a.json) as f:
            kept = {r["model"]: r for r in json.load(f)["models"]}
    rows = dict(kept)
    for name in names:
        r = run_one(name, shape, autotm, a.timeout)
        rows[name] = r
        print(f"{name}: {r['status']}" + (f" ({r.get('reason', '')[:160]})"
                                           if r["status"] != "imported" else
                                           f", {r['params']:,} parameters, {r['import_s']} s"),
              file=sys.stderr, flush=True)
        if a.json:
            order = sorted(rows.values(), key=lambda r: r["model"])
            doc = {"torch": __import__("torch").__version__, "torchvision":
                   torchvision.__version__, "input": list(shape), "summary": summary(order),
                   "models": order}
            write_atomic(a.json, (json.dumps(doc, indent=1) + "\n").encode())
    order = sorted(rows.values(), key=lambda r: r["model"])
    print(table(order))
    print(f"{summary(order)} (input {'x'.join(map(str, shape))})")
    return 1 if any(r["status"] == "failed" for r in order) else 0


if __name__ == "__main__":
    sys.exit(main())
