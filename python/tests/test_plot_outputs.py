"""test_plot_outputs -- every plot script writes its images to the path given: an output that is
a folder or a device is refused (exit 2, one line naming it) before anything is drawn, never
written under another name beside it."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

from autotm_results import registry

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASELINES = os.path.join(REPO, "docs", "data", "h200", "2026-11-28",
                         "second-call-torch_baselines.json")

try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except ImportError:
    HAVE_MPL = False


@unittest.skipUnless(HAVE_MPL, "no matplotlib (Debian's python3-matplotlib)")
class PlotOutputsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="autotm-plot-outputs-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def plot(self, script, *args):
        return subprocess.run([sys.executable, os.path.join(REPO, script), *args],
                              capture_output=True, text=True, timeout=120)

    def refused(self, p, name, *words):
        self.assertEqual(p.returncode, 2, f"{name}: {p.stderr}")
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, f"{name}: {p.stderr}")
        self.assertNotIn("Traceback", p.stderr, name)
        for w in words:
            self.assertIn(w, p.stderr, name)

    def test_single_image_scripts_write_the_path_given(self):
        folder = os.path.join(self.dir, "somedir")
        os.mkdir(folder)
        timeline = os.path.join(self.dir, "tl.json")
        with open(timeline, "w") as f:
            json.dump({}, f)
        for script, data in ((registry.BASELINES_PICTURE, BASELINES),
                             (registry.PLAN_PICTURE, timeline)):
            for out, words in (("/dev/full", ("'/dev/full' is a character device",)),
                               (folder, (f"'{folder}' is a folder",)),
                               (os.path.join(self.dir, "noext"),
                                ("name the image OUT.png or OUT.pdf",)),
                               (os.path.join(self.dir, "missing", "x.png"),
                                (f"no folder '{os.path.join(self.dir, 'missing')}'",))):
                p = self.plot(script, data, "-o", out)
                self.refused(p, f"{script} -o {out}", f"-o '{out}", *words)
        self.assertEqual(sorted(os.listdir(self.dir)), ["somedir", "tl.json"])
        self.assertEqual(os.listdir(folder), [])
        # the other format beside the image named is checked as well
        os.mkdir(os.path.join(self.dir, "fig.pdf"))
        p = self.plot(registry.BASELINES_PICTURE, BASELINES, "-o",
                      os.path.join(self.dir, "fig.png"))
        self.refused(p, "fig.pdf a folder", "the PDF beside it", "fig.pdf' is a folder")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "fig.png")))

    def test_figure_scripts_refuse_an_out_that_is_not_a_folder(self):
        afile = os.path.join(self.dir, "afile")
        with open(afile, "w") as f:
            f.write("kept\n")
        data = os.path.join(self.dir, "data")
        os.mkdir(data)
        for i, fig in enumerate(registry.FIGURES):
            out, kind = ("/dev/full", "a character device") if i % 2 else (afile, "a regular file")
            p = self.plot(fig.script, "--data", data, "--out", out)
            self.refused(p, f"{fig.script} --out {out}", f"--out '{out}' is {kind}, not a folder")
        with open(afile) as f:
            self.assertEqual(f.read(), "kept\n")
        self.assertEqual(sorted(os.listdir(self.dir)), ["afile", "data"])


if __name__ == "__main__":
    unittest.main()
