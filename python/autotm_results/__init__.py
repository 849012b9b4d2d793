"""autotm_results -- what the experiment drivers and the figure scripts share.

    ratios    slow:fast ratios: parsing, lowest terms, labels, fast fractions
    values    numbers as the results files and the command lines hold them
    results   reading and checking results files ("autotm-results", version 2)
    comparisons  placements measured side by side: pairing their turns (turn_ratios)
    targets   the figures' own summary: how tight the measured ratios were
    registry  the experiments and the figures: which driver writes which data
              folder, which plot script draws which images from it

Python 3 standard library only (run with /usr/bin/python3). The scripts of
experiments/ and plots/ find this package through their common.py, which puts
python/ (this folder's parent) on the module path; anything else sets
PYTHONPATH=python, as scripts/figures.sh does.
"""

from .comparisons import turn_ratios  # noqa: E402,F401

__all__ = ["turn_ratios"]
