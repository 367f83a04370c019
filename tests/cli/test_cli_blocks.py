"""``--blocks N`` on the command line: ``run`` and ``check`` of a .py scenario and of a .pto
file, the note of a kernel that asked for its block index and ran as block 0 of 1, and bad
values."""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from ptopipe.cli import main as cli_main

KERNEL = '''
import numpy as np
from ptopipe import Scenario
from ptopipe.isa import *


def vec(x, out):
    """Block b, lane s doubles rows [(2b + s) 8, (2b + s + 1) 8) of a 32-row x."""
    row = (2 * get_block_idx() + get_subblockid()) * 8
    t = Tile(TileType.Vec, float32, 8, 16, addr=0)
    TLOAD(t, GlobalTensor(x.data() + row * 16, (8, 16)))
    TADD(t, t, t)
    TSTORE(GlobalTensor(out.data() + row * 16, (8, 16)), t)


def fits(x, out):
    """Block b of n doubles rows [b 32 / n, (b + 1) 32 / n), each lane half of them."""
    n = 32 // get_block_num() // 2
    row = (2 * get_block_idx() + get_subblockid()) * n
    t = Tile(TileType.Vec, float32, n, 16, addr=0)
    TLOAD(t, GlobalTensor(x.data() + row * 16, (n, 16)))
    TADD(t, t, t)
    TSTORE(GlobalTensor(out.data() + row * 16, (n, 16)), t)


def plain(x, out):
    t = Tile(TileType.Vec, float32, 16, 16, addr=0)
    TLOAD(t, GlobalTensor(x.data() + get_subblockid() * 256, (16, 16)))
    TADD(t, t, t)
    TSTORE(GlobalTensor(out.data() + get_subblockid() * 256, (16, 16)), t)


def make_args(rng):
    return dict(x=rng.standard_normal((32, 16)).astype(np.float32), out=np.zeros((32, 16), np.float32))


def golden(args):
    return {"out": 2 * args["x"]}
'''


def _file(tmp_path, scenario: str) -> str:
    path = tmp_path / "k.py"
    path.write_text(KERNEL + textwrap.dedent(scenario), encoding="utf-8")
    return str(path)


def _cli(argv, capsys):
    code = cli_main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


NOTE = "note: the kernel asked for its block index (get_block_idx / get_block_num) and ran as block 0 of 1"


def test_run_and_check_with_blocks(tmp_path, capsys):
    path = _file(tmp_path, 'SCENARIO = Scenario("two", None, vec, make_args, golden)\n')
    code, out, _ = _cli(["run", path, "--blocks", "2"], capsys)
    assert code == 0 and "PASS two[default] (2 blocks): matches numpy golden" in out and NOTE not in out
    code, out, err = _cli(["check", path, "--blocks", "2", "--schedules", "2"], capsys)
    assert code == 0 and "PASS two[default] on a2a3/spec (2 blocks)" in out, out + err
    # one block: block 0's rows only - the mismatch says why
    code, out, err = _cli(["run", path], capsys)
    assert code == 1 and "ran as block 0 of 1" in err and "--blocks N" in err


def test_scenario_blocks_is_the_default_and_the_option_overrides_it(tmp_path, capsys):
    path = _file(tmp_path, 'SCENARIO = Scenario("two", None, vec, make_args, golden, blocks=2)\n')
    assert _cli(["run", path], capsys)[0] == 0
    code, _, err = _cli(["run", path, "--blocks", "1"], capsys)
    assert code == 1 and "ran as block 0 of 1" in err


def test_the_note_only_when_the_kernel_asked(tmp_path, capsys):
    path = _file(tmp_path, '''
        SCENARIO = Scenario("fits", None, fits, make_args, golden)
        PLAIN = Scenario("plain", None, plain, make_args, golden)
        ''')
    code, out, _ = _cli(["run", path], capsys)
    assert code == 0
    fits_part, plain_part = out.split("PASS plain[default]")
    assert NOTE + " (--blocks N to run N)" in fits_part and NOTE not in plain_part
    code, out, _ = _cli(["run", path, "--blocks", "4", "--quiet"], capsys)
    assert code == 0 and NOTE not in out


@pytest.mark.parametrize("value", ["0", "-2"])
def test_bad_blocks_value(tmp_path, capsys, value):
    path = _file(tmp_path, 'SCENARIO = Scenario("two", None, vec, make_args, golden)\n')
    for cmd in ("run", "check"):
        code, out, err = _cli([cmd, path, "--blocks", value], capsys)
        assert code == 1 and "PASS" not in out
        assert f"--blocks {value} is not a number of blocks" in err and "at option --blocks" in err


