// pto-isa's overloads and API as its headers declare them (include/pto/common/pto_instr.hpp,
// constants.hpp, cpu_stub.hpp, pto_tile.hpp, npu/a2a3/TPush.hpp), one Vector kernel using each:
// the tmp-tile forms (TRSQRT, TCOLSUM with isBinary, TROWEXPANDMUL, TCVT with a SaturationMode),
// the scalar-first TDIVS, the <PrecisionType> forms, instructions' events kept in `auto`, instructions
// called with their operands' types as explicit template arguments, the multi-list TMRGSORT with its
// MrgSortExecutedNumList and exhausted argument, an intra-core event id computed as an int,
// TFILLPAD<TFillPadMode::Expand> into a larger tile, a tile's one dynamic valid dim given alone, a TSTORE of a valid region smaller
// than its GlobalTensor, TFILLPAD filling with the destination's PadValue, uint16_t tiles, GlobalTensors
// shaped by TileShape2D; and as ptoas writes them: SetValidShape of a DYNAMIC tile, TQUANT<QuantType>
// with the offset tile's address, TGATHER's compare form with its offset a template argument; and
// a row / column reduction or arg-reduction into its own source's bytes, refused.
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int R = 8, C = 32;
template <typename T, int Rows = R, int Cols = C>
using G = GlobalTensor<T, TileShape2D<T, Rows, Cols, Layout::ND>, BaseShape2D<T, Rows, Cols, Layout::ND>>;
using V = Tile<TileType::Vec, float, R, C>;

static_assert(BLOCK_BYTE_SIZE == 32 && C0_SIZE_BYTE == 32 && FRACTAL_NZ_ROW == 16, "constants.hpp");
static_assert(BaseShape2D<float, R, C>::staticStride[3] == C && BaseShape2D<half, 16, 32, Layout::NZ>::staticStride[2] == 256,
              "pto_tile.hpp's BaseShape2D");
static_assert(TileShape2D<float, R, C>::staticShape[3] == R && TileShape2D<float, R, C>::staticShape[4] == C &&
                  TileShape2D<half, 32, 64, Layout::NZ>::staticShape[1] == 4 &&
                  TileShape2D<half, 32, 64, Layout::NZ>::staticShape[2] == 2 &&
                  TileShape2D<half, 32, 64, Layout::NZ>::staticShape[4] == 16,
              "pto_tile.hpp's TileShape2D");
using Pipe = TPipe<0, Direction::DIR_C2V, R * C * 4, 8>;
static_assert(Pipe::countPendingFreeCredits(40) == 2 && Pipe::countPendingFreeCredits(8) == 2 &&
                  TPipe<0, Direction::DIR_C2V, 64, 1>::countPendingFreeCredits(5) == 1,
              "a2a3 TPush.hpp's countPendingFreeCredits");

template <typename T> static void store(__gm__ float *__out__ p, T &t) { G<float> g(p); TSTORE(g, t); }

