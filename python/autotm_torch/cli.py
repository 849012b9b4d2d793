"""cli -- what the importer's and the check's command lines share: the exit codes, the entry
that turns every failure into one named line, MODEL loaded and called, the input's shape"""

import argparse
import importlib
import importlib.util
import inspect
import json
import os
import signal
import sys
import traceback

from .files import FileError

# autotm's exit codes (docs/cli.md): 1 a bug, 2 bad usage, 3 an input it cannot take (here: the
# model), 6 a file system error, 8 not found, 130 interrupted
EXIT_INTERNAL, EXIT_USAGE, EXIT_IMPORT, EXIT_IO, EXIT_NOT_FOUND = 1, 2, 3, 6, 8
EXIT_INTERRUPTED = 130

# autotm's forward graphs (zoo/forward.c): the batch, one dimension of the input, a name
MAX_BATCH = 1000000
MAX_SIZE = 1 << 24
MAX_NAME_BYTES = 200

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

# set by the SIGINT handler run() installs: whatever fails after a Ctrl-C (an import of torch
# cut short reads as "no module"), the answer is "interrupted"
_interrupted = False


class Failure(Exception):
    """a refusal: the exit status and the message"""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def fail(code, msg):
    print(f"autotm_torch: {msg}", file=sys.stderr)
    return code


def _on_sigint(signum, frame):
    global _interrupted
    _interrupted = True
    raise KeyboardInterrupt


def _stopped():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C ends nothing more
    return fail(EXIT_INTERRUPTED, "interrupted; nothing written")


def run(main, argv=None):
    """run -- main(argv)'s exit status, every failure one line on stderr: a Failure or
    FileError its own, Ctrl-C 130, anything else a bug (1)"""
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        return main(argv)
    except KeyboardInterrupt:
        return _stopped()
    except (Failure, FileError) as e:
        return _stopped() if _interrupted else fail(e.code, str(e))
    except Exception as e:  # noqa: BLE001 -- no traceback, ever: the bug named in one line
        if _interrupted:
            return _stopped()
        return fail(EXIT_INTERNAL, f"internal error: {type(e).__name__}: {e}{where(e)} (a bug "
                                   f"in autotm_torch)")


def exit_main(main):
    """exit_main -- exit with main()'s status, a script's whose failures main reports itself;
    Ctrl-C exits 130 without a traceback"""
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(EXIT_INTERRUPTED)


def torch_or_none(prog):
    """torch_or_none -- torch, or None after saying on stderr what the script PROG needs installed"""
    try:
        import torch
    except ImportError:
        print(f"{prog}: install python3-torch and python3-torchvision (Debian), run with "
              "/usr/bin/python3", file=sys.stderr)
        return None
    return torch


def where(e):
    """' (at file.py:12 in make)': the innermost frame of e's traceback in the user's code (not
    PyTorch's, not this package's), or ''"""
    torch = sys.modules.get("torch")
    skip = [_PACKAGE] + ([os.path.dirname(torch.__file__) + os.sep]
                         if getattr(torch, "__file__", None) else [])
    for f in reversed(traceback.extract_tb(e.__traceback__)):
        if not f.filename.startswith("<") \
                and not any(os.path.abspath(f.filename).startswith(d) for d in skip):
            return f" (at {f.filename}:{f.lineno} in {f.name})"
    return ""


def import_torch():
    """torch; Failure (3) when it is missing, KeyboardInterrupt when a Ctrl-C cut its import
    short (which can surface as an ImportError from its C extension)"""
    try:
        import torch
    except ImportError:
        if _interrupted:
            raise KeyboardInterrupt from None
        raise Failure(EXIT_IMPORT, "PyTorch is missing: install python3-torch (Debian) and run "
                                   "with /usr/bin/python3") from None
    return torch


def model_file(spec):
    """the file MODEL names (file.py:callable), or None (module:callable)"""
    where_ = spec.rsplit(":", 1)[0] if ":" in spec else ""
    return where_ if where_.endswith(".py") else None


def load_callable(spec):
    """the callable MODEL names: ValueError when spec is not module:callable or file.py:callable,
    LookupError when it does not exist, Failure (3) when its module fails to load"""
    where_, _, attr = spec.rpartition(":")
    if not where_ or not attr:
        raise ValueError(f"MODEL '{spec}': expected module:callable or file.py:callable")
    if where_.endswith(".py") and not os.path.isfile(where_):
        raise LookupError(f"{where_}: no such file")
    try:
        if where_.endswith(".py"):
            mspec = importlib.util.spec_from_file_location(
                os.path.splitext(os.path.basename(where_))[0], where_)
            mod = importlib.util.module_from_spec(mspec)
            mspec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(where_)
    except ModuleNotFoundError as e:
        # the module itself (or a package above it) is missing: not found; a module it
        # imports being missing is the model's failure
        if e.name and (where_ == e.name or where_.startswith(e.name + ".")):
            raise LookupError(f"module '{where_}' not found") from None
        raise Failure(EXIT_IMPORT, f"loading {where_} failed: {type(e).__name__}: {e}"
                                   f"{where(e)}") from None
    except (Exception, SystemExit) as e:  # noqa: BLE001 -- SyntaxError, whatever its code raises
        raise Failure(EXIT_IMPORT, f"loading {where_} failed: {type(e).__name__}: {e}"
                                   f"{where(e)}") from None
    if not hasattr(mod, attr):
        raise LookupError(f"'{where_}' has no '{attr}'")
    return getattr(mod, attr)


