"""``split = 3 / 4`` in a .pto (pto-isa's TILE_UP_DOWN_ODD / TILE_LEFT_RIGHT_ODD, which pypto prints
for every odd split extent): odd_split_a3.pto pushes 15 valid rows split 3 and 15 valid columns
split 4 through a ring in GM and matches numpy on both platforms; a lane popping the wrong share is
reported at its pto.tpop; the writer prints the value back; an odd split into A5's UB ring, which
pto-isa does not move, is a finding at the push."""
import pathlib
import re

import numpy as np
import pytest

import ptopipe
from ptopipe.arch.vocab import TileSplitAxis
from ptopipe.codegen import read_pto, write_pto
from ptopipe.codegen.pto_exec import read_program
from ptopipe.codegen.pto_exec.pipe_ops import ptoas_refusals
from ptopipe.codegen.pto_load import load_pto
from ptopipe.errors import CompileError, ProtocolError

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ODD = (HERE / "odd_split_a3.pto").read_text()
LANE_EXTENT = "%e = arith.subi %c8, %sub : index"


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def _run(text, platform):
    rng = np.random.default_rng(1)
    x, w = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    res = ptopipe.run_pto(text=text, platform=platform, inputs=dict(
        x=x, w=w, rows=np.zeros((16, 16), np.float32), cols=np.zeros((16, 16), np.float32)))
    return res.outputs, x @ w


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_odd_row_and_column_splits_match_numpy(platform, no_hang):
    out, p = _run(ODD if platform == "a2a3" else ODD.replace('"a3"', '"a5"'), platform)
    np.testing.assert_allclose(out["rows"][:15], p[:15], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["cols"][:, :15], p[:, :15], rtol=1e-5, atol=1e-5)
    assert not out["rows"][15].any() and not out["cols"][:, 15].any()


def test_an_odd_split_is_a_warning_at_its_value_as_the_bundled_ptoas_refuses_it():
    """ptoas 0.27 takes split 0, 1 or 2 ("expects 'split' to be 0, 1, or 2"); a newer one, which
    pypto writes the odd splits for, takes 3 and 4: the file runs, each odd split warned at its value."""
    said = [w for w in ptoas_refusals(read_program(ODD, "k.pto")) if "refuses split" in w]
    want = [(i, ln.rindex("{split = ") + len("{split = ") + 1) for i, ln in enumerate(ODD.splitlines(), 1)
            if re.search(r"\{split = [34]\}", ln)]
    assert [tuple(map(int, w.split(":")[1:3])) for w in said] == want and len(want) == 6, said
    assert "(\"expects 'split' to be 0, 1, or 2\"); a newer ptoas" in said[0]


def test_a_lane_popping_the_wrong_share_is_reported_at_its_tpop(no_hang):
    """Both lanes pop 8 of the 15 rows: AIV1's band would start at row 9 (its extent + 1)."""
    assert LANE_EXTENT in ODD
    bad = ODD.replace(LANE_EXTENT, "%e = arith.addi %c8, %c0 : index")
    with pytest.raises(ProtocolError) as ei:
        ptopipe.run_pto(text=bad, path="k.pto", platform="a2a3", inputs=dict(
            x=np.ones((16, 16), np.float32), w=np.ones((16, 16), np.float32),
            rows=np.zeros((16, 16), np.float32), cols=np.zeros((16, 16), np.float32)))
    assert "AIV1 pops 8 valid rows of the Cube's 15" in ei.value.what and "pop 7 valid rows on AIV1" in ei.value.fix
    assert ei.value.where.startswith(f"k.pto:{_line(bad, 'pto.tpop(%t, %pipe')}:"), ei.value.where


def test_the_writer_prints_an_odd_split_back():
    text = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text().replace("{split = 1}", "{split = 3}")
    op, _, plat = load_pto("c.pto", "a2a3", "spec", text=text)
    out = write_pto(op, plat)
    assert out.count("{split = 3}") == 3, out
    back = read_pto(out, "k.pto")
    assert {o.split for o in back.walk() if o.name in ("pl.tpush", "pl.tpop")} == {TileSplitAxis.TILE_UP_DOWN_ODD}


def test_an_odd_split_into_a5s_ub_ring_is_a_finding_at_the_push():
    text = (ROOT / "tests" / "pto" / "c2v_split_a3.pto").read_text().replace("{split = 1}", "{split = 3}")
    text = text.replace('"a3"', '"a5"')
    with pytest.raises(CompileError) as ei:
        load_pto("c.pto", "a5", "spec", text=text)
    assert "pushAcc2VecFiFo has no TILE_UP_DOWN_ODD case" in ei.value.what, ei.value
    assert "pto.initialize_l2g2l_pipe" in ei.value.fix
    assert ei.value.where.startswith(f"c.pto:{_line(text, 'pto.tpush_to_aiv')}:"), ei.value.where
