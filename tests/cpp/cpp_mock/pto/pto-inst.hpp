// A tiny stand-in for pto-isa's <pto/pto-inst.hpp>, written for ptopipe's tests (not pto-isa code):
// just enough declarations for `g++ -fsyntax-only` to type-check the C++ that ptopipe's C++ writer
// emits - template parameter kinds and order, argument counts, the tile locations the
// cross-core and Cube ops accept, and the layouts pto-isa's NPU headers require (element-wise
// ops RowMajor, the per-row operand of TROWEXPAND* and the dst of TROW* reductions, TRESHAPE's
// equal byte size; the *_GM directions on A5 only: compile with -DPTO_NPU_ARCH_A5).
#pragma once
#include <cstdint>
#include <type_traits>

#define AICORE
#define __global__
#define __gm__

// 16-bit floats: two bytes, as on the device (the tile alignment asserts use sizeof)
struct half { unsigned short bits; half() = default; half(float) : bits(0) {} };
struct bfloat16_t { unsigned short bits; bfloat16_t() = default; bfloat16_t(float) : bits(0) {} };
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit floats");

enum pipe_t { PIPE_S, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_M, PIPE_V, PIPE_FIX, PIPE_ALL };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
inline void set_flag(pipe_t, pipe_t, event_t) {}
inline void wait_flag(pipe_t, pipe_t, event_t) {}
inline void pipe_barrier(pipe_t) {}
inline uint32_t get_subblockid() { return 0; }

