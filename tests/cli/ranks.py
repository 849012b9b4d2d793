#!/usr/bin/python3
"""ranks.py -- autotm run under mpirun -np 2 on this machine: the ranks train what one process
trains at the whole batch, bitwise alike on every rank and under every placement, one placement
a run or several compared in turns; ranks that disagree, a batch that does not divide, a rank
killed or interrupted end every rank

usage: tests/cli/ranks.py AUTOTM MPIEXEC [TestTraining | TestFailures] (ctest runs each class as
a test of its own; exit 77 when autotm or mpiexec lacks MPI)
"""

import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

AUTOTM, MPIEXEC = (sys.argv[1:3] + [None, None])[:2]
MPI = [MPIEXEC, "--oversubscribe", "--timeout", "120"]
LOSS_TOL, WEIGHT_TOL = 1e-5, 1e-4


def run(args, timeout=180, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def ranks(n, args, **kw):
    return run(MPI + ["-np", str(n), AUTOTM, "run"] + args, **kw)


def read_f32(path):
    """{name: (shape, floats)} of a safetensors file of F32 tensors"""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        a, b = v["data_offsets"]
        assert v["dtype"] == "F32", (k, v["dtype"])
        out[k] = (v["shape"], struct.unpack(f"<{(b - a) // 4}f", data[8 + n + a:8 + n + b]))
    return out


def write_f32(path, tensors):
    """a safetensors file of F32 tensors {name: (shape, floats)}"""
    header, blobs, at = {}, [], 0
    for k, (shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}f", *values)
        header[k] = {"dtype": "F32", "shape": shape, "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def worst_weight(a, b):
    """the largest difference of any tensor, relative to its largest magnitude"""
    worst = 0.0
    for k, (_, x) in a.items():
        y = b[k][1]
        scale = max(abs(v) for v in x) or 1.0
        worst = max(worst, max(abs(p - q) for p, q in zip(x, y)) / scale)
    return worst


class Ranks(unittest.TestCase):
    """a scratch folder and a profile cache for a class of cases"""
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="autotm-ranks-")
        cls.dir = cls.tmp.name
        cls.cache = os.path.join(cls.dir, "cache.json")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def one_and_two(self, model, batch, placements, extra=()):
        """one process at the whole batch, then two ranks under each placement: (its results,
        its weights, {placement: (results, weights)})"""
        w1, r1 = self.path(f"{model}-w1.safetensors"), self.path(f"{model}-r1.json")
        p = run([AUTOTM, "run", "--model", model, "--batch", str(batch), "--weights-out", w1,
                 "-o", r1, "--quiet", *extra])
        self.assertEqual(p.returncode, 0, p.stderr)
        two = {}
        for pl in placements:
            w2, r2 = self.path(f"{model}-w2-{pl}.safetensors"), self.path(f"{model}-r2-{pl}.json")
            args = ["--ratio", "4:1", "--formulation", pl, "--cache", self.cache] \
                if pl == "synchronous" else ["--placement", pl]
            p = ranks(2, ["--model", model, "--batch", str(batch), "--weights-out", w2, "-o", r2,
                          *args, *extra])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("the mean over the ranks", p.stdout)
            self.assertIn("the same on every rank", p.stdout)
            with open(r2) as f:
                two[pl] = (json.load(f), w2)
        with open(r1) as f:
            return json.load(f), w1, two

    def check_equal_to_one(self, one, w1, two, batch):
        with open(w2 := next(iter(two.values()))[1], "rb") as f:
            first = f.read()
        for pl, (res, w2) in two.items():
            run0 = res["runs"][0]
            dp = run0["data_parallel"]
            self.assertEqual((dp["ranks"], dp["rank_batch"]), (2, batch // 2))
            self.assertEqual(len(dp["rank_step_times"]), 2)
            self.assertGreater(dp["allreduce_time"], 0)
            self.assertEqual(res["workload"]["batch"], batch)
            # the mean over the ranks of their shards' losses is the whole batch's
            for la, lb in zip(one["runs"][0]["losses"], run0["losses"]):
                self.assertLessEqual(abs(la - lb) / abs(la), LOSS_TOL, pl)
            self.assertLessEqual(worst_weight(read_f32(w1), read_f32(w2)), WEIGHT_TOL, pl)
            # bitwise the same whatever the placement (and every rank agreed: the run checks)
            with open(w2, "rb") as f:
                self.assertEqual(f.read(), first, f"{pl}'s weights differ from {w2}'s")
            self.assertEqual(run0["weights_checksum"],
                             next(iter(two.values()))[0]["runs"][0]["weights_checksum"])



class TestTraining(Ranks):
    """what the ranks train (ctest's cli.ranks)"""

    def test_transformer_compared_equals_one_process(self):
        # no batch norm: a shard's step is the whole batch's part (batch norm's statistics are
        # each rank's own, as in PyTorch's DistributedDataParallel without SyncBatchNorm).
        # Compared by step with every rank in step: each placement takes the one process's
        # steps (the warm-up and 5), and trains to the same bits on every rank
        w1, r1 = self.path("gpt-w1.safetensors"), self.path("gpt-r1.json")
        p = run([AUTOTM, "run", "--model", "tiny_gpt", "--batch", "4", "--weights-out", w1,
                 "-o", r1, "--quiet"])
        self.assertEqual(p.returncode, 0, p.stderr)
        w2, r2 = self.path("gpt-w2.safetensors"), self.path("gpt-r2.json")
        names = ["all-fast", "all-slow", "random", "synchronous"]
        p = ranks(2, ["--model", "tiny_gpt", "--batch", "4", "--ratio", "4:1", "--formulation",
                      ",".join(names), "--turns", "1", "--iters", "5", "--interleave", "step",
                      "--cache", self.cache, "--weights-out", w2, "-o", r2])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("4 placements compared in 1 turn, by step", p.stdout)
        self.assertIn("ranks            2, batch 2 each", p.stdout)
        self.assertIn("the same for every placement", p.stdout)
        self.assertEqual(p.stdout.count("compared in"), 1)  # said by rank 0 alone
        with open(r1) as f1, open(r2) as f2:
            one, two = json.load(f1), json.load(f2)
        self.assertEqual([r["formulation"] for r in two["runs"]], names)
        for run0 in two["runs"]:
            dp = run0["data_parallel"]
            self.assertEqual((dp["ranks"], dp["rank_batch"]), (2, 2))
            self.assertEqual(len(dp["rank_step_times"]), 2)
            self.assertGreater(dp["allreduce_time"], 0)
            self.assertGreaterEqual(dp["allreduce_wait_time"], 0)  # the skew, apart
            self.assertEqual(run0["comparison_size"], 4)
            self.assertEqual(run0["weights_checksum"], two["runs"][0]["weights_checksum"])
            for la, lb in zip(one["runs"][0]["losses"], run0["losses"]):
                self.assertLessEqual(abs(la - lb) / abs(la), LOSS_TOL, run0["formulation"])
        self.assertIsNotNone(two["runs"][3]["data_parallel"]["predicted_allreduce_time"])
        self.assertLessEqual(worst_weight(read_f32(w1), read_f32(w2)), WEIGHT_TOL)

    def test_compared_by_turn_every_rank_alike(self):
        # a fresh executor per placement and turn: each turn trains from the seed again
        r2 = self.path("turns.json")
        p = ranks(2, ["--model", "tiny_mlp", "--batch", "8", "--formulation", "all-fast,random",
                      "--turns", "2", "--iters", "1", "--interleave", "turn", "-o", r2])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("2 placements compared in 2 turns, by turn", p.stdout)
        with open(r2) as f:
            runs = json.load(f)["runs"]
        self.assertEqual(len(runs), 2)
        self.assertEqual(runs[0]["weights_checksum"], runs[1]["weights_checksum"])
        self.assertEqual([len(r["data_parallel"]["rank_step_times"]) for r in runs], [2, 2])

    def test_adamw_and_small_buckets(self):
        one, w1, two = self.one_and_two("tiny_mlp", 8, ["all-fast", "random"],
                                        ["--optimizer", "adamw", "--bucket-size", "2K"])
        self.check_equal_to_one(one, w1, two, 8)

    def test_data_file_is_sharded(self):
        rows, pixels, classes = 4, 64, 10
        data = {"input": ([rows, 1, 8, 8], [((i * 37) % 101) / 101 for i in range(rows * pixels)]),
                "labels": ([rows, classes], [1.0 if c == (r * 3) % classes else 0.0
                                             for r in range(rows) for c in range(classes)])}
        d = self.path("batch.safetensors")
        write_f32(d, data)
        r1, r2 = self.path("d1.json"), self.path("d2.json")
        p = run([AUTOTM, "run", "--model", "tiny_mlp", "--batch", "4", "--data", d, "-o", r1,
                 "--quiet"])
        self.assertEqual(p.returncode, 0, p.stderr)
        p = ranks(2, ["--model", "tiny_mlp", "--batch", "4", "--data", d, "-o", r2])
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(r1) as f1, open(r2) as f2:
            la, lb = json.load(f1)["runs"][0]["losses"], json.load(f2)["runs"][0]["losses"]
        for x, y in zip(la, lb):
            self.assertLessEqual(abs(x - y) / abs(x), LOSS_TOL)



class TestFailures(Ranks):
    """what the ranks refuse, and how they end (ctest's cli.ranks_failures)"""

    def test_refusals(self):
        p = ranks(2, ["--model", "tiny_mlp", "--batch", "7"])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("a batch of 7 does not divide among 2 ranks", p.stderr)
        self.assertEqual(p.stderr.count("does not divide"), 1)  # said once, by rank 0
        # ranks given different options: every rank refuses, naming what differs
        base = ["--model", "tiny_mlp", "--batch", "8", "--placement", "all-fast"]
        p = run(MPI + ["-np", "1", AUTOTM, "run", *base, "--seed", "1", ":",
                       "-np", "1", AUTOTM, "run", *base, "--seed", "2"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("ranks disagree on the options: rank 1 has --seed 2, rank 0 has --seed 1",
                      p.stderr)
        self.assertEqual(p.stderr.count("ranks disagree"), 1)  # said once, by rank 0
        # the option named with both values, not digests
        base = ["--model", "tiny_mlp", "--batch", "4", "--iters", "1"]
        p = run(MPI + ["-np", "1", AUTOTM, "run", *base, "--ratio", "4:1", ":",
                       "-np", "1", AUTOTM, "run", *base, "--ratio", "8:1"])
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertIn("rank 1 has --ratio 8:1, rank 0 has --ratio 4:1", p.stderr)
        # the other commands are one process's
        p = run(MPI + ["-np", "2", AUTOTM, "plan", "--model", "tiny_mlp", "--ratio", "4:1",
                       "-o", self.path("p.json")])
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("only 'autotm run' trains data-parallel", p.stderr)

    def signalled(self, sig, what, out, cache):
        """mpirun -np 2 autotm run --ratio 4:1 --iters 1000000 WHAT -o OUT, rank 1 sent SIG once it
        runs: once rank 0 has written to the fresh profile cache CACHE, which it does while the
        ranks profile in step, after every rank has started (a fixed sleep raced a sanitised rank's start-up
        on a busy machine); a bound of 150 s on the wait, after which it is sent all the same"""
        script = ('[ "$OMPI_COMM_WORLD_RANK" = 1 ] && (i=0; while [ ! -e "$2" ] && [ $i -lt 1500 ]; '
                  f'do sleep 0.1; i=$((i + 1)); done; kill -{sig} $$) & exec "$0" run '
                  f'--model tiny_mlp --batch 8 --ratio 4:1 --iters 1000000 {what} --cache "$2" -o "$1"')
        tmp = tempfile.mkdtemp(dir=self.dir)
        p = run(MPI + ["-np", "2", "sh", "-c", script, AUTOTM, out, cache], timeout=300,
                env=dict(os.environ, TMPDIR=tmp))
        return p, [f for f in os.listdir(tmp) if f.startswith("autotm-")]

    def test_private_caches_removed(self):
        # ranks other than 0 profile into a copy of the cache in TMPDIR: gone after the run,
        # its lock file too (an interrupted run: test_interrupt_ends_every_rank_with_130)
        tmp = self.path("tmpdir")
        os.mkdir(tmp)
        p = ranks(2, ["--model", "tiny_mlp", "--batch", "4", "--iters", "1", "--ratio", "4:1",
                      "--cache", self.path("private-cache.json")], env=dict(os.environ, TMPDIR=tmp))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([f for f in os.listdir(tmp) if f.startswith("autotm-")], [])

    def test_a_rank_that_dies_ends_the_job(self):
        out = self.path("killed.json")
        p, _ = self.signalled("KILL", "", out, self.path("killed-cache.json"))  # no clean-up
        self.assertNotEqual(p.returncode, 0)
        self.assertFalse(os.path.exists(out))

    def test_interrupt_ends_every_rank_with_130(self):
        # one run, and a comparison (its steps in turns)
        for i, what in enumerate(("", "--formulation all-fast,synchronous --turns 1")):
            out = self.path("interrupted.json")
            p, left = self.signalled("INT", what, out, self.path(f"interrupted-cache{i}.json"))
            self.assertEqual(p.returncode, 130, what + p.stderr)
            self.assertEqual(left, [])  # rank 1's copy of the cache and its lock
            self.assertIn("interrupted", p.stderr)
            self.assertFalse(os.path.exists(out))

    def test_interrupt_at_start_up_ends_with_130(self):
        # rank 1 interrupted as soon as it is autotm (the dynamic loader, the early handler,
        # MPI_Init, the options, profiling): the job ends with 130 and writes nothing, however
        # early; docs/many-machines.md says which of these a rank answers itself
        for delay in ("0", "0.2", "0.6"):
            out = self.path("early.json")
            script = ('[ "$OMPI_COMM_WORLD_RANK" = 1 ] && (while [ "$(readlink /proc/$$/exe)" != '
                      f'"$0" ]; do :; done; sleep {delay}; kill -INT $$) & exec "$0" run '
                      '--model tiny_mlp --batch 8 --iters 1000000 -o "$1"')
            p = run(MPI + ["-np", "2", "sh", "-c", script, os.path.realpath(AUTOTM), out],
                    timeout=300)
            self.assertEqual(p.returncode, 130, delay + p.stderr)
            self.assertFalse(os.path.exists(out))

    def test_ctrl_c_on_mpirun(self):
        # Ctrl-C reaches mpirun, which ends the ranks and exits with Open MPI's own code for a
        # job it ended (1 in Open MPI 4.1; docs/many-machines.md), never 0, writing nothing
        out = self.path("mpirun-interrupted.json")
        cache = self.path("mpirun-cache.json")
        p = subprocess.Popen(MPI + ["-np", "2", AUTOTM, "run", "--model", "tiny_mlp", "--batch",
                                    "8", "--ratio", "4:1", "--iters", "1000000", "--cache", cache,
                                    "-o", out],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(1500):
            if os.path.exists(cache) or p.poll() is not None:
                break
            time.sleep(0.1)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
        self.assertIn(p.returncode, (1, 130), err)
        self.assertIn("interrupted", err)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    if not AUTOTM or not MPIEXEC or not os.path.exists(MPIEXEC):
        print("ranks.py: no mpiexec: skipped", file=sys.stderr)
        sys.exit(77)
    v = run([AUTOTM, "--version"])
    if "MPI" not in v.stdout:
        print("ranks.py: autotm was built without MPI: skipped", file=sys.stderr)
        sys.exit(77)
    unittest.main(argv=sys.argv[:1] + sys.argv[3:])
