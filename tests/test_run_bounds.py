"""A kernel calling ``sys.exit`` is a KernelError at its line, not the end of the program."""
from __future__ import annotations

import os
import sys
import threading

import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import KernelError
from ptopipe.isa import (DIR_V2C, TADDS, TFREE, TPipe, TPOP, TILE_NO_SPLIT, Tile, TileType, float32)
from ptopipe.runtime import kernels
from markers import line_of

HERE = os.path.basename(__file__)


def assert_at(err, fn, marker):
    assert err.where is not None and err.where.endswith(f"{HERE}:{line_of(fn, marker)}"), (err.where, str(err))


def one_add():
    t = Tile(TileType.Vec, float32, 8, 8, addr=0x0)
    TADDS(t, t, 1.0)


def cube_waits(fifo):
    pipe = TPipe(0, DIR_V2C, 256, 2, peers=(0,))(fifo, 0x0, 0)
    t = Tile(TileType.Mat, float32, 8, 8)
    TPOP(pipe, t, TILE_NO_SPLIT)  # POP
    TFREE(pipe)


def _in_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e
    th = threading.Thread(target=body, daemon=True)     # (daemon: a regression fails, not hangs)
    th.start()
    th.join(10)
    assert not th.is_alive(), "the run off the main thread was not stopped"
    return out


# -- a kernel that would end the program ------------------------------------------------------
def exits_0():
    one_add()
    sys.exit(0)  # EXIT


def raises_exit_3():
    one_add()
    raise SystemExit(3)  # EXIT


class Halt(BaseException):
    """Not an Exception, not a KeyboardInterrupt."""


def raises_halt():
    one_add()
    raise Halt("stop")  # EXIT


@pytest.mark.parametrize("kernel,shown", [(exits_0, "SystemExit(0) (sys.exit)"),
                                          (raises_exit_3, "SystemExit(3) (sys.exit)"),
                                          (raises_halt, "Halt('stop')")])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_a_kernel_ending_the_program_is_a_kernel_error(kernel, shown, where):
    def go():
        return ptopipe.run(cube_waits, (kernel, None), dict(fifo=ptopipe.gm_buffer(512)))
    if where == "main":
        with pytest.raises(KernelError) as ei:
            go()
        err = ei.value
    else:
        err = _in_thread(go).get("error")
        assert isinstance(err, KernelError), repr(err)
    assert err.what == f"the kernel {kernel.__name__} on AIV0 raised {shown}: a kernel cannot end the program or the run"
    assert_at(err, kernel, "EXIT")


def test_a_keyboard_interrupt_in_a_kernel_is_still_one():
    def k():
        one_add()
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        ptopipe.run(aiv=(k, None))


@pl.aic
def idle():
    return


@pl.aiv
def copy(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32]):
    t = pl.load(x, [0, 0], [16, 16])
    pl.store(t, [0, 0], out)


def build(mode):
    if mode == "exit":
        raise SystemExit(3)  # BUILD
    return pl.program(idle, copy, name="copy")


def test_system_exit_from_a_dsl_kernel_is_a_kernel_error():
    aic, aiv = kernels(build)
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    res = ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros_like(x), mode="ok"))
    assert np.array_equal(res.outputs["out"], x)
    with pytest.raises(KernelError) as ei:
        ptopipe.run(aic, (aiv, None), dict(x=x, out=np.zeros_like(x), mode="exit"))
    assert "raised SystemExit(3)" in ei.value.what
    assert_at(ei.value, build, "BUILD")
