"""test_comparisons -- placements measured side by side: pairing turns, refusing runs measured
one process each, the errors Figure 11 draws."""

import unittest

from autotm_results import turn_ratios
from autotm_results.comparisons import (Spread, absolute_error, check_measured, comparisons,
                                        error_stats, latest, median, slowdown_error, spread)
from autotm_results.results import Results, ResultsError


def crun(formulation, times, cid="c1", slow=4, fast=1, predicted=None, **more):
    """crun -- one run of a comparison as autotm writes it"""
    r = {"formulation": formulation, "ratio_slow": slow, "ratio_fast": fast,
         "comparison": cid, "turns": len(times), "actual_runtimes": list(times),
         "actual_runtime": median(times) if times else None, "predicted_runtime": predicted,
         "comparison_size": 3}
    r.update(more)
    return r


class TurnRatiosTest(unittest.TestCase):
    def test_turn_ratios_pair_turn_by_turn(self):
        a = crun("all-slow", [2.0, 3.0, 4.0])
        b = crun("static", [1.0, 2.0, 2.0])
        self.assertEqual(turn_ratios(a, b), [2.0, 1.5, 2.0])

    def test_turn_ratios_other_comparison(self):
        with self.assertRaisesRegex(ResultsError, "different comparisons"):
            turn_ratios(crun("static", [1.0, 2.0]), crun("all-fast", [1.0, 2.0], cid="c2"))

    def test_turn_ratios_turn_counts_differ(self):
        with self.assertRaisesRegex(ResultsError, "static has 3 turns and all-fast 2"):
            turn_ratios(crun("static", [1.0, 2.0, 3.0]), crun("all-fast", [1.0, 2.0]))

    def test_turn_ratios_run_alone(self):
        alone = {"formulation": "numa", "actual_runtime": 1.0}
        with self.assertRaisesRegex(ResultsError, "numa was not measured in a comparison"):
            turn_ratios(alone, crun("all-fast", [1.0]))

    def test_turn_ratios_no_turns(self):
        with self.assertRaisesRegex(ResultsError, "no measured turns"):
            turn_ratios(crun("static", []), crun("all-fast", []))

    def test_turn_ratios_bad_step(self):
        with self.assertRaisesRegex(ResultsError, "without a positive step"):
            turn_ratios(crun("static", [1.0, 0.0]), crun("all-fast", [1.0, 1.0]))


class SpreadTest(unittest.TestCase):
    def test_median_odd_and_even(self):
        self.assertEqual(median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(median([4.0, 1.0, 2.0, 3.0]), 2.5)

    def test_spread_median_least_largest(self):
        self.assertEqual(spread([1.2, 1.0, 1.1]), Spread(1.1, 1.0, 1.2, 3))


class ComparisonsTest(unittest.TestCase):
    def runs(self):
        return [crun("all-fast", [1.0, 1.0], slow=4, fast=1),
                crun("static", [1.1, 1.3], slow=8, fast=2),
                {"formulation": "static", "ratio_slow": 4, "ratio_fast": 1,
                 "predicted_runtime": 1.0, "actual_runtime": None},
                crun("all-fast", [1.0, 2.0], cid="c2", slow=1, fast=1),
                crun("static", [1.0, 2.2], cid="c2", slow=1, fast=1),
                crun("all-fast", [2.0, 2.0], cid="c3", slow=4, fast=1),
                crun("static", [2.0, 2.4], cid="c3", slow=4, fast=1)]

    def test_comparisons_group_by_id_in_order(self):
        cs = comparisons(self.runs())
        self.assertEqual([c.id for c in cs], ["c1", "c2", "c3"])
        self.assertEqual(cs[0].ratio, (4, 1))
        self.assertEqual(cs[1].ratio, (1, 1))
        self.assertEqual(cs[0].turns, 2)
        self.assertEqual(cs[0].size, 3)
        self.assertTrue(cs[0].has("all-fast", "static"))
        self.assertFalse(cs[0].has("synchronous"))

    def test_comparisons_ratio_of(self):
        s = comparisons(self.runs())[1].ratio_of("static", "all-fast")
        self.assertAlmostEqual(s.median, 1.05)
        self.assertAlmostEqual(s.low, 1.0)
        self.assertAlmostEqual(s.high, 1.1)

    def test_comparisons_latest_at_ratio(self):
        cs = comparisons(self.runs())
        self.assertEqual(latest(cs, (4, 1), "all-fast", "static").id, "c3")
        self.assertEqual(latest(cs, (1, 1), "static").id, "c2")
        self.assertIsNone(latest(cs, (8, 1), "static"))
        self.assertIsNone(latest(cs, (4, 1), "numa"))

    def test_comparisons_managed_has_no_ratio(self):
        runs = [{"formulation": "managed", "ratio_slow": None, "ratio_fast": None,
                 "comparison": "g", "actual_runtimes": [1.0]},
                crun("synchronous", [0.5], cid="g", slow=1, fast=8)]
        self.assertEqual(comparisons(runs)[0].ratio, (1, 8))


class CheckMeasuredTest(unittest.TestCase):
    def results(self, runs):
        return Results("f.json", {"format": "autotm-results", "version": 2,
                                  "workload": {"name": "tiny_cnn"}, "runs": runs})

    def test_check_measured_refuses_runs_alone(self):
        old = self.results([{"formulation": "static", "actual_runtime": 0.5}])
        with self.assertRaisesRegex(ResultsError, r"f.json: 1 run\(s\) measured one process each"
                                                  r".*rerun experiments/conventional.py"):
            check_measured(old, "experiments/conventional.py")

    def test_check_measured_takes_comparisons_and_plans(self):
        res = self.results([crun("static", [1.0]),
                            {"formulation": "static", "actual_runtime": None,
                             "predicted_runtime": 0.4, "estimated_profile": True}])
        self.assertIs(check_measured(res), res)


class ErrorsTest(unittest.TestCase):
    def test_absolute_error_median_and_turns(self):
        e = absolute_error(crun("static", [1.0, 2.0, 4.0], predicted=2.2))
        self.assertAlmostEqual(e.median, 10.0)
        self.assertAlmostEqual(e.low, -45.0)
        self.assertAlmostEqual(e.high, 120.0)

    def test_absolute_error_none_without_prediction(self):
        self.assertIsNone(absolute_error(crun("numa", [1.0])))

    def test_slowdown_error_from_fields(self):
        r = crun("static", [1.0, 1.0], predicted_slowdown=1.1, measured_slowdown=1.0,
                 measured_slowdown_range=[0.9, 1.1], slowdown_error=0.1)
        e = slowdown_error(r)
        self.assertAlmostEqual(e.median, 10.0)
        self.assertAlmostEqual(e.low, 0.0)
        self.assertAlmostEqual(e.high, 100.0 * (1.1 / 0.9 - 1))

    def test_slowdown_error_none_without_all_fast(self):
        self.assertIsNone(slowdown_error(crun("static", [1.0])))

    def test_error_stats_mean_and_largest(self):
        self.assertEqual(error_stats([-3.0, 1.0, None, Spread(2.0, 1.0, 3.0, 2)]), (2.0, 3.0, 3))
        self.assertIsNone(error_stats([None]))


if __name__ == "__main__":
    unittest.main()
