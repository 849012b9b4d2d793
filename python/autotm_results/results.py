"""results -- reading and checking results files: one workload's runs, appended.

autotm writes them (`autotm run -o FILE --append`, `autotm plan --results FILE
--append`); the README's "Results JSON" lists every field. A file is an
"autotm-results" document of version 2: the workload (name, batch, preset,
image), io_size, default_alloc_size, gpu_managed_runtime, the machine, and
`runs`, each with its formulation, ratio_slow and ratio_fast (null without a
ratio), estimated_profile, predicted_runtime and, once run, actual_runtime.

What the drivers and the figures read of a run goes through the functions
here (run_ratio, run_key; a comparison's turns in comparisons.py), so that a field added to the format is
read in one place: its accessor here and its check in Results.check.
"""

import json
import os
import sys

from .ratios import norm_ratio, same_ratio
from .values import is_num, is_positive

FORMAT = "autotm-results"
VERSION = 2
# an ILP formulation with recomputation (autotm --recompute) is named with this suffix in a run
# list and in its runs: "synchronous+recompute"
RECOMPUTE = "+recompute"

JSON_TYPES = {dict: "object", list: "array", str: "string", int: "number", float: "number",
              bool: "boolean", type(None): "null"}


class ResultsError(Exception):
    """A results file that cannot be used; the message names the file and what is wrong."""


def print_lines(who, lines):
    """print_lines -- every string of LINES() printed, as the command WHO answers: exit status 0,
    or 1 with a ResultsError's message on stderr (what was printed before it stays)"""
    try:
        for line in lines():
            print(line)
    except ResultsError as e:
        print(f"{who}: {e}", file=sys.stderr)
        return 1
    return 0


def read(path, missing_ok=False):
    """read -- the results file at PATH, checked to be one (format, 'runs' a list) but of any
    version; None when it does not exist and MISSING_OK"""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except FileNotFoundError as e:
        if missing_ok:
            return None
        raise ResultsError(f"{path}: cannot be read: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{path}: not a results file: invalid JSON at line {e.lineno}, "
                           f"column {e.colno} ({e.msg})") from None
    except RecursionError:
        raise ResultsError(f"{path}: not a results file: JSON nested too deeply") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ResultsError(f"{path}: cannot be read: {e}") from None
    if not isinstance(doc, dict):
        raise ResultsError(f"{path}: not a results file: a JSON {JSON_TYPES.get(type(doc), '?')}, "
                           f"expected an \"{FORMAT}\" document")
    if doc.get("format") != FORMAT:
        raise ResultsError(f"{path}: not a results file: format {json.dumps(doc.get('format'))}, "
                           f"expected \"{FORMAT}\" (move it out of the data folder)")
    if not isinstance(doc.get("runs", []), list):
        raise ResultsError(f"{path}: not a results file: 'runs' is not a list")
    return Results(path, doc)


def results_files(folder):
    """results_files -- the .json files of FOLDER, sorted (none when there is no such folder)"""
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, f) for f in os.listdir(folder)
                  if f.endswith(".json") and os.path.isfile(os.path.join(folder, f)))


def warning(msg):
    """warning -- MSG on stderr as a warning: how a run (or a row) left out of a table or a
    figure is reported, one line each"""
    print(f"warning: {msg}", file=sys.stderr)


def network_mismatch(path, workload):
    """network_mismatch -- why the file name of PATH and its WORKLOAD name two networks (the
    drivers name a file NETWORK-PRESET.json, or NETWORK-PRESET-bBATCH.json, NETWORK-PRESET-GPU.json:
    the network then the preset), naming both; None when they agree or the workload names no
    network"""
    name = workload.get("name") if isinstance(workload, dict) else None
    if not isinstance(name, str) or not name:
        return None
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem == name or stem.startswith(name + "-"):
        return None
    preset = workload.get("preset")
    said = stem.split("-")[0]
    if isinstance(preset, str) and preset:
        for i in range(len(stem)):  # the network is what comes before "-PRESET" ("-" or the end)
            if stem.startswith("-" + preset, i) and stem[i + 1 + len(preset):][:1] in ("", "-"):
                said = stem[:i]
                break
    return (f"the file name says network '{said}' but its workload is '{name}' (the drivers "
            "name a file NETWORK-PRESET.json): tabulated as its workload's")


def run_ratio(run):
    """run_ratio -- the run's ratio in lowest terms, None when its limit was not a ratio"""
    return norm_ratio(run.get("ratio_slow"), run.get("ratio_fast"))


def bad_measurement(run):
    """bad_measurement -- why RUN's measured step cannot be used (a NaN, zero, negative or
    non-number actual_runtime, or such a turn); None when it can or nothing was measured"""
    a = run.get("actual_runtime")
    if a is not None and not is_positive(a):
        return f"actual_runtime {a!r} is not a positive number"
    ts = run.get("actual_runtimes")
    if ts is not None and (not isinstance(ts, list) or not all(is_positive(t) for t in ts)):
        return f"actual_runtimes {ts!r} are not all positive numbers"
    return None


