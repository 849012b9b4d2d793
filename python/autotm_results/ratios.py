"""ratios -- slow:fast ratios: the fast-memory limit is the step's peak x F/(S+F).

A ratio as written is a pair (S, F) of non-negative integers, not both 0:
8:1 is a ninth of the peak, 0:1 all of it (all fast), 1:0 the least any plan
needs (all slow). The drivers pass ratios to autotm as written; the figures key
runs by the ratio in lowest terms (norm_ratio), so 2:2 and 1:1 are one point.
"""

import re
from fractions import Fraction

from .values import is_num

ALL_SLOW = (1, 0)
ALL_FAST = (0, 1)


def parse_ratio(text):
    """parse_ratio -- '8:1' -> (8, 1): non-negative integers, not both 0 (ValueError otherwise)"""
    m = re.fullmatch(r"\s*(\d+)\s*:\s*(\d+)\s*", text)
    if not m:
        raise ValueError(f"bad ratio '{text}': write slow:fast with non-negative integers, "
                         "e.g. 8:1, 1:1, 0:1 (all fast), 1:0 (all slow)")
    s, f = int(m.group(1)), int(m.group(2))
    if s == 0 and f == 0:
        raise ValueError(f"bad ratio '{text}': slow and fast cannot both be 0")
    return (s, f)


def parse_ratios(text, normalize=False):
    """parse_ratios -- 'S:F,S:F,...' -> [(S, F), ...] without repeats, as written or (NORMALIZE)
    in lowest terms"""
    out = []
    for part in text.split(","):
        if not part.strip():
            raise ValueError(f"bad ratio list '{text}': an empty entry (write e.g. 8:1,4:1,1:1)")
        r = parse_ratio(part)
        if normalize:
            r = norm_ratio(*r)
        if r not in out:
            out.append(r)
    return out


def norm_ratio(s, f):
    """norm_ratio -- S:F (numbers, as a results file holds them) in lowest terms as a pair of
    ints; None when there is no ratio (either is None, negative, or both 0)"""
    if s is None or f is None:
        return None
    fs, ff = Fraction(s), Fraction(f)
    if fs < 0 or ff < 0 or (fs == 0 and ff == 0):
        return None
    if fs == 0:
        return ALL_FAST
    if ff == 0:
        return ALL_SLOW
    q = (fs / ff).limit_denominator(10000)
    return (q.numerator, q.denominator)


def same_ratio(r, slow, fast):
    """same_ratio -- slow:fast (numbers from a file) is the ratio r = (S, F), compared as
    fractions: 2:2 is 1:1"""
    if not (is_num(slow) and is_num(fast)) or slow < 0 or fast < 0 or slow + fast <= 0:
        return False
    s, f = r
    return abs(s * fast - f * slow) <= 1e-9 * max(1.0, s * fast, f * slow)


def fast_fraction(r):
    """fast_fraction -- F/(S+F): 0 all slow, 1 all fast (the figures' order of ratios)"""
    s, f = r
    return f / (s + f)


def fraction_ratio(f):
    """fraction_ratio -- a fast fraction f in [0, 1] as S:F = (1-f):f in integers
    (3/4 -> 1:3, 1/5 -> 4:1, 0 -> 1:0)"""
    f = Fraction(f)
    return (f.denominator - f.numerator, f.numerator)


def ratio_str(r):
    """ratio_str -- (8, 1) -> '8:1', as autotm's --ratio takes it"""
    return f"{r[0]}:{r[1]}"


def ratio_label(r, long=True):
    """ratio_label -- a ratio for a figure: '8:1', and with LONG '1:0 (all slow)', '0:1 (all
    fast)'; 'no ratio' for None"""
    if r is None:
        return "no ratio"
    text = ratio_str(r)
    if long and r == ALL_SLOW:
        text += " (all slow)"
    elif long and r == ALL_FAST:
        text += " (all fast)"
    return text
