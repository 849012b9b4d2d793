#!/usr/bin/python3
"""inception.py -- Inception v4 over 18 memory ratios: Figure 10 (a, b, c).

Per limit, one comparison of all-fast and the static and synchronous ILPs,
trained in turns in one process, at fast fractions f = 1, 3/4, 2/3, 1/2, 1/3,
1/4, ..., 1/10, 1/20, 1/40, 1/60, 1/80, 1/100, 0 of the step's peak, written as
slow:fast ratios (1-f):f in integers (f = 3/4 -> 1:3, 1/5 -> 4:1, 0 -> 1:0).
The results go into the same files as conventional.py's
(DATA/MACHINE/cpu/NETWORK-PRESET.json): a limit conventional.py has compared
already (its comparisons hold all three) is not compared again.

The limits are planned from the least fast memory up: each limit's plans are
kept in DATA/MACHINE/cpu/plans/NETWORK-PRESET/S_F/FORMULATION.json (--plans-out)
and start the next larger limit's (--start), so that a static or synchronous
plan is never predicted slower than the one found with less memory. A limit
already in the data is skipped and its kept plans still start the next.
"""

import sys
from fractions import Fraction

import common  # first: it puts python/ on the module path
from autotm_results.ratios import fraction_ratio, ratio_str

FAST_FRACTIONS = ([Fraction(1), Fraction(3, 4), Fraction(2, 3)]
                  + [Fraction(1, d) for d in (2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 40, 60, 80, 100)]
                  + [Fraction(0)])
DEFAULT_RATIOS = [fraction_ratio(f) for f in FAST_FRACTIONS]
# f = 1, 1/2, 1/5, and 0
QUICK_RATIOS = [(0, 1), (1, 1), (4, 1), (1, 0)]
FORMULATIONS = ("all-fast", "static", "synchronous")

EPILOG = """\
the 18 ratios (slow:fast) and their fast fractions:
  %s
per limit, least fast memory first: autotm run --formulation all-fast,static,synchronous
  --turns N --plans-out PLANS/S_F --start (the next smaller limit's static and synchronous plans)
--quick: tiny_cnn at 0:1, 1:1, 4:1 and 1:0, 2 turns of 1 step.

data: DATA/MACHINE/cpu/NETWORK-PRESET.json, shared with conventional.py
exit status: 0 all done or in data, 1 a run failed, 2 bad usage, 130 interrupted
""" % "\n  ".join(
    ", ".join(f"{ratio_str(r)} ({f})" for r, f in
              zip(DEFAULT_RATIOS[i:i + 6], FAST_FRACTIONS[i:i + 6]))
    for i in range(0, len(DEFAULT_RATIOS), 6))


def build(args, zoo):
    preset = args.preset or "small"
    common.warn_big_preset(preset, args.estimate)
    return common.grid(args, preset, FORMULATIONS, carry=True)


def main():
    parser = common.make_parser(
        "inception.py", __doc__.split("\n\n", 1)[1].strip(), EPILOG, common.PRESET_HELP,
        ("inception_v4",), DEFAULT_RATIOS,
        "CI: network tiny_cnn, ratios 0:1,1:1,4:1,1:0, --turns 2 --iters 1")
    return common.main("inception", parser, build, ("tiny_cnn",), QUICK_RATIOS,
                       ("inception_v4",), DEFAULT_RATIOS)


if __name__ == "__main__":
    sys.exit(main())
