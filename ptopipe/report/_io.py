"""Atomic file output: write to a temporary file next to the target, then ``os.replace``,
so an interrupted run never leaves a truncated report or trace behind."""
from __future__ import annotations

import os
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
    path = os.fspath(path)
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d):
        raise ConfigError(f"cannot write {path}: directory {d} does not exist",
                          fix="create the directory or choose another output path")
    mode = "wb" if isinstance(data, bytes) else "w"
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=d)
    try:
        with os.fdopen(fd, mode, **({} if mode == "wb" else {"encoding": "utf-8"})) as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path
