"""C++ kernels of several blocks (``run_cpp(..., blocks=N)``, ``run FILE.cpp --blocks N``): pto-isa's
``get_block_idx()`` and the device compiler's ``block_idx`` / ``block_num`` are the block's index and
the launch's blocks; one block runs block 0's share and ``run`` says so."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ptopipe.cli import main as cli_main
from ptopipe.cpp import run_cpp

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

KDIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp_kernels")
X = np.arange(256, dtype=np.float32).reshape(16, 16)


@needs_cxx
@pytest.mark.parametrize("name", ["twice_idx", "twice_var"])
def test_each_block_offsets_by_its_index(cpp_cache, name):
    r = run_cpp(os.path.join(KDIR, "blocks.cpp"), dict(x=X, y=np.zeros_like(X)), aiv=name, blocks=2)
    np.testing.assert_array_equal(r["y"], 2 * X)
    assert r.summary.blocks == 2 and r.summary.asked_block
    one = run_cpp(os.path.join(KDIR, "blocks.cpp"), dict(x=X, y=np.zeros_like(X)), aiv=name)
    np.testing.assert_array_equal(one["y"][:8], 2 * X[:8])
    assert not one["y"][8:].any() and one.summary.asked_block


@needs_cxx
def test_run_cpp_file_with_blocks(cpp_cache, tmp_path, capsys):
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", np.zeros_like(X))
    out = tmp_path / "out.npy"
    argv = ["run", os.path.join(KDIR, "blocks.cpp"), "--aiv", "twice_idx", "--input", f"x={tmp_path / 'x.npy'}",
            "--input", f"y={tmp_path / 'y.npy'}", "--output", f"y={out}"]
    assert cli_main(argv + ["--blocks", "2"]) == 0
    printed = capsys.readouterr().out
    assert "PASS blocks.cpp on a2a3 (spec) (2 blocks): ran" in printed and "ran as block 0 of 1" not in printed
    np.testing.assert_array_equal(np.load(out), 2 * X)
    assert cli_main(argv) == 0
    assert "note: the kernel asked for its block index (get_block_idx / get_block_num) and ran as block 0 of 1 " \
           "(--blocks N to run N)" in capsys.readouterr().out
