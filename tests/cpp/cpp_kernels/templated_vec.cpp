// A Vector kernel written as pto-isa's own tests write theirs: a function template (a run names
// one instantiation of it: --aiv 'runDouble<float, 16, 32>'), a view whose runtime row count is
// given through the GlobalTensor's member type (typename G::Shape(rows)), and log lines written
// with cce::printf and printf.  out[:rows] = 2 * src[:rows].
#include <pto/pto-inst.hpp>

using namespace pto;

template <typename T, int Rows, int Cols>
AICORE void runDouble(__gm__ T __out__ *out, __gm__ T __in__ *src, int rows)
{
    using G = GlobalTensor<T, Shape<1, 1, 1, DYNAMIC, Cols>, Stride<1, 1, 1, Cols, 1>>;
    using V = Tile<TileType::Vec, T, Rows, Cols, BLayout::RowMajor, DYNAMIC, Cols>;
    V t(rows);
    TASSIGN(t, 0x0);
    G gsrc(src, typename G::Shape(rows));
    TLOAD(t, gsrc);
    TADD(t, t, t);
    G gout(out, typename G::Shape(rows));
    TSTORE(gout, t);
    cce::printf("runDouble: %d rows of %d\n", rows, G::template GetShape<GlobalTensorDim::DIM_4>());
    printf("runDouble: stored\n");
}
