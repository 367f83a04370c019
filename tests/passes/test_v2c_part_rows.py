"""A Vector core's TILE_LEFT_RIGHT part pushed into the Cube's L1 (a V2C ring on A5) needs rows
of a multiple of 32 bytes (pto-isa's pushVec2MatFiFo): VerifyPipes reports it at the AIV's
TPUSH, by the rule the run's TPUSH checks (``protocol.geometry.split_push_problem``); a ring in
GM (A2A3) takes any part."""
import os

import pytest

import ptopipe.language as pl
from ptopipe.passes import verify_pipes

from markers import line_of

HERE = os.path.abspath(__file__)
R = 16


def build(part_cols):
    slot = R * 2 * part_cols * 2

    @pl.aiv
    def vector(x: pl.Tensor[[R, 2 * part_cols], pl.f16], fifo: pl.Tensor[[2 * slot], pl.u8]):
        buf = pl.import_peer_buffer(name="v2c", peer_func=cube)
        pl.aiv_initialize_pipe(pl.DIR_V2C, slot, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=2)
        sub = pl.get_subblockid()
        h = pl.load(x, [0, sub * part_cols], [R, part_cols])
        pl.TPUSH(h, buf, split=pl.TILE_LEFT_RIGHT)                      # PART

    @pl.aic
    def cube(out: pl.Tensor[[R, 2 * part_cols], pl.f16], fifo: pl.Tensor[[2 * slot], pl.u8]):
        buf = pl.reserve_buffer(name="v2c", size=2 * slot, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.DIR_V2C, slot, fifo, c2v_consumer_buf=0, v2c_consumer_buf=buf.base,
                               slot_num=2)
        m = pl.TPOP(buf, pl.Tile[[R, 2 * part_cols], pl.f16, pl.Mat], split=pl.TILE_LEFT_RIGHT)
        pl.store(m, [0, 0], out)
        pl.TFREE(buf)

    return pl.program(cube, vector, name="v2c_parts"), vector


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("part_cols", [8, 16])
def test_a_narrow_left_right_part_into_l1_is_found_statically(part_cols, platform):
    prog, vector = build(part_cols)
    found = verify_pipes.verify(prog.clone(), platform)
    if platform == "a2a3" or part_cols == 16:
        assert found == [], [str(e) for e in found]
        return
    # the 32-byte rule at the push; the 8-column parts are 16-column f16 tiles, TINSERTed 32
    # columns apart: they reach past the 512-byte slot (at the push) and the Cube's 16-column Mat
    # tile reads them 16 apart (at its TPOP) - two more findings
    rule = [e for e in found if "pushVec2MatFiFo" in e.what]
    assert len(rule) == 1 and sorted(e.kind for e in found if e not in rule) == ["slot_layout", "slot_size"], \
        [str(e) for e in found]
    assert any(e.kind == "slot_layout" and "32 elements apart" in (e.details or "") for e in found), \
        [str(e) for e in found]
    err = rule[0]
    assert "pushVec2MatFiFo" in err.what and "16 bytes a row" in err.what, err.what
    assert err.where.startswith(f"{HERE}:{line_of(vector.pyfunc, 'PART')}:"), err.where
    assert "a multiple of 16 columns" in err.fix
