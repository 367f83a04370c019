"""The slot placement of each protocol (``ptopipe.protocol.slots``), against pto-isa's code:
where a TPUSH puts a tile's valid region and where a TPOP reads, and the judgement of a read."""
from ptopipe.arch.vocab import C2V, V2C, TileSplitAxis
from ptopipe.protocol.model import PTO_ISA, PTO_ISA_A5, PTO_ISA_CPUSIM, SPEC
from ptopipe.protocol.slots import Band, pop_band, push_band, read_problem

UD, LR, NO = TileSplitAxis.TILE_UP_DOWN, TileSplitAxis.TILE_LEFT_RIGHT, TileSplitAxis.TILE_NO_SPLIT


def test_each_model_names_its_placement():
    assert {SPEC.slot_placement, PTO_ISA.slot_placement, PTO_ISA_A5.slot_placement} == {"npu"}
    assert PTO_ISA_CPUSIM.slot_placement == "cpusim"


def test_npu_gm_packs_at_the_valid_columns_and_reads_by_the_valid_shape():
    # pushAcc2GMFiFo: GlobalStride(ValidC), whatever the split
    assert push_band("npu", C2V, True, UD, (16, 16), (16, 8), 1) == Band(0, 8, 16, 8, 0, 0)
    # popVecTileFromGMFiFo: lane 1 from subBlockId * ValidRow * ValidCol, stride ValidCol (LR: 2x)
    assert pop_band("npu", C2V, True, UD, (8, 16), (6, 16), 1) == Band(6 * 16, 16, 6, 16, 6, 0)
    assert pop_band("npu", C2V, True, LR, (16, 8), (16, 4), 1) == Band(4, 8, 16, 4, 0, 4)
    # pushVec2GMFiFo: lane 1's part after lane 0's valid rows; popMatTileFromGMFiFo from the start
    assert push_band("npu", V2C, True, UD, (8, 16), (6, 16), 1) == Band(6 * 16, 16, 6, 16, 6, 0)
    assert pop_band("npu", V2C, True, UD, (16, 16), (12, 16), 0) == Band(0, 16, 12, 16, 0, 0)


def test_npu_local_keeps_the_static_column_pitch():
    # pushAcc2VecFiFo: ConsN = the Acc's static columns (halved for LR), DualModeSplitM halves the valid rows
    assert push_band("npu", C2V, False, NO, (16, 16), (16, 8), 0) == Band(0, 16, 16, 8, 0, 0)
    assert push_band("npu", C2V, False, UD, (16, 16), (16, 16), 1) == Band(0, 16, 8, 16, 8, 0)
    assert push_band("npu", C2V, False, LR, (16, 64), (16, 64), 1) == Band(0, 32, 16, 32, 0, 32)
    # pushVec2MatFiFo: TINSERT at row ValidRow * subBlockId of a slot tile of the static columns
    assert push_band("npu", V2C, False, UD, (8, 16), (6, 8), 1) == Band(6 * 16, 16, 6, 8, 6, 0)
    # popTileFromVecFiFo: a TASSIGN, the tile's static columns are its pitch
    assert pop_band("npu", C2V, False, UD, (8, 16), (6, 8), 1) == Band(0, 16, 6, 8, 6, 0)


def test_cpusim_lays_a_split_out_by_the_static_box():
    # TPush_c2v: lane 1 gets the static half of the rows; TPush_gm's split store at the static columns
    assert push_band("cpusim", C2V, False, UD, (16, 16), (12, 16), 1) == Band(0, 16, 4, 16, 8, 0)
    assert push_band("cpusim", C2V, True, UD, (16, 16), (16, 8), 0) == Band(0, 16, 16, 8, 0, 0)
    assert push_band("cpusim", C2V, True, NO, (16, 16), (16, 8), 0) == Band(0, 8, 16, 8, 0, 0)
    # popTileFromGMFiFo: subOffset = subblockid * consRows * prodCols
    assert pop_band("cpusim", C2V, True, UD, (8, 16), (6, 16), 1) == Band(8 * 16, 16, 6, 16, 6, 0)


def test_a_read_is_judged_against_the_pushed_bands():
    whole = [Band(0, 16, 16, 16, 0, 0)]
    assert read_problem(whole, Band(0, 16, 5, 16, 0, 0), NO) is None                 # a dynamic tail
    p = read_problem([Band(0, 16, 12, 16, 0, 0)], Band(0, 16, 16, 16, 0, 0), NO)
    assert (p.kind, p.got, p.held, p.missing) == ("unpushed", (0, 15), (0, 11), 64)
    p = read_problem(whole, Band(0, 8, 16, 8, 0, 0), NO)
    assert (p.kind, p.pitches) == ("pitch", (8, 16))
    p = read_problem([Band(0, 16, 8, 16, 8, 0)], Band(0, 16, 6, 16, 6, 0), UD)        # A5 lane 1, widened push
    assert (p.kind, p.got, p.want, p.held) == ("shifted", (8, 13), (6, 11), (8, 15))
    assert read_problem(whole, Band(0, 16, 0, 16, 0, 0), UD) is None                  # the empty replay
