"""A count or offset a kernel computes - a GlobalTensor dimension or stride, a TEXTRACT
index, a pipe's FlagID / SlotNum / SlotSize and its local ring address - is a whole number:
a fractional value (``h + 0.5``, ``DEPTH / 4``) or a string is an error at the kernel line
that names it, never truncated by int() into another element or row and never a TypeError
from deep inside the ring arithmetic.  An integral float (``TM * K / 2``) still counts."""
import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ConfigError, KernelError
from ptopipe.isa import *  # noqa: F403
from markers import line_of

T = 16
SLOT = T * T * 4


def _kernels(bad: str, value):
    def cube(x, fifo):
        a1 = Tile(TileType.Mat, float32, T, 2 * T, addr=0)
        a0 = Tile(TileType.Left, float32, T, T, addr=0)
        TLOAD(a1, GlobalTensor(x.data(), (T, 2 * T)))
        TEXTRACT(a0, a1, value if bad == "index" else 0, T)                    # INDEX
        flag, num = (value, 2) if bad == "flag" else (0, value) if bad == "slotnum" else (0, 2)
        pipe = TPipe(flag, DIR_C2V, SLOT, num)(fifo, 0x8000)                    # PIPE

    def vector(x, out, fifo):
        t = Tile(TileType.Vec, float32, T // 2, T, addr=0)
        rows, stride = (value, 2 * T) if bad == "shape" else (T // 2, value) if bad == "stride" else (T // 2, 2 * T)
        TLOAD(t, GlobalTensor(x.data() + T * 3 / 2, (rows, T), (stride, 1)))   # VIEW
        TSTORE(GlobalTensor(out.data(), (T // 2, T)), t)
    return cube, (vector, None)


@pytest.mark.parametrize("bad,value,err,marker,what", [
    ("shape", T / 2 + 0.5, KernelError, "VIEW", "GlobalTensor shape (8.5, 16): 8.5 is not a whole number"),
    ("shape", "8", KernelError, "VIEW", "GlobalTensor shape ('8', 16): '8' is not a whole number"),
    ("stride", 32.5, KernelError, "VIEW", "GlobalTensor stride (32.5, 1): 32.5 is not a whole number"),
    ("index", 0.5, KernelError, "INDEX", "TEXTRACT index (0.5, 16) is not a whole row and column"),
    ("flag", 0.5, ConfigError, "PIPE", "pipe FlagID 0.5 is not an integer"),
    ("slotnum", 2.5, ConfigError, "PIPE", "pipe SlotNum 2.5 is not an integer"),
])
def test_a_fractional_count_is_an_error_at_its_line(bad, value, err, marker, what):
    cube, aiv = _kernels(bad, value)
    args = dict(x=np.arange(T * 2 * T, dtype=np.float32).reshape(T, 2 * T),
                out=np.zeros((T // 2, T), np.float32), fifo=gm_buffer(2 * SLOT))
    with pytest.raises(err) as ei:
        ptopipe.run(cube, aiv, args)
    assert ei.value.where.endswith(f":{line_of(_kernels, marker)}"), ei.value.where
    assert what in ei.value.what


def test_integral_floats_and_numpy_integers_are_whole_numbers():
    cube, aiv = _kernels("shape", np.int64(T // 2))
    x = np.arange(T * 2 * T, dtype=np.float32).reshape(T, 2 * T)
    res = ptopipe.run(cube, aiv, dict(x=x, out=np.zeros((T // 2, T), np.float32), fifo=gm_buffer(2 * SLOT)))
    # x.data() + 24.0 elements: row 0 from column 24, stride 32
    assert np.array_equal(res.outputs["out"], x.reshape(-1)[24:24 + T // 2 * 2 * T].reshape(T // 2, 2 * T)[:, :T])