def split_recompute(formulation):
    """split_recompute -- FORMULATION without its '+recompute' suffix, and whether it had one:
    "synchronous+recompute" -> ("synchronous", True), "synchronous" -> ("synchronous", False)"""
    if formulation.endswith(RECOMPUTE) and len(formulation) > len(RECOMPUTE):
        return formulation[:-len(RECOMPUTE)], True
    return formulation, False


# a run's recomputation fields (docs/formats.md): kernels run again per step, the bytes they
# make, their time in the fastest measured step
RECOMPUTE_FIELDS = ("num_recomputed_kernels", "bytes_recomputed", "recompute_s")


def recomputed(run):
    """recomputed -- (kernels, bytes, seconds) RUN recomputed per step: its
    num_recomputed_kernels, bytes_recomputed and recompute_s (None for a field it lacks, as
    files written before recomputation do); None when it has none of them"""
    got = tuple(run.get(f) for f in RECOMPUTE_FIELDS)
    return None if all(v is None for v in got) else got


def run_key(run):
    """run_key -- what identifies a run in a figure: (formulation, ratio in lowest terms)"""
    return (run["formulation"], run_ratio(run))


class Results:
    """One results file: its path and document, and the runs in it."""

    def __init__(self, path, doc):
        self.path = path
        self.doc = doc

    @property
    def version(self):
        return self.doc.get("version")

    @property
    def workload(self):
        return self.doc.get("workload")

    @property
    def runs(self):
        return self.doc.get("runs") or []

    def check(self):
        """check -- a document of this version that a figure can draw: a workload object and a
        list of runs, each an object with a formulation; ResultsError otherwise"""
        if self.version != VERSION:
            raise ResultsError(f"{self.path}: '{FORMAT}' version {self.version!r}, expected "
                               f"version {VERSION} (move it out of the data folder and rerun "
                               "its driver)")
        if not isinstance(self.workload, dict):
            raise ResultsError(f"{self.path}: no 'workload' object")
        if not isinstance(self.doc.get("runs"), list):
            raise ResultsError(f"{self.path}: no 'runs' list")
        for i, run in enumerate(self.runs):
            if not isinstance(run, dict) or not isinstance(run.get("formulation"), str):
                raise ResultsError(f"{self.path}: run {i} has no formulation")
            for f in RECOMPUTE_FIELDS:
                v = run.get(f)
                if v is not None and (not is_num(v) or v < 0):
                    raise ResultsError(f"{self.path}: run {i} ({run['formulation']}): {f} "
                                       f"{v!r} is not a number of at least 0")
        return self.drop_unusable()

    def drop_unusable(self, warn=None):
        """drop_unusable -- leave out (in memory) the runs whose measured step cannot be used,
        and the other runs of their comparisons, saying so through WARN (default: on stderr)
        once per run left out; the figures then draw without them and the drivers measure
        their comparisons again"""
        warn = warn or warning
        runs = self.runs
        bad, ids = {}, set()
        for i, r in enumerate(runs):
            why = isinstance(r, dict) and bad_measurement(r)
            if why:
                bad[i] = why
                if isinstance(r.get("comparison"), str):
                    ids.add(r["comparison"])
        if not bad:
            return self
        kept = []
        for i, r in enumerate(runs):
            if i in bad:
                warn(f"{self.path}: run {i} ({r.get('formulation')}) left out: {bad[i]}")
            elif isinstance(r, dict) and r.get("comparison") in ids:
                warn(f"{self.path}: run {i} ({r.get('formulation')}) left out with its "
                     f"comparison {r['comparison']}, which has a run left out")
            else:
                kept.append(r)
        self.doc["runs"] = kept
        return self

    def outdated(self):
        """outdated -- why some of the runs are of an older version the drivers do not
        recognise as done (None: all current)"""
        if not isinstance(self.version, int) or isinstance(self.version, bool) or \
                self.version != VERSION:
            return f"is a version-{json.dumps(self.version)} results file"
        for r in self.runs:
            if isinstance(r, dict) and ("ratio_slow" not in r or "ratio_fast" not in r):
                return "has runs without ratio_slow/ratio_fast (an older version)"
        return None

    def count(self, formulation, ratio, estimated):
        """count -- the runs of FORMULATION at RATIO ((S, F) compared as a fraction; None: no
        ratio) that are planned from an estimated profile (ESTIMATED) or measured; runs of an
        older version (outdated) are not counted"""
        if not isinstance(self.version, int) or self.version < VERSION:
            return 0
        found = 0
        for r in self.runs:
            if not isinstance(r, dict) or "ratio_slow" not in r or "ratio_fast" not in r:
                continue
            if r.get("formulation") != formulation:
                continue
            if bool(r.get("estimated_profile")) != estimated:
                continue
            if not estimated and r.get("actual_runtime") is None:
                continue                      # planned, never run: not a measured run
            if ratio is None:
                found += r["ratio_slow"] is None and r["ratio_fast"] is None
            elif same_ratio(ratio, r["ratio_slow"], r["ratio_fast"]):
                found += 1
        return found
