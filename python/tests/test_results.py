"""test_results -- reading and checking results files, and what the drivers and figures ask of
their runs."""

import json
import os
import tempfile
import unittest

from autotm_results.results import (FORMAT, RECOMPUTE, VERSION, ResultsError, read, recomputed,
                                    results_files, run_key, run_ratio, split_recompute)


def run(formulation, slow, fast, actual=0.5, estimated=False, **more):
    """run -- one run record as autotm writes it"""
    r = {"formulation": formulation, "ratio_slow": slow, "ratio_fast": fast,
         "predicted_runtime": 0.4, "actual_runtime": actual}
    if estimated:
        r["estimated_profile"] = True
    r.update(more)
    return r


def document(runs, version=VERSION, **more):
    """document -- a results document holding RUNS"""
    doc = {"format": FORMAT, "version": version,
           "workload": {"name": "tiny_cnn", "batch": 8, "preset": "small"}, "runs": runs}
    doc.update(more)
    return doc


class FileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, content):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(content if isinstance(content, str) else json.dumps(content))
        return path


class ReadTest(FileTest):
    def test_results_read_a_document(self):
        path = self.write("a.json", document([run("static", 4, 1)]))
        res = read(path)
        self.assertEqual(res.path, path)
        self.assertEqual(res.version, VERSION)
        self.assertEqual(res.workload["name"], "tiny_cnn")
        self.assertEqual(len(res.runs), 1)
        self.assertIs(res.check(), res)

    def test_results_read_missing(self):
        path = os.path.join(self.dir, "none.json")
        self.assertIsNone(read(path, missing_ok=True))
        with self.assertRaisesRegex(ResultsError, "none.json: cannot be read"):
            read(path)

    def test_results_read_refuses_what_is_not_a_results_file(self):
        cases = [
            ('{"format": ', r"not a results file: invalid JSON at line 1, column \d+"),
            ("[1, 2]", r"not a results file: a JSON array, expected an \"autotm-results\""),
            ('{"format": "autotm-plan"}', r'not a results file: format "autotm-plan", expected'),
            ("{}", r"not a results file: format null, expected"),
            ('{"format": "autotm-results", "runs": {}}', "not a results file: 'runs' is not a list"),
        ]
        for text, message in cases:
            with self.subTest(text=text):
                path = self.write("bad.json", text)
                with self.assertRaisesRegex(ResultsError, "bad.json: " + message):
                    read(path)

    def test_results_read_any_version_check_only_this_one(self):
        path = self.write("old.json", document([], version=1))
        res = read(path)
        with self.assertRaisesRegex(ResultsError, "old.json: 'autotm-results' version 1, expected "
                                    "version 2"):
            res.check()

    def test_results_check_needs_workload_runs_and_formulations(self):
        doc = document([])
        del doc["workload"]
        with self.assertRaisesRegex(ResultsError, "no 'workload' object"):
            read(self.write("a.json", doc)).check()
        doc = document([])
        del doc["runs"]
        with self.assertRaisesRegex(ResultsError, "no 'runs' list"):
            read(self.write("b.json", doc)).check()
        doc = document([run("static", 4, 1), {"ratio_slow": 1}])
        with self.assertRaisesRegex(ResultsError, "c.json: run 1 has no formulation"):
            read(self.write("c.json", doc)).check()
        with self.assertRaisesRegex(ResultsError, "run 0 has no formulation"):
            read(self.write("d.json", document([7]))).check()

    def test_results_files_sorted_json_only(self):
        self.write("b.json", "{}")
        self.write("a.json", "{}")
        self.write("notes.txt", "")
        os.mkdir(os.path.join(self.dir, "c.json"))
        self.assertEqual([os.path.basename(f) for f in results_files(self.dir)],
                         ["a.json", "b.json"])
        self.assertEqual(results_files(os.path.join(self.dir, "none")), [])


