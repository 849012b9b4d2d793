"""test_baselines_plot -- plots/baselines.py draws Figure 12 against memory from
bench/torch_baselines.py's JSON, leaves out a row it cannot draw with a warning naming it (file,
row, network, way, plan), and refuses a file it cannot draw with one line (exit 1)."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLOT = os.path.join(REPO, "plots", "baselines.py")
H200 = os.path.join(REPO, "docs", "data", "h200", "2026-11-28", "second-call-torch_baselines.json")

try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False


def row(net, mode, step, peak, autotm=None, **kw):
    r = {"network": net, "batch": 8, "image": 64, "mode": mode, "device": "NVIDIA H200",
         "torch": "2.11.0", "step_s": step, "turns_s": [step], "peak_bytes": peak}
    if autotm is not None:
        r["autotm"] = autotm
    r.update(kw)
    return r


@unittest.skipUnless(HAVE_MPL, "no matplotlib (Debian's python3-matplotlib)")
class BaselinesPlotTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="autotm-baselines-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))
        return path

    def draw(self, *paths, out="fig.png"):
        return subprocess.run([sys.executable, PLOT, *paths, "-o", os.path.join(self.dir, out)],
                              capture_output=True, text=True, timeout=120)

    def test_draws_the_h200_run_and_a_network_that_ran_out_of_memory(self):
        other = self.write("b.json", {"rows": [
            row("vgg19", "plain", 0.1, 6 << 30, {"synchronous": 0.12, "asynchronous": 0.11},
                autotm_all_device_s=0.095),
            row("vgg19", "checkpoint", 0.2, 3 << 30, {"synchronous": 0.15}),
            row("vgg19", "save_on_cpu", None, None, error="out of memory"),
        ]})
        p = self.draw(H200, other)
        self.assertEqual(p.returncode, 0, p.stderr)
        for ext in ("png", "pdf"):
            self.assertGreater(os.path.getsize(os.path.join(self.dir, f"fig.{ext}")), 1000)

    def test_leaves_out_rows_it_cannot_draw_with_a_warning_naming_each(self):
        path = self.write("bad-rows.json", {"rows": [
            row("vgg19", "plain", float("nan"), 6 << 30, {"synchronous": 0.12}),
            row("vgg19", "checkpoint", float("inf"), 3 << 30),
            row("vgg19", "save_on_cpu", None, 2 << 30),
            row("resnet200", "plain", "fast", 6 << 30),
            row("resnet200", "checkpoint", 0.2, -1),
            row("resnet200", "save_on_cpu", 0.3, 2 << 30,
                {"synchronous": float("nan"), "asynchronous": 0.25},
                autotm_all_device_s="quick"),
            row("densenet264", "plain", None, None, error="out of memory"),
        ]})
        p = self.draw(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.dir, "fig.png")))
        lines = p.stderr.strip().splitlines()
        want = [f"warning: {path}: rows[0] (vgg19, plain) left out: step_s nan is not a positive "
                "number",
                f"warning: {path}: rows[1] (vgg19, checkpoint) left out: step_s inf is not a "
                "positive number",
                f"warning: {path}: rows[2] (vgg19, save_on_cpu) left out: step_s None is not a "
                "positive number",
                f"warning: {path}: rows[3] (resnet200, plain) left out: step_s 'fast' is not a "
                "positive number",
                f"warning: {path}: rows[4] (resnet200, checkpoint) left out: peak_bytes -1 is not "
                "a number of at least 0",
                f"warning: {path}: rows[5] (resnet200, save_on_cpu): autotm's synchronous step "
                "left out: nan is not a positive number",
                f"warning: {path}: rows[5] (resnet200, save_on_cpu): autotm's all-device step "
                "left out: autotm_all_device_s 'quick' is not a positive number"]
        self.assertEqual(lines, want)
        # every row of a file left out: nothing to draw, refused after the warnings
        path = self.write("all-bad.json", {"rows": [row("vgg19", "plain", float("nan"), 1 << 30)]})
        p = self.draw(path, out="none.png")
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("rows[0] (vgg19, plain) left out: step_s nan", p.stderr)
        self.assertIn(f"baselines: {path}: no row left to draw (each is left out above)",
                      p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "none.png")))

    def test_refuses_what_it_cannot_draw(self):
        cpu = self.write("cpu.json", {"rows": [row("resnet50", m, 0.5, None)
                                               for m in ("plain", "checkpoint", "save_on_cpu")]})
        cases = {
            "missing.json": (os.path.join(self.dir, "missing.json"), "cannot read it"),
            "cpu.json": (cpu, "no row has a peak of device memory"),
            "bad.json": (self.write("bad.json", "{"), "not JSON"),
            "norows.json": (self.write("norows.json", {"rows": []}), "no 'rows'"),
            "mode.json": (self.write("mode.json", {"rows": [row("x", "eager", 1, 1)]}),
                          "no mode of plain, checkpoint, save_on_cpu"),
        }
        for name, (path, want) in cases.items():
            p = self.draw(path, out=name + ".png")
            self.assertEqual(p.returncode, 1, name + p.stderr)
            self.assertIn(want, p.stderr, name)
            self.assertNotIn("Traceback", p.stderr, name)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, name + p.stderr)
            self.assertFalse(os.path.exists(os.path.join(self.dir, name + ".png")), name)


if __name__ == "__main__":
    unittest.main()
