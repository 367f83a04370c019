// pto-isa's include/pto/cpu/MXTypes.hpp, where kernels written for pto-isa include it from:
// ptopipe declares its whole kernel API in one header (pto/pto-inst.hpp), so this path is that header.
#ifndef PTOPIPE_CPU_MXTYPES_HPP
#define PTOPIPE_CPU_MXTYPES_HPP
#include "../pto-inst.hpp"
#endif  // PTOPIPE_CPU_MXTYPES_HPP
