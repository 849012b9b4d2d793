"""test_cli -- the importer's command lines (python3 -m autotm_torch, autotm_torch.check) keep
autotm's promises: outputs checked first and written all or none, never over an input, sizes and
names refused as autotm refuses them, every failure one named line with a documented exit code
(2 usage, 3 a model it cannot take, 6 a file system error, 8 not found, 130 interrupted), never a
traceback"""

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

try:
    import torch
    import torch.nn as nn
except ImportError:  # the suite installs it; a bare checkout may lack it
    torch = None

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "small_cnn.py")

# models that fail in the ways a user's do, one callable each
MODELS = textwrap.dedent("""\
    import torch
    import torch.nn as nn


    class Shifted(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(48, 4)
            self.register_buffer("shift", torch.zeros(4))

        def forward(self, x):
            return self.fc(x.flatten(1)) + self.shift


    class Dropped(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.unused = nn.Linear(48, 4), nn.Linear(48, 4)

        def forward(self, x):
            self.unused(x.flatten(1))  # computed, never read
            return self.fc(x.flatten(1))


    class Slow(nn.Module):
        def __init__(self, marker):
            super().__init__()
            self.fc, self.marker = nn.Linear(48, 4), marker

        def forward(self, x):
            open(self.marker, "w").close()
            import time
            time.sleep(60)
            return self.fc(x.flatten(1))


    class Quits(nn.Module):
        def forward(self, x):
            import sys
            sys.exit(0)


    class Exits(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc, self.head = nn.Linear(48, 4), Quits()

        def forward(self, x):
            return self.head(self.fc(x.flatten(1)))


    def exits():
        return Exits()


    def frozen():
        m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(16, 4))
        m[0].weight.requires_grad_(False)
        m[3].bias.requires_grad_(False)
        return m


    def raises():
        raise ValueError("no such configuration")


    def number():
        return 3


    def shifted():
        return Shifted()


    def dropped():
        return Dropped()


    def slow(marker):
        return Slow(marker)


    def half():
        return nn.Sequential(nn.Flatten(), nn.Linear(48, 4)).to(torch.bfloat16)
    """)


def command(main, *argv):
    """(exit status, stderr) of main run as its command line runs it (cli.run), in this
    process: torch is loaded once"""
    from autotm_torch.cli import run
    err = io.StringIO()
    before = signal.getsignal(signal.SIGINT)
    try:
        with contextlib.redirect_stderr(err):
            try:
                rc = run(main, list(argv))
            except SystemExit as e:  # argparse's refusals
                rc = e.code
    finally:
        signal.signal(signal.SIGINT, before)
    return rc, err.getvalue()


def importer(*argv):
    from autotm_torch.__main__ import main
    return command(main, *argv)


def checker(*argv):
    from autotm_torch.check import main
    return command(main, *argv)


