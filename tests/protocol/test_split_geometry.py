"""A split TPUSH's tile divides between the two Vector cores (protocol.geometry's
split_push_problem, asked by the run's TPUSH and by VerifyPipes): an even extent on the split
axis, and for an Acc pushed into the Vector cores' UB (A5) pto-isa's pushAcc2VecFiFo rule - the
FIX pipe's dual-mode TMOV takes a 4-byte element and a multiple of 32 columns (LEFT_RIGHT) or
2 rows (UP_DOWN): a static_assert on the static shape, a PTO_ASSERT on the valid shape."""
import pytest

from ptopipe.arch.vocab import TileSplitAxis
from ptopipe.protocol.geometry import split_push_problem

LR, UD, NO = TileSplitAxis.TILE_LEFT_RIGHT, TileSplitAxis.TILE_UP_DOWN, TileSplitAxis.TILE_NO_SPLIT


def test_a_left_right_acc_push_into_ub_takes_a_multiple_of_32_columns():
    why, fix = split_push_problem(LR, (16, 16), (16, 16), 4, acc_to_ub=True)
    assert "DualModeSplitN" in why and "a multiple of 32 columns" in why and "16 columns" in why
    assert "static_assert" in why and "TILE_UP_DOWN" in fix
    assert split_push_problem(LR, (16, 32), (16, 32), 4, acc_to_ub=True) is None
    assert split_push_problem(LR, (16, 64), (16, 64), 4, acc_to_ub=True) is None


def test_only_the_valid_columns_off_32_is_the_runtime_assert():
    why, _ = split_push_problem(LR, (16, 32), (16, 16), 4, acc_to_ub=True)
    assert "16 valid columns" in why and "PTO_ASSERT" in why and "static_assert" not in why


@pytest.mark.parametrize("split,shape", [(LR, (16, 16)), (LR, (16, 8)), (UD, (3, 16))])
def test_a_ring_in_gm_or_a_vector_tile_has_no_dual_mode_rule(split, shape):
    """(A2A3 stores the Acc to its GM slot: no dual-mode TMOV; valid extents still halve.)"""
    assert split_push_problem(split, shape, (shape[0] - shape[0] % 2, shape[1]), 4, acc_to_ub=False) is None


def test_up_down_needs_even_rows_static_and_valid():
    assert "do not halve" in split_push_problem(UD, (16, 16), (15, 16), 4, acc_to_ub=True)[0]
    why, _ = split_push_problem(UD, (17, 16), (16, 16), 4, acc_to_ub=True)
    assert "DualModeSplitM" in why and "17 rows" in why and "static_assert" in why
    assert split_push_problem(UD, (16, 16), (16, 16), 4, acc_to_ub=True) is None


def test_the_dual_mode_tmov_takes_a_4_byte_element_and_no_split_is_free():
    assert "2 bytes" in split_push_problem(LR, (16, 32), (16, 32), 2, acc_to_ub=True)[0]
    assert split_push_problem(NO, (15, 7), (15, 7), 2, acc_to_ub=True) is None


def test_a_vector_part_pushed_into_l1_left_right_takes_rows_of_32_bytes():
    """pto-isa's A5 pushVec2MatFiFo: each Vector core's TILE_LEFT_RIGHT part (the pushed tile is
    the part) TINSERTed into the Cube's L1 slot needs valid rows of a multiple of 32 bytes."""
    why, fix = split_push_problem(LR, (16, 8), (16, 8), 2, vec_to_l1=True)
    assert "pushVec2MatFiFo" in why and "8 valid columns of 2-byte elements are 16 bytes a row" in why
    assert "PTO_ASSERT" in why
    assert "a multiple of 16 columns" in fix and "TILE_UP_DOWN" in fix and "DIR_V2C_GM" in fix
    assert "multiple of 8 columns" in split_push_problem(LR, (16, 8), (16, 4), 4, vec_to_l1=True)[1]
    assert split_push_problem(LR, (16, 16), (16, 16), 2, vec_to_l1=True) is None
    assert split_push_problem(LR, (16, 8), (16, 8), 4, vec_to_l1=True) is None


def test_a_vector_part_is_not_a_whole_tile():
    """The part's own extents need not halve, and UP_DOWN / NO_SPLIT parts take any row width."""
    assert split_push_problem(LR, (15, 16), (15, 16), 2, vec_to_l1=True) is None
    assert split_push_problem(UD, (7, 4), (7, 4), 2, vec_to_l1=True) is None
    assert split_push_problem(NO, (7, 4), (7, 4), 2, vec_to_l1=True) is None
