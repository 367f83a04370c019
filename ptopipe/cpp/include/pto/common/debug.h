// pto-isa's include/pto/common/debug.h: DEBUG_CHECK(condition, message) stops the kernel where the
// condition fails - here __builtin_trap(): SIGILL on x86-64, SIGTRAP on AArch64, which the runner
// reports at this kernel line as a failed check - and PTO_ASSERT is
// DEBUG_CHECK in a _DEBUG build, else nothing, as in pto-isa.
#ifndef PTOPIPE_COMMON_DEBUG_H
#define PTOPIPE_COMMON_DEBUG_H
#include <cstdio>
#include "../pto-inst.hpp"
#define DEBUG_CHECK(condition, message)                                                        \
    do {                                                                                       \
        if (!(condition)) {                                                                    \
            std::fprintf(stderr, "[PTO][ASSERT] %s\n  Condition: %s\n  Location: %s:%d\n",     \
                         (message), #condition, __FILE__, __LINE__);                           \
            __builtin_trap();                                                                  \
        }                                                                                      \
    } while (0)
#ifdef _DEBUG
#define PTO_ASSERT(condition, message) DEBUG_CHECK(condition, message)
#else
#define PTO_ASSERT(condition, message) ((void)0)
#endif
#endif  // PTOPIPE_COMMON_DEBUG_H
