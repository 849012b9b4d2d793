"""cli -- what the importer's and the check's command lines share"""

import argparse
import importlib
import importlib.util
import os
import sys

from .files import write_atomic

EXIT_USAGE, EXIT_IMPORT, EXIT_NOT_FOUND = 2, 3, 8


def fail(code, msg):
    print(f"autotm_torch: {msg}", file=sys.stderr)
    return code


def load_callable(spec):
    """the callable MODEL names; LookupError with the reason when it does not exist"""
    if ":" not in spec:
        raise ValueError(f"MODEL '{spec}': expected module:callable or file.py:callable")
    where, attr = spec.rsplit(":", 1)
    if where.endswith(".py"):
        if not os.path.isfile(where):
            raise LookupError(f"{where}: no such file")
        mspec = importlib.util.spec_from_file_location(
            os.path.splitext(os.path.basename(where))[0], where)
        mod = importlib.util.module_from_spec(mspec)
        mspec.loader.exec_module(mod)
    else:
        try:
            mod = importlib.import_module(where)
        except ModuleNotFoundError as e:
            raise LookupError(f"module '{where}' not found ({e})") from None
    if not hasattr(mod, attr):
        raise LookupError(f"'{where}' has no '{attr}'")
    return getattr(mod, attr)


def write_text_atomic(path, text):
    """text to path, atomically (files.write_atomic)"""
    write_atomic(path, text.encode())


def dims_arg(text, names):
    """a shape given as comma-separated integers, one per name of names ("N,C,H,W")"""
    want = names.count(",") + 1
    try:
        dims = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': expected {names} (integers)") from None
    if len(dims) != want or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"'{text}': expected {names}, each at least 1")
    return dims


def shape_arg(text):
    """an image batch's shape, N,C,H,W"""
    return dims_arg(text, "N,C,H,W")


def ids_arg(text):
    """token ids' shape, N,T (batch, sequence)"""
    return dims_arg(text, "N,T")
