"""What pto-isa's own kernels write, run as the device runs it and diagnosed in the kernel's
terms: a TFREE without a split (the library's default per platform), AIV1 constructing a
one-lane pipe it is not a peer of, two pipes on one FlagID, a two-way pipe's rings by the
FlagID the kernel declared."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ptopipe import isa
from ptopipe.cpp import run_cpp
from ptopipe.errors import ProtocolError

from cpp_support import cpp_cache, needs_cxx  # noqa: F401 (fixture)

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")


def kernel(name: str) -> str:
    return os.path.join(KDIR, name)


def line_of(name: str, text: str) -> int:
    with open(kernel(name)) as f:
        return next(i for i, ln in enumerate(f, 1) if text in ln)


def _c2v64(form):
    rng = np.random.default_rng(3)
    a, b = rng.integers(-3, 4, (64, 32)).astype(np.float32), rng.integers(-3, 4, (32, 32)).astype(np.float32)
    bias = rng.integers(-8, 9, (64, 32)).astype(np.float32)
    return dict(a=a, b=b, bias=bias, out=np.zeros((64, 32), np.float32), fifo=isa.gm_buffer(2 * 2048),
                form=form), a @ b + bias


@needs_cxx
def test_a_tfree_without_a_split_frees_as_the_platforms_library_does(cpp_cache):
    """pto-isa builds ``TFREE(pipe)`` and ``TFREE<Pipe>(pipe)``: on A2A3 the tile TFREE is a no-op
    (the TPOP freed the GM slot); on A5 it is ``cons.free()`` with its
    default TILE_UP_DOWN on every call, not every SyncPeriod-th, and the extra credit lets push
    #3 of a 2-slot ring write a slot the Vector still holds - reported at that TPUSH, naming
    the TFREE; with the split it runs.  No build warning: pto-isa has both forms."""
    name = "c2v_tfree_forms.cpp"
    with pytest.raises(ProtocolError) as ei:
        run_cpp(kernel(name), _c2v64(1)[0], platform="a5", protocol="pto-isa")
    err = ei.value
    assert err.where == f"{os.path.relpath(kernel('c2v_cube.hpp'))}:{line_of('c2v_cube.hpp', 'TPUSH<')}", str(err)
    free_at = f"{os.path.relpath(kernel(name))}:{line_of(name, 'TFREE<Pipe>(pipe);')}"
    assert f"the TFREE without a split at {free_at} frees on every call on A5" in err.fix, err.fix
    assert "give TFREE the split of its TPOP" in err.fix and "TILE_NO_SPLIT" not in str(err)
    args, want = _c2v64(2)
    r = run_cpp(kernel(name), args, platform="a5", protocol="pto-isa")
    np.testing.assert_array_equal(r["out"], want)
    assert not [w for w in r.summary.leaks if "TFREE" in str(w)], r.summary.leaks
    # A2A3's tile TFREE is a no-op, whatever its split (the TPOP freed the GM slot): the model
    from ptopipe.protocol.model import model_for
    from ptopipe.arch.vocab import Protocol, TileSplitAxis
    assert model_for(Protocol.PTO_ISA, "a2a3").unsplit_free is None
    assert model_for(Protocol.PTO_ISA, "a5").unsplit_free is TileSplitAxis.TILE_UP_DOWN


LONE = """#include <pto/pto-inst.hpp>
using namespace pto;
template <typename T> AICORE void body(__gm__ T *x) { %s }
extern "C" __global__ AICORE void %s(__gm__ float *x) { body<float>(x); }
"""


@pytest.mark.parametrize("name,code,side", [
    ("k", "Tile<TileType::Vec, T, 8, 32> t; TASSIGN(t, 0);", "aiv"),          # the code decides
    ("k", "if (get_subblockid() != 0) return;", "aiv"),
    ("k", "TileAcc<T, 16, 16> acc; TileLeft<T, 16, 16> a; TileRight<T, 16, 16> b; TMATMUL(acc, a, b);", "aic"),
    ("vec_k", "TileAcc<T, 16, 16> acc;", "aiv"),                              # the name's word first
    ("k", "TileAcc<T, 16, 16> acc; Tile<TileType::Vec, T, 8, 32> t;", None),   # both: not decided
    ("k", "(void)x;", None)])                                                  # neither
def test_a_lone_kernel_runs_on_the_side_its_name_or_code_says(tmp_path, name, code, side):
    """A file whose only kernel is one ``__global__`` function needs no --aic / --aiv: the name's
    word (aic / cube, aiv / vec), else Cube-only tiles or TMATMUL (AIC) against get_subblockid()
    or Vec tiles (AIV); code of both sides, or of neither, is still a ConfigError asking for them."""
    from ptopipe.cpp.build import find_kernels
    from ptopipe.errors import ConfigError
    p = tmp_path / "lone.cpp"
    p.write_text(LONE % (code, name))
    if side is None:
        with pytest.raises(ConfigError) as ei:
            find_kernels(str(p))
        assert "--aic NAME --aiv NAME" in ei.value.fix
        return
    k = find_kernels(str(p))
    assert getattr(k, side).name == name and getattr(k, "aic" if side == "aiv" else "aiv") is None
    assert k.entry is None


@needs_cxx
def test_an_error_in_a_helper_names_the_kernel_lines_that_called_it(cpp_cache):
    """An instruction's site is its own line (``__builtin_LINE``); an error there also names the
    kernel lines that called the helper holding it, innermost first - from the failing call's
    native return addresses and the build's line tables - as the Python front end's "called
    from": here the second of two calls is the wrong one."""
    from ptopipe.errors import KernelError
    name = "helper_error.cpp"
    with pytest.raises(KernelError) as ei:
        run_cpp(kernel(name), dict(x=np.ones((8, 32), np.float32)), platform="a2a3", protocol="pto-isa")
    at = os.path.relpath(kernel(name))
    assert ei.value.where == (f"{at}:{line_of(name, 'TADD(')} (called from {at}:{line_of(name, 'addInto(d, a);')}, "
                              f"from {at}:{line_of(name, 'twice(big, a);')})"), ei.value.where
