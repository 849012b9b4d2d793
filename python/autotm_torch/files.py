"""files -- outputs written whole or not at all, as autotm writes them (formats/files.c)

    check_writable(path)                   before any work: FileError when path cannot take a write
    check_files([("-o", g)], [("MODEL", m)])  FileError when an output is an input or another output
    write_all([(path, data), ...])         every file, or none when anything fails or is interrupted
    write_atomic(path, data)               one file

A new or regular file is replaced through a temporary file beside it (written, synced, renamed
over it), so an interrupted write leaves the old file; an existing file keeps its permissions, a
new one gets 0666 less the umask. A symbolic link stays a link: its target is replaced, in the
target's folder. A character device or a pipe (/dev/null, a shell's process substitution) is
written in place: a rename would put a regular file where it was.
"""

import errno
import os
import signal
import stat

EXIT_USAGE, EXIT_IO = 2, 6


class FileError(Exception):
    """a path that cannot take a write, named; code: the exit status (2 usage, 6 file system)"""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def _kind(mode):
    """what a path that is no regular file is, for messages"""
    return ("a folder" if stat.S_ISDIR(mode) else "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode) else "a pipe" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")


class _Target:
    """where a write to path lands: the path, or the end of its chain of links (which need not
    exist yet); st its stat when it exists; through: a device or a pipe, written in place"""

    def __init__(self, path):
        if not path:
            raise FileError(EXIT_USAGE, "the output path is empty; give a file name")
        self.path = path
        self.target = os.path.realpath(path)
        try:
            self.st = os.stat(self.target)
        except FileNotFoundError:
            self.st = None
        except OSError as e:
            raise FileError(EXIT_IO, f"cannot write {path}: {e.strerror}") from None
        mode = self.st.st_mode if self.st else stat.S_IFREG
        self.through = stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)
        if stat.S_ISDIR(mode):
            raise FileError(EXIT_USAGE, f"{path} is a folder; give a file name in it")
        if not stat.S_ISREG(mode) and not self.through:
            raise FileError(EXIT_USAGE, f"{path} is {_kind(mode)}; autotm_torch writes regular "
                                        f"files, character devices and pipes only")

    def temporary(self):
        """(fd, name) of a new file beside the target; created 0666 so that the umask (and a
        folder's default ACL) applies as to any new file"""
        for _ in range(100):
            tmp = f"{self.target}.tmp.{os.urandom(4).hex()}"
            try:
                return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                               0o666), tmp
            except FileExistsError:
                continue
            except OSError as e:
                folder = os.path.dirname(self.target)
                if e.errno == errno.ENOENT and not os.path.isdir(folder):
                    raise FileError(EXIT_IO, f"cannot write {self.path}: the folder {folder} "
                                             f"does not exist") from None
                if e.errno == errno.ENOENT:  # procfs, sysfs: a folder that takes no new files
                    raise FileError(EXIT_IO, f"cannot write {self.path}: its folder {folder} "
                                             f"takes no new files (a system folder?); write it "
                                             f"elsewhere") from None
                raise FileError(EXIT_IO, f"cannot write {self.path}: {e.strerror}") from None
        raise FileError(EXIT_IO, f"cannot write {self.path}: no free temporary name beside it")


def check_writable(path):
    """check_writable -- FileError unless path can take a write: its folder takes the temporary
    file a write renames over it (made and removed here), or it is a device or pipe open to
    writing"""
    t = _Target(path)
    if t.through:
        if not os.access(t.target, os.W_OK):
            raise FileError(EXIT_IO, f"cannot write {path}: permission denied")
        return
    fd, tmp = t.temporary()
    os.close(fd)
    os.unlink(tmp)


def same_file(a, b):
    """a and b name one file: by device and inode where both exist, else by the path each
    resolves to (an output not made yet, a link to one)"""
    try:
        sa, sb = os.stat(a), os.stat(b)
        if (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino):
            return True
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def check_files(outputs, inputs):
    """check_files -- FileError (usage) when an output names an input or an earlier output;
    outputs and inputs are [(option, path)], a path None where not given"""
    outputs = [(o, p) for o, p in outputs if p]
    for i, (opt, path) in enumerate(outputs):
        for iopt, ipath in inputs:
            if ipath and same_file(path, ipath):
                raise FileError(EXIT_USAGE, f"{opt} {path} is the file {iopt} {ipath} reads: "
                                            f"writing it would replace the input; write the "
                                            f"output elsewhere")
        for k in range(i):
            if same_file(path, outputs[k][1]):
                raise FileError(EXIT_USAGE, f"{outputs[k][0]} {outputs[k][1]} and {opt} {path} "
                                            f"are the same file: give each output its own")


def _write_fd(fd, path, data):
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except OSError as e:
            raise FileError(EXIT_IO, f"cannot write {path}: {e.strerror}") from None
        view = view[n:]


def _stage(t, data):
    """data in a temporary file beside t's target, synced, with the target's permissions (and,
    where allowed, owner); the temporary file's name"""
    fd, tmp = t.temporary()
    try:
        if t.st:
            os.fchmod(fd, stat.S_IMODE(t.st.st_mode))
            try:
                os.fchown(fd, t.st.st_uid, t.st.st_gid)
            except OSError:
                pass  # another user's file: ours now, as any rewrite by us would make it
        _write_fd(fd, t.path, data)
        try:
            os.fsync(fd)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise FileError(EXIT_IO, f"cannot flush {t.path}: {e.strerror}") from None
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return tmp


def _write_through(t, data):
    """data into a device or a pipe in place; a pipe's open waits for a reader (Ctrl-C ends
    the wait: Python retries the open after the signal's handler, which raises)"""
    try:
        fd = os.open(t.target, os.O_WRONLY | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise FileError(EXIT_IO, f"cannot write {t.path}: {e.strerror}") from None
    try:
        _write_fd(fd, t.path, data)
    finally:
        os.close(fd)


def write_all(files):
    """write_all -- each (path, bytes) of files, or none of them: every regular file is staged
    beside its target first, then devices and pipes are written (they cannot be taken back, and
    a pipe may wait for its reader), then the staged files are renamed into place with SIGINT
    held off; on any failure or interrupt before the renames, the staged files are removed"""
    targets = [(_Target(path), data) for path, data in files]
    staged = []
    try:
        for t, data in targets:
            if not t.through:
                staged.append((_stage(t, data), t))
        for t, data in targets:
            if t.through:
                _write_through(t, data)
        _commit(staged)
        staged = []
    finally:
        for tmp, _ in staged:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _commit(staged):
    """rename each staged file over its target; a Ctrl-C that comes meanwhile is dropped: the
    set is complete once the renames start, and a rename takes no time to wait for"""
    main_thread = signal.getsignal(signal.SIGINT) is not None
    held = main_thread and hasattr(signal, "pthread_sigmask")
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        for tmp, t in staged:
            try:
                os.replace(tmp, t.target)
            except OSError as e:
                raise FileError(EXIT_IO, f"cannot rename {tmp} to {t.target}: "
                                         f"{e.strerror}") from None
    finally:
        if held:
            before = signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            signal.signal(signal.SIGINT, before)


def write_atomic(path, data):
    """write_atomic -- data (bytes) to path (write_all of one file)"""
    write_all([(path, data)])
