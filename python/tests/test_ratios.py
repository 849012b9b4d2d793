"""test_ratios -- parsing, lowest terms, comparison and labels of slow:fast ratios."""

import unittest
from fractions import Fraction

from autotm_results.ratios import (fast_fraction, fraction_ratio, norm_ratio, parse_ratio,
                                   parse_ratios, ratio_label, ratio_str, same_ratio)


class ParseTest(unittest.TestCase):
    def test_ratios_parse_as_written(self):
        self.assertEqual(parse_ratio("8:1"), (8, 1))
        self.assertEqual(parse_ratio(" 4 : 2 "), (4, 2))
        self.assertEqual(parse_ratio("1:0"), (1, 0))
        self.assertEqual(parse_ratio("0:1"), (0, 1))

    def test_ratios_parse_refuses_what_is_not_one(self):
        for text in ("x", "8", "8:1:1", "-1:2", "1.5:1", "", "8;1"):
            with self.subTest(text=text), self.assertRaisesRegex(ValueError, "write slow:fast"):
                parse_ratio(text)
        with self.assertRaisesRegex(ValueError, "bad ratio '0:0': slow and fast cannot both be 0"):
            parse_ratio("0:0")

    def test_ratios_list_drops_repeats_as_written(self):
        self.assertEqual(parse_ratios("8:1,2:2,8:1"), [(8, 1), (2, 2)])

    def test_ratios_list_normalized_drops_equal_ratios(self):
        self.assertEqual(parse_ratios("2:2,1:1,16:2", normalize=True), [(1, 1), (8, 1)])

    def test_ratios_list_refuses_empty_entries(self):
        with self.assertRaisesRegex(ValueError, "an empty entry"):
            parse_ratios("8:1,,4:1")
        with self.assertRaisesRegex(ValueError, "bad ratio 'x'"):
            parse_ratios("8:1,x")


class NormTest(unittest.TestCase):
    def test_ratios_norm_lowest_terms(self):
        self.assertEqual(norm_ratio(2, 2), (1, 1))
        self.assertEqual(norm_ratio(16, 2), (8, 1))
        self.assertEqual(norm_ratio(0, 5), (0, 1))
        self.assertEqual(norm_ratio(3, 0), (1, 0))
        self.assertEqual(norm_ratio(0.5, 0.25), (2, 1))

    def test_ratios_norm_none_without_a_ratio(self):
        for s, f in ((None, 1), (1, None), (0, 0), (-1, 1), (1, -1)):
            with self.subTest(s=s, f=f):
                self.assertIsNone(norm_ratio(s, f))

    def test_ratios_same_as_fractions(self):
        self.assertTrue(same_ratio((1, 1), 2, 2))
        self.assertTrue(same_ratio((8, 1), 8.0, 1.0))
        self.assertTrue(same_ratio((1, 0), 1, 0))
        self.assertFalse(same_ratio((8, 1), 4, 1))
        self.assertFalse(same_ratio((1, 1), True, True))
        self.assertFalse(same_ratio((1, 1), None, None))
        self.assertFalse(same_ratio((1, 1), -1, -1))
        self.assertFalse(same_ratio((1, 1), 0, 0))


class FormatTest(unittest.TestCase):
    def test_ratios_fast_fraction(self):
        self.assertEqual(fast_fraction((1, 0)), 0)
        self.assertEqual(fast_fraction((0, 1)), 1)
        self.assertAlmostEqual(fast_fraction((4, 1)), 0.2)

    def test_ratios_from_fast_fraction(self):
        self.assertEqual(fraction_ratio(Fraction(3, 4)), (1, 3))
        self.assertEqual(fraction_ratio(Fraction(1, 5)), (4, 1))
        self.assertEqual(fraction_ratio(Fraction(0)), (1, 0))
        self.assertEqual(fraction_ratio(Fraction(1)), (0, 1))

    def test_ratios_text_and_labels(self):
        self.assertEqual(ratio_str((8, 1)), "8:1")
        self.assertEqual(ratio_label((8, 1)), "8:1")
        self.assertEqual(ratio_label((1, 0)), "1:0 (all slow)")
        self.assertEqual(ratio_label((0, 1)), "0:1 (all fast)")
        self.assertEqual(ratio_label((0, 1), long=False), "0:1")
        self.assertEqual(ratio_label(None), "no ratio")


if __name__ == "__main__":
    unittest.main()