def spawn(*argv, module="autotm_torch", path=(), **kw):
    """the command line python3 -m module argv, running (subprocess.Popen)"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(list(path) + [os.path.join(REPO, "python")]),
               PYTHONDONTWRITEBYTECODE="1")
    env.update(kw.pop("env", {}))
    return subprocess.Popen([sys.executable, "-m", module, *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def wait_for(check, timeout=60):
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.02)


@unittest.skipIf(torch is None, "python3-torch is not installed")
class TestCommand(unittest.TestCase):
    def setUp(self):
        torch.set_num_threads(1)
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.models = self.path("models.py")
        with open(self.models, "w") as f:
            f.write(MODELS)

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def one_line(self, err):
        """err is one named line (besides warnings), no traceback"""
        self.assertNotIn("Traceback", err)
        lines = [l for l in err.strip().splitlines() if not l.startswith("autotm_torch: warning:")]
        self.assertEqual(len(lines), 1, err)
        self.assertTrue(lines[0].startswith("autotm_torch: "), err)

    def test_cli_outputs_keep_pipe_link_and_mode(self):
        # row 1: a pipe is written through, a link stays a link, a file keeps its mode
        fifo, link, data = self.path("graph.fifo"), self.path("w.link"), self.path("d.st")
        os.mkfifo(fifo)
        os.mkdir(self.path("real"))
        os.symlink(os.path.join("real", "w.safetensors"), link)
        with open(data, "w") as f:
            f.write("old")
        os.chmod(data, 0o640)
        got = []

        def read():
            with open(fifo) as f:
                got.append(f.read())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        rc, err = importer(EXAMPLE + ":make", "--input", "2,3,8,8", "-o", fifo, "--weights-out",
                           link, "--data-out", data)
        reader.join(30)
        self.assertEqual(rc, 0, err)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(json.loads(got[0])["format"], "autotm-forward")
        self.assertTrue(os.path.islink(link))
        self.assertGreater(os.path.getsize(self.path("real/w.safetensors")), 1000)
        self.assertEqual(stat.S_IMODE(os.stat(data).st_mode), 0o640)
        self.assertGreater(os.path.getsize(data), 1000)
        self.assertEqual([f for f in os.listdir(self.dir) if ".tmp." in f], [])

    def test_cli_folder_output_writes_nothing(self):
        # row 2: -o a folder is refused before anything is written
        w, d = self.path("w.safetensors"), self.path("d.safetensors")
        rc, err = importer(EXAMPLE + ":make", "--input", "2,3,8,8", "-o", self.dir,
                           "--weights-out", w, "--data-out", d)
        self.assertEqual(rc, 2, err)
        self.one_line(err)
        self.assertIn("is a folder", err)
        self.assertFalse(os.path.exists(w) or os.path.exists(d))
        rc, err = importer(EXAMPLE + ":make", "--input", "2,3,8,8", "-o",
                           self.path("no/such/g.json"), "--weights-out", w)
        self.assertEqual(rc, 6, err)
        self.assertIn("does not exist", err)
        self.assertFalse(os.path.exists(w))

    def test_cli_interrupt_writes_nothing(self):
        # row 2: Ctrl-C during the forward, or while the graph's pipe waits for its reader (the
        # weights already staged beside their file): 130, one line, no output, no leftovers
        marker, w, fifo = self.path("tracing"), self.path("w.safetensors"), self.path("g.fifo")
        os.mkfifo(fifo)
        for out, ready in ((self.path("g.json"), lambda: os.path.exists(marker)),
                           (fifo, lambda: any(".tmp." in f for f in os.listdir(self.dir)))):
            model = f"{self.models}:slow" if out != fifo else EXAMPLE + ":make"
            kwargs = json.dumps({"marker": marker}) if out != fifo else "{}"
            p = spawn(model, "--input", "2,3,4,4", "--kwargs", kwargs, "-o", out,
                      "--weights-out", w)
            try:
                wait_for(lambda: ready() or p.poll() is not None)
                time.sleep(0.3)
                p.send_signal(signal.SIGINT)
                _, err = p.communicate(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
            self.assertEqual(p.returncode, 130, err)
            self.one_line(err)
            self.assertIn("interrupted", err)
            self.assertFalse(os.path.exists(w))
            self.assertEqual([f for f in os.listdir(self.dir) if ".tmp." in f], [])
            self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_cli_output_naming_an_input_is_refused(self):
        # row 5: -o the model's own file (by its name, a link or another name of it, or the
        # file of MODEL's module), or two outputs one file
        model = self.path("mymodel.py")
        shutil.copy(EXAMPLE, model)
        os.link(model, self.path("hard.py"))
        with open(model) as f:
            before = f.read()
        for out in (model, self.path("hard.py"), os.path.join(self.dir, ".", "mymodel.py")):
            rc, err = importer(model + ":make", "--input", "2,3,8,8", "-o", self.path("g.json"),
                               "--weights-out", out)
            self.assertEqual(rc, 2, err)
            self.one_line(err)
            self.assertIn("is the file MODEL", err)
        sys.path.insert(0, self.dir)
        try:
            rc, err = importer("mymodel:make", "--input", "2,3,8,8", "-o", model)
        finally:
            sys.path.remove(self.dir)
            sys.modules.pop("mymodel", None)
        self.assertEqual(rc, 2, err)
        self.assertIn("is the file MODEL", err)
        with open(model) as f:
            self.assertEqual(f.read(), before)
        rc, err = importer(model + ":make", "--input", "2,3,8,8", "-o", self.path("g.json"),
                           "--data-out", os.path.join(self.dir, "..", os.path.basename(self.dir),
                                                      "g.json"))
        self.assertEqual(rc, 2, err)
        self.assertIn("are the same file", err)
        self.assertFalse(os.path.exists(self.path("g.json")))

    def test_cli_model_failures_are_named(self):
        # row 6: no traceback; the exit code says whose fault it is
        dep, syntax = self.path("needs_dep.py"), self.path("broken.py")
        with open(dep, "w") as f:
            f.write("import no_such_dependency_of_autotm\n\ndef make():\n    pass\n")
        with open(syntax, "w") as f:
            f.write("def make(:\n")
        out = ("--input", "2,3,4,4", "-o", self.path("g.json"))
        for argv, code, says in (
                ((f"{self.models}:raises",) + out, 3, "raised ValueError: no such configuration"),
                ((dep + ":make",) + out, 3, "No module named 'no_such_dependency_of_autotm'"),
                ((syntax + ":make",) + out, 3, "SyntaxError"),
                ((f"{self.models}:number",) + out, 2, "returned int, not an nn.Module"),
                ((f"{self.models}:shifted", "--kwargs", '{"width": 3}') + out, 2, "width"),
                (("no_such_module_of_autotm:make",) + out, 8, "not found"),
                ((f"{self.models}:nothing",) + out, 8, "has no 'nothing'")):
            rc, err = importer(*argv)
            self.assertEqual(rc, code, f"{argv}: {err}")
            self.one_line(err)
            self.assertIn(says, err)
        self.assertIn("models.py:", importer(f"{self.models}:raises", *out)[1])  # the line
        self.assertFalse(os.path.exists(self.path("g.json")))
        for argv, code, says in (
                ((f"{self.models}:number", "--input", "2,3,4,4"), 2, "not an nn.Module"),
                ((EXAMPLE + ":make", "--input", "2,3,4,4", "--kwargs", "[1]"), 2, "JSON object"),
                ((f"{self.models}:raises", "--input", "2,3,4,4"), 3, "raised ValueError")):
            rc, err = checker(*argv, "--autotm", sys.executable)
            self.assertEqual(rc, code, f"check {argv}: {err}")
            self.one_line(err)
            self.assertIn(says, err)

    def test_cli_sys_exit_in_forward_is_named(self):
        # row 10: SystemExit raised in a forward during the trace is the model's failure (exit
        # 3, naming it, the module and the line), not the importer's exit, in a real process
        g = self.path("g.json")
        p = spawn(f"{self.models}:exits", "--input", "2,3,4,4", "-o", g)
        _, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 3, err)
        self.one_line(err)
        self.assertIn(f"{self.models}:exits: tracing Exits.forward on an input of [2, 3, 4, 4] "
                      f"failed: SystemExit: the forward called sys.exit(0) in module 'head' "
                      f"(at {self.models}:", err)
        self.assertIn(" in forward); a forward that ends the program cannot be imported", err)
        self.assertFalse(os.path.exists(g))
        rc, err = checker(f"{self.models}:exits", "--input", "2,3,4,4", "--autotm", sys.executable)
        self.assertEqual(rc, 3, err)
        self.one_line(err)
        self.assertIn("SystemExit", err)

    def test_cli_frozen_parameters_are_refused_by_name(self):
        # row 9: autotm's forward graphs update every parameter, so a frozen one would be
        # trained: refused (exit 3) naming each, by the importer and by the check
        g = self.path("g.json")
        want = ("2 frozen parameter(s) (requires_grad False): 0.weight, 3.bias: autotm's step "
                "updates every parameter of a forward graph and would train them")
        rc, err = importer(f"{self.models}:frozen", "--input", "2,3,4,4", "-o", g,
                           "--weights-out", self.path("w.safetensors"))
        self.assertEqual(rc, 3, err)
        self.one_line(err)
        self.assertIn(want, err)
        self.assertFalse(os.path.exists(g) or os.path.exists(self.path("w.safetensors")))
        rc, err = checker(f"{self.models}:frozen", "--input", "2,3,4,4", "--autotm",
                          sys.executable)
        self.assertEqual(rc, 3, err)
        self.one_line(err)
        self.assertIn(want, err)

    def test_cli_half_precision_module_is_taken_in_float32(self):
        # a module in bfloat16 imports, its weights written as float32 (the master copy autotm
        # trains), each the bfloat16 value widened exactly, and a warning says so
        from autotm_torch import safetensors
        torch.manual_seed(1)
        want = {k: v.float() for k, v in
                nn.Sequential(nn.Flatten(), nn.Linear(48, 4)).to(torch.bfloat16).state_dict().items()}
        w = self.path("w.safetensors")
        rc, err = importer(f"{self.models}:half", "--input", "2,3,4,4", "-o", self.path("g.json"),
                           "--weights-out", w, "--seed", "1")
        self.assertEqual(rc, 0, err)
        self.assertIn("parameters are bfloat16: taken as float32", err)
        got = safetensors.read(w)
        self.assertEqual(sorted(got), sorted(want))
        for k, v in want.items():
            self.assertEqual(got[k].dtype, torch.float32)
            self.assertTrue(torch.equal(got[k], v), k)

    def test_cli_buffer_read_as_data_is_refused_by_name(self):
        # row 7: a registered buffer added to an activation
        rc, err = importer(f"{self.models}:shifted", "--input", "2,3,4,4", "-o",
                           self.path("g.json"))
        self.assertEqual(rc, 3, err)
        self.one_line(err)
        self.assertIn("the buffer shift [4]", err)
        self.assertIn("models.py:", err)

    def test_cli_sizes_out_of_range_are_usage_errors(self):
        # row 8: every dimension within autotm's range, the input within memory
        out = ("-o", self.path("g.json"))
        for opt, value, says in (("--input", "100000,3,100000,100000", "expected at most"),
                                 ("--input-ids", "2,99999999999999999999",
                                  "T 99999999999999999999: expected 1 to 16777216"),
                                 ("--input", "1000001,3,4,4", "N 1000001: expected 1 to 1000000"),
                                 ("--input", "2,0,4,4", "C 0: expected 1 to"),
                                 ("--input-ids", "2,16777217", "expected 1 to 16777216")):
            for run in (importer, checker):
                rc, err = run(EXAMPLE + ":make", opt, value, *out)
                self.assertEqual(rc, 2, f"{opt} {value}: {err}")
                self.assertNotIn("Traceback", err)
                self.assertIn(f"argument {opt}: '{value}'", err)
                self.assertIn(says, err)

    def test_cli_graphs_autotm_refuses_are_refused(self):
        # row 12: checked against autotm's rules before anything is written
        g = self.path("g.json")
        rc, err = importer(EXAMPLE + ":make", "--input", "2,3,8,8", "-o", g, "--name", "x" * 201)
        self.assertEqual(rc, 2, err)
        self.assertIn("--name: a name of 1 to 200 characters", err)
        for model, says in (("torch.nn:Flatten", "depend on no parameter: nothing to train"),
                            (f"{self.models}:dropped", "layers[0] ('unused')")):
            rc, err = importer(model, "--input", "2,3,4,4", "-o", g)
            self.assertEqual(rc, 3, err)
            self.one_line(err)
            self.assertIn(says, err)
        self.assertFalse(os.path.exists(g))
        rc, err = importer(EXAMPLE + ":make", "--input", "2,3,8,8", "-o", g, "--name", "x" * 200)
        self.assertEqual(rc, 0, err)

    def test_cli_interrupt_while_torch_loads(self):
        # row 13: Ctrl-C while torch is imported (here a stand-in that takes its time; the
        # second turns the interrupt into an ImportError, as a C extension's failed start does)
        for name, after in (("slow", ""), ("converts", "    raise ImportError('_C failed')\n")):
            fake = os.path.join(self.dir, name, "torch")
            os.makedirs(fake)
            with open(os.path.join(fake, "__init__.py"), "w") as f:
                f.write("import os, time\nopen(os.environ['MARKER'], 'w').close()\ntry:\n"
                        "    time.sleep(60)\nexcept KeyboardInterrupt:\n"
                        + (after or "    raise\n"))
            marker = self.path(f"{name}.loading")
            p = spawn(EXAMPLE + ":make", "--input", "2,3,4,4", "-o", self.path("g.json"),
                      path=[os.path.dirname(fake)], env={"MARKER": marker})
            try:
                wait_for(lambda: os.path.exists(marker) or p.poll() is not None)
                p.send_signal(signal.SIGINT)
                _, err = p.communicate(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
            self.assertEqual(p.returncode, 130, f"{name}: {err}")
            self.one_line(err)
            self.assertNotIn("PyTorch is missing", err)

    def test_cli_trace_hint_only_for_control_flow(self):
        # row 14: "Branching on a tensor's values" only where the forward branches on one
        from autotm_torch.importer import ImportError_, to_forward

        class Mismatch(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(47, 4)

            def forward(self, x):
                return self.fc(x.flatten(1))

        class Branchy(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(48, 4)

            def forward(self, x):
                if x.mean() > 0:
                    x = -x
                return self.fc(x.flatten(1))

        with self.assertRaises(ImportError_) as e:
            to_forward(Mismatch(), (2, 3, 4, 4))
        self.assertIn("RuntimeError: mat1 and mat2 shapes cannot be multiplied", str(e.exception))
        self.assertIn("test_cli.py:", str(e.exception))
        self.assertNotIn("Branching", str(e.exception))
        with self.assertRaises(ImportError_) as e:
            to_forward(Branchy(), (2, 3, 4, 4))
        self.assertIn("TraceError", str(e.exception))
        self.assertIn("Branching on a tensor's values", str(e.exception))


if __name__ == "__main__":
    unittest.main()
