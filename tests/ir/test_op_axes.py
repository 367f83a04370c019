"""Every op declares its data dependence along tile rows and columns (:class:`ptopipe.ir.ops.Axes`),
what the split of a mixed function's Vector work between the two Vector cores follows: the
op table is enumerated (an op without a declaration cannot be defined), and the unary
declarations are checked against the ops' numpy kernels (a unary-form op that combines
neighbouring columns, as TPAIRREDUCESUM does, is not element-wise)."""
import numpy as np
import pytest

from ptopipe.arch.catalogue import OPS as CATALOGUE
from ptopipe.ir.opdefs import OPDEFS, _def
from ptopipe.ir.ops import AXES_KINDS, OPS, Along, Axes, OpSpec, register


def test_every_op_of_the_op_table_declares_its_axes():
    assert len(OPDEFS) > 100
    for name, d in OPDEFS.items():
        assert isinstance(d.axes, Axes), name
        assert d.axes.kind in AXES_KINDS, name
        if d.axes.kind == "tile":
            assert isinstance(d.axes.rows, Along) and isinstance(d.axes.cols, Along), name
        if d.spec is not None:
            assert d.spec.axes is d.axes, name            # one declaration per op
    # every DSL op of the catalogue computes a tile, moves a GM window or is a Cube op
    for c in CATALOGUE.values():
        if c.dsl is not None:
            assert OPDEFS[f"pl.{c.dsl}"].axes.kind in ("tile", "window", "cube"), c.dsl


def test_an_op_without_axes_cannot_be_defined():
    with pytest.raises(ValueError, match="'pl.nothing' declares no Axes"):
        _def("pl.nothing", lambda op, ctx: None, None)
    with pytest.raises(ValueError, match="'nothing' declares no Axes"):
        register(OpSpec("nothing", "nothing", (), lambda kind, a, at: None))
    assert "pl.nothing" not in OPDEFS and "nothing" not in OPS
    with pytest.raises(ValueError, match="a COUNTS axis names the start operand"):
        Axes("tile", Along.COUNTS, Along.SAME)
    with pytest.raises(ValueError, match="a tile op's Axes gives rows and cols"):
        Axes("tile", Along.SAME)


@pytest.mark.parametrize("name", sorted(n for n, c in CATALOGUE.items()
                                        if c.dsl is not None and c.form == "unary"))
def test_unary_declarations_match_the_kernels(name):
    """Along an axis declared SAME the kernel of each half of a tile is that half of the
    kernel of the tile; along one declared MIXES it is not."""
    c = CATALOGUE[name]
    dtype = np.float32 if c.dtype_error(np.float32) is None else np.int32
    a = np.arange(1, 4 * 8 + 1, dtype=dtype).reshape(4, 8)
    whole = np.zeros_like(a)
    c.kernel(a, whole)
    axes = OPDEFS[f"pl.{c.dsl}"].axes
    for axis, along in ((0, axes.rows), (1, axes.cols)):
        halves = []
        for part in np.split(a, 2, axis=axis):
            out = np.zeros_like(part)
            c.kernel(part, out)
            halves.append(out)
        same = np.array_equal(np.concatenate(halves, axis=axis), whole)
        assert same == (along is Along.SAME), (name, axis, along)
