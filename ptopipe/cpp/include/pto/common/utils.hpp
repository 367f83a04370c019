// pto-isa's include/pto/common/utils.hpp, where kernels written for pto-isa include it from:
// ptopipe declares its whole kernel API in one header (pto/pto-inst.hpp), so this path is that header.
#ifndef PTOPIPE_COMMON_UTILS_HPP
#define PTOPIPE_COMMON_UTILS_HPP
#include "../pto-inst.hpp"
#endif  // PTOPIPE_COMMON_UTILS_HPP
