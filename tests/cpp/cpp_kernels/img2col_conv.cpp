// A 3x3 convolution on the Cube: an NC1HWC0 feature map TLOADed into a ConvTile, TIMG2COL into the
// Left tile (the im2col matrix: one row per output position, (c1, kh, kw, c0) per column), a
// matmul with the weights (K x Cout, ND in GM) and the output rows (NHWC) stored ND.  Three ways to
// run the load3d: the A bank's registers written by SETFMATRIX / SET_IMG2COL_PADDING, the B bank's
// (a split in two blocks of rows and of K), and the AUTO mode (the TIMG2COL writes them itself).
#include <pto/pto-inst.hpp>

using namespace pto;

constexpr int N = 1, C1 = 2, H = 8, W = 8, C0 = 16, KH = 3, KW = 3, PAD = 1;
constexpr int OH = H + 2 * PAD - KH + 1, OW = W + 2 * PAD - KW + 1, M = OH * OW, K = C1 * KH * KW * C0, CO = 16;
using GX = GlobalTensor<half, Shape<N, C1, H, W, C0>, Stride<C1 * H * W * C0, H * W * C0, W * C0, C0, 1>,
                        Layout::NC1HWC0>;
using GW = GlobalTensor<half, Shape<1, 1, 1, K, CO>, Stride<1, 1, 1, CO, 1>>;
using GO = GlobalTensor<float, Shape<1, 1, 1, M, CO>, Stride<1, 1, 1, CO, 1>>;
using GH = GlobalTensor<float, Shape<1, 1, 1, M / 2, CO>, Stride<1, 1, 1, CO, 1>>;
using XT = ConvTile<TileType::Mat, half, N * C1 * H * W * C0, Layout::NC1HWC0, ConvTileShape<N, C1, H, W, C0>>;
using WM = Tile<TileType::Mat, half, K, CO, BLayout::ColMajor, K, CO, SLayout::RowMajor, 512>;
using WH = Tile<TileType::Mat, half, K / 2, CO, BLayout::ColMajor, K / 2, CO, SLayout::RowMajor, 512>;

extern "C" __global__ AICORE void conv(__gm__ half *x, __gm__ half *w, __gm__ float *out_a, __gm__ float *out_b,
                                       __gm__ float *out_auto)
{
    XT xt;
    WM wm;
    WH w0, w1;
    TileLeft<half, M, K> a;
    TileLeft<half, M / 2, K / 2> ah;
    TileRight<half, K, CO> b;
    TileRight<half, K / 2, CO> bh0, bh1;
    TileAcc<float, M, CO> c;
    TileAcc<float, M / 2, CO> ch;
    TASSIGN(xt, 0x0);
    TASSIGN(wm, 0x10000);
    TASSIGN(w0, 0x20000);
    TASSIGN(w1, 0x28000);
    TASSIGN(a, 0x0);
    TASSIGN(ah, 0x8000);
    TASSIGN(b, 0x0);
    TASSIGN(bh0, 0x4000);
    TASSIGN(bh1, 0x6000);
    TASSIGN(c, 0x0);
    TASSIGN(ch, 0x10000);
    GX gx(x);
    GW gw(w);
    TLOAD(xt, gx);
    TLOAD(wm, gw);
    GlobalTensor<half, Shape<1, 1, 1, K / 2, CO>, Stride<1, 1, 1, CO, 1>> gw0(w), gw1(w + K / 2 * CO);
    TLOAD(w0, gw0);
    TLOAD(w1, gw1);
    uint8_t pads[] = {PAD, PAD, PAD, PAD};
    xt.SetFmapH(H);
    xt.SetFmapW(W);
    xt.SetPadListArray(pads);
    xt.SetFilterH(KH);
    xt.SetFilterW(KW);
    xt.SetStrideH(1);
    xt.SetStrideW(1);
    xt.SetDilationH(1);
    xt.SetDilationW(1);
    xt.SetChannelSize(C1 * C0);
    xt.SetPadValue(half(0.0f));
    TMOV(b, wm);
    TMOV(bh0, w0);
    TMOV(bh1, w1);

    // the A bank, written by the SET_* instructions (pto-isa's default mode)
    SETFMATRIX(xt);
    SET_IMG2COL_PADDING(xt);
    SET_IMG2COL_RPT(xt);
    TIMG2COL(a, xt);
    TMATMUL(c, a, b);
    GO go(out_a);
    TSTORE(go, c);

    // the B bank: the first half of the rows, K in two blocks
    SETFMATRIX<XT, SetFmatrixMode::FMATRIX_B_MANUAL>(xt);
    SET_IMG2COL_PADDING<XT, SetFmatrixMode::FMATRIX_B_MANUAL>(xt);
    TIMG2COL<TileLeft<half, M / 2, K / 2>, XT, SetFmatrixMode::FMATRIX_B_MANUAL>(ah, xt, 0, 0);
    TMATMUL(ch, ah, bh0);
    TIMG2COL<TileLeft<half, M / 2, K / 2>, XT, SetFmatrixMode::FMATRIX_B_MANUAL>(ah, xt, 0, K / 2);
    TMATMUL_ACC(ch, ch, ah, bh1);
    GH gh(out_b);
    TSTORE(gh, ch);
    // the second half of the rows
    TIMG2COL<TileLeft<half, M / 2, K / 2>, XT, SetFmatrixMode::FMATRIX_B_MANUAL>(ah, xt, M / 2, 0);
    TMATMUL(ch, ah, bh0);
    TIMG2COL<TileLeft<half, M / 2, K / 2>, XT, SetFmatrixMode::FMATRIX_B_MANUAL>(ah, xt, M / 2, K / 2);
    TMATMUL_ACC(ch, ch, ah, bh1);
    GH gh2(out_b + M / 2 * CO);
    TSTORE(gh2, ch);

    // AUTO: the TIMG2COL writes the registers from the ConvTile (another pad value: -1)
    xt.SetPadValue(half(-1.0f));
    TIMG2COL<TileLeft<half, M, K>, XT, SetFmatrixMode::FMATRIX_A_AUTO>(a, xt, 0, 0);
    TMATMUL(c, a, b);
    GO go2(out_auto);
    TSTORE(go2, c);
}
