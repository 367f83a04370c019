"""The LocalSlotNum of each ``.pto`` pipe init that leaves it out is the one in the TPipe ptoas
writes (PTOAS PTOLowerFrontendPipeOps / PTOToEmitC): ``TPipe<0, DIR_C2V, 1024, 8, 8, false>``
for an A2A3 ``pto.aiv_initialize_pipe {dir_mask = 1, slot_size = 1024}``."""
import pytest

from ptopipe.arch.vocab import LOCAL_SLOT_NUM
from ptopipe.protocol.rings import FRONTEND, L2G2L, L2L, default_local_slot_num, ptoas_local_slot_num


@pytest.mark.parametrize("dir_mask,want", [(1, 8), (2, 8), (3, 4)])
def test_an_a3_frontend_init_stages_its_whole_ring(dir_mask, want):
    assert ptoas_local_slot_num(FRONTEND, dir_mask, "a2a3") == want


def test_an_a5_frontend_init_and_an_l2l_ring_take_pto_isas_default():
    assert ptoas_local_slot_num(FRONTEND, 1, "a5") is None
    assert ptoas_local_slot_num(L2L, 1, "a5", slot_num=4) is None
    assert default_local_slot_num() == LOCAL_SLOT_NUM and default_local_slot_num(1) == 1


def test_an_l2g2l_ring_without_local_slot_num_stages_its_slot_num_and_a_named_one_wins():
    assert ptoas_local_slot_num(L2G2L, 1, "a2a3", slot_num=4) == 4
    assert ptoas_local_slot_num(L2G2L, 1, "a2a3", slot_num=8, local_slot_num=3) == 3
    assert ptoas_local_slot_num(FRONTEND, 1, "a2a3", local_slot_num=3) == 3


def test_a_frontend_init_naming_what_ptoas_refuses_there_is_ptopipes_own_ring():
    """slot_num / id on a frontend init are ptopipe's spelling of a ring of its own: pto-isa's
    default LocalSlotNum, as the static reader and the run take it."""
    assert ptoas_local_slot_num(FRONTEND, 1, "a2a3", slot_num=2) is None
    assert ptoas_local_slot_num(FRONTEND, 1, "a2a3", flag_id=2) is None
