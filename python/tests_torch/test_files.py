"""test_files -- the importer's one writer (autotm_torch.files) keeps autotm's promises
(formats/files.c): a file is replaced atomically and keeps its mode, a new one gets 0666 less the
umask, a link stays a link, a device or pipe is written in place, a folder is refused, a set of
outputs is written whole or not at all, and an output never names an input"""

import os
import stat
import tempfile
import threading
import unittest

from autotm_torch import files


class TestWrite(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def leftovers(self, folder=None):
        return [f for f in os.listdir(folder or self.dir) if ".tmp." in f]

    def test_files_existing_file_keeps_its_mode(self):
        p = self.path("g.json")
        with open(p, "w") as f:
            f.write("old")
        os.chmod(p, 0o644)
        files.write_atomic(p, b"new")
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o644)
        os.chmod(p, 0o640)
        files.write_atomic(p, b"newer")
        self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), 0o640)
        with open(p) as f:
            self.assertEqual(f.read(), "newer")
        self.assertEqual(self.leftovers(), [])

    def test_files_new_file_gets_0666_less_the_umask(self):
        for mask, want in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
            old = os.umask(mask)
            try:
                p = self.path(f"new-{mask:o}")
                files.write_atomic(p, b"x")
            finally:
                os.umask(old)
            self.assertEqual(stat.S_IMODE(os.stat(p).st_mode), want, f"umask {mask:o}")

    def test_files_link_stays_a_link(self):
        other = os.path.join(self.dir, "elsewhere")
        os.mkdir(other)
        target = os.path.join(other, "w.safetensors")
        with open(target, "w") as f:
            f.write("old")
        link = self.path("w.safetensors")
        os.symlink(os.path.join("elsewhere", "w.safetensors"), link)  # relative to its folder
        files.write_atomic(link, b"new")
        self.assertTrue(os.path.islink(link))
        with open(target) as f:
            self.assertEqual(f.read(), "new")
        self.assertEqual(self.leftovers(), [])
        self.assertEqual(self.leftovers(other), [])
        dangling = self.path("later")
        os.symlink(os.path.join(other, "made.json"), dangling)
        files.write_atomic(dangling, b"made")
        self.assertTrue(os.path.islink(dangling))
        with open(os.path.join(other, "made.json")) as f:
            self.assertEqual(f.read(), "made")

    def test_files_pipe_is_written_through(self):
        fifo = self.path("pipe")
        os.mkfifo(fifo)
        got = []

        def read():
            with open(fifo, "rb") as f:
                got.append(f.read())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        files.write_atomic(fifo, b"through the pipe")
        reader.join(10)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))
        self.assertEqual(got, [b"through the pipe"])
        self.assertEqual(self.leftovers(), [])

    def test_files_character_device_is_written_through(self):
        # not written: the suite may run as root, and a writer that regressed would rename a
        # regular file over /dev/null; what the writer would do with it is asked instead
        files.check_writable(os.devnull)
        self.assertTrue(files._Target(os.devnull).through)
        self.assertTrue(stat.S_ISCHR(os.stat(os.devnull).st_mode))

    def test_files_folder_is_refused_before_anything_is_written(self):
        w = self.path("w.safetensors")
        with self.assertRaises(files.FileError) as e:
            files.write_all([(w, b"weights"), (self.dir, b"graph")])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("is a folder", str(e.exception))
        self.assertFalse(os.path.exists(w))
        with self.assertRaises(files.FileError) as e:
            files.check_writable(self.dir)
        self.assertEqual(e.exception.code, 2)
        with self.assertRaises(files.FileError) as e:
            files.check_writable(self.path("no/such/folder.json"))
        self.assertEqual(e.exception.code, 6)
        self.assertIn("does not exist", str(e.exception))

    def test_files_failed_set_leaves_nothing(self):
        # the second file fails after the first was staged: neither is written, no temporary
        # file stays
        w, full = self.path("w.safetensors"), "/dev/full"
        if not os.path.exists(full):
            self.skipTest("no /dev/full")
        with self.assertRaises(files.FileError) as e:
            files.write_all([(w, b"weights"), (full, b"graph")])
        self.assertEqual(e.exception.code, 6)
        self.assertFalse(os.path.exists(w))
        self.assertEqual(self.leftovers(), [])

    def test_files_output_naming_an_input_is_refused(self):
        model = self.path("model.py")
        with open(model, "w") as f:
            f.write("")
        os.link(model, self.path("hard.py"))
        os.symlink(model, self.path("soft.py"))
        for out in (model, self.path("hard.py"), self.path("soft.py"),
                    os.path.join(self.dir, ".", "model.py")):
            with self.assertRaises(files.FileError, msg=out) as e:
                files.check_files([("-o", out)], [("MODEL", model)])
            self.assertEqual(e.exception.code, 2)
            self.assertIn("reads", str(e.exception))
        a = self.path("g.json")  # not made yet: compared by the path it resolves to
        with self.assertRaises(files.FileError) as e:
            files.check_files([("-o", a), ("--data-out", os.path.join(self.dir, "..",
                                                                      os.path.basename(self.dir),
                                                                      "g.json"))], [])
        self.assertIn("are the same file", str(e.exception))
        files.check_files([("-o", a), ("--weights-out", self.path("w")), ("--data-out", None)],
                          [("MODEL", model), ("MODEL", None)])


if __name__ == "__main__":
    unittest.main()
