// The Cube stores x @ x to a GM workspace and tells the Vector cores with a cross-core flag of
// its own; each Vector core waits for it, loads its 8 rows, adds 1 and stores them:
//   out = x @ x + 1.  The CCE intrinsics, as ptoas lowers pto.sync.set / pto.sync.wait:
// A2A3 ffts_cross_core_sync(pipe, getFFTSMsg(FFTS_MODE_VAL, id)) / wait_flag_dev(id); A5
// set_intra_block(pipe, id) (the Cube's id + 16: AIV1's) / wait_intra_block(pipe, id).
#include <pto/pto-inst.hpp>
using namespace pto;

constexpr int T = 16, H = T / 2, FLAG = 3;
using G = GlobalTensor<float, Shape<1, 1, 1, T, T>, Stride<1, 1, 1, T, 1>>;
using GH = GlobalTensor<float, Shape<1, 1, 1, H, T>, Stride<1, 1, 1, T, 1>>;

static void square_to(__gm__ float *x, __gm__ float *ws)
{
    Tile<TileType::Mat, float, T, T> m;
    TileLeft<float, T, T> l;
    TileRight<float, T, T> r;
    TileAcc<float, T, T> acc;
    TASSIGN(m, 0x0);
    TASSIGN(l, 0x0);
    TASSIGN(r, 0x0);
    TASSIGN(acc, 0x0);
    G gx(x), gw(ws);
    TLOAD(m, gx);
    TMOV(l, m);
    TMOV(r, m);
    TMATMUL(acc, l, r);
    TSTORE(gw, acc);
}

static void add_one(__gm__ float *ws, __gm__ float *out)
{
    const int sub = get_subblockid();
    Tile<TileType::Vec, float, H, T> t;
    TASSIGN(t, 0x0);
    GH gw(ws + sub * H * T), go(out + sub * H * T);
    TLOAD(t, gw);
    TADDS(t, t, 1.0f);
    TSTORE(go, t);
}

extern "C" __global__ AICORE void cube_a2a3(__gm__ float *x, __gm__ float *ws)
{
    square_to(x, ws);
    ffts_cross_core_sync(PIPE_FIX, getFFTSMsg(FFTS_MODE_VAL, FLAG));
}

extern "C" __global__ AICORE void vec_a2a3(__gm__ float *ws, __gm__ float *out)
{
    wait_flag_dev(FLAG);
    add_one(ws, out);
}

extern "C" __global__ AICORE void vec_a2a3_other_flag(__gm__ float *ws, __gm__ float *out)
{
    wait_flag_dev(FLAG + 1);                                    // nothing sets it
    add_one(ws, out);
}

extern "C" __global__ AICORE void cube_a5(__gm__ float *x, __gm__ float *ws)
{
    square_to(x, ws);
    set_intra_block(PIPE_FIX, FLAG);
    set_intra_block(PIPE_FIX, FLAG + 16);
}

extern "C" __global__ AICORE void cube_a5_aiv0_only(__gm__ float *x, __gm__ float *ws)
{
    square_to(x, ws);
    set_intra_block(PIPE_FIX, FLAG);                            // AIV1's id (FLAG + 16) never set
}

extern "C" __global__ AICORE void vec_a5(__gm__ float *ws, __gm__ float *out)
{
    wait_intra_block(PIPE_MTE2, FLAG);
    add_one(ws, out);
}

extern "C" __global__ AICORE void vec_a2a3_unsynced(__gm__ float *ws, __gm__ float *out)
{
    add_one(ws, out);                                           // reads ws before the Cube's store
}
