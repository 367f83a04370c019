// pto-isa's indexed GM gather / scatter with its mode template arguments: rows of a table at the
// indices of a [1, R] tile (clamped), elements at the indices of an [R, C] tile (wrapped), the
// rows added back into a second table at the same indices (those past it skipped), the elements
// stored into a flat third one (clamped: the last write stays).  Built against ptopipe's headers
// and against pto-isa's (its CPU simulator) alike.
#include <pto/pto-inst.hpp>
using namespace pto;

constexpr int R = 8, C = 16, TR = 32;
using Table = GlobalTensor<float, Shape<1, 1, 1, TR, C>, Stride<1, 1, 1, C, 1>>;
using Flat = GlobalTensor<float, Shape<1, 1, 1, 1, TR * C>, Stride<1, 1, 1, TR * C, 1>>;
using RowIdx = GlobalTensor<int32_t, Shape<1, 1, 1, 1, R>, Stride<1, 1, 1, R, 1>>;
using ElemIdx = GlobalTensor<int32_t, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
using Out = GlobalTensor<float, Shape<1, 1, 1, R, C>, Stride<1, 1, 1, C, 1>>;
using Data = Tile<TileType::Vec, float, R, C, BLayout::RowMajor, R, C>;
using RI = Tile<TileType::Vec, int32_t, 1, R, BLayout::RowMajor, 1, R>;
using EI = Tile<TileType::Vec, int32_t, R, C, BLayout::RowMajor, R, C>;

extern "C" __global__ AICORE void mgather_mscatter(__gm__ float *table, __gm__ int32_t *ridx, __gm__ int32_t *eidx,
                                                   __gm__ float *rows, __gm__ float *elems, __gm__ float *racc,
                                                   __gm__ float *eacc)
{
    if (get_subblockid() != 0)
        return;
    Data d, e;
    RI ri;
    EI ei;
    TASSIGN(ri, 0x0);
    TASSIGN(ei, 0x100);
    TASSIGN(d, 0x1000);
    TASSIGN(e, 0x2000);
    Table t(table), tacc(racc);
    Flat facc(eacc);
    RowIdx gri(ridx);
    ElemIdx gei(eidx);
    Out orows(rows), oelems(elems);
    TLOAD(ri, gri);
    TLOAD(ei, gei);
    set_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    wait_flag(PIPE_MTE2, PIPE_V, EVENT_ID0);
    MGATHER<Coalesce::Row, GatherOOB::Clamp>(d, t, ri);
    MGATHER<Coalesce::Elem, GatherOOB::Wrap>(e, t, ei);
    set_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    wait_flag(PIPE_V, PIPE_MTE3, EVENT_ID0);
    TSTORE(orows, d);
    TSTORE(oelems, e);
    MSCATTER<Coalesce::Row, ScatterAtomicOp::Add, ScatterOOB::Skip>(tacc, d, ri);
    MSCATTER<Coalesce::Elem, ScatterAtomicOp::None, ScatterOOB::Clamp>(facc, e, ei);
}