namespace pto {
enum class TileType { Vec, Mat, Left, Right, Acc, Bias };
enum class BLayout { RowMajor, ColMajor };
enum class SLayout { NoneBox, RowMajor, ColMajor };
enum class TileSplitAxis { TILE_NO_SPLIT, TILE_UP_DOWN, TILE_LEFT_RIGHT };
enum class RoundMode { CAST_NONE, CAST_RINT };
enum Direction : uint8_t { DIR_C2V = 1, DIR_V2C = 2, DIR_BOTH = 3, DIR_V2C_CTRL = 4,
#ifdef PTO_NPU_ARCH_A5
                           DIR_C2V_GM = 5, DIR_V2C_GM = 6, DIR_BOTH_GM = 7
#endif
};

template <TileType L, typename T, int R, int C, BLayout B = BLayout::RowMajor, int VR = R, int VC = C,
          SLayout S = SLayout::NoneBox, int F = 512>
struct Tile {
    static_assert(R > 0 && C > 0 && VR <= R && VC <= C, "tile shape");
    // pto_tile.hpp: an unboxed tile's rows (RowMajor) / columns (ColMajor) are whole 32-byte blocks
    static_assert(S != SLayout::NoneBox || B != BLayout::RowMajor || C * sizeof(T) % 32 == 0,
                  "RowMajor NoneBox tile: Cols * sizeof(T) must be a multiple of 32");
    static_assert(S != SLayout::NoneBox || B != BLayout::ColMajor || R * sizeof(T) % 32 == 0,
                  "ColMajor NoneBox tile: Rows * sizeof(T) must be a multiple of 32");
    static constexpr TileType Loc = L;
    static constexpr bool isRowMajor = B == BLayout::RowMajor;
    static constexpr bool boxed = S != SLayout::NoneBox;
    static constexpr int Rows = R, Cols = C, ValidRow = VR, ValidCol = VC, Bytes = R * C * int(sizeof(T));
    using DType = T;
    T *data() { return nullptr; }
    Tile() = default;
    // pto_tile.hpp: the valid shape is given at construction only when it is DYNAMIC (-1)
    template <int VR_ = VR, int VC_ = VC, typename = std::enable_if_t<VR_ == -1 && VC_ == -1>>
    Tile(unsigned valid_rows, unsigned valid_cols) {}
};

template <int... N> struct Shape { static_assert(sizeof...(N) == 5, "Shape has 5 dims"); };
template <int... N> struct Stride { static_assert(sizeof...(N) == 5, "Stride has 5 dims"); };
enum class Layout { ND, DN, NZ };
template <typename T, typename Sh, typename St, Layout L = Layout::ND> struct GlobalTensor {
    static constexpr bool is_global = true;
    static constexpr Layout layout = L;
    GlobalTensor() = default;
    explicit GlobalTensor(T *p) : p_(p) {}
    T *data() { return p_; }
    T *p_ = nullptr;
};

template <uint8_t FlagID, uint8_t DirType, uint32_t SlotSize, uint32_t SlotNum, uint32_t LocalSlotNum = 2,
          bool IsNoSplit = false>
struct TPipe {
    static_assert(DirType >= 1 && DirType <= 7, "direction");
    static_assert(SlotNum >= 1 && LocalSlotNum >= 1, "slots");
    TPipe(void *gm, uint32_t c2v, uint32_t v2c) {}
};

template <typename X> struct is_gt { static constexpr bool value = false; };
template <typename T, typename A, typename B, Layout L> struct is_gt<GlobalTensor<T, A, B, L>> {
    static constexpr bool value = true;
};
// tload_common.hpp / tstore_common.hpp: a Vec tile moves only ND<->ND (RowMajor) and DN<->DN
// (ColMajor, unboxed); a TSTORE of one row or one column is free of it
template <typename G, typename Tl> constexpr bool same_layout()
{
    return (G::layout == Layout::ND && Tl::isRowMajor && !Tl::boxed) ||
           (G::layout == Layout::DN && !Tl::isRowMajor && !Tl::boxed);
}

template <typename X> void TASSIGN(X &, uint64_t) {}
template <typename Tl, typename G> void TLOAD(Tl &t, G &g) {
    static_assert(is_gt<G>::value && (Tl::Loc == TileType::Vec || Tl::Loc == TileType::Mat), "TLOAD");
    static_assert(Tl::Loc != TileType::Vec || same_layout<G, Tl>(), "TLOAD(VecTile, GlobalTensor): ND2ND / DN2DN");
}
template <typename G, typename Tl> void TSTORE(G &g, Tl &t) {
    static_assert(is_gt<G>::value, "TSTORE");
    static_assert(Tl::Loc != TileType::Vec || Tl::Rows == 1 || Tl::Cols == 1 || same_layout<G, Tl>(),
                  "TSTORE(GlobalTensor, VecTile): ND2ND / DN2DN");
}
template <typename D, typename S> void TMOV(D &, S &) {}
template <typename D, typename S> void TEXTRACT(D &, S &, int64_t, int64_t) {}
template <typename C, typename A, typename B> void TMATMUL(C &, A &, B &) {
    static_assert(C::Loc == TileType::Acc && A::Loc == TileType::Left && B::Loc == TileType::Right, "TMATMUL");
}
template <typename C, typename I, typename A, typename B> void TMATMUL_ACC(C &, I &, A &, B &) {
    static_assert(C::Loc == TileType::Acc && A::Loc == TileType::Left && B::Loc == TileType::Right, "TMATMUL_ACC");
}
// the NPU element-wise ops take RowMajor tiles only (a DN column runs on its TRESHAPE row view)
#define PTO_MOCK_ROW_MAJOR(...) static_assert((__VA_ARGS__), "element-wise op on a non-RowMajor tile")
#define PTO_MOCK_BINARY(OP) template <typename D, typename A, typename B> void OP(D &, A &, B &) { \
    PTO_MOCK_ROW_MAJOR(D::isRowMajor && A::isRowMajor && B::isRowMajor); }
#define PTO_MOCK_SCALAR(OP) template <typename D, typename A, typename S> void OP(D &, A &, S) { \
    PTO_MOCK_ROW_MAJOR(D::isRowMajor && A::isRowMajor); }
#define PTO_MOCK_UNARY(OP) template <typename D, typename A> void OP(D &, A &) { \
    PTO_MOCK_ROW_MAJOR(D::isRowMajor && A::isRowMajor); }
