// TRANDOM in pto-isa's spelling (docs/isa/TRANDOM.md): TRandomKey / TRandomCounter arrays, the
// rounds as the template argument (7) or its default (10).  A5; a lone Vector kernel (AIV0).
#include <pto/pto-inst.hpp>

using namespace pto;

extern "C" __global__ AICORE void vec_kernel(__gm__ uint32_t *r7, __gm__ uint32_t *r10, uint32_t k0, uint32_t k1)
{
    using T = Tile<TileType::Vec, uint32_t, 2, 256>;
    using G = GlobalTensor<uint32_t, Shape<1, 1, 1, 2, 256>, Stride<1, 1, 1, 256, 1>>;
    T d7, d10;
    TASSIGN(d7, 0x0);
    TASSIGN(d10, 0x800);
    TRandomKey key = {k0, k1};
    TRandomCounter counter = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};
    TRANDOM<7>(d7, key, counter);
    TRANDOM(d10, key, counter);
    G g7(r7), g10(r10);
    TSTORE(g7, d7);
    TSTORE(g10, d10);
}
