"""comparisons -- placements measured side by side: the runs of one `autotm run --formulation
A,B,C --turns N` (docs/comparisons.md), paired turn by turn.

A ratio of two measured steps is only worth drawing when both were measured in the same
process, in turns: the runs of such a comparison share a `comparison` id and keep every turn's
step (`actual_runtimes`). turn_ratios pairs turn t of one run with turn t of another; the
figures draw the median of those ratios with their range (spread). Runs measured one process
each (the drivers before comparisons) have no `comparison` and are refused (check_measured).
"""

from collections import namedtuple

from .ratios import norm_ratio
from .results import ResultsError
from .values import is_num, is_positive

# the median of some values and their least and largest; turns: how many (0: a prediction)
Spread = namedtuple("Spread", "median low high turns")


def median(values):
    """median -- the middle value of VALUES (the mean of the two middle ones for an even count),
    as autotm takes the median of a run's turns"""
    xs = sorted(values)
    if not xs:
        raise ValueError("median of no values")
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def spread(values):
    """spread -- VALUES (one per turn) as a Spread: their median, least, largest and count"""
    xs = list(values)
    return Spread(median(xs), min(xs), max(xs), len(xs))


def exact(value):
    """exact -- one value (a prediction) as a Spread without a range"""
    return Spread(value, value, value, 0)


def comparison_id(run):
    """comparison_id -- the id shared by the runs of one comparison; None for a run alone"""
    c = run.get("comparison")
    return c if isinstance(c, str) and c else None


def turn_times(run):
    """turn_times -- a run's step time of every turn, in turn order (none when it was not run)"""
    ts = run.get("actual_runtimes")
    return list(ts) if isinstance(ts, list) else []


def _name(run):
    return run.get("formulation") or "a run"


def turn_ratios(run_a, run_b):
    """turn_ratios -- per turn t, RUN_A's step over RUN_B's step in the same turn: the runs must
    be of one comparison, with as many turns each (ResultsError naming what is wrong)"""
    a, b = _name(run_a), _name(run_b)
    ca, cb = comparison_id(run_a), comparison_id(run_b)
    for name, c in ((a, ca), (b, cb)):
        if c is None:
            raise ResultsError(f"{name} was not measured in a comparison (no 'comparison' id): "
                               "its turns cannot be paired")
    if ca != cb:
        raise ResultsError(f"{a} and {b} are of different comparisons ({ca} and {cb}): only "
                           "steps measured in the same process pair turn by turn")
    ta, tb = turn_times(run_a), turn_times(run_b)
    if len(ta) != len(tb):
        raise ResultsError(f"{a} has {len(ta)} turns and {b} {len(tb)} in comparison {ca}")
    if not ta:
        raise ResultsError(f"{a} and {b} have no measured turns (actual_runtimes) in "
                           f"comparison {ca}")
    for name, ts in ((a, ta), (b, tb)):
        if not all(is_positive(t) for t in ts):
            raise ResultsError(f"{name} has a turn without a positive step time in comparison "
                               f"{ca}: {ts}")
    return [x / y for x, y in zip(ta, tb)]


def measured_without_comparison(run):
    """measured_without_comparison -- a run with a measured step but no comparison id: written by
    a driver that measured every placement in a process of its own"""
    return is_num(run.get("actual_runtime")) and comparison_id(run) is None


def check_measured(results, rerun="its driver"):
    """check_measured -- RESULTS (a results.Results) holds no measured run outside a comparison;
    ResultsError saying to rerun (RERUN: the driver) otherwise"""
    old = [r for r in results.runs if isinstance(r, dict) and measured_without_comparison(r)]
    if old:
        raise ResultsError(
            f"{results.path}: {len(old)} run(s) measured one process each, not side by side in a "
            f"comparison (no 'comparison' id: written by an older driver); move the file out of "
            f"the data folder and rerun {rerun}")
    return results


class Comparison:
    """The runs of one comparison: its id, its ratio in lowest terms (None when no run has one,
    e.g. managed alone), its runs by formulation, and how many turns."""

    def __init__(self, cid, runs):
        self.id = cid
        self.runs = {}
        for r in runs:
            self.runs[r.get("formulation")] = r
        ratios = [norm_ratio(r.get("ratio_slow"), r.get("ratio_fast")) for r in runs]
        ratios = [k for k in ratios if k is not None]
        self.ratio = ratios[0] if ratios else None
        sizes = [r.get("comparison_size") for r in runs if is_num(r.get("comparison_size"))]
        self.size = int(sizes[0]) if sizes else len(runs)
        self.turns = max((len(turn_times(r)) for r in runs), default=0)

    def has(self, *formulations):
        """has -- every one of FORMULATIONS was compared (and measured) here"""
        return all(f in self.runs for f in formulations)

    def ratio_of(self, num, den):
        """ratio_of -- NUM's step over DEN's (formulations), turn by turn, as a Spread"""
        return spread(turn_ratios(self.runs[num], self.runs[den]))


def comparisons(runs):
    """comparisons -- the comparisons among RUNS (dicts), in the order of their first runs"""
    groups = {}
    for r in runs:
        if isinstance(r, dict) and comparison_id(r) is not None:
            groups.setdefault(comparison_id(r), []).append(r)
    return [Comparison(cid, rs) for cid, rs in groups.items()]


def latest(comps, ratio, *formulations):
    """latest -- the last of COMPS at RATIO (lowest terms; None: any) that compared every one of
    FORMULATIONS; None when there is none"""
    for c in reversed(comps):
        if (ratio is None or c.ratio == ratio) and c.has(*formulations):
            return c
    return None


def absolute_error(run):
    """absolute_error -- 100 x (predicted - measured) / measured step of RUN as a Spread: its
    median from actual_runtime (the median of the turns), its range from the turns; None without
    both. The prediction is the one with the machine's drift where the comparison knew it
    (predicted_runtime_drift), else the plan's own"""
    p, a = run.get("predicted_runtime_drift"), run.get("actual_runtime")
    if not is_positive(p):
        p = run.get("predicted_runtime")
    if not (is_positive(p) and is_positive(a)):
        return None
    ts = [t for t in turn_times(run) if is_positive(t)] or [a]
    errs = [100.0 * (p - t) / t for t in ts]
    return Spread(100.0 * (p - a) / a, min(errs), max(errs), len(ts))


def slowdown_error(run):
    """slowdown_error -- 100 x (predicted - measured) / measured slowdown of RUN against all-fast
    in its comparison (slowdown_error) as a Spread, its range from measured_slowdown_range; None
    when the run has none"""
    e, ps = run.get("slowdown_error"), run.get("predicted_slowdown")
    if not is_num(e):
        return None
    rng = run.get("measured_slowdown_range")
    if (is_positive(ps) and isinstance(rng, list) and len(rng) == 2
            and all(is_positive(m) for m in rng)):
        errs = [100.0 * (ps - m) / m for m in rng]
        lo, hi = min(errs), max(errs)
    else:
        lo = hi = 100.0 * e
    return Spread(100.0 * e, min(lo, 100.0 * e), max(hi, 100.0 * e), len(turn_times(run)))


def error_stats(errors):
    """error_stats -- the mean and the largest |error| of ERRORS (numbers, or Spreads by their
    medians), and how many; None for none"""
    xs = [abs(e.median if isinstance(e, Spread) else e) for e in errors if e is not None]
    if not xs:
        return None
    return (sum(xs) / len(xs), max(xs), len(xs))