class CountTest(FileTest):
    def count(self, runs, formulation, ratio, estimated=False, **more):
        return read(self.write("w.json", document(runs, **more))).count(formulation, ratio,
                                                                        estimated)

    def test_results_count_measured_runs_at_a_ratio(self):
        runs = [run("static", 4, 1), run("static", 4, 1), run("synchronous", 4, 1),
                run("static", 8, 1)]
        self.assertEqual(self.count(runs, "static", (4, 1)), 2)
        self.assertEqual(self.count(runs, "synchronous", (4, 1)), 1)
        self.assertEqual(self.count(runs, "static", (1, 1)), 0)

    def test_results_count_ratios_as_fractions(self):
        self.assertEqual(self.count([run("static", 2, 2)], "static", (1, 1)), 1)

    def test_results_count_runs_without_ratio(self):
        runs = [run("all-fast", None, None), run("all-fast", 0, 1)]
        self.assertEqual(self.count(runs, "all-fast", None), 1)
        self.assertEqual(self.count(runs, "all-fast", (0, 1)), 1)

    def test_results_count_keeps_estimates_and_measurements_apart(self):
        runs = [run("static", 4, 1, actual=None, estimated=True), run("static", 4, 1, actual=None)]
        self.assertEqual(self.count(runs, "static", (4, 1), estimated=True), 1)
        # a plan written without running it is not a measured run
        self.assertEqual(self.count(runs, "static", (4, 1)), 0)

    def test_results_count_nothing_of_an_older_version(self):
        self.assertEqual(self.count([run("static", 4, 1)], "static", (4, 1), version=1), 0)
        legacy = {"formulation": "static", "ratio": 4, "actual_runtime": 0.5}
        self.assertEqual(self.count([legacy], "static", (4, 1)), 0)

    def test_results_outdated_says_why(self):
        self.assertIsNone(read(self.write("a.json", document([run("static", 4, 1)]))).outdated())
        self.assertEqual(read(self.write("b.json", document([], version=1))).outdated(),
                         "is a version-1 results file")
        self.assertEqual(read(self.write("c.json", document([], version=None))).outdated(),
                         "is a version-null results file")
        # a newer version, or one written as a string, is not this driver's either
        self.assertEqual(read(self.write("e.json", document([], version=VERSION + 1))).outdated(),
                         f"is a version-{VERSION + 1} results file")
        self.assertEqual(read(self.write("f.json", document([], version=str(VERSION)))).outdated(),
                         f'is a version-"{VERSION}" results file')
        legacy = {"formulation": "static", "ratio": 4}
        self.assertIn("without ratio_slow/ratio_fast",
                      read(self.write("d.json", document([legacy]))).outdated())


class UnusableTest(FileTest):
    def test_results_read_refuses_deep_nesting(self):
        path = self.write("deep.json", "[" * 100000 + "]" * 100000)
        with self.assertRaisesRegex(ResultsError, "nested too deeply"):
            read(path)

    def test_results_check_leaves_out_unusable_measurements(self):
        # NaN, zero, negative and string step times are left out with a warning, with the rest
        # of their comparison; a run planned only (null) stays
        text = json.dumps(document([
            run("static", 4, 1, actual=0.5, comparison="A"),
            run("synchronous", 4, 1, actual="fast", comparison="A"),
            run("static", 1, 1, actual=0.4, comparison="B"),
            run("synchronous", 1, 1, actual=None, estimated=True),
            run("numa", 8, 1, actual=0),
            run("all-slow", 8, 1, actual=-1.0),
            run("all-fast", 8, 1, actual=0.3, actual_runtimes=[0.3, float("nan")]),
        ]))
        path = self.write("bad.json", text)
        said = []
        res = read(path).drop_unusable(said.append)
        self.assertEqual([(r["formulation"], r.get("comparison")) for r in res.runs],
                         [("static", "B"), ("synchronous", None)])
        self.assertEqual(len(said), 5)
        self.assertTrue(any("'fast' is not a positive number" in m for m in said), said)
        self.assertTrue(any("left out with its comparison A" in m for m in said), said)
        self.assertTrue(any("actual_runtimes" in m for m in said), said)


class RunTest(FileTest):
    def test_results_run_key_and_ratio(self):
        self.assertEqual(run_key(run("static", 16, 2)), ("static", (8, 1)))
        self.assertIsNone(run_ratio(run("all-fast", None, None)))
        self.assertIsNone(run_ratio({"formulation": "static"}))

    def test_results_recompute_names_split(self):
        self.assertEqual(split_recompute("synchronous" + RECOMPUTE), ("synchronous", True))
        self.assertEqual(split_recompute("asynchronous+recompute"), ("asynchronous", True))
        self.assertEqual(split_recompute("synchronous"), ("synchronous", False))
        self.assertEqual(split_recompute(RECOMPUTE), (RECOMPUTE, False))
        # a recomputing run is a run of its own in a figure
        self.assertEqual(run_key(run("synchronous+recompute", 8, 1)),
                         ("synchronous+recompute", (8, 1)))

    def test_results_recomputed_fields(self):
        r = run("synchronous+recompute", 8, 1, num_recomputed_kernels=3,
                bytes_recomputed=4096, recompute_s=0.002)
        self.assertEqual(recomputed(r), (3, 4096, 0.002))
        self.assertEqual(recomputed(run("synchronous", 8, 1, num_recomputed_kernels=0)),
                         (0, None, None))
        self.assertIsNone(recomputed(run("synchronous", 8, 1)))  # a file from before

    def test_results_check_refuses_bad_recompute_fields(self):
        for field, bad in (("num_recomputed_kernels", -1), ("bytes_recomputed", "many"),
                           ("recompute_s", True)):
            path = self.write(f"{field}.json", document(
                [run("static", 4, 1), run("synchronous+recompute", 4, 1, **{field: bad})]))
            with self.assertRaisesRegex(ResultsError,
                                        rf"run 1 \(synchronous\+recompute\): {field} .* "
                                        "not a number of at least 0"):
                read(path).check()
        path = self.write("ok.json", document([run("synchronous+recompute", 4, 1,
                                                   num_recomputed_kernels=0, recompute_s=0)]))
        read(path).check()


if __name__ == "__main__":
    unittest.main()
