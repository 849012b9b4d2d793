"""common.py -- what the experiment drivers share.

Each driver (conventional.py, inception.py, large.py, gpu.py, recompute.py) builds a list of
comparisons -- one 'autotm run --formulation A,B,C --turns N' per workload and
limit, its placements trained in turns in one process (docs/comparisons.md) --
and hands it to main(): the options, the data folder, the autotm binary, the
resumable loop (a comparison already in the data is skipped) with its progress,
the summary and the exit status live here. With --estimate a comparison becomes
one 'autotm plan --estimate' of each placement: predictions, nothing measured.

Reading results files, ratios and numbers, and which folder each driver writes,
are autotm_results' (python/), shared with the figure scripts.

Exit status of a driver: 0 every comparison done or already in the data, 1 one
failed (or the binary is missing), 2 bad usage, 130 interrupted.
Python 3 standard library only (run with /usr/bin/python3).
"""

import argparse
import os
import platform
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# the package the figure scripts share lives in python/ under the repository: a driver is run
# directly (experiments/conventional.py), with its own folder, not the repository, on the path
sys.path.insert(0, str(REPO / "python"))
from autotm_results import registry, values  # noqa: E402
from autotm_results.comparisons import check_measured, comparisons  # noqa: E402
from autotm_results.ratios import norm_ratio, parse_ratios, ratio_str  # noqa: E402
from autotm_results.results import (RECOMPUTE, VERSION, ResultsError, read,  # noqa: E402,F401
                                    split_recompute)

# where the binary is looked for when neither --autotm nor AUTOTM names it
DEFAULT_BINARIES = ("build-release/cli/autotm", "build/cli/autotm")

# the paper's four networks (VGG19, ResNet-200, Inception v4, DenseNet-264)
PAPER_NETWORKS = ("vgg19", "resnet200", "inception_v4", "densenet264")
# today's: Figure 7's transformer panel (conventional.py --networks ...)
TRANSFORMER_NETWORKS = ("gpt2", "vit_b_16")
QUICK_NETWORKS = ("tiny_cnn", "tiny_mlp", "tiny_gpt")

# The presets' batch sizes as 'autotm zoo' lists them; used only when the binary
# cannot be asked (a --dry-run without a build) -- the zoo's own list wins.
FALLBACK_PRESETS = {
    "paper": {"vgg19": [2048], "resnet200": [512], "inception_v4": [1024], "densenet264": [512]},
    "large": {"vgg416": [320], "resnet200": [2560], "inception_v4": [6144], "densenet264": [3072]},
    "gpu": {"vgg19": [64, 128], "resnet200": [32, 64, 128], "inception_v4": [64, 128, 256],
            "densenet264": [32, 64, 128]},
    "small": {"vgg16": [8], "vgg19": [8], "vgg416": [1], "resnet50": [8], "resnet101": [8],
              "resnet152": [4], "resnet200": [4], "inception_v4": [4], "densenet121": [8],
              "densenet169": [8], "densenet201": [8], "densenet264": [4], "test_vgg": [16],
              "tiny_cnn": [8], "tiny_mlp": [8]},
}

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class Interrupted(Exception):
    """Ctrl-C (SIGINT) or SIGTERM: stop after the current autotm call."""


# ---------------------------------------------------------------- small helpers

def say(msg=""):
    print(msg, file=sys.stderr, flush=True)


def fmt_seconds(s):
    """12.3 s, 4 min 5 s, 1 h 20 min."""
    if s < 60:
        return f"{s:.1f} s"
    if s < 3600:
        m, sec = divmod(int(round(s)), 60)
        return f"{m} min {sec} s" if sec else f"{m} min"
    h, rest = divmod(int(round(s)), 3600)
    return f"{h} h {rest // 60} min"


def fmt_left(s):
    """about 40 s, about 4 min, about 1 h 20 min."""
    if s < 60:
        return f"about {max(1, int(round(s)))} s"
    if s < 90 * 60:
        return f"about {int(round(s / 60))} min"
    h, m = divmod(int(round(s / 60)), 60)
    return f"about {h} h {m} min" if m else f"about {h} h"


