"""values -- numbers as the results files and the command lines hold them."""

import argparse
import math


def is_num(x):
    """is_num -- a finite int or float, not a bool (JSON's true is not a number)"""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_positive(x):
    """is_positive -- a number above zero (a step time that was measured or predicted)"""
    return is_num(x) and x > 0


def positive_float(text, what="number"):
    """positive_float -- TEXT as a finite number above zero; ValueError naming WHAT otherwise"""
    try:
        x = float(text)
    except (TypeError, ValueError):
        x = float("nan")
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"'{text}' is not a positive {what}")
    return x


def argtype(parse, *extra):
    """argtype -- PARSE(text, *EXTRA) as an argparse type: its ValueError's message is what
    argparse prints (a plain ValueError would print only 'invalid value')"""
    def convert(text):
        try:
            return parse(text, *extra)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    convert.__name__ = getattr(parse, "__name__", "value")
    return convert
