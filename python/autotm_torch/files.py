"""files -- a file written whole or not at all"""

import os
import tempfile


def write_atomic(path, data):
    """write_atomic -- data (bytes) to path through a temporary file in the same folder,
    synced and renamed over it: an interrupted write leaves the old file as it was"""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".autotm-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