#: a Vector kernel (run on AIV0) whose block b doubles rows [16 b, 16 b + 16) of a 32-row x
PTO = """module attributes {pto.target_arch = "a5"} {
  func.func @k(%x: !pto.ptr<f32>, %y: !pto.ptr<f32>) attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %xv = pto.make_tensor_view %x, shape = [%c32, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %yv = pto.make_tensor_view %y, shape = [%c32, %c16], strides = [%c16, %c1] : !pto.tensor_view<?x?xf32>
    %b64 = pto.get_block_idx
    %b = arith.index_cast %b64 : i64 to index
    %r = arith.muli %b, %c16 : index
    %t = pto.alloc_tile : TILE
    %xp = pto.partition_view %xv, offsets = [%r, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    pto.tload ins(%xp : !pto.partition_tensor_view<16x16xf32>) outs(%t : TILE)
    pto.tadd ins(%t, %t : TILE, TILE) outs(%t : TILE)
    %yp = pto.partition_view %yv, offsets = [%r, %c0], sizes = [%c16, %c16] : !pto.tensor_view<?x?xf32> -> !pto.partition_tensor_view<16x16xf32>
    pto.tstore ins(%t : TILE) outs(%yp : !pto.partition_tensor_view<16x16xf32>)
    return
  }
}
""".replace("TILE", "!pto.tile_buf<loc=vec, dtype=f32, rows=16, cols=16, v_row=16, v_col=16, blayout=row_major, "
                    "slayout=none_box, fractal=512, pad=0>")


def test_a_pto_file_using_get_block_idx(tmp_path, capsys):
    src = tmp_path / "k.pto"
    src.write_text(PTO, encoding="utf-8")
    x = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "zeros.npy", np.zeros_like(x))
    y = tmp_path / "y.npy"
    io = ["--input", f"x={tmp_path / 'x.npy'}", "--input", f"y={tmp_path / 'zeros.npy'}", "--output", f"y={y}"]
    code, out, _ = _cli(["run", str(src), "--blocks", "2", *io], capsys)
    assert code == 0 and "PASS k.pto @k on a5 (spec) (2 blocks): ran" in out and NOTE not in out
    np.testing.assert_array_equal(np.load(y), 2 * x)
    code, out, _ = _cli(["run", str(src), *io], capsys)
    assert code == 0 and NOTE in out
    np.testing.assert_array_equal(np.load(y)[:16], 2 * x[:16])
    assert not np.load(y)[16:].any()
    code, out, err = _cli(["check", str(src), "--blocks", "2", "--schedules", "1", "--input",
                           f"x={tmp_path / 'x.npy'}"], capsys)
    assert code == 0 and "(2 blocks)" in out, out + err


def test_the_report_of_several_blocks_says_which_block_it_shows(tmp_path, capsys):
    path = _file(tmp_path, 'SCENARIO = Scenario("two", None, vec, make_args, golden)\n')
    report = tmp_path / "r.html"
    code, out, _ = _cli(["run", path, "--blocks", "2", "--quiet", "--report", str(report)], capsys)
    assert code == 0
    assert "ptopipe two[default] - block 0 of 2" in report.read_text(encoding="utf-8")


def test_trace_takes_blocks_and_says_which_block_it_traced(tmp_path, capsys):
    """``trace --blocks N`` as run's: the verdict says the blocks, the trace (one cluster) says
    its block in the printed line and in the JSON; one block of a kernel that asked: the note."""
    import json
    path = _file(tmp_path, 'SCENARIO = Scenario("two", None, vec, make_args, golden, blocks=2)\n')
    trace = tmp_path / "t.json"
    code, out, _ = _cli(["trace", path, "-o", str(trace)], capsys)
    assert code == 0 and "PASS two[default] (2 blocks): matches numpy golden" in out
    assert f"wrote {trace} (two[default], block 0 of 2, " in out and NOTE not in out
    other = json.loads(trace.read_text(encoding="utf-8"))["otherData"]
    assert (other["block"], other["blocks"]) == (0, 2)
    src = tmp_path / "k.pto"
    src.write_text(PTO, encoding="utf-8")
    code, out, _ = _cli(["trace", str(src), "-o", str(trace), "--blocks", "2"], capsys)
    assert code == 0 and f"wrote {trace} (k.pto @k, block 0 of 2, " in out and NOTE not in out
    code, out, _ = _cli(["trace", str(src), "-o", str(trace)], capsys)
    assert code == 0 and NOTE in out and "block 0 of 2" not in out
    assert "block" not in json.loads(trace.read_text(encoding="utf-8"))["otherData"]


@pytest.mark.parametrize("kernel", ["examples/scenarios/s1_cv_split.py", "tests/pto/accumulate_a3.pto"])
def test_a_race_between_blocks_writes_the_report_of_the_block_it_names(kernel, tmp_path, capsys):
    """Found after every block ran: the report shows the block whose access the error is at
    (block 1's TPUSH of the one GM ring both blocks use), and the note says so."""
    import os
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    report = tmp_path / "r.html"
    code, out, err = _cli(["run", os.path.join(root, kernel), "--blocks", "2", "--report", str(report)], capsys)
    assert code == 1 and "DataRaceError: data race (read/write) on GM between blocks: block 1" in err, err
    assert "note: the run stopped with DataRaceError; its reports show it up to there" in err
    assert "block 1 of 2" in report.read_text(encoding="utf-8")
