// The entry points ptopipe calls in a kernel library (included by the wrapper ptopipe
// compiles around a kernel file, after it; not for kernels): ptopipe_init hands the library
// the simulator's callback, the buffer where every instruction leaves its call site and the
// descriptor a crash is reported on; ptopipe_run_<role> calls a kernel function with its
// arguments; ptopipe_sig_<role> describes its parameters.
#ifndef PTOPIPE_ENTRY_HPP
#define PTOPIPE_ENTRY_HPP

#include <csignal>
#include <cstdint>
#include <cstring>
#include <signal.h>
#include <type_traits>
#include <unistd.h>
#if defined(__linux__)
#include <ucontext.h>
#endif
#include <utility>

#include "pto-inst.hpp"

#define PTOPIPE_EXPORT extern "C" __attribute__((visibility("default")))

namespace ptopipe {
inline int &crash_fd()
{
    static int fd = -1;
    return fd;
}

inline void put_text(char *buf, size_t &n, const char *s)
{
    while (*s && n < 1000) buf[n++] = *s++;
}

inline void put_int(char *buf, size_t &n, int64_t v)
{
    char tmp[24];
    int k = 0;
    bool neg = v < 0;
    uint64_t u = neg ? uint64_t(-(v + 1)) + 1 : uint64_t(v);
    do { tmp[k++] = char('0' + u % 10); u /= 10; } while (u);
    if (neg) buf[n++] = '-';
    while (k) buf[n++] = tmp[--k];
}

// the program counter of the code a signal interrupted (0: not known on this architecture)
inline uint64_t interrupted_pc(void *context)
{
#if defined(__linux__) && defined(__x86_64__) && defined(REG_RIP)
    return uint64_t(static_cast<const ucontext_t *>(context)->uc_mcontext.gregs[REG_RIP]);
#elif defined(__linux__) && defined(__aarch64__)
    return uint64_t(static_cast<const ucontext_t *>(context)->uc_mcontext.pc);
#else
    (void)context;
    return 0;
#endif
}

// a fatal signal in kernel code: report it on the crash descriptor (async-signal-safe calls
// only) - the signal, the last instruction's call site, the faulting code's address (the
// runner finds its line), the address a memory fault accessed and its si_code (SEGV_ACCERR: a
// mapped page that forbids the access - a write to read-only GM) - then die of the same signal.
// SIGUSR1 is the runner's stop of a run past its wall-clock bound: the interrupted code's
// address is the loop's that issues no instruction
inline void on_crash(int sig, siginfo_t *info, void *context)
{
    char buf[1100];
    size_t n = 0;
    const bool memory = sig == SIGSEGV || sig == SIGBUS;
    put_text(buf, n, "PTOPIPE-CRASH ");
    put_int(buf, n, sig);
    put_text(buf, n, " ");
    put_int(buf, n, shared()[1]);
    put_text(buf, n, " ");
    put_int(buf, n, int64_t(interrupted_pc(context)));
    put_text(buf, n, " ");
    put_int(buf, n, memory && info ? int64_t(reinterpret_cast<uintptr_t>(info->si_addr)) : 0);
    put_text(buf, n, " ");
    put_int(buf, n, memory && info ? info->si_code : 0);
    put_text(buf, n, " ");
    const char *file = reinterpret_cast<const char *>(static_cast<intptr_t>(shared()[0]));
    put_text(buf, n, file ? file : "?");
    buf[n++] = '\n';
    if (crash_fd() >= 0) {
        ssize_t r = write(crash_fd(), buf, n);
        (void)r;
    }
    std::signal(sig, SIG_DFL);
    std::raise(sig);
}

template <typename P> P from_word(int64_t w)
{
    if constexpr (std::is_pointer_v<P>) {
        return reinterpret_cast<P>(static_cast<uintptr_t>(w));
    } else if constexpr (std::is_floating_point_v<P> || std::is_same_v<P, half> || std::is_same_v<P, bfloat16_t>) {
        double d;
        std::memcpy(&d, &w, 8);
        return P(d);
    } else {
        static_assert(std::is_integral_v<P> || std::is_enum_v<P>, "a kernel parameter is a pointer, an integer or a float");
        return P(w);
    }
}

template <typename P> constexpr char kind_of()
{
    if constexpr (std::is_pointer_v<P>) return 'p';
    else if constexpr (std::is_floating_point_v<P> || std::is_same_v<P, half> || std::is_same_v<P, bfloat16_t>) return 'f';
    else return 'i';
}

template <typename... P, size_t... I>
void apply(void (*f)(P...), const int64_t *argv, std::index_sequence<I...>)
{
    f(from_word<std::decay_t<P>>(argv[I])...);
}

// 0: the kernel returned; 1: the simulator raised an error and the kernel unwound (to
// run_kernel, the frame a failing call's walk of return addresses ends at)
template <typename... P> int invoke(void (*f)(P...), const int64_t *argv)
{
    struct Call {
        void (*f)(P...);
        const int64_t *argv;
    } c{f, argv};
    return run_kernel([](const void *p) {
        const Call &k = *static_cast<const Call *>(p);
        apply(k.f, k.argv, std::index_sequence_for<P...>{});
    }, &c);
}

template <typename... P> const char *signature(void (*)(P...))
{
    static const char sig[] = {kind_of<std::decay_t<P>>()..., '\0'};
    return sig;
}
}  // namespace ptopipe

PTOPIPE_EXPORT void ptopipe_init(::ptopipe::Callback cb, int64_t *shared, int crash_fd)
{
    ::ptopipe::callback() = cb;
    ::ptopipe::shared() = shared;
    ::ptopipe::crash_fd() = crash_fd;
    struct sigaction act;
    std::memset(&act, 0, sizeof act);
    act.sa_sigaction = ::ptopipe::on_crash;
    act.sa_flags = SA_SIGINFO;
    sigemptyset(&act.sa_mask);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP, SIGUSR1}) sigaction(sig, &act, nullptr);
}

// the return addresses of the failing call of the kernel that last returned 1 (at most max)
PTOPIPE_EXPORT int ptopipe_abort_frames(void **out, int max)
{
    const ::ptopipe::Abort &a = ::ptopipe::last_abort();
    int n = a.n < max ? a.n : max;
    for (int i = 0; i < n; ++i) out[i] = a.frames[i];
    return n;
}

// the kernel: a function's name, or an instantiation of a function template (its commas are
// the macro's further arguments)
#define PTOPIPE_EXPORT_KERNEL(ROLE, ...)                                                                       \
    PTOPIPE_EXPORT int ptopipe_run_##ROLE(const int64_t *argv) { return ::ptopipe::invoke(&__VA_ARGS__, argv); } \
    PTOPIPE_EXPORT const char *ptopipe_sig_##ROLE() { return ::ptopipe::signature(&__VA_ARGS__); }

#endif  // PTOPIPE_ENTRY_HPP
