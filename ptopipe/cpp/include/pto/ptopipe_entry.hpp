// The entry points ptopipe calls in a kernel library (included by the wrapper ptopipe
// compiles around a kernel file, after it; not for kernels): ptopipe_init hands the library
// the simulator's callback, the buffer where every instruction leaves its call site and the
// descriptor a crash is reported on; ptopipe_run_<role> calls a kernel function with its
// arguments; ptopipe_sig_<role> describes its parameters.
#ifndef PTOPIPE_ENTRY_HPP
#define PTOPIPE_ENTRY_HPP

#include <csignal>
#include <ctime>
#include <pthread.h>
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

// The stop of a run past its wall-clock bound while the kernel's own C++ runs and makes no
// instruction (a loop without one): the simulator's watchdog cannot interrupt native code (it
// holds the GIL), so a thread of the library watches the bound ptopipe_stop_at gives it and,
// STOP_GRACE seconds past it with no instruction made meanwhile, writes the error - its head
// from the simulator, then the call site of the kernel's last instruction - to stderr and ends
// the process (status 1).  A child process's run is stopped by its runner instead (SIGUSR1).
struct Stop {
    static constexpr int64_t GRACE_US = 1000000;
    int64_t due_us = 0;                     // CLOCK_MONOTONIC microseconds (time.monotonic); 0: none
    bool started = false;                   // the watching thread runs (it ends when no kernel does)
    uint64_t arms = 0;                      // ptopipe_stop_at calls so far
    char head[1024] = {};
    char tail[1024] = {};
    char path[1024] = {};                   // the kernel file as it is compiled, and as it is shown
    char shown[1024] = {};
    int64_t kernel_site = 0;                // a line word at or above it: the kernel's own line
};

template <typename T> T load(const T &w) { return __atomic_load_n(&w, __ATOMIC_SEQ_CST); }
template <typename T> void store(T &w, T v) { __atomic_store_n(&w, v, __ATOMIC_SEQ_CST); }
inline bool exchange(bool &w, bool v) { return __atomic_exchange_n(&w, v, __ATOMIC_SEQ_CST); }

inline Stop &stop()
{
    static Stop s;
    return s;
}

inline int64_t monotonic_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t(t.tv_sec) * 1000000 + int64_t(t.tv_nsec) / 1000;
}

inline void *watch_stop(void *)
{
    Stop &st = stop();
    Native &nat = native();
    uint64_t seen = load(nat.calls), arms = load(st.arms);
    int64_t quiet_since = monotonic_us();
    int idle = 0;
    for (;;) {
        timespec nap{0, 50 * 1000 * 1000};
        nanosleep(&nap, nullptr);
        const int64_t now = monotonic_us();
        const uint64_t calls = load(nat.calls);
        if (!load(nat.running)) {
            // no kernel of this library runs: after half a second of that (and no new run
            // armed meanwhile) the thread ends; a run armed as it ends keeps it
            const uint64_t a = load(st.arms);
            idle = a == arms ? idle + 1 : 0;
            arms = a;
            if (idle >= 10) {
                store(st.started, false);
                if (load(st.arms) == arms || exchange(st.started, true)) return nullptr;
                idle = 0;
            }
            seen = calls;
            quiet_since = now;
            continue;
        }
        idle = 0;
        if (calls != seen) {
            seen = calls;
            quiet_since = now;
            continue;
        }
        const int64_t due = load(st.due_us);
        if (due <= 0 || now < due + Stop::GRACE_US || now < quiet_since + Stop::GRACE_US) continue;
        char buf[2200];
        size_t n = 0;
        auto add = [&](const char *t) {
            while (t && *t && n < sizeof buf - 32) buf[n++] = *t++;
        };
        const char *file = reinterpret_cast<const char *>(static_cast<intptr_t>(shared()[0]));
        int64_t line = shared()[1];
        if (st.kernel_site > 0 && -line >= st.kernel_site) line = -line - st.kernel_site;
        add(st.head);
        add("\n  at ");
        add(file == nullptr ? "?" : std::strcmp(file, st.path) == 0 ? st.shown : file);
        add(":");
        put_int(buf, n, line);
        add("\n");
        add(st.tail);
        buf[n++] = '\n';
        ssize_t r = write(2, buf, n);
        (void)r;
        _exit(1);
    }
    return nullptr;
}
}  // namespace ptopipe

