"""The slot placement of each protocol (``ptopipe.protocol.slots``), against pto-isa's code:
where a TPUSH puts a tile's valid region and where a TPOP reads, and the judgement of a read."""
from hypothesis import given, settings, strategies as st

from ptopipe.arch.vocab import C2V, V2C, TileSplitAxis
from ptopipe.protocol.model import PTO_ISA, PTO_ISA_A5, PTO_ISA_CPUSIM, SPEC
from ptopipe.protocol.slots import Band, _judge, _reads_block_of, pop_band, push_band, read_problem

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


# -- the fast path of read_problem equals the element-by-element judgement ------------------
_dims = st.integers(0, 6)


@st.composite
def _band(draw):
    return Band(draw(st.integers(0, 40)), draw(st.integers(1, 12)), draw(_dims), draw(_dims),
                draw(st.integers(0, 6)), draw(st.integers(0, 6)))


@st.composite
def _pushes_and_read(draw):
    """A slot's pushed bands and a read - often a block of one of them, where the fast path
    decides, sometimes shifted, repitched or overwritten by a later band."""
    bands = draw(st.lists(_band(), min_size=1, max_size=3))
    b = draw(st.sampled_from(bands))
    if b.rows and b.cols and draw(st.booleans()):
        dr, dc = draw(st.integers(0, b.rows - 1)), draw(st.integers(0, b.cols - 1))
        rows, cols = draw(st.integers(1, b.rows - dr)), draw(st.integers(1, b.cols - dc))
        read = Band(b.offset + dr * b.pitch + dc, b.pitch, rows, cols, b.row0 + dr, b.col0 + dc)
        read = read._replace(**draw(st.sampled_from(
            [{}, {}, {"offset": read.offset + 1}, {"pitch": read.pitch + 1}, {"row0": read.row0 + 1}])))
    else:
        read = draw(_band())
    return bands, read, draw(st.sampled_from([UD, LR, NO]))


@settings(max_examples=150, deadline=None)
@given(_pushes_and_read())
def test_a_read_of_a_pushed_block_is_judged_as_element_by_element(case):
    bands, read, split = case
    slow = None if read.rows <= 0 or read.cols <= 0 else \
        _judge([b for b in bands if b.rows > 0 and b.cols > 0], read, split)
    assert read_problem(bands, read, split) == slow


def test_the_fast_path_decides_the_common_reads():
    # a lane's block of a whole push, and a dynamic tail: no element labelled
    whole = [Band(0, 16, 16, 16, 0, 0)]
    assert _reads_block_of(whole, Band(8 * 16, 16, 8, 16, 8, 0))
    assert _reads_block_of(whole, Band(0, 16, 5, 16, 0, 0))
    # a later push over the read's elements, a read at another pitch: judged element by element
    assert not _reads_block_of(whole + [Band(8 * 16, 16, 1, 16, 0, 0)], Band(8 * 16, 16, 8, 16, 8, 0))
    assert not _reads_block_of(whole, Band(0, 8, 16, 8, 0, 0))
