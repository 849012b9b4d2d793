"""test_targets -- the figures' own summary, from a machine folder written here."""

import json
import os
import tempfile
import unittest

from autotm_results import targets
from autotm_results.results import FORMAT, VERSION, ResultsError


def crun(formulation, times, cid, slow, fast, predicted=None, **more):
    """crun -- one run of a comparison"""
    xs = sorted(times)
    r = {"formulation": formulation, "ratio_slow": slow, "ratio_fast": fast, "comparison": cid,
         "turns": len(times), "actual_runtimes": list(times),
         "actual_runtime": xs[len(xs) // 2], "predicted_runtime": predicted}
    r.update(more)
    return r


class TargetsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.mdir = self.tmp.name
        os.makedirs(os.path.join(self.mdir, "cpu"))

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, runs):
        doc = {"format": FORMAT, "version": VERSION,
               "workload": {"name": name, "batch": 8, "preset": "small"}, "runs": runs}
        with open(os.path.join(self.mdir, "cpu", f"{name}-small.json"), "w") as fh:
            json.dump(doc, fh)

    def fixture(self):
        # 4:1: static's ratio to all-slow 2.0 in every turn (range 1.0), synchronous's 2.0 and
        # 2.4 (range 1.2), asynchronous faster than all fast (0.9); 0:1: static at all fast
        self.write("vgg19", [
            crun("all-fast", [1.0, 1.0, 1.0], "a", 4, 1, 1.0),
            crun("all-slow", [2.0, 2.0, 2.4], "a", 4, 1),
            crun("static", [1.0, 1.0, 1.2], "a", 4, 1, 1.05, slowdown_error=0.05),
            crun("synchronous", [1.0, 1.0, 1.0], "a", 4, 1, 1.0, slowdown_error=-0.02),
            crun("asynchronous", [0.9, 0.9, 1.0], "a", 4, 1, 1.0),
            crun("all-fast", [1.0, 1.0], "b", 0, 1),
            crun("static", [1.02, 1.02], "b", 0, 1),
        ])

    def test_targets_figure7_ranges(self):
        self.fixture()
        ranges = dict(targets.fig7_ranges(targets.workloads(self.mdir)))
        self.assertAlmostEqual(ranges["vgg19 4:1 static"], 1.0)
        self.assertAlmostEqual(ranges["vgg19 4:1 synchronous"], 1.2)
        self.assertNotIn("vgg19 4:1 numa", ranges)

    def test_targets_faster_than_all_fast(self):
        self.fixture()
        fast = targets.faster_than_all_fast(targets.workloads(self.mdir))
        self.assertEqual([n for n, _ in fast], ["vgg19 4:1 asynchronous"])

    def test_targets_figure10_at_all_fast(self):
        self.fixture()
        name, curves = targets.fig10_at_all_fast(targets.workloads(self.mdir))
        self.assertEqual(name, "vgg19")
        self.assertAlmostEqual(curves["static"], 1.02)
        self.assertNotIn("synchronous", curves)

    def test_targets_figure11_errors(self):
        self.fixture()
        errs = targets.fig11_errors(targets.workloads(self.mdir))
        mean, largest, n = errs["static"]["slowdown"]
        self.assertAlmostEqual(mean, 5.0)
        self.assertEqual(n, 1)
        self.assertAlmostEqual(errs["static"]["step"][1], 5.0)
        self.assertIsNone(errs["asynchronous"]["slowdown"])

    def test_targets_summary_lines(self):
        self.fixture()
        text = "\n".join(targets.summary(self.mdir, wall_s=75))
        self.assertIn("Figure 7: 1 of 3 bars (33%)", text)
        self.assertIn("widest 1.200: vgg19 4:1 synchronous", text)
        self.assertIn("vgg19 4:1 asynchronous 0.900", text)
        self.assertIn("static 1.020 (+2.0%)", text)
        self.assertIn("figures.sh took 1 min 15 s", text)

    def test_targets_pictures(self):
        self.fixture()
        self.assertEqual(targets.pictures(self.mdir), [("vgg19", "small")])

    def test_targets_empty_folder(self):
        text = "\n".join(targets.summary(self.mdir))
        self.assertIn("Figure 7: no bar measured", text)

    def test_targets_bad_file(self):
        with open(os.path.join(self.mdir, "cpu", "x.json"), "w") as fh:
            fh.write("{")
        with self.assertRaises(ResultsError):
            targets.summary(self.mdir)
        self.assertEqual(targets.main([self.mdir]), 1)


if __name__ == "__main__":
    unittest.main()
