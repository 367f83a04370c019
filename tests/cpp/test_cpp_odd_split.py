"""pto-isa's odd splits in C++ (cpp_kernels/c2v_odd_split.cpp): TPUSH / TPOP / TFREE with
TileSplitAxis::TILE_UP_DOWN_ODD (15 valid rows: AIV0 8, AIV1 7 from row 8) and
TILE_LEFT_RIGHT_ODD (15 valid columns: AIV0 8, AIV1 7 from column 8) through a GM ring, checked
against numpy.  A C++ build per platform: one platform by default, both (and pto-isa's
protocol on A2A3) with PTOPIPE_CPP_FULL=1."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ptopipe import isa
from ptopipe.cpp import run_cpp

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

KERNEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels", "c2v_odd_split.cpp")
# (pto-isa on A5 frees a GM ring's slot inside the tile TPOP, so its TFREE would free it twice)
RUNS = [("a5", "spec")] + ([("a2a3", "spec"), ("a2a3", "pto-isa")] if os.environ.get("PTOPIPE_CPP_FULL") == "1"
                           else [])


@needs_cxx
@pytest.mark.parametrize("platform,protocol", RUNS)
def test_odd_splits_match_numpy(cpp_cache, platform, protocol):
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    w = rng.integers(-3, 4, (16, 16)).astype(np.float32)
    r = run_cpp(KERNEL, dict(x=x, w=w, out_rows=np.zeros((16, 16), np.float32),
                             out_cols=np.zeros((16, 16), np.float32), fifo=isa.gm_buffer(2 * 16 * 16 * 4)),
                platform=platform, protocol=protocol)
    p = x @ w
    np.testing.assert_array_equal(r["out_rows"][:15], p[:15])
    np.testing.assert_array_equal(r["out_cols"][:, :15], p[:, :15])
    assert not r["out_rows"][15].any() and not r["out_cols"][:, 15].any()