# argparse types: --ratios S:F,... as written (autotm is given them so), --time-limit
ratio_list = values.argtype(parse_ratios)
positive_float = values.argtype(values.positive_float, "number of seconds")


def parse_names(text):
    out = []
    for part in text.split(","):
        part = part.strip()
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", part or "?"):
            raise argparse.ArgumentTypeError(
                f"bad network list '{text}': write zoo names separated by commas, e.g. vgg19,resnet200")
        if part not in out:
            out.append(part)
    return out


def parse_batches(text):
    out = []
    for part in text.split(","):
        if not re.fullmatch(r"\s*[1-9]\d*\s*", part):
            raise argparse.ArgumentTypeError(f"bad batch list '{text}': positive integers separated by commas, e.g. 32,64")
        if int(part) not in out:
            out.append(int(part))
    return out


def positive_int(text):
    if not re.fullmatch(r"[1-9]\d*", text.strip()):
        raise argparse.ArgumentTypeError(f"'{text}' is not a positive integer")
    return int(text)


def machine_name(text):
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", text):
        raise argparse.ArgumentTypeError(
            f"bad machine name '{text}': letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit")
    return text


def default_machine():
    """A slug of the CPU model and CPU count: 'AMD EPYC' on 2 CPUs -> amd-epyc-2cpu."""
    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    if not model:
        model = platform.machine() or "unknown"
    s = model.lower()
    s = re.sub(r"\((r|tm|c)\)", " ", s)
    s = s.split("@", 1)[0]                          # the clock: "CPU @ 2.40GHz"
    s = re.sub(r"\b(cpu|processor)\b", " ", s)
    s = re.sub(r"[^a-z0-9]+", "-", s).strip("-")[:48].strip("-") or "cpu"
    return f"{s}-{os.cpu_count() or 1}cpu"


