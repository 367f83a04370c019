"""Errors a kernel meets inside ptopipe's ISA name the kernel line that made them: a
GlobalTensor used before a TALLOC / TPOP gave it an address (and which instruction used it),
a GlobalTensor of more than 5 dimensions, a TMPipe between tiles that are no ring's ends, an
ISA call no kernel made (a tile placed at a kernel file's top level, on a thread), and an error
raised with no location of its own while a kernel runs."""
from __future__ import annotations

import inspect
import os
import threading

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ConfigError, KernelError
from ptopipe.isa import (DIR_C2V, TALLOC, TLOAD, TPUSH, TSTORE, FIFOType, GlobalTensor, Tile,
                         TileType, TMPipe, TPipe, float32)


def _line(fn, marker: str) -> tuple:
    src, start = inspect.getsourcelines(fn)
    (i,) = [k for k, t in enumerate(src) if marker in t]
    return os.path.abspath(inspect.getsourcefile(fn)), start + i


def _at(where: str) -> tuple:
    file, line = where.rsplit(":", 1)
    return os.path.abspath(file), int(line)


def _run_vec(kernel):
    return ptopipe.run(None, (kernel, None), dict(x=np.zeros((4, 8), np.float32)))


def store_unassigned(x):
    g = GlobalTensor(float32, (4, 8))
    t = Tile(TileType.Vec, float32, 4, 8, addr=0)
    TSTORE(g, t)                                         # STORE


def store_window_unassigned(x):
    g = GlobalTensor(float32, (8, 8))
    t = Tile(TileType.Vec, float32, 8, 8, addr=0, valid_rows=4)
    TSTORE(g, t)                                         # WINDOW


def load_unassigned(x):
    g = GlobalTensor(float32, (4, 8))
    t = Tile(TileType.Vec, float32, 4, 8, addr=0)
    TLOAD(t, g)                                          # LOAD


def pointer_of_unassigned(x):
    g = GlobalTensor(float32, (4, 8))
    return g.data() + 8                                  # DATA


def six_dims(x):
    return GlobalTensor(x.data(), (1, 1, 1, 1, 4, 8))    # SIX


def tmpipe_mat_to_vec(x):
    TMPipe(0, FIFOType.GM_FIFO, 2, 1, Tile(TileType.Mat, float32, 4, 8),   # TMPIPE
           Tile(TileType.Vec, float32, 4, 8))


def _raises_unlocated():
    raise KernelError("a check of the kernel's own failed")     # OWN


def own_error(x):
    _raises_unlocated()


@pytest.mark.parametrize("kernel,marker,use", [
    (store_unassigned, "# STORE", "TSTORE (destination)"),
    (store_window_unassigned, "# WINDOW", "TSTORE (destination)"),
    (load_unassigned, "# LOAD", "TLOAD (source)"),
    (pointer_of_unassigned, "# DATA", "GlobalTensor.data()"),
], ids=lambda v: getattr(v, "__name__", None) if callable(v) else None)
def test_a_global_tensor_with_no_address_names_the_instruction_and_its_line(kernel, marker, use):
    with pytest.raises(KernelError) as ei:
        _run_vec(kernel)
    e = ei.value
    assert e.what.startswith(f"{use}: GlobalTensor float32 ")
    assert "has no GM address yet - no TALLOC (producer) or TPOP (consumer) has assigned it" in e.what
    assert "TALLOC" in e.fix
    assert _at(e.where) == _line(kernel, marker)


def address_flow_cube(fifo):
    pipe = TPipe(0, DIR_C2V, 4 * 8 * 4, 2, peers=(0,))(fifo)
    slot = GlobalTensor(float32, (4, 8))
    acc = Tile(TileType.Acc, float32, 4, 8, addr=0)
    TSTORE(slot, acc)                                    # BEFORE-TALLOC
    TALLOC(pipe, slot)
    TPUSH(pipe, slot)


def test_a_store_into_a_slot_before_its_talloc_is_located_at_the_store():
    args = dict(fifo=ptopipe.isa.gm_buffer(2 * 4 * 8 * 4))
    with pytest.raises(KernelError) as ei:
        ptopipe.run(address_flow_cube, (lambda fifo: None, None), args)
    assert ei.value.what.startswith("TSTORE (destination): GlobalTensor float32 ")
    assert _at(ei.value.where) == _line(address_flow_cube, "# BEFORE-TALLOC")


def test_a_six_dimensional_global_tensor_names_its_line_in_a_kernel_and_outside():
    with pytest.raises(KernelError) as ei:
        _run_vec(six_dims)
    assert ei.value.what == "GlobalTensor has at most 5 dimensions, got 6: (1, 1, 1, 1, 4, 8)"
    assert ei.value.fix and _at(ei.value.where) == _line(six_dims, "# SIX")
    with pytest.raises(KernelError) as ei:
        GlobalTensor(float32, (1, 2, 1, 1, 4, 8))
    assert _at(ei.value.where) == (os.path.abspath(__file__), inspect.currentframe().f_lineno - 1)


def test_a_tmpipe_that_is_no_ring_names_its_line():
    with pytest.raises(ConfigError) as ei:
        _run_vec(tmpipe_mat_to_vec)
    assert "producer Mat -> consumer Vec is not a cross-core path" in ei.value.what
    assert "Acc -> Vec" in ei.value.fix
    assert _at(ei.value.where) == _line(tmpipe_mat_to_vec, "# TMPIPE")


def test_an_error_raised_in_a_kernel_without_a_location_gets_the_kernel_line():
    with pytest.raises(KernelError) as ei:
        _run_vec(own_error)
    assert _at(ei.value.where) == _line(_raises_unlocated, "# OWN")
    assert str(ei.value).splitlines()[1].startswith("  at ")       # the rendered text shows it


def place_a_tile(caught):
    try:
        Tile(TileType.Vec, float32, 4, 8, addr=0)        # PLACE
    except KernelError as e:
        caught.append(e)


def test_an_isa_call_no_kernel_made_names_its_line():
    # a kernel file's top level (a tile placed with addr= is placed on the running core)
    with pytest.raises(KernelError) as ei:
        Tile(TileType.Vec, float32, 4, 8, addr=0)
    assert ei.value.what == "an ISA instruction was called outside a running kernel"
    assert _at(ei.value.where) == (os.path.abspath(__file__), inspect.currentframe().f_lineno - 2)
    caught = []
    th = threading.Thread(target=place_a_tile, args=(caught,), name="helper")
    th.start()
    th.join()
    assert caught[0].what == "an ISA instruction was called outside a running kernel (on thread 'helper')"
    assert _at(caught[0].where) == _line(place_a_tile, "# PLACE")
