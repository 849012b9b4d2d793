"""test_registry -- the one list of experiments and figures matches the repository."""

import contextlib
import glob
import io
import os
import re
import unittest

from autotm_results import registry

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class RegistryTest(unittest.TestCase):
    def test_registry_names_unique(self):
        for names in ([e.name for e in registry.EXPERIMENTS], [f.name for f in registry.FIGURES],
                      registry.images()):
            self.assertEqual(len(names), len(set(names)), names)

    def test_registry_files_exist(self):
        for e in registry.EXPERIMENTS:
            self.assertTrue(os.path.isfile(os.path.join(REPO, e.driver)), e.driver)
        for f in registry.FIGURES:
            self.assertTrue(os.path.isfile(os.path.join(REPO, f.script)), f.script)
            registry.experiment(f.experiment)  # KeyError when it names none

    def test_registry_knows_every_plot_script(self):
        scripts = {f.script for f in registry.FIGURES}
        for path in glob.glob(os.path.join(REPO, "plots", "fig*.py")):
            self.assertIn(os.path.relpath(path, REPO), scripts)

    def test_registry_knows_every_script_in_plots(self):
        known = {f.script for f in registry.FIGURES} | {registry.PLAN_PICTURE,
                                                         registry.BASELINES_PICTURE}
        known |= set(registry.PLOT_HELPERS)
        for path in glob.glob(os.path.join(REPO, "plots", "*.py")):
            self.assertIn(os.path.relpath(path, REPO), known)
        for script in known:
            self.assertTrue(os.path.isfile(os.path.join(REPO, script)), script)

    def test_registry_script_draws_its_figure(self):
        # each plot script's FIG is its name here, and its images are named after it (those
        # not named FIG itself are written out in the script)
        for f in registry.FIGURES:
            with open(os.path.join(REPO, f.script), encoding="utf-8") as fh:
                text = fh.read()
            m = re.search(r'^FIG = "([^"]+)"$', text, re.M)
            self.assertIsNotNone(m, f.script)
            self.assertEqual(m.group(1), f.name)
            for image in f.images:
                self.assertTrue(image.startswith(f.name), image)
                self.assertTrue(image == f.name or f'"{image}"' in text, (f.script, image))

    def test_registry_lookups(self):
        self.assertEqual(registry.driver_of("fig10"), "experiments/inception.py")
        self.assertEqual(registry.folder_of("fig8"), "large")
        self.assertEqual(registry.figure("fig10").images, ("fig10a", "fig10b", "fig10c"))
        with self.assertRaisesRegex(KeyError, "no figure 'fig99' \\(known: fig7, "):
            registry.figure("fig99")
        with self.assertRaisesRegex(KeyError, "no experiment 'x'"):
            registry.experiment("x")

    def test_registry_measured_only_has_no_estimate(self):
        # what figures.sh leaves out with --estimate: the GPU's driver and the figures that
        # compare with measured steps
        self.assertEqual([e.name for e in registry.EXPERIMENTS if e.measured_only], ["gpu"])
        self.assertEqual([f.name for f in registry.FIGURES if f.measured_only],
                         ["fig11", "fig12"])

    def main(self, *argv):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(registry.main(list(argv)), 0)
        return out.getvalue().splitlines()

    def test_registry_command_lines_for_the_shell(self):
        lines = self.main("experiments")
        self.assertEqual(len(lines), len(registry.EXPERIMENTS))
        for line, e in zip(lines, registry.EXPERIMENTS):
            fields = line.split("\t")
            self.assertEqual(fields[:3], [e.name, e.driver, "gpu" if e.gpu else "-"])
            self.assertNotEqual(fields[3], "")
        lines = self.main("figures")
        for line, f in zip(lines, registry.FIGURES):
            name, script, why, images = line.split("\t")
            self.assertEqual((name, script, images.split()), (f.name, f.script, list(f.images)))
            self.assertEqual(why, f.measured_only or "-")
        self.assertEqual(self.main("images"), registry.images())
        table = "\n".join(self.main("table"))
        for f in registry.FIGURES:
            self.assertIn(f.script, table)


if __name__ == "__main__":
    unittest.main()