def mem_total_bytes():
    try:
        with open("/proc/meminfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# ---------------------------------------------------------------- the binary

def find_autotm(explicit, dry_run):
    """--autotm PATH, else $AUTOTM, else build-release/cli/autotm, build/cli/autotm, else autotm on PATH."""
    def usable(p):
        return p.is_file() and os.access(p, os.X_OK)

    if explicit:
        p = Path(explicit).expanduser()
        if usable(p):
            return str(p.resolve())
        say(f"error: --autotm {explicit}: no such executable file")
        sys.exit(EXIT_USAGE)
    env = os.environ.get("AUTOTM")
    if env:
        p = Path(env).expanduser()
        if usable(p):
            return str(p.resolve())
        found = shutil.which(env)
        if found:
            return found
        say(f"error: AUTOTM={env}: no such executable file")
        sys.exit(EXIT_FAILED)
    for rel in DEFAULT_BINARIES:
        p = REPO / rel
        if usable(p):
            return str(p)
    found = shutil.which("autotm")
    if found:
        return found
    msg = ("autotm binary not found: looked for --autotm PATH, the AUTOTM environment variable, "
           + ", ".join(str(REPO / r) for r in DEFAULT_BINARIES)
           + " and autotm on PATH. Build it first (scripts/demo.sh builds build/cli/autotm, or "
           "cmake -S . -B build-release -DCMAKE_BUILD_TYPE=Release && cmake --build build-release -j).")
    if dry_run:
        say("warning: " + msg + " Printing the command lines with 'autotm'.")
        return None
    say("error: " + msg)
    sys.exit(EXIT_FAILED)


class Zoo:
    """The zoo's networks and presets, read from 'autotm zoo' (a fallback table without a binary)."""

    def __init__(self, autotm):
        self.networks = None          # set of names, None when unknown
        self.presets = {}             # preset -> network -> [batches]
        if autotm:
            try:
                out = subprocess.run([autotm, "zoo"], capture_output=True, text=True, timeout=60,
                                     env=autotm_env()).stdout
                self._parse(out)
            except (OSError, subprocess.SubprocessError):
                pass
        for preset, table in FALLBACK_PRESETS.items():
            self.presets.setdefault(preset, dict(table))

    def _parse(self, text):
        section, preset, names = None, None, set()
        for line in text.splitlines():
            if line.startswith("networks"):
                section = "networks"
                continue
            if line.startswith("presets"):
                section = "presets"
                continue
            if section == "networks":
                m = re.match(r"^  ([a-z0-9_-]+)\s+\S+\s+(?:seq )?\d+\s+[\d,]+\s", line)
                if m:
                    names.add(m.group(1))
            elif section == "presets":
                m = re.match(r"^  ([a-z0-9_]+):", line)
                if m:
                    preset = m.group(1)
                    self.presets[preset] = {}
                    continue
                m = re.match(r"^    ([a-z0-9_-]+)\s+(\d+(?:/\d+)*)", line)
                if m and preset:
                    self.presets[preset][m.group(1)] = [int(b) for b in m.group(2).split("/")]
        if names:
            self.networks = names

    def batches(self, preset, network):
        return self.presets.get(preset, {}).get(network)


def autotm_env():
    env = dict(os.environ)
    # oneDNN's OpenMP threads spin while they wait by default; on a small, shared
    # machine that steals the cores the other threads need
    env.setdefault("OMP_WAIT_POLICY", "passive")
    return env


# ---------------------------------------------------------------- runs

# Task.gpu of a plan for a GPU model (autotm plan --gpu-model NAME --estimate): GPU_MODEL + NAME
GPU_MODEL = "model:"

# the formulations whose plans carry from a limit to the next larger one (autotm --start)
ILP_FORMULATIONS = ("static", "synchronous", "asynchronous")


def fast_share(ratio):
    """The share of the peak a slow:fast ratio gives fast memory (1:0 none, 0:1 all)."""
    return Fraction(ratio[1], ratio[0] + ratio[1])


class Carry:
    """Where a sweep keeps each limit's plans (FOLDER/S_F/FORMULATION.json) so that the next
    larger limit starts from them: 'autotm run --plans-out' writes them, '--start' reads them,
    and a plan is then never predicted slower than the smaller limit's (docs/optimizer.md,
    "Monotone in the budget"). A limit already in the data keeps the plans it wrote then."""

    def __init__(self, folder, ratios):
        self.folder = Path(folder)
        self.ratios = sorted(ratios, key=fast_share)

    def folder_of(self, ratio):
        return self.folder / ratio_str(ratio).replace(":", "_")

    def plan_file(self, ratio, formulation):
        return self.folder_of(ratio) / f"{formulation}.json"

    def starts(self, ratio, formulations):
        """For each ILP formulation, its plan at the nearest smaller limit that has one (looked
        up when the command is made, so a limit planned just before counts)."""
        found = []
        smaller = [r for r in self.ratios if fast_share(r) < fast_share(ratio)]
        for f in formulations:
            if split_recompute(f)[0] not in ILP_FORMULATIONS:
                continue
            for r in reversed(smaller):
                path = self.plan_file(r, f)
                if path.is_file():
                    found.append(str(path))
                    break
        return found

    def options(self, ratio, formulations):
        starts = self.starts(ratio, formulations)
        return ["--start", ",".join(starts)] if starts else []


class Task:
    """One autotm call and what it appends to one results file: the size, device and slow tier
    it runs under (subclasses: Compare, a comparison measured in turns; Plan, a plan alone)."""

    def __init__(self, network, preset, file, ratio, batch=None, gpu=None, emulate="optane",
                 shown_batch=None, pmem_dir=None):
        self.network, self.preset, self.file, self.ratio = network, preset, Path(file), ratio
        self.shown_batch = batch if shown_batch is None else shown_batch
        self.batch, self.gpu, self.emulate, self.pmem_dir = batch, gpu, emulate, pmem_dir

    def _size(self):
        size = ["--model", self.network, "--preset", self.preset]
        if self.batch is not None:
            size += ["--batch", str(self.batch)]
        return size

    def _device(self):
        if self.gpu == "sim":
            return ["--gpu=sim"]
        if self.gpu == "cuda":
            return ["--gpu"]
        if self.gpu and self.gpu.startswith(GPU_MODEL):
            return ["--gpu-model", self.gpu[len(GPU_MODEL):]]
        return (["--emulate", self.emulate] if self.emulate else []) + \
            (["--pmem-dir", self.pmem_dir] if self.pmem_dir else [])

    def _label(self, what):
        parts = [self.network, self.preset]
        if self.shown_batch is not None:
            parts.append(f"b{self.shown_batch}")
        parts.append(ratio_str(self.ratio) if self.ratio else "-")
        parts.append(what)
        if self.gpu == "sim":
            parts.append("(simulated GPU)")
        elif self.gpu and self.gpu.startswith(GPU_MODEL):
            parts.append(f"({self.gpu[len(GPU_MODEL):]} model)")
        return " ".join(parts)


class Compare(Task):
    """Every placement of FORMULATIONS at one ratio, planned, then trained in turns in one
    process: 'autotm run --formulation A,B,C --turns N' (docs/comparisons.md)."""

    def __init__(self, network, preset, file, formulations, ratio, carry=None, **kw):
        super().__init__(network, preset, file, ratio, **kw)
        self.formulations = tuple(formulations)
        self.carry = carry

    def identity(self):
        return (str(self.file), "compare", self.formulations, Fraction(self.ratio[0], sum(self.ratio)))

    def label(self):
        return self._label(",".join(self.formulations))

    def commands(self, autotm, args):
        limit = ["--time-limit", f"{args.time_limit:g}"] if args.time_limit else []
        carry = []
        if self.carry:
            carry = (["--plans-out", str(self.carry.folder_of(self.ratio))]
                     + self.carry.options(self.ratio, self.formulations))
        return [[autotm or "autotm", "run"] + self._size() + ["--ratio", ratio_str(self.ratio),
                "--formulation", ",".join(self.formulations)] + self._device()
                + ["--cache", str(args.cache), "--turns", str(args.turns), "--iters", str(args.iters),
                   "--warmup", "1"] + limit + carry + ["--quiet", "-o", str(self.file), "--append"]]

    def done(self, res):
        """A comparison at this ratio in RES that compared every one of the formulations, or the
        same list with some left out (a placement that cannot fit the limit is reported and left
        out: running again would not change that)."""
        want = set(self.formulations)
        key = norm_ratio(*self.ratio)
        for c in comparisons(res.runs):
            if c.ratio != key:
                continue
            if c.has(*want) or (set(c.runs) <= want and c.size == len(want)):
                return True
        return False


class Plan(Task):
    """One placement planned from an estimated profile, not run: 'autotm plan --estimate
    --results FILE --append' records its prediction with actual_runtime null."""

    def __init__(self, network, preset, file, formulation, ratio, carry=None, **kw):
        super().__init__(network, preset, file, ratio, **kw)
        self.formulation = formulation
        self.carry = carry

    def identity(self):
        return (str(self.file), "plan", self.formulation, Fraction(self.ratio[0], sum(self.ratio)))

    def label(self):
        return self._label(self.formulation + " (estimate)")

    def commands(self, autotm, args):
        limit = ["--time-limit", f"{args.time_limit:g}"] if args.time_limit else []
        # 'synchronous+recompute' is a run list's name; plan takes the formulation and
        # --recompute, and records the run as 'synchronous+recompute' (what done() counts)
        formulation, recompute = split_recompute(self.formulation)
        carry = []
        if self.carry:
            if not args.dry_run:
                self.carry.folder_of(self.ratio).mkdir(parents=True, exist_ok=True)
            carry = (["-o", str(self.carry.plan_file(self.ratio, self.formulation))]
                     + self.carry.options(self.ratio, (self.formulation,)))
        return [[autotm or "autotm", "plan", "--estimate"] + self._size() + ["--ratio", ratio_str(self.ratio),
                "--formulation", formulation] + (["--recompute"] if recompute else [])
                + self._device() + ["--cache", str(args.cache)] + limit + carry
                + ["--results", str(self.file), "--append", "--quiet"]]

    def done(self, res):
        return res.count(self.formulation, self.ratio, True) > 0


def tasks_for(args, network, preset, file, ratio, formulations, **kw):
    """One comparison of FORMULATIONS at RATIO, or with --estimate one plan of each."""
    kw.setdefault("pmem_dir", getattr(args, "pmem_dir", None))
    if getattr(args, "estimate", False):
        return [Plan(network, preset, file, f, ratio, emulate=getattr(args, "emulate", None), **kw)
                for f in formulations]
    return [Compare(network, preset, file, formulations, ratio,
                    emulate=getattr(args, "emulate", None), **kw)]


def grid(args, preset, formulations, extra=(), carry=False):
    """The tasks of every network: a comparison of FORMULATIONS at each of --ratios, then EXTRA
    ((ratio, formulations) comparisons, at a ratio --ratios does not list), into
    DATA/MACHINE/FOLDER/NETWORK-PRESET.json (the driver's folder in the registry). With CARRY
    the ratios run from the least fast memory up, each limit's plans kept in
    DATA/MACHINE/FOLDER/plans/NETWORK-PRESET/S_F/ and the next larger limit's started from them
    (Carry)."""
    ratios = sorted(args.ratios, key=fast_share) if carry else list(args.ratios)
    pairs = [(r, formulations) for r in ratios]
    pairs += [(r, fs) for r, fs in extra if norm_ratio(*r) not in {norm_ratio(*q) for q in args.ratios}]
    tasks = []
    for net in args.networks:
        file = args.folder / f"{net}-{preset}.json"
        kw = {}
        if carry:
            kw["carry"] = Carry(args.folder / "plans" / f"{net}-{preset}", ratios)
        for r, fs in pairs:
            tasks += tasks_for(args, net, preset, file, r, fs, **kw)
    return tasks


class ResultsReader:
    """Reads results files and says whether a task is already in one."""

    def contains(self, task):
        """Whether the task's comparison (or plan) is in its file (ResultsError: the file cannot
        be used, e.g. runs measured by an older driver)."""
        res = read(task.file, missing_ok=True)
        if res is None:
            return False
        if task.gpu in ("sim", "cuda"):
            # never mix a simulated GPU's runs with a real one's in one file
            want = task.gpu == "sim"
            for r in res.runs:
                if isinstance(r, dict) and isinstance(r.get("simulated"), bool) and r["simulated"] != want:
                    raise ResultsError(
                        f"{task.file}: holds {'simulated' if r['simulated'] else 'real'} GPU runs, and these are "
                        f"{'simulated' if want else 'real'}: give another --data or --machine")
        why = res.outdated()
        if why:
            raise ResultsError(f"{task.file} {why}: move it out of the data folder (the figures "
                               f"refuse it; this driver reads version {VERSION}) and run again")
        check_measured(res, "this driver")
        return task.done(res.drop_unusable())
# ---------------------------------------------------------------- options

PRESET_HELP = {
    "small": "every network sized to train a step on a 2-core, 24 GB machine",
    "paper": "the paper's batch sizes: hundreds of GB, so give --estimate on a machine that cannot hold them",
}


def make_parser(prog, description, epilog, presets, default_networks, default_ratios, quick_text,
                emulate=True, estimate=True, default_preset=None):
    p = argparse.ArgumentParser(
        prog=prog, description=description, epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=list(presets), default=None, metavar="|".join(presets),
                   help="size preset (default: %s): %s" % (
                       default_preset or list(presets)[0], "; ".join(f"{k}: {v}" for k, v in presets.items())))
    p.add_argument("--networks", type=parse_names, metavar="A,B,C",
                   help="networks of the zoo (default: %s)" % ",".join(default_networks))
    p.add_argument("--ratios", type=ratio_list, metavar="S:F,...",
                   help="slow:fast ratios, fast memory = the step's peak x F/(S+F) (default: %s)"
                        % ",".join(ratio_str(r) for r in default_ratios))
    p.add_argument("--quick", action="store_true", help=quick_text)
    p.add_argument("--turns", type=positive_int, metavar="N",
                   help="turns of every comparison (default 5; 2 with --quick): its placements are "
                        "trained in turns in one process, and the figures draw the median of the "
                        "per-turn ratios with their range")
    p.add_argument("--iters", type=positive_int, metavar="N",
                   help="measured steps of each placement per turn, after one warm-up step; a turn "
                        "keeps the fastest (default 3; 1 with --quick)")
    if estimate:
        p.add_argument("--estimate", action="store_true",
                       help="plan only, from an estimated (roofline) profile: 'autotm plan --estimate "
                            "--results FILE --append' records each placement's prediction with "
                            "actual_runtime null; for the paper's sizes on a machine that cannot run them")
    if emulate:
        p.add_argument("--emulate", default="optane", metavar="P",
                       help="what the slow tier is made to behave like: optane (default), cxl, numa, a tier "
                            "spec file, or none for the machine's real slow memory (PMM, CXL, a far node)")
        p.add_argument("--pmem-dir", metavar="DIR",
                       help="folder of the emulated slow tier, passed to autotm (default: autotm's, "
                            "/dev/shm/autotm-pmem-UID where /dev/shm is a tmpfs with room for the run, "
                            "else /tmp/autotm-pmem-UID with a warning: a disk's writeback would add to "
                            "the emulated cost; docs/tiers.md)")
    p.add_argument("--force", action="store_true",
                   help="run again (and append again) comparisons already in the data")
    p.add_argument("--data", metavar="DIR", help="data folder (default: %s)" % (REPO / "data"))
    p.add_argument("--machine", type=machine_name, metavar="NAME",
                   help="subfolder of the data folder for this machine (default: %s, from the CPU model "
                        "and count)" % default_machine())
    p.add_argument("--cache", metavar="FILE", help="profile cache (default: DATA/MACHINE/profiles.json)")
    p.add_argument("--autotm", metavar="PATH",
                   help="the autotm binary (default: $AUTOTM, else build-release/cli/autotm or build/cli/autotm "
                        "under the repository, else autotm on PATH)")
    p.add_argument("--time-limit", type=positive_float, metavar="S",
                   help="seconds each plan may take, passed to autotm (default: autotm's, 60)")
    p.add_argument("--dry-run", action="store_true", help="print the command lines, run nothing")
    p.add_argument("--stop-on-error", action="store_true", help="stop at the first failing run (default: go on)")
    p.add_argument("--verbose", action="store_true", help="show autotm's own output of every run")
    return p


def finish_args(parser, args, quick_networks, quick_ratios, default_networks, default_ratios):
    """Fill the defaults that depend on --quick; explicit options win over --quick."""
    if args.networks is None:
        args.networks = list(quick_networks if args.quick else default_networks)
    if args.ratios is None:
        args.ratios = list(quick_ratios if args.quick else default_ratios)
    if args.iters is None:
        args.iters = 1 if args.quick else 3
    if args.turns is None:
        args.turns = 2 if args.quick else 5
    if getattr(args, "estimate", False):
        args.turns = None                     # a plan alone is not run
    if getattr(args, "emulate", None) in ("none", ""):
        args.emulate = None
    elif getattr(args, "emulate", None) and not re.fullmatch(r"optane|cxl|numa", args.emulate):
        if not Path(args.emulate).is_file():
            parser.error(f"--emulate {args.emulate}: not optane, cxl, numa or none, and no such tier spec file")
        args.emulate = str(Path(args.emulate).resolve())
    args.data = Path(args.data).expanduser().resolve() if args.data else REPO / "data"
    args.machine = args.machine or default_machine()
    args.machine_dir = args.data / args.machine
    args.cache = Path(args.cache).expanduser().resolve() if args.cache else args.machine_dir / "profiles.json"
    return args


def check_networks(parser, zoo, networks):
    if zoo.networks is None:
        return
    bad = [n for n in networks if n not in zoo.networks]
    if bad:
        parser.error("unknown network%s %s; the zoo has: %s" % (
            "s" if len(bad) > 1 else "", ", ".join(bad), ", ".join(sorted(zoo.networks))))


def warn_big_preset(preset, estimate):
    mem = mem_total_bytes()
    if not estimate and preset in ("paper", "large") and mem is not None and mem < 512 * 2**30:
        say(f"warning: the {preset} preset needs hundreds of GB for one step and this machine has "
            f"{mem / 2**30:.0f} GiB: give --estimate to plan it without running it")


# ---------------------------------------------------------------- the loop

class _Signals:
    """SIGINT and SIGTERM: end the running autotm call at once (it stops within a fraction of a
    second with exit 130, keeping every file it wrote before), then stop."""

    def __init__(self):
        self.child = None
        self.count = 0
        self.signum = None

    def handler(self, signum, frame):
        self.count += 1
        self.signum = self.signum or signum
        child = self.child
        if child is not None and child.poll() is None:
            # Ctrl-C at a terminal reaches autotm too; a signal to this process alone (kill, a
            # job scheduler) is passed on, so that either way the call ends now
            if self.count == 1:
                say("\ninterrupted: ending the current autotm call")
            try:
                child.send_signal(signal.SIGINT)
            except OSError:
                pass
            return
        raise Interrupted()

    def install(self):
        signal.signal(signal.SIGINT, self.handler)
        signal.signal(signal.SIGTERM, self.handler)


def _tail(fh, n):
    fh.seek(0)
    lines = fh.read().decode("utf-8", errors="replace").splitlines()
    return [l for l in lines if l.strip()][-n:]


def _call(cmd, signals, verbose):
    """Run one autotm call; returns (exit status, last lines of stderr, or of stdout when stderr is empty)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        if verbose:
            proc = subprocess.Popen(cmd, env=autotm_env(), stdout=sys.stderr, stderr=err)
        else:
            proc = subprocess.Popen(cmd, env=autotm_env(), stdout=out, stderr=err)
        signals.child = proc
        try:
            while True:
                try:
                    rc = proc.wait()
                    break
                except InterruptedError:
                    continue
        finally:
            signals.child = None
        tail = _tail(err, 8)
        if verbose:
            for line in tail:
                say("  " + line)
        if not tail and not verbose:
            tail = _tail(out, 8)
    return rc, tail


def _check_recorded(reader, task, warned):
    """After a successful call, say (once per file) when its record cannot be found in the file."""
    if str(task.file) in warned:
        return
    try:
        found = reader.contains(task)
    except ResultsError as e:
        found, why = False, str(e)
    else:
        why = "no comparison of these placements at this ratio"
    if not found:
        warned.add(str(task.file))
        say(f"warning: autotm ended well but {task.file} does not show it ({why}): "
            "it will be run again next time")


def execute(name, args, tasks, header_lines=()):
    """Run (or skip, or print) every task, with progress and a summary; returns the exit status."""
    # the same task asked twice runs once
    seen, unique = set(), []
    for t in tasks:
        if t.identity() not in seen:
            seen.add(t.identity())
            unique.append(t)
    tasks = unique
    reader = ResultsReader()
    autotm = args.autotm_path
    t_start = time.monotonic()

    # what the data holds now: a task in it is skipped, one whose file cannot be used fails
    todo, in_data, n_tasks = [], [], len(tasks)
    for t in tasks:
        try:
            if not args.force and reader.contains(t):
                in_data.append(t)
                continue
        except ResultsError as e:
            todo.append((t, e))
            continue
        todo.append((t, None))
    n = len(todo)
    pending = sum(1 for t in todo if t[1] is None)
    estimate = getattr(args, "estimate", False)
    what = "plan" if estimate else "comparison"
    what += "" if n_tasks == 1 else "s"
    turns = "" if estimate else f" ({args.turns} turns of {args.iters} step{'s' if args.iters > 1 else ''})"
    say(f"{name}: {n_tasks} {what}{turns}, {len(in_data)} in the data, {pending} to go, on {args.machine}")
    say(f"  results in {args.machine_dir}; profile cache {args.cache}")
    for line in header_lines:
        say("  " + line)
    say(f"  autotm: {autotm or 'not found'}")
    for t in in_data:
        say(f"skip {t.label()} (in data)")

    if not args.dry_run:
        for d in sorted({t.file.parent for t in tasks} | {args.cache.parent}):
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError as e:
                say(f"error: cannot make the folder {d}: {e}")
                return EXIT_FAILED

    signals = _Signals()
    signals.install()
    done, skipped, failed, durations = 0, len(in_data), [], []
    file_errors, unrecognised = set(), set()
    interrupted = False
    width = len(str(n))
    try:
        for i, (task, error) in enumerate(todo, 1):
            pos = f"{i:>{width}}/{n}"
            label = task.label()
            if error is not None:
                if str(error) in file_errors:
                    say(f"[{pos}] {label} ... not run: {task.file} cannot be used (above)")
                    failed.append((task, None, []))
                else:
                    file_errors.add(str(error))
                    say(f"[{pos}] {label} ... not run: {error}")
                    failed.append((task, None, [str(error)]))
                if args.stop_on_error:
                    break
                continue
            cmds = task.commands(autotm, args)
            if args.dry_run:
                for cmd in cmds:
                    print("OMP_WAIT_POLICY=passive " + shlex.join(cmd), flush=True)
                done += 1
                continue
            sys.stderr.write(f"[{pos}] {label} ..." + ("\n" if args.verbose else " "))
            sys.stderr.flush()
            t0 = time.monotonic()
            for cmd in cmds:
                rc, tail = _call(cmd, signals, args.verbose)
                if rc != 0:
                    break
            dt = time.monotonic() - t0
            pending -= 1
            if rc != 0 and (signals.count or rc in (130, -signal.SIGINT, -signal.SIGTERM)):
                say(f"interrupted after {fmt_seconds(dt)}")
                interrupted = True
                break
            if rc == 0 and signals.count:
                done += 1
                say(f"{fmt_seconds(dt)} (done; stopping: interrupted)")
                interrupted = True
                break
            durations.append(dt)
            left = ""
            if pending > 0:
                left = f", {fmt_left(sum(durations) / len(durations) * pending)} left"
            if rc == 0:
                done += 1
                say(f"{fmt_seconds(dt)}{left}")
                _check_recorded(reader, task, unrecognised)
            else:
                why = f"exit {rc}" if rc > 0 else f"signal {-rc}"
                say(f"FAILED ({why}) after {fmt_seconds(dt)}{left}")
                for line in tail[-3:]:
                    say("    " + line)
                failed.append((task, cmd, tail))
                if args.stop_on_error:
                    say("stopping at the first failure (--stop-on-error)")
                    break
    except Interrupted:
        interrupted = True
        say("\ninterrupted")

    total = time.monotonic() - t_start
    say("")
    if args.dry_run:
        say(f"{name}: dry run: {done} to run, {skipped} in data, {len(failed)} unusable files, of {n_tasks}")
    else:
        say(f"{name}: {n_tasks} {what}: {done} done, {skipped} in the data, "
            f"{len(failed)} failed{', interrupted' if interrupted else ''}, in {fmt_seconds(total)}")
    for task, cmd, tail in failed:
        if cmd is None and not tail:
            continue                          # the same unusable file as a task above
        say(f"  failed: {task.label()}")
        if cmd:
            say("    " + "OMP_WAIT_POLICY=passive " + shlex.join(cmd))
        for line in tail[-5:]:
            say("    | " + line)
    if interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else EXIT_OK


def main(name, parser, build, quick_networks, quick_ratios, default_networks, default_ratios,
         validate=None, header=None):
    """Parse the options, build the tasks with build(args, zoo) and execute them: NAME is the
    driver's experiment in the registry, whose folder of DATA/MACHINE/ (args.folder) it writes."""
    args = parser.parse_args()
    finish_args(parser, args, quick_networks, quick_ratios, default_networks, default_ratios)
    args.folder = args.machine_dir / registry.experiment(name).folder
    if validate:
        validate(parser, args)
    args.autotm_path = find_autotm(args.autotm, args.dry_run)
    zoo = Zoo(args.autotm_path)
    check_networks(parser, zoo, args.networks)
    runs = build(args, zoo)
    lines = header(args) if header else ()
    try:
        return execute(name, args, runs, lines)
    except KeyboardInterrupt:
        say("\ninterrupted")
        return EXIT_INTERRUPTED