def kwargs_arg(text):
    """--kwargs: a JSON object; Failure (2) when it is not"""
    try:
        kwargs = json.loads(text)
    except ValueError as e:
        raise Failure(EXIT_USAGE, f"--kwargs '{text}': expected a JSON object ({e})") from None
    if not isinstance(kwargs, dict):
        raise Failure(EXIT_USAGE, f"--kwargs '{text}': expected a JSON object, not "
                                  f"{type(kwargs).__name__}")
    return kwargs


def make_model(spec, kwargs, seed):
    """make_model -- (model, its source file or None): MODEL's callable called with kwargs
    after torch.manual_seed(seed). Failure: 2 MODEL misspelt, kwargs it does not take, or a
    result that is no nn.Module; 3 its module fails to load or the call raises; 8 not found"""
    torch = import_torch()
    try:
        make = load_callable(spec)
    except ValueError as e:
        raise Failure(EXIT_USAGE, str(e)) from None
    except LookupError as e:
        raise Failure(EXIT_NOT_FOUND, f"MODEL {spec}: {e}") from None
    if not callable(make):
        raise Failure(EXIT_USAGE, f"MODEL {spec}: a {type(make).__name__}, not a callable that "
                                  f"returns an nn.Module")
    mod = sys.modules.get(getattr(make, "__module__", None) or "")
    source = model_file(spec) or getattr(mod, "__file__", None)
    try:
        sig = inspect.signature(make)
    except (TypeError, ValueError):
        sig = None  # a builtin: the call says what it takes
    if sig is not None:
        try:
            sig.bind(**kwargs)
        except TypeError as e:
            raise Failure(EXIT_USAGE, f"{spec}(**{kwargs}): {e}") from None
    torch.manual_seed(seed)
    try:
        model = make(**kwargs)
    except (Exception, SystemExit) as e:  # noqa: BLE001 -- the model's own code
        raise Failure(EXIT_IMPORT, f"{spec}(**{kwargs}) raised {type(e).__name__}: {e}"
                                   f"{where(e)}") from None
    if not isinstance(model, torch.nn.Module):
        raise Failure(EXIT_USAGE, f"{spec} returned {type(model).__name__}, not an nn.Module")
    # a module in half precision (model.to(torch.bfloat16), .half()) is taken in float32, the
    # master copy autotm trains: bfloat16 and float16 widen exactly
    other = sorted({str(t.dtype).replace("torch.", "")
                    for t in [*model.parameters(), *model.buffers()]
                    if t.is_floating_point() and t.dtype != torch.float32})
    if other:
        model.float()
        print(f"autotm_torch: warning: {spec}'s parameters are {', '.join(other)}: taken as "
              f"float32, the master copy autotm trains (autotm's tensors are float32)",
              file=sys.stderr)
    return model, source


def name_arg(opt, name):
    """a graph's name as autotm takes it: 1 to 200 bytes of UTF-8, no NUL; Failure (2)"""
    try:
        n = len(name.encode("utf-8"))
    except UnicodeEncodeError:
        raise Failure(EXIT_USAGE, f"{opt} {name!r}: not valid UTF-8") from None
    if not 1 <= n <= MAX_NAME_BYTES or "\0" in name:
        raise Failure(EXIT_USAGE, f"{opt}: a name of 1 to {MAX_NAME_BYTES} characters "
                                  f"(bytes of UTF-8) without NUL, not {n}")
    return name


def _memory_bytes():
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 1 << 62  # autotm's limit on one tensor


def dims_arg(text, names, elem_bytes):
    """a shape given as comma-separated integers, one per name of names ("N,C,H,W"): the batch
    1 to 1000000, every other dimension 1 to 2^24 (autotm's forward graphs), and the tensor, of
    elements of elem_bytes, within this machine's memory (the forward runs on it)"""
    labels = names.split(",")
    try:
        dims = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': expected {names} (integers)") from None
    if len(dims) != len(labels):
        raise argparse.ArgumentTypeError(f"'{text}': expected {names}, each at least 1")
    for label, d, hi in zip(labels, dims, [MAX_BATCH] + [MAX_SIZE] * (len(dims) - 1)):
        if not 1 <= d <= hi:
            raise argparse.ArgumentTypeError(f"'{text}': {label} {d}: expected 1 to {hi}")
    n = 1
    for d in dims:
        n *= d
    most = _memory_bytes() // elem_bytes
    if n > most:
        raise argparse.ArgumentTypeError(
            f"'{text}': {n:,} elements of {elem_bytes} bytes do not fit this machine's memory "
            f"({_memory_bytes() / 2 ** 30:.0f} GiB): expected at most {most:,} elements")
    return dims


def shape_arg(text):
    """an image batch's shape, N,C,H,W (float32)"""
    return dims_arg(text, "N,C,H,W", 4)


def ids_arg(text):
    """token ids' shape, N,T (batch, sequence; int64)"""
    return dims_arg(text, "N,T", 8)
