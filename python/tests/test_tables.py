"""test_tables -- the figures' data as Markdown tables, from a machine folder written here."""

import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

from autotm_results import tables
from autotm_results.results import FORMAT, VERSION


def crun(formulation, times, cid, slow, fast, predicted=None):
    """crun -- one run of a comparison"""
    xs = sorted(times)
    return {"formulation": formulation, "ratio_slow": slow, "ratio_fast": fast, "comparison": cid,
            "turns": len(times), "actual_runtimes": list(times),
            "actual_runtime": xs[len(xs) // 2], "predicted_runtime": predicted}


class TablesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.mdir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, folder, name, runs, file=None):
        os.makedirs(os.path.join(self.mdir, folder), exist_ok=True)
        doc = {"format": FORMAT, "version": VERSION,
               "workload": {"name": name, "batch": 8, "preset": "small"}, "runs": runs}
        path = os.path.join(self.mdir, folder, file or f"{name}-small.json")
        with open(path, "w") as fh:
            json.dump(doc, fh)
        return path

    def test_tables_warns_when_the_file_name_says_another_network(self):
        runs = [crun("all-fast", [1.0], "a", 4, 1), crun("synchronous", [2.0], "a", 4, 1)]
        # the drivers' names, networks with a "-" among them: no word
        self.write("cpu", "bert-base", runs)
        self.write("gpu", "gpt2-medium", runs, file="gpt2-medium-small-b8.json")
        bad = self.write("cpu", "resnet200", runs, file="vgg19-small.json")
        odd = self.write("large", "gpt2", runs, file="bert-base-small.json")
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            self.assertEqual(tables.main([self.mdir]), 0)
        tail = "(the drivers name a file NETWORK-PRESET.json): tabulated as its workload's"
        self.assertEqual(err.getvalue().splitlines(), [
            f"warning: {bad}: the file name says network 'vgg19' but its workload is "
            f"'resnet200' {tail}",
            f"warning: {odd}: the file name says network 'bert-base' but its workload is "
            f"'gpt2' {tail}"])
        self.assertIn("| resnet200 | 4:1 |", out.getvalue())

    def test_tables_cpu_rows(self):
        # 4:1 measured twice: the last comparison is the one drawn
        self.write("cpu", "vgg19", [
            crun("all-fast", [1.0, 1.0], "a", 4, 1, 1.0),
            crun("synchronous", [3.0, 3.0], "a", 4, 1, 3.0),
            crun("all-fast", [1.0, 2.0, 1.0], "b", 4, 1, 1.0),
            crun("all-slow", [2.0, 3.0, 2.2], "b", 4, 1, 2.0),
            crun("synchronous", [1.1, 2.4, 1.3], "b", 4, 1, 1.2),
        ])
        header, body = tables.rows(self.mdir, "cpu")
        self.assertEqual(header, ["network", "ratio", "baseline step", "turns", "all-slow",
                                  "synchronous"])
        (row,) = body
        self.assertEqual(row[:4], ["vgg19", "4:1", "1.000 s (all-fast)", "3"])
        self.assertEqual(row[4], "2.000 [1.500-2.200] (2.000)")
        self.assertEqual(row[5], "1.200 [1.100-1.300] (1.200)")

    def test_tables_filters_and_markdown(self):
        self.write("large", "resnet200", [crun("synchronous", [1.0, 1.0], "l", 3, 1),
                                          crun("2lm", [2.0, 2.2], "l", 3, 1)])
        self.assertEqual(tables.rows(self.mdir, "large", networks={"vgg19"})[1], [])
        header, body = tables.rows(self.mdir, "large", ratios={(3, 1)})
        lines = tables.markdown(header, body)
        self.assertEqual(lines[0], "| network | ratio | baseline step | turns | 2lm |")
        self.assertIn("2.100 [2.000-2.200]", lines[2])

    def test_tables_main(self):
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            self.assertEqual(tables.main([self.mdir]), 1)
        self.assertIn("no experiment folder", err.getvalue())
        self.write("cpu", "x", [crun("all-fast", [1.0], "a", 1, 1)])
        with open(os.path.join(self.mdir, "cpu", "y.json"), "w") as fh:
            fh.write("{")
        with redirect_stdout(out), redirect_stderr(err):
            self.assertEqual(tables.main([self.mdir, "--folder", "cpu"]), 1)


if __name__ == "__main__":
    unittest.main()
