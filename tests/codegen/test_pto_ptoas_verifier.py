"""What ptoas's own verifier refuses in a .pto pipe init (PTOAS PTO.cpp verifyPipeShape, the
frontend init's attribute block in PTOOps.td) is a warning at its line:col, and no fix text
tells a .pto user to write a value ptoas refuses."""

import pytest

from ptopipe.codegen.pto_load import load_pto
from ptopipe.errors import CompileError

_L2L = """module attributes {pto.target_arch = "a5"} {
  func.func @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c2v = pto.import_reserved_buffer {name = "c2v_fifo", peer_func = @vector} -> i32
    %pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = N}(%c2v : i32) -> !pto.pipe
    return
  }
  func.func @vector() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c2v = pto.reserve_buffer {name = "c2v_fifo", size = RES, location = #pto.address_space<vec>, auto = true} -> i32
    %pc = pto.initialize_l2l_pipe {dir_mask = 1, slot_size = 1024, slot_num = N}(%c2v : i32) -> !pto.pipe
    return
  }
}
"""

_FRONTEND = """module attributes {pto.target_arch = "a5"} {
  func.func @cube() attributes {pto.kernel_kind = #pto.kernel_kind<cube>} {
    %c0 = arith.constant 0 : i32
    %c2v = pto.import_reserved_buffer {name = "c2v_fifo", peer_func = @vector} -> i32
    pto.aic_initialize_pipe {dir_mask = 1, slot_size = 1024EXTRA} (c2v_consumer_buf = %c2v : i32, v2c_consumer_buf = %c0 : i32)
    return
  }
  func.func @vector() attributes {pto.kernel_kind = #pto.kernel_kind<vector>} {
    %c0 = arith.constant 0 : i32
    %c2v = pto.reserve_buffer {name = "c2v_fifo", size = RES, location = #pto.address_space<vec>, auto = true} -> i32
    pto.aiv_initialize_pipe {dir_mask = 1, slot_size = 1024EXTRA} (c2v_consumer_buf = %c2v : i32, v2c_consumer_buf = %c0 : i32)
    return
  }
}
"""


def _load(text, **subs):
    for k, v in subs.items():
        text = text.replace(k, str(v))
    return load_pto("k.pto", text=text)


@pytest.mark.parametrize("res,suggested", [(2048, None), (4096, 4)])
def test_a_short_reserve_suggests_only_a_slot_num_ptoas_builds(res, suggested):
    """8 slots of 1024 B need 8192 B: a reserve of 4096 may instead be a ring of slot_num 4;
    one of 2048 would be slot_num 2, which ptoas refuses - not suggested."""
    with pytest.raises(CompileError) as ei:
        _load(_L2L, N=8, RES=res)
    assert ei.value.where == "k.pto:8:5"
    assert ("slot_num" in ei.value.fix) is (suggested is not None)
    if suggested:
        assert f"slot_num = {suggested} (on a pto.initialize_l2l_pipe" in ei.value.fix


def test_a_short_reserve_of_a_frontend_init_does_not_suggest_slot_num_on_it():
    with pytest.raises(CompileError) as ei:
        _load(_FRONTEND, EXTRA="", RES=4096)
    assert "a pto.aic_/aiv_initialize_pipe takes no slot_num" in ei.value.fix


@pytest.mark.parametrize("n,warned", [(2, True), (4, False), (8, False)])
def test_slot_num_ptoas_refuses_is_a_warning_at_its_value(n, warned):
    _op, warnings, _plat = _load(_L2L, N=n, RES=n * 1024)
    mine = [w for w in warnings if "ptoas refuses" in w]
    assert len(mine) == (2 if warned else 0)
    if warned:
        assert mine[0].startswith("k.pto:4:79: ptoas refuses slot_num = 2 on pto.initialize_l2l_pipe "
                                  "(\"expects 'slot_num' to be 4 or 8\")")
        assert "give it slot_num = 4 or 8" in mine[0]


def test_slot_num_on_a_frontend_init_is_a_warning_at_the_attribute():
    """ptoas's frontend init takes dir_mask, slot_size and nosplit in its braces."""
    _op, warnings, _plat = _load(_FRONTEND, EXTRA=", slot_num = 4", RES=4096)
    assert [w.split(" on ")[0] for w in warnings if "ptoas refuses" in w] == \
        ["k.pto:5:62: ptoas refuses slot_num", "k.pto:11:62: ptoas refuses slot_num"]
    _op, warnings, _plat = _load(_FRONTEND, EXTRA=", nosplit = false", RES=8192)
    assert not [w for w in warnings if "ptoas refuses" in w]


def test_the_runs_short_reserve_fix_gives_no_slot_num_to_a_frontend_init():
    from ptopipe.codegen.pto_load import run_pto
    with pytest.raises(CompileError) as ei:
        run_pto(text=_FRONTEND.replace("EXTRA", "").replace("RES", "4096"), static=False)
    assert "give the init slot_num" not in ei.value.fix
    assert "a pto.initialize_l2l_pipe / initialize_l2g2l_pipe of slot_num = 4" in ei.value.fix