PTO_MOCK_BINARY(TADD) PTO_MOCK_BINARY(TSUB) PTO_MOCK_BINARY(TMUL) PTO_MOCK_BINARY(TDIV)
PTO_MOCK_BINARY(TMAX) PTO_MOCK_BINARY(TMIN)
// TCOLEXPAND*: dst, src0 and the per-column [1, N] src1 all RowMajor
PTO_MOCK_BINARY(TCOLEXPANDADD) PTO_MOCK_BINARY(TCOLEXPANDSUB) PTO_MOCK_BINARY(TCOLEXPANDMUL)
PTO_MOCK_BINARY(TCOLEXPANDDIV)
PTO_MOCK_SCALAR(TADDS) PTO_MOCK_SCALAR(TSUBS) PTO_MOCK_SCALAR(TMULS) PTO_MOCK_SCALAR(TDIVS)
PTO_MOCK_SCALAR(TMAXS) PTO_MOCK_SCALAR(TMINS)
PTO_MOCK_UNARY(TEXP) PTO_MOCK_UNARY(TLOG) PTO_MOCK_UNARY(TSQRT) PTO_MOCK_UNARY(TRSQRT)
PTO_MOCK_UNARY(TABS) PTO_MOCK_UNARY(TNEG) PTO_MOCK_UNARY(TRELU) PTO_MOCK_UNARY(TRECIP)
template <typename D, typename A, typename M> void TCVT(D &, A &, M) {}
template <typename D, typename A> void TCOLSUM(D &, A &) {}
template <typename D, typename A> void TCOLMAX(D &, A &) {}
// TROWEXPAND*: dst and src0 RowMajor; the per-row src1 ColMajor with one valid column (mode 1)
// or RowMajor with one 32-byte block of valid columns (mode 2)
#define PTO_MOCK_ROW_EXPAND(OP) template <typename D, typename A, typename B> void OP(D &, A &, B &) { \
    static_assert(D::isRowMajor && A::isRowMajor, #OP ": dst and src0 RowMajor"); \
    static_assert((!B::isRowMajor && !B::boxed && B::ValidCol == 1) || \
                  (B::isRowMajor && B::ValidCol * sizeof(typename B::DType) == 32), #OP ": per-row src1"); }
PTO_MOCK_ROW_EXPAND(TROWEXPANDADD) PTO_MOCK_ROW_EXPAND(TROWEXPANDSUB) PTO_MOCK_ROW_EXPAND(TROWEXPANDMUL)
PTO_MOCK_ROW_EXPAND(TROWEXPANDDIV)
// pto-isa's row reductions take a scratch tile: TROWSUM(dst, src, tmp); dst ND, or DN with Cols == 1
#define PTO_MOCK_ROW_REDUCE(OP) template <typename D, typename A, typename T> void OP(D &, A &, T &) { \
    static_assert(T::Loc == TileType::Vec, #OP " scratch tile"); \
    static_assert(A::isRowMajor && !A::boxed, #OP " src ND"); \
    static_assert(!D::boxed && (D::isRowMajor || D::Cols == 1), #OP " dst ND or DN with Cols == 1"); }
PTO_MOCK_ROW_REDUCE(TROWSUM) PTO_MOCK_ROW_REDUCE(TROWMAX) PTO_MOCK_ROW_REDUCE(TROWMIN)
// TRESHAPE: another view of the same bytes
template <typename D, typename S> void TRESHAPE(D &, S &) {
    static_assert(D::Loc == S::Loc && D::Bytes == S::Bytes && D::boxed == S::boxed, "TRESHAPE");
}
template <typename D, typename S> void TEXPANDS(D &, S) {}

template <typename P, typename X, TileSplitAxis S> void TPUSH(P &, X &) {}
template <typename P, typename X, TileSplitAxis S> void TPOP(P &, X &) {}
template <typename P, typename X, TileSplitAxis S> void TALLOC(P &, X &) { static_assert(is_gt<X>::value, "TALLOC"); }
template <typename P, TileSplitAxis S> void TFREE(P &) {}
template <typename P, typename X, TileSplitAxis S> void TFREE(P &, X &) { static_assert(is_gt<X>::value, "TFREE"); }
}  // namespace pto