// the wall-clock bound of the run about to call a kernel of this library (``due``: a
// time.monotonic() time, 0: none), the error's text around its location and how it shows the
// kernel file's path
PTOPIPE_EXPORT void ptopipe_stop_at(double due, const char *head, const char *tail, const char *path,
                                    const char *shown, int64_t kernel_site)
{
    using namespace ::ptopipe;
    Stop &st = stop();
    std::strncpy(st.head, head, sizeof st.head - 1);
    std::strncpy(st.tail, tail, sizeof st.tail - 1);
    std::strncpy(st.path, path, sizeof st.path - 1);
    std::strncpy(st.shown, shown, sizeof st.shown - 1);
    st.kernel_site = kernel_site;
    store(st.due_us, due > 0.0 ? int64_t(due * 1e6) : int64_t(0));
    __atomic_fetch_add(&st.arms, 1, __ATOMIC_SEQ_CST);
    if (due > 0.0 && !exchange(st.started, true)) {
        pthread_t t;
        if (pthread_create(&t, nullptr, watch_stop, nullptr) == 0) pthread_detach(t);
        else store(st.started, false);
    }
}

namespace ptopipe {
template <typename P> P from_word(int64_t w)
{
    if constexpr (std::is_pointer_v<P>) {
        return reinterpret_cast<P>(static_cast<uintptr_t>(w));
    } else if constexpr (std::is_same_v<P, pto::MrgSortExecutedNumList>) {
        // by value (ptoas's C++ of a .pto vector<4xi16> parameter): a copy of the four 16-bit
        // counts of the array the run passes
        P v;
        std::memcpy(&v, reinterpret_cast<const void *>(static_cast<uintptr_t>(w)), sizeof v);
        return v;
    } else if constexpr (std::is_floating_point_v<P> || std::is_same_v<P, half> || std::is_same_v<P, bfloat16_t>) {
        double d;
        std::memcpy(&d, &w, 8);
        return P(d);
    } else {
        static_assert(std::is_integral_v<P> || std::is_enum_v<P>, "a kernel parameter is a pointer, an integer or a float");
        return P(w);
    }
}

// an integer parameter's kind says its width and signedness (abi.INT_KINDS): a value the run
// passes that the type cannot hold is refused there, not wrapped by the conversion in from_word
template <typename P> constexpr char int_kind()
{
    if constexpr (std::is_enum_v<P>) return int_kind<std::underlying_type_t<P>>();
    else if constexpr (std::is_same_v<P, bool>) return 'b';
    else if constexpr (std::is_signed_v<P>) return sizeof(P) == 1 ? 'a' : sizeof(P) == 2 ? 'h' : sizeof(P) == 4 ? 'i' : 'l';
    else return sizeof(P) == 1 ? 'A' : sizeof(P) == 2 ? 'H' : sizeof(P) == 4 ? 'I' : 'L';
}

// ... and a floating-point parameter's its type (abi.FLOAT_KINDS): a finite value beyond its range is
// refused, not turned into an infinity
template <typename P> constexpr char kind_of()
{
    if constexpr (std::is_pointer_v<P>) return 'p';
    else if constexpr (std::is_same_v<P, pto::MrgSortExecutedNumList>) return 'c';
    else if constexpr (std::is_same_v<P, half>) return 'e';
    else if constexpr (std::is_same_v<P, bfloat16_t>) return 'B';
    else if constexpr (std::is_same_v<P, float>) return 'f';
    else if constexpr (std::is_floating_point_v<P>) return 'd';
    else return int_kind<P>();
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
