"""test_values -- numbers as results files and command lines hold them."""

import argparse
import contextlib
import io
import unittest

from autotm_results.values import argtype, is_num, is_positive, positive_float


class NumberTest(unittest.TestCase):
    def test_values_is_num_finite_reals_only(self):
        for x in (0, 1, -2, 1.5):
            self.assertTrue(is_num(x), x)
        for x in (True, False, float("nan"), float("inf"), "1", None, [1]):
            self.assertFalse(is_num(x), x)

    def test_values_is_positive(self):
        self.assertTrue(is_positive(0.25))
        for x in (0, -1, None, True, float("inf")):
            self.assertFalse(is_positive(x), x)

    def test_values_positive_float(self):
        self.assertEqual(positive_float("2.5"), 2.5)
        for text in ("0", "-1", "nan", "inf", "x", ""):
            with self.subTest(text=text), \
                    self.assertRaisesRegex(ValueError, f"'{text}' is not a positive number of s"):
                positive_float(text, "number of seconds")


class ArgtypeTest(unittest.TestCase):
    def test_values_argtype_shows_the_message(self):
        p = argparse.ArgumentParser(prog="prog")
        p.add_argument("--limit", type=argtype(positive_float, "number of seconds"))
        self.assertEqual(p.parse_args(["--limit", "3"]).limit, 3.0)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            p.parse_args(["--limit", "-3"])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("argument --limit: '-3' is not a positive number of seconds", err.getvalue())


if __name__ == "__main__":
    unittest.main()
