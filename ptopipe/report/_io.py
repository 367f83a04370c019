"""Atomic file output for every report, trace and image ptopipe writes.

The data goes to a temporary file next to the target, which then replaces the target with
``os.replace``: an error or a Ctrl-C never leaves a half-written file, and a reader never
sees one.  The target is checked first - a directory or a read-only file is refused with a
:class:`ConfigError` naming it (a read-only file is never replaced behind the user's back).
A new file gets the permissions any program would give it (``0666 & ~umask``); an existing
file keeps its own mode (``mkstemp`` alone would make every output 0600).

A symbolic link as the target stays a link: the data is written (atomically, next to it) to
the file the link points at, which keeps its mode and is refused if read-only, as if it had
been named itself; replacing the link with a plain file would cut it off from its target.

A character device or a named pipe (``/dev/null``, ``/dev/stdout``, a FIFO a reader waits on)
is written in place, as it comes: it cannot be replaced, and replacing it with a file would
destroy it.  A block device or a socket is refused.
"""
from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile

from ..errors import ConfigError


def save_png(fig, path: str) -> str:
    """Render a matplotlib figure to PNG, close it, and write the file atomically."""
    import io
    import matplotlib.pyplot as plt
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return write_atomic(path, buf.getvalue())


def write_atomic(path: str, data: "str | bytes") -> str:
    """Write ``data`` to ``path`` atomically; returns the path."""
    with atomic_open(path, binary=isinstance(data, bytes)) as f:
        f.write(data)
    return os.fspath(path)


#: the errors of a write that the output path's device gives (a full disk, a closed pipe):
#: a ConfigError naming the path, not an OSError of the program
_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EPIPE)


@contextlib.contextmanager
def atomic_open(path: str, binary: bool = False):
    """``with atomic_open(path) as f: f.write(...)``: a file object (text, UTF-8, unless
    ``binary``) whose content replaces ``path`` only when the block ends without an error;
    on an error or an interrupt the target is left as it was.  For output streamed in
    pieces (the Chrome trace of a long run), so it never has to be held in memory."""
    path = os.fspath(path)
    if _stream(path):
        try:
            with open(path, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
                yield f
        except OSError as e:
            if e.errno not in _FULL:
                raise
            raise ConfigError(f"cannot write {path}: {e.strerror}", fix="choose another output path") from None
        return
    target, mode = _target(path)
    try:
        fd, tmp = _temp_beside(target)
    except OSError as e:
        raise _cannot_create(path, target, e.strerror) from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as f:
            yield f
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.errno in _FULL:
            raise ConfigError(f"cannot write {_named(path, target)}: {e.strerror}",
                              fix="free space on its file system or choose another output path") from None
        raise


def check_output(path: str) -> None:
    """Raise the ConfigError writing ``path`` would raise (a directory, a read-only file, a
    missing or read-only directory): lets a command refuse a bad ``-o`` before a long run,
    not after."""
    path = os.fspath(path)
    if _stream(path):
        return
    target, _ = _target(path)
    d = os.path.dirname(target)
    if not os.access(d, os.W_OK | os.X_OK):     # (what mkstemp next to the target needs)
        raise _cannot_create(path, target, "Permission denied")
    try:            # what the permission bits do not tell (root, /proc, a full or odd file system)
        fd, tmp = _temp_beside(target)
    except OSError as e:
        raise _cannot_create(path, target, e.strerror) from None
    os.close(fd)
    os.unlink(tmp)


def _temp_beside(target: str) -> tuple:
    """(fd, path) of a new temporary file in ``target``'s directory, where it replaces it."""
    return tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp",
                            dir=os.path.dirname(target))


def _cannot_create(path: str, target: str, why: str) -> ConfigError:
    return ConfigError(f"cannot write {_named(path, target)}: cannot create a file in directory "
                       f"{os.path.dirname(target)} ({why})",
                       fix="make the directory writable or choose another output path")


def _stream(path: str) -> bool:
    """Whether ``path`` (its link's target) is a character device or a named pipe, written in
    place; raises ConfigError for one that cannot be written, a block device or a socket."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    m = st.st_mode
    if stat.S_ISBLK(m) or stat.S_ISSOCK(m):
        raise ConfigError(f"cannot write {path}: it is a {'block device' if stat.S_ISBLK(m) else 'socket'}, "
                          "not a file", fix="choose a file as the output path")
    if not (stat.S_ISCHR(m) or stat.S_ISFIFO(m)):
        return False
    if not os.access(path, os.W_OK):
        raise ConfigError(f"cannot write {path}: the device or pipe is not writable",
                          fix="choose another output path")
    return True


def _named(path: str, target: str) -> str:
    """``path`` as a message names it: with the file it links to, if it is a link."""
    return path if target == os.path.abspath(path) else f"{path} (a link to {target})"


def _target(path: str) -> tuple:
    """(the file to replace: ``path`` or, for a symbolic link, the file it points at, and the
    permission bits the written file gets); raises ConfigError for a bad target."""
    if not path or path.endswith(os.sep):
        raise ConfigError(f"no output file name in {path!r}", fix="give a file path, e.g. out.npy")
    target = os.path.realpath(path) if os.path.islink(path) else os.path.abspath(path)
    name = _named(path, target)
    d = os.path.dirname(target)
    if os.path.isdir(target):
        raise ConfigError(f"cannot write {name}: it is a directory, not a file",
                          fix="name a file, for example one inside that directory")
    if not os.path.isdir(d):
        up = d
        while up and not os.path.exists(up):
            up = os.path.dirname(up)
        if up and not os.path.isdir(up):
            raise ConfigError(f"cannot write {name}: {up} is a file, not a directory",
                              fix="choose an output path inside a directory")
        raise ConfigError(f"cannot write {name}: directory {d} does not exist",
                          fix="create the directory or choose another output path")
    try:
        st = os.stat(target)
    except FileNotFoundError:
        umask = os.umask(0)       # reading the umask means setting it; put it straight back
        os.umask(umask)
        return target, 0o666 & ~umask
    except OSError as e:          # e.g. a link that points back at itself, a name too long
        raise ConfigError(f"cannot write {name}: {e.strerror}",
                          fix="choose a shorter file name" if e.errno == errno.ENAMETOOLONG else
                          "point the link at a file, or choose another output path") from None
    mode = stat.S_IMODE(st.st_mode)
    # no write bit at all counts as read-only even for root, who may write anything
    if not mode & 0o222 or not os.access(target, os.W_OK):
        raise ConfigError(f"cannot write {name}: the file exists and is read-only",
                          fix=f"make it writable (chmod u+w {target}), delete it, "
                              "or choose another output path")
    return target, mode