extern "C" __global__ AICORE void pto_isa_forms(__gm__ float *x, __gm__ float *rsqrt, __gm__ float *colsum,
                                                __gm__ float *rdiv, __gm__ float *twice, __gm__ float *rowmul,
                                                __gm__ int16_t *wrap, __gm__ int16_t *sat, __gm__ int16_t *dflt, __gm__ float *window,
                                                __gm__ float *padded, __gm__ uint16_t *u16, __gm__ int32_t *ids,
                                                __gm__ float *exp, __gm__ float *lists, __gm__ float *merged,
                                                __gm__ int32_t *counts, __gm__ float *expanded, __gm__ float *shaped,
                                                __gm__ int8_t *q8, __gm__ uint8_t *qu8, __gm__ int32_t *above,
                                                __gm__ int32_t *n_above, int32_t flag_id)
{
    set_ffts_base_addr(0);
    if (get_subblockid() != 0) return;
    set_flag(PIPE_V, PIPE_MTE3, flag_id & 15);
    wait_flag(PIPE_V, PIPE_MTE3, flag_id & 15);
    V a, d, t, b;
    Tile<TileType::Vec, float, 1, C> cs;
    Tile<TileType::Vec, float, R, 1, BLayout::ColMajor, R, 1> col;
    Tile<TileType::Vec, int16_t, R, C> i16;
    Tile<TileType::Vec, int32_t, R, C> tmp32;
    Tile<TileType::Vec, float, R, C, BLayout::RowMajor, R, DYNAMIC> part(8);   // Tile(validCol)
    Tile<TileType::Vec, float, R, C, BLayout::RowMajor, R, C, SLayout::NoneBox, 512, PadValue::Min> pad;
    Tile<TileType::Vec, uint16_t, R, 16> u;
    TASSIGN(a, 0x0);
    TASSIGN(d, 0x400);
    TASSIGN(t, 0x800);
    TASSIGN(b, 0xc00);
    TASSIGN(cs, 0x1000);
    TASSIGN(col, 0x1100);
    TASSIGN(i16, 0x1200);
    TASSIGN(tmp32, 0x1400);
    TASSIGN(part, 0x0);
    TASSIGN(pad, 0x1800);
    TASSIGN(u, 0x1c00);
    G<float> gx(x);
    Event<Op::TLOAD, Op::TMULS> e0;
    e0 = TLOAD(a, gx);
    Event<Op::TMULS, Op::TSTORE_VEC> e1;
    e1 = TMULS<V, V>(b, a, 2.0f, e0);       // an instruction's event, assigned to an Event, waited for
    store(twice, b);
    TRSQRT(d, a, t);
    store(rsqrt, d);
    TCOLSUM(cs, a, t, true);
    G<float, 1, C> gc(colsum);
    TSTORE(gc, cs, e1);
    TDIVS<DivAlgorithm::HIGH_PRECISION>(d, 2.0f, a);
    store(rdiv, d);
    TEXP<ExpAlgorithm::HIGH_PRECISION>(d, a);
    store(exp, d);
    TROWSUM<decltype(col), V, V>(col, a, t);
    TROWEXPANDMUL(d, a, col, t);
    store(rowmul, d);
    TMULS(b, a, 1000.0f);
    TCVT(i16, b, tmp32, RoundMode::CAST_RINT, SaturationMode::OFF);
    G<int16_t> gw(wrap), gs(sat);
    TSTORE(gw, i16);
    TCVT(i16, b, RoundMode::CAST_RINT, SaturationMode::ON);
    TSTORE(gs, i16);
    TCVT(i16, b, RoundMode::CAST_RINT);     // float -> int16 without a mode: pto-isa's OFF
    G<int16_t> gd(dflt);
    TSTORE(gd, i16);
    G<float> gwin(window);
    TSTORE(gwin, part);                     // the valid 8 x 8 into the 8 x 32 tensor
    TFILLPAD(pad, part);
    store(padded, pad);
    Tile<TileType::Vec, float, R, 2 * C, BLayout::RowMajor, R, 2 * C, SLayout::NoneBox, 512, PadValue::Min> wide;
    TASSIGN(wide, 0x2400);
    TFILLPAD<TFillPadMode::Expand>(wide, part);
    G<float, R, 2 * C> gwide(expanded);
    TSTORE(gwide, wide);
    G<uint16_t, R, 16> gu(u16);
    TLOAD(u, gu);
    TSTORE(gu, u);
    G<int32_t> gi(ids);
    TEXPANDS(tmp32, int32_t(get_block_num() * 100 + get_subblockdim()));
    TSTORE(gi, tmp32);
    // two sorted lists of 16 [value, index] tuples merged: whole, then until one runs out
    using L = Tile<TileType::Vec, float, 1, 32>;
    using M = Tile<TileType::Vec, float, 1, 64>;
    L l0, l1;
    M m, mt;
    TASSIGN(l0, 0x2000);
    TASSIGN(l1, 0x2080);
    TASSIGN(m, 0x2100);
    TASSIGN(mt, 0x2200);
    G<float, 1, 32> g0(lists), g1(lists + 32);
    TLOAD(l0, g0);
    TLOAD(l1, g1);
    MrgSortExecutedNumList whole, exhausted;
    TMRGSORT<M, M, L, L, true>(m, exhausted, mt, l0, l1);
    TMRGSORT<M, M, L, L, false>(m, whole, mt, l0, l1);
    G<float, 1, 64> gm(merged);
    TSTORE(gm, m);
    TEXPANDS(tmp32, int32_t(whole.mrgSortList0 * 1000000 + whole.mrgSortList1 * 10000 + exhausted.mrgSortList0 * 100 +
                            exhausted.mrgSortList1));
    G<int32_t> gn(counts);
    TSTORE(gn, tmp32);
    // ptoas's spellings: a DYNAMIC tile's valid shape set at once (x's top-left 4 x 8)
    Tile<TileType::Vec, float, R, C, BLayout::RowMajor, -1, -1, SLayout::NoneBox, 512, PadValue::Null,
         CompactMode::Null> dyn(R, C);
    TASSIGN(dyn, 0x0);
    dyn.SetValidShape(4, 8);
    G<float> gsh(shaped);
    TSTORE(gsh, dyn);
    // TQUANT<QuantType, Out, Src, Para>(dst, src, scale[, &offset]): rint(x * 2 [+ 10])
    Tile<TileType::Vec, int8_t, R, C> i8;
    Tile<TileType::Vec, uint8_t, R, C> u8;
    TASSIGN(i8, 0x2800);
    TASSIGN(u8, 0x2a00);
    TEXPANDS(t, 2.0f);
    TEXPANDS(b, 10.0f);
    TQUANT<QuantType::INT8_SYM, decltype(i8), V, V>(i8, a, t);
    V *offset = &b;
    TQUANT<QuantType::INT8_ASYM, decltype(u8), V, V>(u8, a, t, offset);
    G<int8_t> g8(q8);
    TSTORE(g8, i8);
    G<uint8_t> gu8(qu8);
    TSTORE(gu8, u8);
    // TGATHER<Dst, Src, CDst, Tmp, CmpMode, offset>(dst, src, kValue, cdst, tmp): per row the columns
    // (+ 7) of x > 20, and how many
    Tile<TileType::Vec, int32_t, 1, 8> cnt;
    Tile<TileType::Vec, uint8_t, 1, C> ctmp;
    TASSIGN(cnt, 0x2c00);
    TASSIGN(ctmp, 0x2c40);
    TEXPANDS(tmp32, int32_t(-1));
    TGATHER<decltype(tmp32), V, decltype(cnt), decltype(ctmp), CmpMode::GT, 7>(tmp32, a, 20.0f, cnt, ctmp);
    G<int32_t> ga(above);
    TSTORE(ga, tmp32);
    G<int32_t, 1, 8> gna(n_above);
    TSTORE(gna, cnt);
    // a reduction whose destination shares bytes with its source (a, at 0x0): pto-isa's reductions
    // store results while they still read the source - with flag_id 20 / 21 a MemoryConflictError
    Tile<TileType::Vec, float, R, 1, BLayout::ColMajor, R, 1> sums_in_a;
    Tile<TileType::Vec, float, 1, C> maxes_in_a;
    TASSIGN(sums_in_a, 0x80);
    TASSIGN(maxes_in_a, 0x200);
    if (flag_id == 20) {
        TROWSUM(sums_in_a, a, t);           // row 0's sum lands on a's row 1 before it is read
    }
    if (flag_id == 21) {
        TCOLMAX(maxes_in_a, a);             // the maxima land on a's row 4
    }
    // the arg-reductions store each row's (column's) index while they read the source too
    // (pto-isa's CPU TRowReduceIdxImpl / TColReduceIdxImpl, a5 TRowReduceIdx.hpp): flag_id 22 / 23
    Tile<TileType::Vec, int32_t, R, 1, BLayout::ColMajor, R, 1> rows_in_a;
    Tile<TileType::Vec, int32_t, 1, C> cols_in_a;
    TASSIGN(rows_in_a, 0x80);
    TASSIGN(cols_in_a, 0x200);
    if (flag_id == 22) {
        TROWARGMAX(rows_in_a, a, t);        // row 0's index lands on a's row 1 before it is read
    }
    if (flag_id == 23) {
        TCOLARGMIN(cols_in_a, a, t);        // the indices land on a's row 4
    }
}
