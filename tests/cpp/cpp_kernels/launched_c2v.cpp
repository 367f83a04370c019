// A C2V kernel as pto-isa's NPU tests write theirs: one __global__ function template whose body
// runs the side it is compiled for (if constexpr on __DAV_CUBE__ / __DAV_VEC__), launched from
// a host function with the device compiler's kernel<<<blocks, l2ctrl, stream>>>(args) syntax.
// The Cube multiplies A (Rows x 32) by B (32 x 32) and pushes the accumulator; each Vector core
// pops its half (TILE_UP_DOWN), adds the bias and stores.  out = A @ B + bias.  It includes, as
// pto-isa's NPU tests do, the host runtime's header and one of pto-isa's implementation headers.
#include <pto/pto-inst.hpp>
#include <pto/npu/a2a3/TPush.hpp>
#include "acl/acl.h"

using namespace pto;

#ifdef __DAV_CUBE__
constexpr bool ON_CUBE = true;
#else
constexpr bool ON_CUBE = false;
#endif

template <typename T, int Rows>
__global__ AICORE void runMatmulAdd(__gm__ T *out, __gm__ T *a, __gm__ T *b, __gm__ T *bias, __gm__ T *fifo)
{
    constexpr int K = 32, N = 32, H = Rows / 2;
    using Pipe = TPipe<0, Direction::DIR_C2V, Rows * N * sizeof(T), 2>;
    Pipe pipe(fifo, 0x10000, 0);
    if constexpr (ON_CUBE) {
        using GA = GlobalTensor<T, Shape<1, 1, 1, Rows, K>, Stride<1, 1, 1, K, 1>>;
        using GB = GlobalTensor<T, Shape<1, 1, 1, K, N>, Stride<1, 1, 1, N, 1>>;
        Tile<TileType::Mat, T, Rows, K> a_l1;
        Tile<TileType::Mat, T, K, N> b_l1;
        TileLeft<T, Rows, K> a_l0;
        TileRight<T, K, N> b_l0;
        TileAcc<T, Rows, N> acc;
        TASSIGN(a_l1, 0x0);
        TASSIGN(b_l1, 0x4000);
        TASSIGN(a_l0, 0x0);
        TASSIGN(b_l0, 0x0);
        TASSIGN(acc, 0x0);
        GA ga(a);
        GB gb(b);
        TLOAD(a_l1, ga);
        TLOAD(b_l1, gb);
        TMOV(a_l0, a_l1);
        TMOV(b_l0, b_l1);
        TMATMUL(acc, a_l0, b_l0);
        TPUSH<Pipe, TileAcc<T, Rows, N>, TileSplitAxis::TILE_UP_DOWN>(pipe, acc);
    } else {
        using G = GlobalTensor<T, Shape<1, 1, 1, H, N>, Stride<1, 1, 1, N, 1>>;
        using V = Tile<TileType::Vec, T, H, N>;
        V part, bv, o;
        TASSIGN(bv, 0x0);
        TASSIGN(o, 0x1000);
        const int64_t row = get_subblockid() * H;
        TPOP<Pipe, V, TileSplitAxis::TILE_UP_DOWN>(pipe, part);
        G gbias(bias + row * N);
        TLOAD(bv, gbias);
        TADD(o, part, bv);
        TFREE<Pipe, TileSplitAxis::TILE_UP_DOWN>(pipe);
        G gout(out + row * N);
        TSTORE(gout, o);
    }
}

template <int Key>
void LaunchMatmulAdd(uint8_t *out, uint8_t *a, uint8_t *b, uint8_t *bias, uint8_t *fifo, void *stream)
{
    if constexpr (Key == 1) {
        runMatmulAdd<float, 16><<<1, nullptr, stream>>>(reinterpret_cast<float *>(out), reinterpret_cast<float *>(a),
            reinterpret_cast<float *>(b), reinterpret_cast<float *>(bias), reinterpret_cast<float *>(fifo));
    } else {
        runMatmulAdd<float, 32> <<< 1, nullptr, stream >>> (reinterpret_cast<float *>(out),
            reinterpret_cast<float *>(a), reinterpret_cast<float *>(b), reinterpret_cast<float *>(bias),
            reinterpret_cast<float *>(fifo));
    }
}

template void LaunchMatmulAdd<1>(uint8_t *out, uint8_t *a, uint8_t *b, uint8_t *bias, uint8_t *fifo, void *stream);
template void LaunchMatmulAdd<2>(uint8_t *out, uint8_t *a, uint8_t *b, uint8_t *bias, uint8_t *fifo, void *stream);
