// ptopipe's pto-isa-compatible kernel API (not pto-isa's headers: written for ptopipe from
// pto-isa's public documentation).  A kernel written against <pto/pto-inst.hpp> compiles with
// the host C++ compiler and runs on ptopipe's simulated cluster: every instruction forwards,
// through a small C ABI, to ptopipe's ISA layer (ptopipe.isa) together with the file:line of
// its call, so every error, trace slice and report names the kernel's C++ line.
//
// What crosses the ABI: tiles (a handle the simulator gives each Tile object when it is first
// used), GlobalTensors (a GM address, element type, shape, stride and Layout), pipes, events, enums
// and scalars.  GM pointers a kernel receives are GM addresses, not host memory: pointer
// arithmetic and GlobalTensor views work, and ptopipe maps GM read-only behind them, so a raw
// read (`x = ptr[i]`, a scalar operand read from GM) gives GM's bytes - those stored before the
// core's last pipe_barrier(PIPE_ALL) or wait_flag into PIPE_S included - while a raw write
// (`ptr[i] = x`), which the simulator could not see, faults and ends the run with a
// KernelError at its line (ptopipe/cpp/gmview.py).
#ifndef PTOPIPE_PTO_INST_HPP
#define PTOPIPE_PTO_INST_HPP

// pto-isa's CPU headers pull in <algorithm> (cpu_stub.hpp) and its kernels call std::fill / std::min
// through them; a kernel that includes what it uses may leave it out, for a quicker build (C++20's
// <algorithm> costs more to parse than the rest of these headers together)
#ifndef PTOPIPE_NO_STD_ALGORITHM
#include <algorithm>
#endif
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <type_traits>
#include <unwind.h>
#include <utility>

#define AICORE
#define __aicore__
#define __global__
#define __gm__
// the memory qualifiers of pto-isa's device pointers (the buffer of a tile's ``data()``: L1, L0A,
// L0B, L0C, UB, FB, BIAS): a local pointer here is its byte address in that memory
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __ubuf__
#define __fbuf__
#define __biasbuf__
#define PTO_INST inline
#define PTO_INTERNAL inline
// pto-isa's type.hpp: a kernel's helpers are declared AICORE PTO_INLINE (its own headers' PTO_INTERNAL)
#define PTO_INLINE inline
// the rounding macros pto-isa's headers define (npu/a5/TSort32.hpp) and its test kernels use
#define PTO_CEIL(x, y) ((((x) + (y) - 1) / (y)) * (y))
#define PTO_DIV_ROUNDUP(x, y) ((((x) + (y) - 1) / (y)))
// pto-isa's parameter direction annotations (include/pto/common/cpu_stub.hpp): empty
#define __in__
#define __out__

// -- 16-bit floats: two bytes, converted through float ---------------------------------------
namespace ptopipe {
inline uint16_t float_to_half(float f)
{
    uint32_t x;
    std::memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
    int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
    if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00u | (mant ? 0x200u : 0u));
    if (exp >= 31) return uint16_t(sign | 0x7c00u);
    if (exp <= 0) {
        if (exp < -10) return uint16_t(sign);
        mant |= 0x800000u;
        uint32_t shift = uint32_t(14 - exp), half_m = mant >> shift, rest = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half_m & 1u))) ++half_m;
        return uint16_t(sign | half_m);
    }
    uint32_t h = sign | (uint32_t(exp) << 10) | (mant >> 13), rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
    return uint16_t(h);
}

inline float half_to_float(uint16_t h)
{
    uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu, x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            exp = 127 - 15 + 1;
            while (!(mant & 0x400u)) { mant <<= 1; --exp; }
            x = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000u | (mant << 13);
    } else {
        x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}
}  // namespace ptopipe

struct half {
    uint16_t bits = 0;
    half() = default;
    half(float f) : bits(ptopipe::float_to_half(f)) {}
    half(double f) : bits(ptopipe::float_to_half(float(f))) {}
    half(int v) : bits(ptopipe::float_to_half(float(v))) {}
    operator float() const { return ptopipe::half_to_float(bits); }
};

struct bfloat16_t {
    uint16_t bits = 0;
    bfloat16_t() = default;
    bfloat16_t(float f)
    {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        bits = uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);   // round to nearest even
    }
    bfloat16_t(double f) : bfloat16_t(float(f)) {}
    bfloat16_t(int v) : bfloat16_t(float(v)) {}
    operator float() const
    {
        uint32_t x = uint32_t(bits) << 16;
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
};
static_assert(sizeof(half) == 2 && sizeof(bfloat16_t) == 2, "16-bit floats are two bytes");
// pto-isa's 4- and 8-bit floats (cpu/MXTypes.hpp, cpu/Hifloat8.hpp), one byte of storage each: a
// tile or tensor of the MX matmuls' float8_e4m3_t / float8_e5m2_t operands and float8_e8m0_t block
// scales is ptopipe's (dtype_code); of the others, a file naming them compiles, a tile or tensor of
// one does not
struct float4_e2m1x2_t {
    uint8_t storage = 0;
};
struct float4_e1m2x2_t {
    uint8_t storage = 0;
};
struct float8_e8m0_t {
    uint8_t storage = 0;
};
struct float8_e4m3_t {
    uint8_t storage = 0;
};
struct float8_e5m2_t {
    uint8_t storage = 0;
};
struct hifloat8_t {
    uint8_t storage = 0;
};
// ... and A6's HiFloat4 pair (pto-isa's A6 only: a tile or tensor of one does not build here)
struct hifloat4x2_t {
    uint8_t storage = 0;
};
// the host-side names pto-isa's CPU simulator declares (include/pto/common/type.hpp,
// cpu_stub.hpp) and its test kernels' launch functions use
typedef half aclFloat16;
typedef void *aclrtStream;

// pto-isa's kernel log (cpu_stub.hpp; its FAQ tells kernels to log with it): C's printf, to the
// process's stdout - which `ptopipe ... --json` makes stderr, its stdout being the report's.  A
// 16-bit float is passed as the double it is promoted to there.
namespace ptopipe {
template <typename A> inline auto printf_arg(A a)
{
    if constexpr (std::is_same_v<A, half> || std::is_same_v<A, bfloat16_t>) return double(float(a));
    else return a;
}
}  // namespace ptopipe
namespace cce {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
template <typename... Args> inline int printf(const char *fmt, Args... args)
{
    return std::printf(fmt, ::ptopipe::printf_arg(args)...);
}
#pragma GCC diagnostic pop
}  // namespace cce

// -- the ABI ----------------------------------------------------------------------------------
namespace ptopipe {
// the call site an instruction reports: its default argument is evaluated where it is called
struct Site {
    const char *file;
    int line;
    constexpr Site(const char *f, int l, int) : file(f), line(l) {}
};
#define PTOPIPE_HERE ::ptopipe::Site(__builtin_FILE(), __builtin_LINE(), 0)

template <typename E> struct enum_code;
}  // namespace ptopipe

// the enums, element-type codes, ABI ids and limits (generated from ptopipe's vocabulary)
#include "ptopipe_generated.hpp"

namespace ptopipe {
// int64_t ptopipe(op, number of argument words, the words, call site file, line): an
// instruction's result (an event or a handle), or ABORT when the simulator raised an error
// (the kernel then unwinds: Abort is caught by the entry point ptopipe calls).
typedef int64_t (*Callback)(int32_t op, int32_t n, const int64_t *words, const char *file, int32_t line);
// (with the native return addresses of the failing call: ptopipe names the kernel lines that
// called the function holding it, as the Python front end's "called from")
struct Abort {
    static constexpr int MAX_FRAMES = 32;
    void *frames[MAX_FRAMES];
    int n = 0;
};

// the native frames of the last failing call (read by ptopipe_abort_frames right after the
// kernel returned 1, before any other kernel runs)
inline Abort &last_abort()
{
    static Abort a;
    return a;
}

// The frame every kernel runs under: the entry point ptopipe calls (ptopipe_entry.hpp) runs the
// kernel's ``body(arg)`` through it; it catches a failing call's Abort and returns 1 (0: the
// kernel returned).  The walk of a failing call's return addresses (``call``) stops here, at
// the kernel's outermost frame: the frames beyond it are ctypes' and the core's greenlet's, and
// a greenlet's saved stack ends at its first switch - above that lie the words of whatever code
// resumed it, not its callers (the run's teardown after a deadlock throws into a core blocked
// in C++ from elsewhere), which an unbounded walk would take for frames and may fault on.
// Hidden, so that each kernel library compares with its own copy.
// Whether the kernel's own C++ runs (not the simulator, which every instruction calls into) and
// how many instructions it has made: a run past its wall-clock bound in C++ that calls no
// instruction is stopped from a thread of the library's own (ptopipe_stop_at, ptopipe_entry.hpp),
// as the simulator's watchdog cannot interrupt native code that holds the GIL
// (GCC / Clang atomic builtins on plain words: no <atomic> to parse in every kernel's build)
struct Native {
    bool running = false;
    uint64_t calls = 0;
    void run(bool on) { __atomic_store_n(&running, on, __ATOMIC_RELAXED); }
};

inline Native &native()
{
    static Native n;
    return n;
}

__attribute__((noinline, visibility("hidden"))) inline int run_kernel(void (*body)(const void *), const void *arg)
{
    native().run(true);
    try {
        body(arg);
    } catch (const Abort &a) {
        native().run(false);
        last_abort() = a;
        return 1;
    }
    native().run(false);
    return 0;
}

// one frame of a failing call's walk: its address kept, the walk ended at run_kernel's frame
inline _Unwind_Reason_Code keep_frame(struct _Unwind_Context *context, void *out)
{
    Abort &a = *static_cast<Abort *>(out);
    if (a.n == Abort::MAX_FRAMES) return _URC_END_OF_STACK;
    a.frames[a.n++] = reinterpret_cast<void *>(_Unwind_GetIP(context));
    const uintptr_t outermost = reinterpret_cast<uintptr_t>(&run_kernel);
    return _Unwind_GetRegionStart(context) == outermost ? _URC_END_OF_STACK : _URC_NO_REASON;
}

inline Callback &callback()
{
    static Callback cb = nullptr;
    return cb;
}

// the buffer shared with the simulator (set up by ptopipe_init): the call site of the last
// instruction (file, line: read by the crash handler) and the argument words of the call
// being made; one per run, shared by every library of it
inline int64_t *&shared()
{
    static int64_t fallback[2 + MAX_WORDS] = {};
    static int64_t *p = fallback;
    return p;
}

struct Args {
    int64_t w[MAX_WORDS];
    int32_t n = 0;
    void put(int64_t x)
    {
        if (n < MAX_WORDS) w[n] = x;   // more words than any instruction has: the simulator reports it
        ++n;
    }
};

inline int64_t call(int32_t op, const Args &a, Site s)
{
    int64_t *sh = shared();
    sh[0] = int64_t(reinterpret_cast<intptr_t>(s.file));
    sh[1] = s.line;
    int32_t n = a.n <= MAX_WORDS ? a.n : -1;
    std::memcpy(sh + 2, a.w, sizeof(int64_t) * size_t(n < 0 ? 0 : n));
    Native &nat = native();
    nat.run(false);
    int64_t r = callback()(op, n, sh + 2, s.file, s.line);
    __atomic_fetch_add(&nat.calls, 1, __ATOMIC_RELAXED);
    nat.run(true);
    if (r == ABORT) {
        Abort a;
        _Unwind_Backtrace(keep_frame, &a);      // (from this frame out to run_kernel's)
        throw a;
    }
    return r;
}

// a pipe object's end (its destructor): the simulator lets the core construct the pipe again -
// the earlier object's teardown (pto-isa's ~TPipe drain) runs then, or at kernel end.  Nothing
// while the kernel unwinds from a failing call, and never a throw (a destructor cannot report).
inline void pipe_end(int64_t pipe) noexcept
{
    if (pipe == 0 || __builtin_expect(std::uncaught_exceptions() > 0, 0)) return;
    Args a;
    a.put(K_PIPE);
    a.put(pipe);
    int64_t *sh = shared();
    std::memcpy(sh + 2, a.w, sizeof(int64_t) * size_t(a.n));
    Native &nat = native();
    nat.run(false);
    callback()(OP_PIPE_END, a.n, sh + 2, sh[0] ? reinterpret_cast<const char *>(sh[0]) : "", int32_t(sh[1]));
    nat.run(true);
}

// Shape / Stride as pto-isa's pto_tile.hpp declares them: a constructor sets the DYNAMIC (-1)
// dims only, in order - the 1- to 4-argument forms take exactly one value per DYNAMIC dim, the
// 5-argument form one per dim, of which those of static dims are not read - and a DYNAMIC dim no
// constructor set is 1
// the values of a Shape / Stride constructor: 1 to 5 integers
template <typename... N>
using if_dims = std::enable_if_t<(sizeof...(N) >= 1 && sizeof...(N) <= 5 && (std::is_integral_v<N> && ...)), int>;

template <size_t N> constexpr void fill_dynamic(int64_t (&dims)[5], const int64_t (&fixed)[5], const int64_t (&v)[N])
{
    for (int k = 0, i = 0; k < 5; ++k) {
        if (fixed[k] < 0) dims[k] = v[N == 5 ? k : i++];
    }
}

inline int64_t float_bits(double d)
{
    int64_t b;
    std::memcpy(&b, &d, 8);
    return b;
}
}  // namespace ptopipe

// -- tiles, global tensors, events, pipes ------------------------------------------------------
namespace ptopipe {
// pto_tile.hpp's static shape rule, which its Tile static_asserts (ptopipe.arch.vocab's
// static_shape / tile_shape_error state it for the writers and the .pto reader; tests/cpp check
// that the two agree): a row-major (NoneBox) tile's row and a column-major one's column are whole
// 32-byte blocks; a tile is whole inner boxes - a boxed tile's fractal of 16 x 32 bytes (row-major
// inside) or 32 bytes x 16 (column-major inside), any tile's 16 x 16 in a 1024-byte fractal or
// 16 x 2 / 2 x 16 in a 32-byte MX one - in its columns, and in its rows unless it is a Vec tile,
// an MX tile or one row.
template <pto::TileType Loc, typename T, int Rows, int Cols, pto::BLayout B, pto::SLayout S, int Fractal>
constexpr bool tile_shape_ok()
{
    constexpr int block = 32 % sizeof(T) == 0 ? int(32 / sizeof(T)) : 1;
    constexpr bool boxed = S != pto::SLayout::NoneBox, row_inner = S == pto::SLayout::RowMajor;
    constexpr int inner_rows = Fractal == 1024 ? 16
                               : Fractal == 32 ? (row_inner ? 16 : 2)
                               : boxed         ? (row_inner ? 16 : block)
                                               : 1;
    constexpr int inner_cols = Fractal == 1024 ? 16
                               : Fractal == 32 ? (row_inner ? 2 : 16)
                               : boxed         ? (row_inner ? block : 16)
                                               : 1;
    constexpr bool whole = Cols % inner_cols == 0 &&
                           (Loc == pto::TileType::Vec || Fractal == 32 || Rows == 1 || Rows % inner_rows == 0);
    if (boxed)
        return whole;
    return whole && (B == pto::BLayout::RowMajor ? Cols * sizeof(T) % 32 == 0 : Rows * sizeof(T) % 32 == 0);
}
}  // namespace ptopipe

namespace pto {
constexpr int DYNAMIC = -1;
// TRANDOM's key and counter (include/pto/common/type.hpp)
constexpr int PTO_RANDOM_KEY_SIZE = 2;
constexpr int PTO_RANDOM_COUNTER_SIZE = 4;
using TRandomKey = uint32_t[PTO_RANDOM_KEY_SIZE];
using TRandomCounter = uint32_t[PTO_RANDOM_COUNTER_SIZE];
// include/pto/common/constants.hpp
constexpr const int BLOCK_BYTE_SIZE = 32;
constexpr const int C0_SIZE_BYTE = 32;
constexpr const int FRACTAL_NZ_ROW = 16;
constexpr const int FRACTAL_ZZ_ROW = 16;
constexpr const int CUBE_BLOCK_SIZE = 512;
constexpr const int ACC_C0_SIZE = 16;
constexpr const int BLOCK_LEN = 16;
constexpr const int REPEAT_BYTE = 256;
constexpr const int REPEAT_MAX = 255;
constexpr const int NUM_1 = 1, NUM_4 = 4, NUM_8 = 8, NUM_12 = 12, NUM_16 = 16, NUM_32 = 32, NUM_64 = 64,
                    NUM_77 = 77, NUM_96 = 96, NUM_128 = 128, NUM_256 = 256, NUM_512 = 512;

// What an instruction returns (pto-isa's event.hpp: an empty struct there). It is not an event
// a later instruction can wait for: pto-isa's WaitAllEvents calls each wait event's Wait(),
// which only an Event<SrcOp, DstOp> has - assigned from the instruction
// (``Event<Op::TLOAD, Op::TADD> e; e = TLOAD(t, g); TADD(d, t, t, e);``, docs/isa/TSYNC.md).
// Here it carries the instruction's id, which the Event it is assigned to waits for.
struct RecordEvent {
    int64_t id_ = 0;
    RecordEvent() = default;
    explicit RecordEvent(int64_t id) : id_(id) {}
};

// (AutoToken / EventID: pto-isa's choice of the hardware event id, which ptopipe's ids make moot)
template <Op SrcOp, Op DstOp, bool AutoToken = true, event_t EventID = EVENT_ID0> struct Event : RecordEvent {
    Event() = default;
    Event(const RecordEvent &e) : RecordEvent(e) {}
    Event &operator=(const RecordEvent &e)
    {
        id_ = e.id_;
        return *this;
    }
    inline Event &Wait(::ptopipe::Site s = PTOPIPE_HERE);
    // pto-isa's record of the event with no instruction (event.hpp): set on SrcOp's pipe now,
    // done when that pipe has done what the core issued to it (CrossCoreId: its cross-core form's)
    template <uint8_t CrossCoreId = 0xff> inline Event &Init(::ptopipe::Site s = PTOPIPE_HERE);
    template <uint8_t CrossCoreId = 0xff> inline Event &Record(::ptopipe::Site s = PTOPIPE_HERE)
    {
        return Init<CrossCoreId>(s);
    }
};

// pto-isa's CompactMode (type.hpp): how TFILLPAD and the A5 compact matmul tiles pack a tile's
// rows.  A Tile takes it as its 11th parameter, as ptoas writes every tile; ptopipe's
// instructions do not read it (no ptopipe instruction models a compact layout)
enum class CompactMode { Null, Normal, RowPlusOne, RowAlignedPadding };

// pto-isa's AccToVecMode (type.hpp): which Vector core(s) an A5 TMOV of an Acc tile into UB
// writes - one (SingleModeVec0 / Vec1) or both, split by rows or columns (DualModeSplitM / N).
// ptopipe runs a kernel that moves an Acc tile into UB on one core holding both memories (a
// program using both kinds of tiles, as pto-isa's CPU simulator runs it), where the whole tile
// lands in that core's UB whatever the mode: the TMOV forms that take it do not pass it on
enum class AccToVecMode : uint8_t { SingleModeVec0 = 0, SingleModeVec1 = 1, DualModeSplitM = 2, DualModeSplitN = 3 };

// pto-isa's Tile (pto_tile.hpp) with all eleven parameters; PadVal crosses the ABI with the tile
// (TFILLPAD fills with it), Compact is the type's only (no ptopipe instruction models it)
template <TileType Loc_, typename Element_, int Rows_, int Cols_, BLayout BLayout_ = BLayout::RowMajor,
          int RowValid_ = Rows_, int ColValid_ = Cols_, SLayout SLayout_ = SLayout::NoneBox, int Fractal_ = 512,
          PadValue Pad_ = PadValue::Null, CompactMode Compact_ = CompactMode::Null>
struct Tile {
    using DType = Element_;
    static constexpr TileType Loc = Loc_;
    static constexpr int Rows = Rows_, Cols = Cols_, ValidRow = RowValid_, ValidCol = ColValid_;
    static constexpr BLayout BFractal = BLayout_;
    static constexpr SLayout SFractal = SLayout_;
    static constexpr int SFractalSize = Fractal_;
    static constexpr PadValue PadVal = Pad_;      // what TFILLPAD fills this tile with (pto_tile.hpp)
    static constexpr CompactMode Compact = Compact_;
    static constexpr bool isRowMajor = BLayout_ == BLayout::RowMajor;
    static constexpr int Numel = Rows_ * Cols_;
    // pto_tile.hpp: the element distance between rows / columns of the tile's blocks
    static constexpr int RowStride = BLayout_ == BLayout::RowMajor ? Cols_ : 1;
    static constexpr int ColStride = BLayout_ == BLayout::RowMajor ? 1 : Rows_;
    static_assert(Rows_ > 0 && Cols_ > 0, "Tile: Rows and Cols are positive");
    static_assert(RowValid_ <= Rows_ && ColValid_ <= Cols_, "Tile: the valid shape fits the tile");
    static_assert(::ptopipe::tile_shape_ok<Loc_, Element_, Rows_, Cols_, BLayout_, SLayout_, Fractal_>(),
                  "Tile: pto-isa's Tile refuses this static shape: a row-major (NoneBox) tile's Cols, a "
                  "column-major one's Rows, span whole 32-byte blocks; a boxed tile is whole fractals "
                  "(declare the padded shape, with the data's as the valid shape RowValid_, ColValid_)");

    // the simulator's handle of this tile (0: not yet known to it); a copy shares the handle
    // until one of them is re-bound (TASSIGN, TPOP), which gives that one its own
    mutable int64_t id_ = 0;
    mutable bool shared_ = false;
    int64_t vr_ = RowValid_ < 0 ? Rows_ : RowValid_;
    int64_t vc_ = ColValid_ < 0 ? Cols_ : ColValid_;

    Tile() = default;
    Tile(int64_t valid_rows, int64_t valid_cols) : vr_(valid_rows), vc_(valid_cols) {}
    // pto-isa's one-value constructor of a tile with one dynamic valid dim: that dim's value
    template <int R = RowValid_, int C = ColValid_, std::enable_if_t<(R < 0) != (C < 0), int> = 0>
    Tile(int64_t valid) : vr_(R < 0 ? valid : R), vc_(C < 0 ? valid : C)
    {
    }
    Tile(const Tile &o) : id_(o.id_), shared_(true), vr_(o.vr_), vc_(o.vc_) { o.shared_ = true; }
    Tile &operator=(const Tile &o)
    {
        id_ = o.id_;
        vr_ = o.vr_;
        vc_ = o.vc_;
        shared_ = o.shared_ = true;
        return *this;
    }
    int64_t GetValidRow() const { return vr_; }
    int64_t GetValidCol() const { return vc_; }
    inline void SetValidRow(int64_t r, ::ptopipe::Site s = PTOPIPE_HERE) { SetValid(r, vc_, s); }
    inline void SetValidCol(int64_t c, ::ptopipe::Site s = PTOPIPE_HERE) { SetValid(vr_, c, s); }
    // pto-isa's (pto_tile.hpp): both valid dims at once, of a tile whose valid shape is DYNAMIC
    inline void SetValidShape(int64_t r, int64_t c, ::ptopipe::Site s = PTOPIPE_HERE)
    {
        static_assert(RowValid_ < 0 && ColValid_ < 0, "SetValidShape: pto-isa sets the valid shape of a tile "
                      "whose valid rows and columns are DYNAMIC (-1, -1) only");
        SetValid(r, c, s);
    }
    inline void SetValid(int64_t r, int64_t c, ::ptopipe::Site s = PTOPIPE_HERE);
    // the tile's buffer: a pointer whose value is the tile's byte address in its memory (what
    // ptoas's C++ reads to bind a second tile at the same address: TASSIGN(t2, (uint64_t)t.data()));
    // a tile with no address yet (never bound by TASSIGN or TPOP) is an error at the call
    inline Element_ *data(::ptopipe::Site s = PTOPIPE_HERE) const;
    // pto-isa's scalar access of a Vec tile's element at data() + offset (pto_tile.hpp): an
    // instruction on the scalar pipe, in the element's bits across the ABI
    inline void SetValue(uint32_t offset, Element_ val, ::ptopipe::Site s = PTOPIPE_HERE);
    inline Element_ GetValue(uint32_t offset, ::ptopipe::Site s = PTOPIPE_HERE);
    // pto-isa's TF32 matmul mode (pto_tile.hpp, the Cube's control register): float32 matmuls
    // read their operands rounded to TF32 until ResetMadMode (ptopipe.isa.mad_mode)
    inline void SetMadTF32Mode(RoundMode mode = RoundMode::CAST_ROUND, ::ptopipe::Site s = PTOPIPE_HERE);
    inline void ResetMadMode(::ptopipe::Site s = PTOPIPE_HERE);
    // pto-isa's K-alignment hint of a float Left / Right tile (pto_tile.hpp): the cube reads K
    // in 16-element rather than 8-element steps, the same products over the valid K - kept,
    // no effect on the simulated values
    bool GetKAligned() const { return kAligned_; }
    void SetKAligned(bool aligned) { kAligned_ = aligned; }
    bool kAligned_ = false;
};

// pto-isa's aliases (pto_tile.hpp).  TileLeft is ZZ (RowMajor blocks of RowMajor fractals) in an
// A2A3 build and NZ (ColMajor blocks) otherwise - on A5, and in pto-isa's CPU-simulator build,
// which defines no NPU architecture (ptopipe.arch.vocab.LEFT_LAYOUT).
#if defined(PTO_NPU_ARCH_A2A3)
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileLeft = Tile<TileType::Left, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_,
                      SLayout::RowMajor, 512>;
#else
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileLeft = Tile<TileType::Left, Element_, Rows_, Cols_, BLayout::ColMajor, RowValid_, ColValid_,
                      SLayout::RowMajor, 512>;
#endif
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileRight = Tile<TileType::Right, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_,
                       SLayout::ColMajor, 512>;
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileAcc = Tile<TileType::Acc, Element_, Rows_, Cols_, BLayout::ColMajor, RowValid_, ColValid_,
                     SLayout::RowMajor, 1024>;
// ... and their compact forms (CompactMode::Normal), as pto_tile.hpp declares them
#if defined(PTO_NPU_ARCH_A2A3)
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileLeftCompact = Tile<TileType::Left, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_,
                             SLayout::RowMajor, 512, PadValue::Null, CompactMode::Normal>;
#else
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileLeftCompact = Tile<TileType::Left, Element_, Rows_, Cols_, BLayout::ColMajor, RowValid_, ColValid_,
                             SLayout::RowMajor, 512, PadValue::Null, CompactMode::Normal>;
#endif
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileRightCompact = Tile<TileType::Right, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_,
                              SLayout::ColMajor, 512, PadValue::Null, CompactMode::Normal>;
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileAccCompact = Tile<TileType::Acc, Element_, Rows_, Cols_, BLayout::ColMajor, RowValid_, ColValid_,
                            SLayout::RowMajor, 1024, PadValue::Null, CompactMode::Normal>;
// ... and A5's MX block-scale tiles (TMATMUL_MX's a_scale / b_scale) in 32-byte fractals: the left
// scales RowMajor blocks of RowMajor fractals (ZZ)
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileLeftScale = Tile<TileType::ScaleLeft, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_,
                           SLayout::RowMajor, 32>;
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileLeftScaleCompact = Tile<TileType::ScaleLeft, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_,
                                  ColValid_, SLayout::RowMajor, 32, PadValue::Null, CompactMode::Normal>;
// pto-isa's TileRightScale is ColMajor blocks of ColMajor fractals, a tile layout ptopipe does not
// model (its Mat staging tile and the MX GM layout that loads it neither): a file naming it builds,
// and its use is a static_assert saying what ptopipe runs instead
template <typename Element_, int Rows_, int Cols_, int RowValid_, int ColValid_> struct RightScaleUnmodelled {
    static_assert(sizeof(Element_) == 0,
                  "TileRightScale: pto-isa's right MX scale tile is ColMajor blocks of ColMajor 32-byte fractals, "
                  "a layout ptopipe does not model; declare the right scales row-major, Tile<TileType::ScaleRight, "
                  "float8_e8m0_t, Rows, Cols, BLayout::RowMajor, RowValid, ColValid> (Cols whole 32-byte rows), and "
                  "TMOV them there from a row-major Mat tile");
    using type = Tile<TileType::ScaleRight, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_>;
};
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileRightScale = typename RightScaleUnmodelled<Element_, Rows_, Cols_, RowValid_, ColValid_>::type;
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileRightScaleCompact = typename RightScaleUnmodelled<Element_, Rows_, Cols_, RowValid_, ColValid_>::type;
// ptopipe's own shorthands, not pto-isa's: a kernel that uses them does not build with pto-isa
// (the build reports each use as a warning at the kernel's line, ptopipe.cpp.build)
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileMat [[deprecated("ptopipe-only alias, pto-isa has no TileMat: write Tile<TileType::Mat, T, Rows, Cols> "
                           "(Tile<TileType::Mat, T, Rows, Cols, BLayout::RowMajor, RowValid, ColValid> with a "
                           "valid shape)")]] =
    Tile<TileType::Mat, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_>;
template <typename Element_, int Rows_, int Cols_, int RowValid_ = Rows_, int ColValid_ = Cols_>
using TileVec [[deprecated("ptopipe-only alias, pto-isa has no TileVec: write Tile<TileType::Vec, T, Rows, Cols> "
                           "(Tile<TileType::Vec, T, Rows, Cols, BLayout::RowMajor, RowValid, ColValid> with a "
                           "valid shape)")]] =
    Tile<TileType::Vec, Element_, Rows_, Cols_, BLayout::RowMajor, RowValid_, ColValid_>;

template <int64_t N1 = DYNAMIC, int64_t N2 = DYNAMIC, int64_t N3 = DYNAMIC, int64_t N4 = DYNAMIC,
          int64_t N5 = DYNAMIC>
struct Shape {
    static constexpr int64_t staticShape[5] = {N1, N2, N3, N4, N5};
    static constexpr int dynamic = (N1 < 0) + (N2 < 0) + (N3 < 0) + (N4 < 0) + (N5 < 0);
    int64_t shape[5] = {N1 < 0 ? 1 : N1, N2 < 0 ? 1 : N2, N3 < 0 ? 1 : N3, N4 < 0 ? 1 : N4, N5 < 0 ? 1 : N5};
    constexpr Shape() = default;
    // pto-isa's constructors: the 5 dims (only the DYNAMIC ones are taken), or 1 to 4 values,
    // exactly one per DYNAMIC (-1) dim, in order (pto_tile.hpp static_asserts the count)
    template <typename... N, ::ptopipe::if_dims<N...> = 0>
    constexpr Shape(N... n)
    {
        static_assert(sizeof...(N) == 5 || sizeof...(N) == dynamic,
                      "Shape(n1, ...): pto-isa's 1- to 4-argument Shape constructors take exactly one value "
                      "per DYNAMIC (-1) dim, in order (or give all 5 dims)");
        ::ptopipe::fill_dynamic(shape, staticShape, {static_cast<int64_t>(n)...});
    }
};

template <int64_t N1 = DYNAMIC, int64_t N2 = DYNAMIC, int64_t N3 = DYNAMIC, int64_t N4 = DYNAMIC,
          int64_t N5 = DYNAMIC>
struct Stride {
    static constexpr int64_t staticStride[5] = {N1, N2, N3, N4, N5};
    static constexpr int dynamic = (N1 < 0) + (N2 < 0) + (N3 < 0) + (N4 < 0) + (N5 < 0);
    int64_t stride[5] = {N1 < 0 ? 1 : N1, N2 < 0 ? 1 : N2, N3 < 0 ? 1 : N3, N4 < 0 ? 1 : N4, N5 < 0 ? 1 : N5};
    constexpr Stride() = default;
    // pto-isa's constructors: the 5 dims (only the DYNAMIC ones are taken), or 1 to 4 values,
    // exactly one per DYNAMIC (-1) dim, in order (pto_tile.hpp static_asserts the count)
    template <typename... N, ::ptopipe::if_dims<N...> = 0>
    constexpr Stride(N... n)
    {
        static_assert(sizeof...(N) == 5 || sizeof...(N) == dynamic,
                      "Stride(n1, ...): pto-isa's 1- to 4-argument Stride constructors take exactly one value "
                      "per DYNAMIC (-1) dim, in order (or give all 5 dims)");
        ::ptopipe::fill_dynamic(stride, staticStride, {static_cast<int64_t>(n)...});
    }
};

// the dims of a GlobalTensor's Shape / Stride (pto-isa's type.hpp), outermost first
namespace GlobalTensorDim {
constexpr int DIM_0 = 0;
constexpr int DIM_1 = 1;
constexpr int DIM_2 = 2;
constexpr int DIM_3 = 3;
constexpr int DIM_4 = 4;
constexpr int TOTAL_DIM = 5;
}  // namespace GlobalTensorDim

// the member types and constants pto-isa's pto_tile.hpp declares: its kernels spell a view's
// runtime shape through them (``GlobalTensor<...>::Shape(rows)``) and read its static dims
template <typename Element_, typename Shape_, typename Stride_, Layout Layout_ = Layout::ND>
struct GlobalTensor {
    using Shape = Shape_;
    using Stride = Stride_;
    using RawDType = std::remove_cv_t<Element_>;
    using DType = Element_;
    static constexpr Layout layout = Layout_;
    static_assert(int(Layout_) < ::ptopipe::MODELLED_GM_LAYOUTS || Layout_ == Layout::NC1HWC0,
                  "ptopipe models a GlobalTensor's ND, DN and NZ layouts, and NC1HWC0 as the source of a ConvTile's "
                  "TLOAD (pto-isa's other convolution layouts and the MX ones are not modelled)");
    static constexpr int64_t staticShape[GlobalTensorDim::TOTAL_DIM] = {
        Shape_::staticShape[0], Shape_::staticShape[1], Shape_::staticShape[2], Shape_::staticShape[3],
        Shape_::staticShape[4]};
    static constexpr int64_t staticStride[GlobalTensorDim::TOTAL_DIM] = {
        Stride_::staticStride[0], Stride_::staticStride[1], Stride_::staticStride[2], Stride_::staticStride[3],
        Stride_::staticStride[4]};
    Element_ *ptr_ = nullptr;
    Shape_ shape_;
    Stride_ stride_;
    GlobalTensor() = default;
    explicit GlobalTensor(Element_ *p, Shape_ s = Shape_(), Stride_ st = Stride_()) : ptr_(p), shape_(s), stride_(st) {}
    Element_ *data() const { return ptr_; }
    int64_t GetShape(int d) const { return shape_.shape[d]; }
    int64_t GetStride(int d) const { return stride_.stride[d]; }
    // a static dim, at compile time (pto-isa refuses a DYNAMIC one there)
    template <int dim> static constexpr int64_t GetShape()
    {
        static_assert(dim >= 0 && dim < GlobalTensorDim::TOTAL_DIM, "GetShape<dim>(): dim is 0 to 4");
        static_assert(staticShape[dim] != DYNAMIC,
                      "GetShape<dim>(): this dim is DYNAMIC, read it at run time with GetShape(dim)");
        return staticShape[dim];
    }
    template <int dim> static constexpr int64_t GetStride()
    {
        static_assert(dim >= 0 && dim < GlobalTensorDim::TOTAL_DIM, "GetStride<dim>(): dim is 0 to 4");
        static_assert(staticStride[dim] != DYNAMIC,
                      "GetStride<dim>(): this dim is DYNAMIC, read it at run time with GetStride(dim)");
        return staticStride[dim];
    }
};

// BaseShape2D<T, rows, cols, Layout>: the Stride of a rows x cols matrix in GM, as pto-isa's
// pto_tile.hpp defines it for the layouts ptopipe's GM models (ND, DN, NZ); DYNAMIC rows / cols
// give DYNAMIC strides, which the (rows, cols) constructor sets
template <typename T, int64_t rows = DYNAMIC, int64_t cols = DYNAMIC, Layout Layout_ = Layout::ND>
struct BaseShape2D;
template <int64_t rows, int64_t cols> constexpr int64_t base_shape_size()
{
    return rows == DYNAMIC || cols == DYNAMIC ? DYNAMIC : rows * cols;
}
template <typename T, int64_t rows, int64_t cols>
struct BaseShape2D<T, rows, cols, Layout::ND>
    : Stride<base_shape_size<rows, cols>(), base_shape_size<rows, cols>(), base_shape_size<rows, cols>(), cols, 1> {
    using Parent = Stride<base_shape_size<rows, cols>(), base_shape_size<rows, cols>(), base_shape_size<rows, cols>(),
                          cols, 1>;
    BaseShape2D() : Parent() {}
    BaseShape2D(int64_t r, int64_t c) : Parent(r * c, r * c, r * c, c, 1) {}
};
template <typename T, int64_t rows, int64_t cols>
struct BaseShape2D<T, rows, cols, Layout::DN>
    : Stride<base_shape_size<rows, cols>(), base_shape_size<rows, cols>(), base_shape_size<rows, cols>(), 1, rows> {
    using Parent = Stride<base_shape_size<rows, cols>(), base_shape_size<rows, cols>(), base_shape_size<rows, cols>(),
                          1, rows>;
    BaseShape2D() : Parent() {}
    BaseShape2D(int64_t r, int64_t c) : Parent(r * c, r * c, r * c, 1, r) {}
};
template <typename T, int64_t rows, int64_t cols>
struct BaseShape2D<T, rows, cols, Layout::NZ>
    : Stride<base_shape_size<rows, cols>(), rows == DYNAMIC ? DYNAMIC : rows * int64_t(C0_SIZE_BYTE / sizeof(T)),
             FRACTAL_NZ_ROW * int64_t(C0_SIZE_BYTE / sizeof(T)), int64_t(C0_SIZE_BYTE / sizeof(T)), 1> {
    static constexpr int C0Size = C0_SIZE_BYTE / sizeof(T);
    static constexpr int FractalNZSize = FRACTAL_NZ_ROW * C0Size;
    using Parent = Stride<base_shape_size<rows, cols>(), rows == DYNAMIC ? DYNAMIC : rows * int64_t(C0Size),
                          FractalNZSize, C0Size, 1>;
    static_assert(rows == DYNAMIC || rows % FRACTAL_NZ_ROW == 0, "rows must be divisible by 16 for Layout::NZ");
    static_assert(cols == DYNAMIC || cols % C0Size == 0, "cols must be divisible by C0Size for Layout::NZ");
    BaseShape2D() : Parent() {}
    BaseShape2D(int64_t r, int64_t c) : Parent(c * r, r * C0Size, FractalNZSize, C0Size, 1) {}
};

// TileShape2D<T, rows, cols, Layout>: the Shape of a rows x cols matrix in GM, BaseShape2D's partner
// (pto_tile.hpp): ND and DN Shape<1, 1, 1, rows, cols>; NZ the fractals, Shape<1, cols / C0,
// rows / 16, 16, C0>; DYNAMIC rows / cols give DYNAMIC dimensions, which (rows, cols) sets
template <typename T, int64_t rows = DYNAMIC, int64_t cols = DYNAMIC, Layout Layout_ = Layout::ND>
struct TileShape2D : Shape<1, 1, 1, rows, cols> {
    static_assert(Layout_ == Layout::ND || Layout_ == Layout::DN,
                  "TileShape2D: ptopipe's GM models the ND, DN and NZ layouts");
    using Parent = Shape<1, 1, 1, rows, cols>;
    TileShape2D() : Parent() {}
    TileShape2D(int64_t r, int64_t c) : Parent(1, 1, 1, r, c) {}
};
template <typename T, int64_t rows, int64_t cols>
struct TileShape2D<T, rows, cols, Layout::NZ>
    : Shape<1, cols == DYNAMIC ? DYNAMIC : cols / int64_t(C0_SIZE_BYTE / sizeof(T)),
            rows == DYNAMIC ? DYNAMIC : rows / FRACTAL_NZ_ROW, FRACTAL_NZ_ROW, int64_t(C0_SIZE_BYTE / sizeof(T))> {
    static constexpr int C0Size = C0_SIZE_BYTE / sizeof(T);
    using Parent = Shape<1, cols == DYNAMIC ? DYNAMIC : cols / C0Size, rows == DYNAMIC ? DYNAMIC : rows / FRACTAL_NZ_ROW,
                         FRACTAL_NZ_ROW, C0Size>;
    static_assert(rows == DYNAMIC || rows % FRACTAL_NZ_ROW == 0, "rows must be divisible by 16 for Layout::NZ");
    static_assert(cols == DYNAMIC || cols % C0Size == 0, "cols must be divisible by C0Size for Layout::NZ");
    TileShape2D() : Parent() {}
    TileShape2D(int64_t r, int64_t c) : Parent(1, c / C0Size, r / FRACTAL_NZ_ROW, FRACTAL_NZ_ROW, C0Size) {}
};

// a pipe's ``prod`` / ``cons``: pto-isa's Producer / Consumer status switches, which ptopipe's ISA
// models (ptopipe.isa.pipe.channel: a push that skips its free-slot wait, a pop that skips its
// free ...).  The rest of pto-isa's Producer / Consumer - the kernel driving the ring itself with
// its own tile ids, entry offsets and flag calls - is not modelled: using it does not compile.
}  // namespace pto
namespace ptopipe {
template <typename... A> struct unmodelled : std::false_type {};
#define PTOPIPE_UNMODELLED(NAME)                                                                        \
    template <typename... A> void NAME(A...) const                                                      \
    {                                                                                                   \
        static_assert(::ptopipe::unmodelled<A...>::value,                                               \
                      "pipe." #NAME ": ptopipe does not model a kernel that drives a pipe's ring itself " \
                      "(its own tile ids, entry offsets and flag calls): TPUSH / TPOP keep the ring's "  \
                      "tile index, slot offsets and flags (docs/cpp.md)");                               \
    }
// (a side declared on its own, ``typename Pipe::Consumer cons;`` as pto-isa's tests do, belongs
// to no pipe: its switches are its own state, which no TPUSH / TPOP reads - as in pto-isa)
template <bool Producer> struct PipeSide {
    const int64_t *pipe_ = nullptr;
    bool on_[2] = {true, true};
    PipeSide() = default;
    explicit PipeSide(const int64_t *pipe) : pipe_(pipe) {}
    void set(int64_t which, bool on, Site s)
    {
        on_[which & 1] = on;
        if (pipe_ == nullptr) return;
        Args a;
        a.put(K_PIPE);
        a.put(*pipe_);
        for (int64_t x : {which, int64_t(on)}) {
            a.put(K_INT);
            a.put(x);
        }
        call(OP_PIPE_STATUS, a, s);
    }
    PTOPIPE_UNMODELLED(setEntryOffset)
    PTOPIPE_UNMODELLED(setTileId)
    PTOPIPE_UNMODELLED(getTileId)
    PTOPIPE_UNMODELLED(getSubTileId)
};
template <> struct PipeSide<true> : PipeSide<false> {
    using PipeSide<false>::PipeSide;
    void setAllocateStatus(bool on, Site s = PTOPIPE_HERE) { set(PS_setAllocateStatus, on, s); }
    void setRecordStatus(bool on, Site s = PTOPIPE_HERE) { set(PS_setRecordStatus, on, s); }
    bool getAllocateStatus() const { return on_[PS_setAllocateStatus & 1]; }
    bool getRecordStatus() const { return on_[PS_setRecordStatus & 1]; }
    PTOPIPE_UNMODELLED(allocate)
    PTOPIPE_UNMODELLED(record)
};
struct ConsumerSide : PipeSide<false> {
    using PipeSide<false>::PipeSide;
    void setWaitStatus(bool on, Site s = PTOPIPE_HERE) { set(PS_setWaitStatus, on, s); }
    void setFreeStatus(bool on, Site s = PTOPIPE_HERE) { set(PS_setFreeStatus, on, s); }
    bool getWaitStatus() const { return on_[PS_setWaitStatus & 1]; }
    bool getFreeStatus() const { return on_[PS_setFreeStatus & 1]; }
    PTOPIPE_UNMODELLED(wait)
    PTOPIPE_UNMODELLED(free)
};
#undef PTOPIPE_UNMODELLED
using ProducerSide = PipeSide<true>;
}  // namespace ptopipe
namespace pto {

// fixpipe.hpp's configuration of a fixpipe push (TPUSH<Pipe, Tile, FixpipeParams<...>>, not
// modelled: that TPUSH says so) and type.hpp's store phase it names
enum class STPhase : uint8_t { Unspecified = 0x0, Partial = 0x2, Final = 0x3 };
enum class LayoutMode_t : uint8_t { NZ2NZ = 0, NZ2ND = 1, NZ2DN = 2 };
enum QuantMode_t {
    NoQuant = 0, F322F16 = 1, VREQ8 = 2, REQ8 = 3, VDEQF16 = 4, DEQF16 = 5, VSHIFTS322S16 = 12, SHIFTS322S16 = 13,
    F322BF16 = 16, VQF322B8_PRE = 23, QF322B8_PRE = 24, QF322F16_PRE = 32, QF322BF16_PRE = 34, QS322BF16_PRE = 35,
    VQS322BF16_PRE = 36
};
enum ClipReluMode_t { NOCLIP_RELU = 0, CLIP_RELU = 1 };
template <LayoutMode_t layoutMode = LayoutMode_t::NZ2ND, QuantMode_t quantMode = QuantMode_t::NoQuant,
          ReluPreMode reluMode = ReluPreMode::NoRelu, STPhase phase = STPhase::Unspecified, uint8_t subBlockId = 0,
          AtomicType atomicT = AtomicType::AtomicNone, ClipReluMode_t clipReluMode = NOCLIP_RELU,
          bool isChannelSplit = false>
struct FixpipeParams {
    static constexpr LayoutMode_t LayoutMode = layoutMode;
    static constexpr QuantMode_t QuantPre = quantMode;
    static constexpr ReluPreMode ReluMode = reluMode;
};

// how many tuples a multi-list TMRGSORT took from each list (pto-isa's pto_instr.hpp): written
// when the TMRGSORT returns
struct MrgSortExecutedNumList {
    uint16_t mrgSortList0 = 0;
    uint16_t mrgSortList1 = 0;
    uint16_t mrgSortList2 = 0;
    uint16_t mrgSortList3 = 0;
};

// EN_UNIT_FLAG (pto-isa's 7th parameter): the Cube's push stores its Acc tile to a GM slot with
// the unit flag (TSTORE_IMPL<..., STPhase::Final>), a FIX-pipe detail of that store - the same
// bytes, the same handshake: ptopipe takes it and simulates the store as without it
template <uint8_t FlagID, uint8_t DirType, uint32_t SlotSize, uint32_t SlotNum, uint32_t LocalSlotNum = 2,
          bool IsNoSplit = false, bool EN_UNIT_FLAG = false>
struct TPipe {
    static constexpr uint8_t Flag = FlagID, Dir = DirType;
    static constexpr uint32_t Size = SlotSize, Num = SlotNum, LocalNum = LocalSlotNum;
    static constexpr bool NoSplit = IsNoSplit, UnitFlag = EN_UNIT_FLAG;
    // pto-isa's protocol constant (a2a3 TPush.hpp; ptopipe.protocol's sync_period states it for
    // the simulator): a free notification every SyncPeriod slots
    static constexpr uint32_t SyncPeriod = SlotNum <= 2 ? SlotNum : SlotNum / 2;
    // the ring's constants as pto-isa's RingFIFO (fifo.hpp) names them: TPipe<...>::RingFiFo::SLOT_NUM
    struct RingFiFo {
        static constexpr uint32_t SLOT_SIZE = SlotSize, SLOT_NUM = SlotNum, SLOT_SYNCT = SlotNum,
                                  LOCAL_SLOT_NUM = LocalSlotNum;
    };
    // the free notifications a producer has not waited for after tileCount pushes, which its
    // teardown drains (pto-isa's a2a3 TPush.hpp countPendingFreeCredits): the consumer sends one
    // per SyncPeriod frees; the producer waits at every SyncPeriod-th push from the first one
    // at or after SlotNum (every push after the first with one slot)
    static constexpr uint32_t countPendingFreeCredits(uint32_t tileCount)
    {
        const uint32_t notified = tileCount / SyncPeriod;
        uint32_t waited = 0;
        if (SlotNum == 1) {
            waited = tileCount > 0 ? tileCount - 1 : 0;
        } else if (tileCount > SlotNum) {
            const uint32_t first = SlotNum % SyncPeriod == 0 ? SlotNum : (SlotNum / SyncPeriod + 1) * SyncPeriod;
            const uint32_t last = (tileCount - 1) / SyncPeriod * SyncPeriod;
            if (last >= first) waited = (last - first) / SyncPeriod + 1;
        }
        return notified > waited ? notified - waited : 0;
    }
    using Producer = ::ptopipe::ProducerSide;
    using Consumer = ::ptopipe::ConsumerSide;
    int64_t id_ = 0;
    Producer prod{&id_};
    Consumer cons{&id_};
    TPipe(__gm__ void *gm_slot_buffer, uint32_t c2v_consumer_buf = 0, uint32_t v2c_consumer_buf = 0,
          ::ptopipe::Site s = PTOPIPE_HERE);
    ~TPipe() { ::ptopipe::pipe_end(id_); }
};

// TMPipe: a pipe whose direction and slot size follow from its producer and consumer tiles
template <uint8_t FlagID, FIFOType FiFoType, uint8_t FiFoDepth, uint8_t FiFoSyncT, typename TileDataProd,
          typename TileDataCons, bool EN_UNIT_FLAG = false, uint8_t LocalFiFoDepth = 2,
          VecCubeRatio VCRatio = VecCubeRatio::V2C1_VECS>
struct TMPipe {
    // the FIFO's constants as pto-isa's DataFiFo (fifo.hpp) names them
    struct DataFiFo {
        static constexpr int fifoDepth = FiFoDepth, fifoPeriod = FiFoSyncT;
    };
    // how a tile-first TPUSH / TPOP splits the slot between two Vector lanes (V2C1_VECS), as
    // pto-isa's A5 TMPipe does from the tile shapes (isSplitM / isSplitN): a Vector tile of half
    // the other tile's rows is its lane's rows, of half its columns its lane's columns
    using VecTile = std::conditional_t<TileDataProd::Loc == TileType::Vec, TileDataProd, TileDataCons>;
    using CubeTile = std::conditional_t<TileDataProd::Loc == TileType::Vec, TileDataCons, TileDataProd>;
    static constexpr bool two_lanes = VCRatio == VecCubeRatio::V2C1_VECS;
    static constexpr TileSplitAxis Split =
        two_lanes && VecTile::Rows * 2 == CubeTile::Rows && VecTile::Cols == CubeTile::Cols ? TileSplitAxis::TILE_UP_DOWN
        : two_lanes && VecTile::Cols * 2 == CubeTile::Cols && VecTile::Rows == CubeTile::Rows
            ? TileSplitAxis::TILE_LEFT_RIGHT
            : TileSplitAxis::TILE_NO_SPLIT;
    using Producer = ::ptopipe::ProducerSide;
    using Consumer = ::ptopipe::ConsumerSide;
    int64_t id_ = 0;
    Producer prod{&id_};
    Consumer cons{&id_};
    // pto-isa's constructor of a GM FIFO (a2a3 / a5 TPush.hpp): the FIFO's GM base and the base of
    // the consumer's local FIFO (its LocalFiFoDepth staging slots)
    explicit TMPipe(__gm__ typename TileDataCons::DType *gm_fifo_base, uint32_t local_fifo_base,
                    ::ptopipe::Site s = PTOPIPE_HERE);
    // ... and A2A3's one-argument form; pto-isa's A5 TMPipe has none for a GM FIFO (only its
    // non-GM FIFOs take one base: the integer constructor below)
    template <FIFOType F = FiFoType>
    explicit TMPipe(__gm__ typename TileDataCons::DType *gm_fifo_base, ::ptopipe::Site s = PTOPIPE_HERE)
        : TMPipe(gm_fifo_base, 0, s)
    {
#if defined(PTO_NPU_ARCH_A5)
        static_assert(F != FIFOType::GM_FIFO,
                      "TMPipe(gmFiFoBase): pto-isa's A5 TMPipe of a GM_FIFO has only the two-argument constructor "
                      "TMPipe(gmFiFoBase, localFiFoBase) (a5/TPush.hpp; A2A3's one-argument form is not there): "
                      "pass the base of the consumer's local FIFO too (any value with LocalFiFoDepth 0)");
#endif
    }
    // pto-isa's A5 constructor of a FIFO in the consumer's local memory (VEC_FIFO: the Vector
    // cores' UB, MAT_FIFO: the Cube's L1): its base address alone, no GM buffer
    // (an integer of any type, so that a literal 0 picks this one, not the GM pointer's)
    template <typename I, FIFOType F = FiFoType,
              typename std::enable_if_t<std::is_integral_v<I> && (F == FIFOType::VEC_FIFO || F == FIFOType::MAT_FIFO),
                                        int> = 0>
    explicit TMPipe(I fifo_base, ::ptopipe::Site s = PTOPIPE_HERE) : TMPipe(nullptr, uint32_t(fifo_base), s) {}
    ~TMPipe() { ::ptopipe::pipe_end(id_); }
};

// pto-isa's ConvTile (pto_tile.hpp): a feature map in L1 with the img2col fields TIMG2COL and
// the img2col register writes read (ptopipe.isa.convtile).  ptopipe models the NC1HWC0 map
// (ConvTileShape<N, C1, H, W, C0>, static dims, C0 = 32 bytes of elements) that TLOAD fills from
// a Layout::NC1HWC0 GlobalTensor; the fields cross the ABI with each instruction taking it.
template <int... Shapes> struct ConvTileShape {
    static constexpr int totalDimCount = sizeof...(Shapes);
    static constexpr int64_t staticShape[6] = {Shapes...};
};
template <TileType Loc_, typename Element_, const int BufferSize_, Layout Layout_, typename Shape_>
struct ConvTile {
    using DType = Element_;
    using ShapeType = Shape_;
    static constexpr TileType Loc = Loc_;
    static constexpr int bufferSize = BufferSize_;
    static constexpr Layout layout = Layout_;
    static constexpr int totalDimCount = Shape_::totalDimCount;
    static constexpr int64_t staticShape[6] = {Shape_::staticShape[0], Shape_::staticShape[1],
                                               Shape_::staticShape[2], Shape_::staticShape[3],
                                               Shape_::staticShape[4], Shape_::staticShape[5]};
    static_assert(Loc_ == TileType::Mat, "ConvTile: pto-isa's TLOAD and TIMG2COL take a ConvTile in L1 only "
                                         "(\"Dst TileType must be Mat\"): TileType::Mat");
    static_assert(Layout_ == Layout::NC1HWC0,
                  "ConvTile: ptopipe models the NC1HWC0 feature map only (FRACTAL_Z weights and the 3-D NDC1HWC0 "
                  "map are not modelled): load the weights as a Mat Tile (TLOAD of an ND GlobalTensor) and TMOV / "
                  "TEXTRACT them into the Right tile");
    static_assert(totalDimCount == 5 && staticShape[0] > 0 && staticShape[1] > 0 && staticShape[2] > 0 &&
                      staticShape[3] > 0 && staticShape[4] > 0,
                  "ConvTile: an NC1HWC0 ConvTile is ConvTileShape<N, C1, H, W, C0>, static positive dims");
    static_assert(staticShape[4] * int64_t(sizeof(Element_)) == C0_SIZE_BYTE,
                  "ConvTile: C0 (the last dim) is one 32-byte block of elements (32 / sizeof(DType))");
    // the simulator's handle (0: not yet known to it); a copy shares it until one is re-bound
    mutable int64_t id_ = 0;
    mutable bool shared_ = false;
    ConvTile() = default;
    ConvTile(const ConvTile &o) : id_(o.id_), shared_(true), f_(o.f_) { o.shared_ = true; }
    ConvTile &operator=(const ConvTile &o)
    {
        id_ = o.id_;
        f_ = o.f_;
        shared_ = o.shared_ = true;
        return *this;
    }
    int64_t GetShape(int dim) const { return dim >= 0 && dim < totalDimCount ? staticShape[dim] : -1; }
    inline Element_ *data(::ptopipe::Site s = PTOPIPE_HERE) const;
    uint16_t GetFmapH() const { return f_.fmapH; }
    void SetFmapH(uint16_t v) { f_.fmapH = v; }
    uint16_t GetFmapW() const { return f_.fmapW; }
    void SetFmapW(uint16_t v) { f_.fmapW = v; }
    uint8_t GetPadList(uint8_t index) const { return f_.padList[index]; }
    void SetPadList(uint8_t index, uint8_t v) { f_.padList[index] = v; }
    const uint8_t *GetPadListArray() const { return f_.padList; }
    void SetPadListArray(const uint8_t values[4])
    {
        for (int i = 0; i < 4; ++i) f_.padList[i] = values[i];
    }
    uint16_t GetFilterH() const { return f_.filterH; }
    void SetFilterH(uint16_t v) { f_.filterH = v; }
    uint16_t GetFilterW() const { return f_.filterW; }
    void SetFilterW(uint16_t v) { f_.filterW = v; }
    uint8_t GetDilationH() const { return uint8_t(f_.dilationH); }
    void SetDilationH(uint8_t v) { f_.dilationH = v; }
    uint8_t GetDilationW() const { return uint8_t(f_.dilationW); }
    void SetDilationW(uint8_t v) { f_.dilationW = v; }
    uint8_t GetStrideH() const { return uint8_t(f_.strideH); }
    void SetStrideH(uint8_t v) { f_.strideH = v; }
    uint8_t GetStrideW() const { return uint8_t(f_.strideW); }
    void SetStrideW(uint8_t v) { f_.strideW = v; }
    Element_ GetPadValue() const { return f_.padValue; }
    void SetPadValue(Element_ v) { f_.padValue = v; }
    uint16_t GetChannelSize() const { return f_.channelSize; }
    void SetChannelSize(uint16_t v) { f_.channelSize = v; }
    uint16_t GetRepeatStride() const { return f_.repeatStride; }
    void SetRepeatStride(uint16_t v) { f_.repeatStride = v; }
    uint16_t GetRepeatTime() const { return f_.repeatTime; }
    void SetRepeatTime(uint8_t v) { f_.repeatTime = v; }
    uint16_t GetRepeatMode() const { return f_.repeatMode; }
    void SetRepeatMode(uint8_t v) { f_.repeatMode = v; }
    bool GetTranspose() const { return f_.transpose; }
    void SetTranspose(bool v) { f_.transpose = v; }
#ifndef PTO_NPU_ARCH_A2A3       // (A5's repeat register only, as pto_tile.hpp declares them)
    uint16_t GetDstStride() const { return f_.dstStride; }
    void SetDstStride(uint16_t v) { f_.dstStride = v; }
    uint16_t GetDstMposition() const { return f_.dstMposition; }
    void SetDstMposition(uint16_t v) { f_.dstMposition = v; }
#endif
    // the fields as they cross the ABI (ptopipe.isa.convtile.CONFIG_FIELDS' order; the pad value's bits)
    template <typename A> void put_fields(A &a) const
    {
        uint64_t pad = 0;
        std::memcpy(&pad, &f_.padValue, sizeof(Element_));
        for (int64_t x : {int64_t(f_.fmapH), int64_t(f_.fmapW), int64_t(f_.padList[0]), int64_t(f_.padList[1]),
                          int64_t(f_.padList[2]), int64_t(f_.padList[3]), int64_t(f_.filterH), int64_t(f_.filterW),
                          int64_t(f_.dilationH), int64_t(f_.dilationW), int64_t(f_.strideH), int64_t(f_.strideW),
                          int64_t(pad), int64_t(f_.channelSize), int64_t(f_.repeatStride), int64_t(f_.repeatTime),
                          int64_t(f_.repeatMode), int64_t(f_.transpose), int64_t(f_.dstStride),
                          int64_t(f_.dstMposition)})
            a.put(x);
    }

private:
    // pto_tile.hpp's members and defaults
    struct Fields {
        uint8_t padList[4] = {0, 0, 0, 0};
        uint16_t fmapH = 0, fmapW = 0, filterH = 1, filterW = 1, dilationH = 1, dilationW = 1, strideH = 1,
                 strideW = 1;
        Element_ padValue = Element_(0);
        uint16_t channelSize = 0, repeatStride = 0;
        uint8_t repeatTime = 1, repeatMode = 0;
        uint16_t dstStride = 0, dstMposition = 0;
        bool transpose = false;
    } f_;
};
}  // namespace pto

// -- argument encoding --------------------------------------------------------------------------
namespace ptopipe {
template <typename T> struct is_tile : std::false_type {};
template <pto::TileType L, typename E, int R, int C, pto::BLayout B, int VR, int VC, pto::SLayout S, int F, pto::PadValue P,
          pto::CompactMode M>
struct is_tile<pto::Tile<L, E, R, C, B, VR, VC, S, F, P, M>> : std::true_type {};
template <typename T> struct is_conv_tile : std::false_type {};
template <pto::TileType L, typename E, int B, pto::Layout Y, typename S>
struct is_conv_tile<pto::ConvTile<L, E, B, Y, S>> : std::true_type {};
template <typename T> struct is_global : std::false_type {};
template <typename E, typename Sh, typename St, pto::Layout L>
struct is_global<pto::GlobalTensor<E, Sh, St, L>> : std::true_type {};
template <typename T> struct is_pipe : std::false_type {};
template <uint8_t F, uint8_t D, uint32_t S, uint32_t N, uint32_t L, bool NS, bool U>
struct is_pipe<pto::TPipe<F, D, S, N, L, NS, U>> : std::true_type {};
template <uint8_t F, pto::FIFOType T, uint8_t D, uint8_t Y, typename P, typename C, bool U, uint8_t L, pto::VecCubeRatio R>
struct is_pipe<pto::TMPipe<F, T, D, Y, P, C, U, L, R>> : std::true_type {};
template <typename T> struct is_fixpipe_params : std::false_type {};
template <pto::LayoutMode_t L, pto::QuantMode_t Q, pto::ReluPreMode R, pto::STPhase P, uint8_t B, pto::AtomicType A,
          pto::ClipReluMode_t C, bool S>
struct is_fixpipe_params<pto::FixpipeParams<L, Q, R, P, B, A, C, S>> : std::true_type {};
template <typename T> struct is_tmpipe : std::false_type {};
template <uint8_t F, pto::FIFOType T, uint8_t D, uint8_t Y, typename P, typename C, bool U, uint8_t L, pto::VecCubeRatio R>
struct is_tmpipe<pto::TMPipe<F, T, D, Y, P, C, U, L, R>> : std::true_type {};

template <typename T> void put_tile_type(Args &a)
{
    for (int64_t x : {int64_t(T::Loc), int64_t(dtype_code<typename T::DType>::value), int64_t(T::Rows),
                      int64_t(T::Cols)}) {
        a.put(K_INT);
        a.put(x);
    }
}

template <typename T> struct elem_code { static constexpr int value = dtype_code<T>::value; };
template <> struct elem_code<void> { static constexpr int value = dtype_code<uint8_t>::value; };

// the simulator handle of a tile; ``rebind``: the tile is about to get a new address, so a
// handle it shares with a copy is replaced by its own
template <typename T> int64_t tile_id(const T &t, Site s, bool rebind = false)
{
    if constexpr (is_conv_tile<T>::value) {
        if (t.id_ == 0 || (rebind && t.shared_)) {
            Args a;
            for (int64_t x : {int64_t(dtype_code<typename T::DType>::value), T::staticShape[0], T::staticShape[1],
                              T::staticShape[2], T::staticShape[3], T::staticShape[4]}) {
                a.put(K_INT);
                a.put(x);
            }
            t.id_ = call(OP_CONV_NEW, a, s);
            t.shared_ = false;
        }
    } else if (t.id_ == 0 || (rebind && t.shared_)) {
        Args a;
        for (int64_t x : {int64_t(T::Loc), int64_t(dtype_code<typename T::DType>::value), int64_t(T::Rows),
                          int64_t(T::Cols), int64_t(T::BFractal), t.vr_, t.vc_, int64_t(T::SFractal),
                          int64_t(T::PadVal)}) {
            a.put(K_INT);
            a.put(x);
        }
        t.id_ = call(OP_TILE_NEW, a, s);
        t.shared_ = false;
    }
    return t.id_;
}

// a mode template argument passed on as keyword ``id`` (headergen.KEYWORDS) of the
// instruction's Python form: an enumerator (with its enum's table) or an integer (table -1)
struct Kw {
    int64_t id, table, value;
};
template <typename E> constexpr Kw kw(int64_t id, E v)
{
    if constexpr (std::is_enum_v<E>) return Kw{id, enum_code<E>::value, int64_t(v)};
    else return Kw{id, -1, int64_t(v)};
}

// the instruction id an Event waits for, as TSYNC passes it on
struct EventId {
    int64_t id;
};
}  // namespace ptopipe
#define PTOPIPE_BARE_EVENT                                                                                    \
    "an instruction's RecordEvent is no wait event: pto-isa waits for an Event<SrcOp, DstOp> (its Wait(); "  \
    "RecordEvent has none, so pto-isa's headers do not build this) - declare one and assign the "            \
    "instruction to it: Event<Op::TLOAD, Op::TADD> e; e = TLOAD(t, g); TADD(d, t, t, e); (docs/isa/TSYNC.md)"
namespace ptopipe {
// the wait events of a templated form (a trailing tile is an operand of a plain form instead)
// a wait event a call left out (the generated instructions' defaulted ones): no argument at all
struct NoEvent {};
template <typename... E>
using if_events = std::enable_if_t<
    ((std::is_base_of_v<pto::RecordEvent, std::decay_t<E>> || std::is_same_v<std::decay_t<E>, NoEvent>) && ...), int>;
template <typename P> using if_tmpipe = std::enable_if_t<is_tmpipe<P>::value, int>;
template <typename P> using if_pipe = std::enable_if_t<is_pipe<P>::value, int>;
template <typename P> using if_tpipe = std::enable_if_t<is_pipe<P>::value && !is_tmpipe<P>::value, int>;
template <typename T> using if_not_event = std::enable_if_t<!std::is_base_of_v<pto::RecordEvent, T>, int>;
template <typename... A>
using if_operands = std::enable_if_t<(!std::is_base_of_v<pto::RecordEvent, std::decay_t<A>> && ...), int>;

// a Layout::NC1HWC0 GlobalTensor as the TLOAD of a ConvTile passes it (pto-inst.hpp's TLOAD)
template <typename GT> struct AsND {
    using G = GT;
    const GT &g;
};
template <typename T> struct is_nd_view : std::false_type {};
template <typename GT> struct is_nd_view<AsND<GT>> : std::true_type {};

template <typename X> void enc(Args &a, const X &x, Site s)
{
    using T = std::remove_cv_t<std::remove_reference_t<X>>;
    if constexpr (std::is_same_v<T, NoEvent>) {
    } else if constexpr (std::is_same_v<T, Kw>) {
        a.put(K_KW);
        a.put(x.id);
        a.put(x.table);
        a.put(x.value);
    } else if constexpr (is_tile<T>::value) {
        a.put(K_TILE);
        a.put(tile_id(x, s));
    } else if constexpr (is_conv_tile<T>::value) {
        a.put(K_CONV);          // its handle, then its img2col fields
        a.put(tile_id(x, s));
        x.put_fields(a);
    } else if constexpr (is_nd_view<T>::value) {
        a.put(K_GT);            // an NC1HWC0 tensor a ConvTile loads: its ND matrix (rows of C0)
        a.put(int64_t(reinterpret_cast<uintptr_t>(x.g.ptr_)));
        a.put(dtype_code<typename T::G::DType>::value);
        for (int d = 0; d < 5; ++d) a.put(x.g.shape_.shape[d]);
        for (int d = 0; d < 5; ++d) a.put(x.g.stride_.stride[d]);
        a.put(int64_t(pto::Layout::ND));
    } else if constexpr (is_global<T>::value) {
        a.put(K_GT);
        a.put(int64_t(reinterpret_cast<uintptr_t>(x.ptr_)));
        a.put(dtype_code<typename T::DType>::value);
        for (int d = 0; d < 5; ++d) a.put(x.shape_.shape[d]);
        for (int d = 0; d < 5; ++d) a.put(x.stride_.stride[d]);
        a.put(int64_t(T::layout));
    } else if constexpr (is_pipe<T>::value) {
        a.put(K_PIPE);
        a.put(x.id_);
    } else if constexpr (std::is_base_of_v<pto::RecordEvent, T>) {
        static_assert(!std::is_same_v<T, pto::RecordEvent>, PTOPIPE_BARE_EVENT);
        a.put(K_EVENT);
        a.put(x.id_);
    } else if constexpr (std::is_same_v<T, EventId>) {
        a.put(K_EVENT);
        a.put(x.id);
    } else if constexpr (std::is_enum_v<T>) {
        a.put(K_ENUM);
        a.put(enum_code<T>::value);
        a.put(int64_t(x));
    } else if constexpr (std::is_same_v<T, pto::MrgSortExecutedNumList>) {
        a.put(K_COUNTS);     // the simulator writes the counts into the kernel's list
        a.put(int64_t(reinterpret_cast<uintptr_t>(const_cast<T *>(&x))));
    } else if constexpr (std::is_same_v<T, std::nullptr_t>) {
        a.put(K_NULL);
    } else if constexpr (std::is_pointer_v<T>) {
        a.put(K_PTR);
        a.put(int64_t(reinterpret_cast<uintptr_t>(x)));
        a.put(elem_code<std::remove_cv_t<std::remove_pointer_t<T>>>::value);
    } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16_t>) {
        a.put(K_FLT);
        a.put(float_bits(double(float(x))));
    } else if constexpr (std::is_integral_v<T>) {
        a.put(K_INT);
        a.put(int64_t(x));
    } else {
        static_assert(sizeof(T) == 0, "this argument type has no ptopipe ABI form");
    }
}

// (the call site goes on the crash descriptor first, its line negated while the operands are
// read: a fault reading one - a scalar through a bad __gm__ pointer, passed by reference - is
// this call's, whose frames are ptopipe's header)
template <typename... X> int64_t inst(int32_t op, Site s, const X &...xs)
{
    int64_t *sh = shared();
    sh[0] = int64_t(reinterpret_cast<intptr_t>(s.file));
    sh[1] = -int64_t(s.line);
    Args a;
    (enc(a, xs, s), ...);
    return call(op, a, s);
}

// an argument that also carries the call site (a parameter type whose converting
// constructor takes PTOPIPE_HERE as its default: it is evaluated at the call)
template <typename P> struct At {
    P &v;
    Site s;
    At(P &x, Site site = PTOPIPE_HERE) : v(x), s(site) {}
};
struct AtEvent {
    EventId v;
    Site s;
    template <typename E, std::enable_if_t<std::is_base_of_v<pto::RecordEvent, E>, int> = 0>
    AtEvent(const E &x, Site site = PTOPIPE_HERE) : v{x.id_}, s(site)
    {
        static_assert(!std::is_same_v<E, pto::RecordEvent>, PTOPIPE_BARE_EVENT);
    }
};
}  // namespace ptopipe

// the instructions of the op catalogue (ptopipe_generated.hpp): ``NAME(args..., events...)``
// runs the instruction at its call site and returns its RecordEvent (pto-isa's instructions
// return one: ``auto e = TLOAD(...)`` is an event a later instruction waits for).  The types a
// kernel names as explicit template arguments (``TADD<Dst, Src0, Src1>(dst, src0, src1)``, as
// pto-isa's function templates allow) are the operands' own: each must be one of them.
namespace ptopipe {
template <typename X, typename... A>
constexpr bool names_an_operand = ((std::is_same_v<std::remove_cv_t<X>, std::remove_cv_t<A>> ||
                                    std::is_same_v<std::remove_cv_t<X>, std::remove_cv_t<std::remove_pointer_t<A>>>) ||
                                   ...);
template <typename... X> struct explicit_types {
    template <typename... A> static constexpr bool of = (names_an_operand<X, A...> && ...);
};
template <typename... A> struct wrong_count : std::false_type {};
// an operand an instruction taking RowMajor tiles only accepts: a RowMajor tile, or no tile
template <typename A> constexpr bool row_major_operand() {
    using T = std::remove_cv_t<std::remove_reference_t<A>>;
    if constexpr (is_tile<T>::value) {
        return T::isRowMajor;
    } else {
        return true;
    }
}
template <typename... A> constexpr bool row_major_operands = (row_major_operand<A>() && ...);

}  // namespace ptopipe
#define PTOPIPE_SITE ::ptopipe::Site s = PTOPIPE_HERE
#define PTOPIPE_EXPLICIT_TYPES(X, ...)                                                                    \
    static_assert(::ptopipe::explicit_types<X...>::template of<__VA_ARGS__>,                              \
                  "an explicit template argument of this instruction is not the type of any of its operands " \
                  "(pto-isa's template parameters are the operands' types)")
#define PTOPIPE_ARGUMENT_COUNT(NAME, FEWEST, MOST, A)                                                     \
    static_assert(::ptopipe::wrong_count<A...>::value,                                                    \
                  #NAME " takes " #FEWEST " to " #MOST " arguments (operands, then wait events)")
// an instruction pto-isa's NPU code runs on RowMajor tiles only (the catalogue's ROW_MAJOR_ONLY:
// its ``static_assert(isRowMajor)``): a call on a ColMajor tile (a DN column) does not build there
#define PTOPIPE_ROW_MAJOR(NAME, ...)                                                                      \
    static_assert(::ptopipe::row_major_operands<__VA_ARGS__>,                                             \
                  #NAME " takes RowMajor tiles only (pto-isa's NPU " #NAME " static_asserts isRowMajor): " \
                  "run it on a RowMajor view of the same bytes - TRESHAPE a DN [R, 1] column into a [1, R] " \
                  "row tile - or declare the tile BLayout::RowMajor")
// an instruction pto-isa's pto_instr.hpp declares with a mode template argument it cannot deduce
// in every form (TCI's descending, TTRI's isUpperOrLower, ...): a call without them does not
// build with pto-isa's headers
#define PTOPIPE_TEMPLATE_ONLY(NAME, SPELLING, A)                                                          \
    static_assert(::ptopipe::wrong_count<A>::value,                                                       \
                  #NAME " needs its template arguments: pto-isa declares only " SPELLING                   \
                  " (its mode cannot be deduced from the operands) - spell them, as docs/isa/" #NAME ".md does")
// an instruction whose pto-isa form requires a scratch tile (the catalogue's ``scratch``):
// a call without it does not build with pto-isa's headers
#define PTOPIPE_SCRATCH_ARGUMENT_COUNT(NAME, FEWEST, MOST, A)                                             \
    static_assert(::ptopipe::wrong_count<A...>::value,                                                    \
                  #NAME " takes " #FEWEST " to " #MOST " arguments (operands with the scratch tile tmp "   \
                  "that pto-isa's " #NAME " requires, then wait events): pass a scratch tile as tmp, "   \
                  "of the type and size pto-isa's docs/isa/" #NAME ".md gives")
// an instruction whose pto-isa form takes operands the Python form defaults (a compare's
// CmpMode, TCVT's RoundMode, ...): a call without them does not build with pto-isa's headers
#define PTOPIPE_PTO_ISA_ARGUMENT_COUNT(NAME, FEWEST, MOST, A)                                             \
    static_assert(::ptopipe::wrong_count<A...>::value,                                                    \
                  #NAME " takes " #FEWEST " to " #MOST " arguments (operands, then wait events): "        \
                  "pto-isa's " #NAME " has no defaults for them - spell each, as docs/isa/" #NAME ".md does")

// the algorithms of pto-isa's ``<auto PrecisionType>`` forms (include/pto/common/type.hpp; its
// PowAlgorithm is ptopipe's, which TPOW / TPOWS pass on): the device's ways to one function,
// which ptopipe's ISA computes whichever a kernel names
namespace pto {
enum class DivAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class SqrtAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RsqrtAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RecipAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class ExpAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class LogAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class FmodAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class FmodSAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RemAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
enum class RemSAlgorithm : uint8_t { DEFAULT, HIGH_PRECISION };
// TFILLPAD's modes (type.hpp): TFILLPAD<TFillPadMode::X>(dst, src) is the catalogue's TFILLPAD,
// TFILLPAD_INPLACE or TFILLPAD_EXPAND, as pto-isa's TFILLPAD dispatches them
enum class TFillPadMode : uint8_t { Normal = 0, InPlace = 1, Expand = 2 };
// the Cube's unit-flag phase of a matmul (type.hpp: TMATMUL<AccPhase::Final>(c, a, b)): when the
// FIX pipe may start reading L0C, a hardware hand-off ptopipe's pipes order by themselves - the
// product is the same whichever a kernel names
enum class AccPhase : uint8_t { Unspecified = 0x0, Unknown = Unspecified, Partial = 0x2, Final = 0x3 };
}  // namespace pto
namespace ptopipe {
template <pto::TFillPadMode M> constexpr int32_t fill_pad_op()
{
    return M == pto::TFillPadMode::Expand ? OP_TFILLPAD_EXPAND : M == pto::TFillPadMode::InPlace ? OP_TFILLPAD_INPLACE
                                                                                               : OP_TFILLPAD;
}
}  // namespace ptopipe

#define PTOPIPE_GENERATED_INSTRUCTIONS
#include "ptopipe_generated.hpp"
#undef PTOPIPE_GENERATED_INSTRUCTIONS

// -- the instructions written here: binding, the cross-core pipes, events ---------------------
namespace pto {
template <Op SrcOp, Op DstOp, bool AutoToken, event_t EventID>
inline Event<SrcOp, DstOp, AutoToken, EventID> &Event<SrcOp, DstOp, AutoToken, EventID>::Wait(::ptopipe::Site s)
{
    ::ptopipe::inst(::ptopipe::OP_TSYNC, s, *this);
    return *this;
}

template <Op SrcOp, Op DstOp, bool AutoToken, event_t EventID>
template <uint8_t CrossCoreId>
inline Event<SrcOp, DstOp, AutoToken, EventID> &Event<SrcOp, DstOp, AutoToken, EventID>::Init(::ptopipe::Site s)
{
    id_ = ::ptopipe::inst(::ptopipe::OP_EVENT_RECORD, s, SrcOp);
    return *this;
}

template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F, PadValue P, CompactMode M>
inline void Tile<L, E, R, C, B, VR, VC, S, F, P, M>::SetValid(int64_t r, int64_t c, ::ptopipe::Site s)
{
    ::ptopipe::tile_id(*this, s, true);
    ::ptopipe::inst(::ptopipe::OP_SETVALID, s, *this, r, c);
    vr_ = r;
    vc_ = c;
}

template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F, PadValue P, CompactMode M>
inline E *Tile<L, E, R, C, B, VR, VC, S, F, P, M>::data(::ptopipe::Site s) const
{
    return reinterpret_cast<E *>(static_cast<uintptr_t>(::ptopipe::inst(::ptopipe::OP_TILE_ADDR, s, *this)));
}

template <TileType L, typename E, int B, Layout Y, typename S>
inline E *ConvTile<L, E, B, Y, S>::data(::ptopipe::Site s) const
{
    return reinterpret_cast<E *>(static_cast<uintptr_t>(::ptopipe::inst(::ptopipe::OP_TILE_ADDR, s, *this)));
}

// TLOAD of a ConvTile: from a Layout::NC1HWC0 GlobalTensor of its shape (pto-isa's TLOAD_CONVTILE_IMPL;
// ptopipe.isa.convtile.load), which crosses the ABI as its ND matrix - N*C1*H*W rows of C0
template <TileType L, typename E, int B, Layout Y, typename S, typename G, class E0 = ::ptopipe::NoEvent,
          class E1 = ::ptopipe::NoEvent, class E2 = ::ptopipe::NoEvent, ::ptopipe::if_events<E0, E1, E2> = 0,
          std::enable_if_t<::ptopipe::is_global<G>::value, int> = 0>
inline RecordEvent TLOAD(ConvTile<L, E, B, Y, S> &dst, G &src, const E0 &e0 = {}, const E1 &e1 = {},
                         const E2 &e2 = {}, ::ptopipe::Site s = PTOPIPE_HERE)
{
    static_assert(G::layout == Layout::NC1HWC0, "TLOAD of a ConvTile: pto-isa loads an NC1HWC0 ConvTile from a "
                                                "GlobalTensor of its layout, Layout::NC1HWC0 (\"Src Dst layout must "
                                                "be NC1HWC0 ...\")");
    static_assert(sizeof(typename G::DType) == sizeof(E), "TLOAD of a ConvTile: \"Source dtype must be same with "
                                                          "dst dtype!\"");
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TLOAD, s, dst, ::ptopipe::AsND<G>{src}, e0, e1, e2));
}

template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F, PadValue P, CompactMode M>
inline void Tile<L, E, R, C, B, VR, VC, S, F, P, M>::SetValue(uint32_t offset, E val, ::ptopipe::Site s)
{
    static_assert(L == TileType::Vec, "SetValue: Location of tile must be Location::Vec (pto_tile.hpp)");
    static_assert(sizeof(E) <= 8, "SetValue: an element of at most 8 bytes");
    uint64_t bits = 0;
    std::memcpy(&bits, &val, sizeof(E));
    ::ptopipe::inst(::ptopipe::OP_TILE_SET, s, *this, int64_t(offset), int64_t(bits));
}

template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F, PadValue P, CompactMode M>
inline void Tile<L, E, R, C, B, VR, VC, S, F, P, M>::SetMadTF32Mode(RoundMode mode, ::ptopipe::Site s)
{
    ::ptopipe::inst(::ptopipe::OP_MAD_MODE, s, mode);
}

template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F, PadValue P, CompactMode M>
inline void Tile<L, E, R, C, B, VR, VC, S, F, P, M>::ResetMadMode(::ptopipe::Site s)
{
    ::ptopipe::inst(::ptopipe::OP_MAD_MODE, s);
}

template <TileType L, typename E, int R, int C, BLayout B, int VR, int VC, SLayout S, int F, PadValue P, CompactMode M>
inline E Tile<L, E, R, C, B, VR, VC, S, F, P, M>::GetValue(uint32_t offset, ::ptopipe::Site s)
{
    static_assert(L == TileType::Vec, "GetValue: Location of tile must be Location::Vec (pto_tile.hpp)");
    uint64_t bits = uint64_t(::ptopipe::inst(::ptopipe::OP_TILE_GET, s, *this, int64_t(offset)));
    E val;
    std::memcpy(&val, &bits, sizeof(E));
    return val;
}

template <uint8_t FlagID, uint8_t DirType, uint32_t SlotSize, uint32_t SlotNum, uint32_t LocalSlotNum, bool IsNoSplit,
          bool EN_UNIT_FLAG>
TPipe<FlagID, DirType, SlotSize, SlotNum, LocalSlotNum, IsNoSplit, EN_UNIT_FLAG>::TPipe(__gm__ void *gm, uint32_t c2v, uint32_t v2c,
                                                                          ::ptopipe::Site s)
{
    ::ptopipe::Args a;
    for (int64_t x : {int64_t(FlagID), int64_t(DirType), int64_t(SlotSize), int64_t(SlotNum),
                      int64_t(LocalSlotNum), int64_t(IsNoSplit), int64_t(c2v), int64_t(v2c)}) {
        a.put(::ptopipe::K_INT);
        a.put(x);
    }
    if (gm == nullptr) {
        a.put(::ptopipe::K_NULL);       // a consumer-local ring: no GM slot buffer
    } else {
        ::ptopipe::enc(a, static_cast<uint8_t *>(gm), s);
    }
    id_ = ::ptopipe::call(::ptopipe::OP_TPIPE, a, s);
}

template <uint8_t FlagID, FIFOType FiFoType, uint8_t FiFoDepth, uint8_t FiFoSyncT, typename TileDataProd,
          typename TileDataCons, bool EN_UNIT_FLAG, uint8_t LocalFiFoDepth, VecCubeRatio VCRatio>
TMPipe<FlagID, FiFoType, FiFoDepth, FiFoSyncT, TileDataProd, TileDataCons, EN_UNIT_FLAG, LocalFiFoDepth,
       VCRatio>::TMPipe(__gm__ typename TileDataCons::DType *gm, uint32_t local, ::ptopipe::Site s)
{
    ::ptopipe::Args a;
    for (int64_t x : {int64_t(FlagID), int64_t(FiFoDepth), int64_t(FiFoSyncT), int64_t(EN_UNIT_FLAG),
                      int64_t(LocalFiFoDepth), int64_t(local)}) {
        a.put(::ptopipe::K_INT);
        a.put(x);
    }
    ::ptopipe::enc(a, FiFoType, s);
    ::ptopipe::enc(a, VCRatio, s);
    ::ptopipe::put_tile_type<TileDataProd>(a);
    ::ptopipe::put_tile_type<TileDataCons>(a);
    if (gm == nullptr) {
        a.put(::ptopipe::K_NULL);
    } else {
        ::ptopipe::enc(a, gm, s);
    }
    id_ = ::ptopipe::call(::ptopipe::OP_TMPIPE, a, s);
}

// TASSIGN(tile, local address) binds a tile; TASSIGN(global tensor, pointer) points a
// GlobalTensor at GM (host-side only: the tensor carries its pointer into every instruction)
template <typename T, typename V> inline void TASSIGN(T &t, V addr, ::ptopipe::Site s = PTOPIPE_HERE)
{
    if constexpr (::ptopipe::is_global<T>::value) {
        t.ptr_ = reinterpret_cast<typename T::DType *>(addr);
    } else {
        static_assert(::ptopipe::is_tile<T>::value || ::ptopipe::is_conv_tile<T>::value,
                      "TASSIGN binds a Tile, a ConvTile or a GlobalTensor");
        ::ptopipe::tile_id(t, s, true);
        ::ptopipe::inst(::ptopipe::OP_TASSIGN, s, t, int64_t(addr));
    }
}

// TASSIGN<Addr>(tile): the address as a template argument (pto_instr.hpp's compile-time form; the
// run checks it as it checks TASSIGN(tile, addr))
template <std::size_t Addr, typename T>
inline std::enable_if_t<::ptopipe::is_tile<T>::value || ::ptopipe::is_conv_tile<T>::value> TASSIGN(
    T &t, ::ptopipe::Site s = PTOPIPE_HERE)
{
    TASSIGN(t, uint64_t(Addr), s);
}

#define PTOPIPE_TMPIPE_TILE_FIRST(OP)                                                                     \
    static_assert(!::ptopipe::is_tmpipe<Pipe>::value,                                                     \
                  OP "(pipe, tile) on a TMPipe: pto-isa spells it " OP "(tile, pipe) (the tile first, no "  \
                  "template arguments), as its flash-attention kernel does")

// TPUSH / TPOP / TALLOC / TFREE of a TPipe, as pto-isa spells them: the TileSplitAxis is a
// template argument pto-isa requires.  The forms without it still compile here, taking
// TILE_NO_SPLIT, deprecated: pto-isa cannot build them (the build reports each use as a warning
// at the kernel's line).  TPUSH / TPOP also take pto-isa's explicit sub-block id (after the tile,
// before the wait events): which Vector lane's part of the slot the lane moves - its own, the
// only one ptopipe models (another is an error at the call); the Cube moves the whole tile and
// does not read it.
#define PTOPIPE_NO_SPLIT(OP, SPELLING)                                                                    \
    [[deprecated(OP " without its TileSplitAxis: pto-isa requires it (" SPELLING "); ptopipe takes "      \
                 "TILE_NO_SPLIT")]]
template <typename Pipe, typename T, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TPUSH(::ptopipe::At<Pipe> pipe, T &tile, E &...events)
{
    PTOPIPE_TMPIPE_TILE_FIRST("TPUSH");
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TPUSH, pipe.s, pipe.v, tile, Split, events...));
}

template <typename Pipe, typename T, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TPUSH(::ptopipe::At<Pipe> pipe, T &tile, int32_t subBlockId, E &...events)
{
    ::ptopipe::inst(::ptopipe::OP_SUBBLOCK_ID, pipe.s, 0, subBlockId);
    return TPUSH<Pipe, T, Split>(::ptopipe::At<Pipe>(pipe.v, pipe.s), tile, events...);
}

template <typename Pipe, typename T, typename... E, ::ptopipe::if_events<E...> = 0>
PTOPIPE_NO_SPLIT("TPUSH", "TPUSH<Pipe, Tile, TileSplitAxis::TILE_NO_SPLIT>(pipe, tile)")
inline RecordEvent TPUSH(::ptopipe::At<Pipe> pipe, T &tile, E &...events)
{
    return TPUSH<Pipe, T, TileSplitAxis::TILE_NO_SPLIT>(pipe, tile, events...);
}

// pto-isa's fixpipe push, TPUSH<Pipe, AccTile, FixpipeParams<...>>(pipe, acc) (fixpipe.hpp): the
// Cube's fixpipe converts the Acc tile (layout, quantisation, ReLU) on its way into the slot.
// ptopipe's slots take a tile as it is pushed, so the form is declared to say that it is not
// modelled rather than to leave its names undeclared.
template <typename Pipe, typename T, typename TConfig, typename... E,
          std::enable_if_t<::ptopipe::is_fixpipe_params<TConfig>::value, int> = 0>
inline RecordEvent TPUSH(::ptopipe::At<Pipe>, T &, E &...)
{
    static_assert(::ptopipe::unmodelled<TConfig>::value,
                  "TPUSH<Pipe, Tile, FixpipeParams<...>>: ptopipe does not model the fixpipe's converting push "
                  "(the Acc tile's layout / quantisation on its way into the slot): push the Acc tile as it is, "
                  "TPUSH<Pipe, Tile, TileSplitAxis::...>(pipe, tile), and convert it on the Vector side (TCVT)");
    return RecordEvent();
}

// the quantisation scalar of that push (pto_instr.hpp): not modelled with it
template <typename OutType, typename... E> inline RecordEvent SET_QUANT_SCALAR(float, E &...)
{
    static_assert(::ptopipe::unmodelled<OutType>::value,
                  "SET_QUANT_SCALAR: ptopipe does not model the fixpipe's quantisation registers (the "
                  "converting TPUSH<Pipe, Tile, FixpipeParams<...>> reads them): TMOV<Dst, Src, reluMode>(dst, src, "
                  "preQuantScalar) quantises an Acc tile with its scalar");
    return RecordEvent();
}
// ... and its quantisation vector (a Scaling tile's words, pto_instr.hpp): not modelled with it either
template <typename FpTileData, typename... E> inline RecordEvent SET_QUANT_VECTOR(FpTileData &, E &...)
{
    static_assert(::ptopipe::unmodelled<FpTileData>::value,
                  "SET_QUANT_VECTOR: ptopipe does not model the fixpipe's quantisation registers (the "
                  "converting TPUSH<Pipe, Tile, FixpipeParams<...>> reads them): TMOV<Dst, Src, FpTile, "
                  "AccToVecMode::...>(dst, src, fp) / TMOV_FP(dst, src, fp) quantise an Acc tile with a Scaling tile's "
                  "words");
    return RecordEvent();
}

template <typename Pipe, typename T, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TPOP(::ptopipe::At<Pipe> pipe, T &tile, E &...events)
{
    PTOPIPE_TMPIPE_TILE_FIRST("TPOP");
    if constexpr (::ptopipe::is_global<T>::value) {     // the address flow: TPOP gives the slot's address
        tile.ptr_ = reinterpret_cast<typename T::DType *>(
            ::ptopipe::inst(::ptopipe::OP_TPOP, pipe.s, pipe.v, tile, Split, events...));
        return RecordEvent();
    } else {
        ::ptopipe::tile_id(tile, pipe.s, true);
        return RecordEvent(::ptopipe::inst(::ptopipe::OP_TPOP, pipe.s, pipe.v, tile, Split, events...));
    }
}

template <typename Pipe, typename T, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TPOP(::ptopipe::At<Pipe> pipe, T &tile, int32_t subBlockId, E &...events)
{
    ::ptopipe::inst(::ptopipe::OP_SUBBLOCK_ID, pipe.s, 1, subBlockId);
    return TPOP<Pipe, T, Split>(::ptopipe::At<Pipe>(pipe.v, pipe.s), tile, events...);
}

template <typename Pipe, typename T, typename... E, ::ptopipe::if_events<E...> = 0>
PTOPIPE_NO_SPLIT("TPOP", "TPOP<Pipe, Tile, TileSplitAxis::TILE_NO_SPLIT>(pipe, tile)")
inline RecordEvent TPOP(::ptopipe::At<Pipe> pipe, T &tile, E &...events)
{
    return TPOP<Pipe, T, TileSplitAxis::TILE_NO_SPLIT>(pipe, tile, events...);
}

template <typename Pipe, typename T, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TALLOC(::ptopipe::At<Pipe> pipe, T &tensor, E &...events)
{
    static_assert(::ptopipe::is_global<T>::value, "TALLOC takes a GlobalTensor (the address flow)");
    tensor.ptr_ = reinterpret_cast<typename T::DType *>(
        ::ptopipe::inst(::ptopipe::OP_TALLOC, pipe.s, pipe.v, tensor, Split, events...));
    return RecordEvent();
}

template <typename Pipe, typename T, typename... E, ::ptopipe::if_events<E...> = 0>
PTOPIPE_NO_SPLIT("TALLOC", "TALLOC<Pipe, GlobalTensor, TileSplitAxis::TILE_NO_SPLIT>(pipe, tensor)")
inline RecordEvent TALLOC(::ptopipe::At<Pipe> pipe, T &tensor, E &...events)
{
    return TALLOC<Pipe, T, TileSplitAxis::TILE_NO_SPLIT>(pipe, tensor, events...);
}

template <typename Pipe, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TFREE(::ptopipe::At<Pipe> pipe, E &...events)
{
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TFREE, pipe.s, pipe.v, nullptr, Split, events...));
}

template <typename Pipe, typename T, TileSplitAxis Split, typename... E, ::ptopipe::if_events<E...> = 0>
inline RecordEvent TFREE(::ptopipe::At<Pipe> pipe, T &obj, E &...events)
{
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TFREE, pipe.s, pipe.v, obj, Split, events...));
}

// TFREE of a tile without a split: pto-isa builds TFREE<Pipe>(pipe) and TFREE(pipe) (its
// TFREE_IMPL<Pipe>(pipe)); no split crosses the ABI, and the run's protocol model says what the
// library frees with (ptopipe.protocol.model.ProtocolModel.unsplit_free).  Each event count is
// its own overload so that the call site can follow the events.
template <typename Pipe, ::ptopipe::if_pipe<Pipe> = 0>
inline RecordEvent TFREE(Pipe &pipe, ::ptopipe::Site s = PTOPIPE_HERE)
{
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TFREE, s, pipe, nullptr, nullptr));
}
template <typename Pipe, class E0, ::ptopipe::if_pipe<Pipe> = 0, ::ptopipe::if_events<E0> = 0>
inline RecordEvent TFREE(Pipe &pipe, E0 &e0, ::ptopipe::Site s = PTOPIPE_HERE)
{
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TFREE, s, pipe, nullptr, nullptr, e0));
}
template <typename Pipe, class E0, class E1, ::ptopipe::if_pipe<Pipe> = 0, ::ptopipe::if_events<E0, E1> = 0>
inline RecordEvent TFREE(Pipe &pipe, E0 &e0, E1 &e1, ::ptopipe::Site s = PTOPIPE_HERE)
{
    return RecordEvent(::ptopipe::inst(::ptopipe::OP_TFREE, s, pipe, nullptr, nullptr, e0, e1));
}

template <typename Pipe, typename T, typename... E, ::ptopipe::if_not_event<T> = 0, ::ptopipe::if_events<E...> = 0>
PTOPIPE_NO_SPLIT("TFREE", "TFREE<Pipe, GlobalTensor, TileSplitAxis::TILE_NO_SPLIT>(pipe, tensor)")
inline RecordEvent TFREE(::ptopipe::At<Pipe> pipe, T &obj, E &...events)
{
    return TFREE<Pipe, T, TileSplitAxis::TILE_NO_SPLIT>(pipe, obj, events...);
}
#undef PTOPIPE_NO_SPLIT

// TPUSH(tile, pipe) / TPOP(tile, pipe): a TMPipe's push and pop, as pto-isa's TPUSH_IMPL(tile,
// pipe) / TPOP_IMPL(tile, pipe) - the ring's own tile index, the TMPipe's split (TMPipe::Split);
// the pop of a GM FIFO frees its slot inside (there is no TFREE for it), a pop of an A5 VEC /
// MAT FIFO does not
// (with up to three wait events, each form taking its call site last)
#define PTOPIPE_TILE_FIRST(NAME, OP, ...)                                                                    \
    template <typename T, typename Pipe, ::ptopipe::if_tmpipe<Pipe> = 0>                                     \
    inline RecordEvent NAME(T &tile, Pipe &pipe, ::ptopipe::Site s = PTOPIPE_HERE)                            \
    {                                                                                                        \
        __VA_ARGS__;                                                                                         \
        return RecordEvent(::ptopipe::inst(OP, s, pipe, tile, Pipe::Split));                                 \
    }                                                                                                        \
    template <typename T, typename Pipe, class E0, ::ptopipe::if_tmpipe<Pipe> = 0, ::ptopipe::if_events<E0> = 0> \
    inline RecordEvent NAME(T &tile, Pipe &pipe, E0 &e0, ::ptopipe::Site s = PTOPIPE_HERE)                    \
    {                                                                                                        \
        __VA_ARGS__;                                                                                         \
        return RecordEvent(::ptopipe::inst(OP, s, pipe, tile, Pipe::Split, e0));            \
    }                                                                                                        \
    template <typename T, typename Pipe, class E0, class E1, ::ptopipe::if_tmpipe<Pipe> = 0,                 \
              ::ptopipe::if_events<E0, E1> = 0>                                                              \
    inline RecordEvent NAME(T &tile, Pipe &pipe, E0 &e0, E1 &e1, ::ptopipe::Site s = PTOPIPE_HERE)            \
    {                                                                                                        \
        __VA_ARGS__;                                                                                         \
        return RecordEvent(::ptopipe::inst(OP, s, pipe, tile, Pipe::Split, e0, e1));        \
    }                                                                                                        \
    template <typename T, typename Pipe, class E0, class E1, class E2, ::ptopipe::if_tmpipe<Pipe> = 0,       \
              ::ptopipe::if_events<E0, E1, E2> = 0>                                                          \
    inline RecordEvent NAME(T &tile, Pipe &pipe, E0 &e0, E1 &e1, E2 &e2, ::ptopipe::Site s = PTOPIPE_HERE)    \
    {                                                                                                        \
        __VA_ARGS__;                                                                                         \
        return RecordEvent(::ptopipe::inst(OP, s, pipe, tile, Pipe::Split, e0, e1, e2));    \
    }
PTOPIPE_TILE_FIRST(TPUSH, ::ptopipe::OP_TPUSH, (void)0)
PTOPIPE_TILE_FIRST(TPOP, ::ptopipe::OP_TMPOP, ::ptopipe::tile_id(tile, s, true))
#undef PTOPIPE_TILE_FIRST

// TPUSH(tile, pipe) / TPOP(tile, pipe) of a TPipe: pto-isa's CPU simulator builds them, as its
// tests/cpu/st tpushpop_cv does (TPUSH_IMPL(tile, pipe) / TPOP_REVERSED_IMPL: TILE_NO_SPLIT), its
// NPU headers do not (their TPUSH_IMPL(tile, pipe) / TPOP_IMPL(tile, pipe) are TMPipe's).  Built
// here as the CPU simulator takes them, deprecated: the build's warning is one of the run's.
#define PTOPIPE_TPIPE_TILE_FIRST(NAME, OP, ...)                                                             \
    template <typename T, typename Pipe, ::ptopipe::if_tpipe<Pipe> = 0>                                      \
    [[deprecated(#NAME "(tile, pipe) on a TPipe builds in pto-isa's CPU simulator only, as TILE_NO_SPLIT "   \
                 "(the NPU headers take it for a TMPipe): write " #NAME "<Pipe, Tile, TileSplitAxis::S>(pipe, " \
                 "tile)")]]                                                                                \
    inline RecordEvent NAME(T &tile, Pipe &pipe, ::ptopipe::Site s = PTOPIPE_HERE)                            \
    {                                                                                                        \
        __VA_ARGS__;                                                                                         \
        return RecordEvent(::ptopipe::inst(OP, s, pipe, tile, TileSplitAxis::TILE_NO_SPLIT));                \
    }
PTOPIPE_TPIPE_TILE_FIRST(TPUSH, ::ptopipe::OP_TPUSH, (void)0)
PTOPIPE_TPIPE_TILE_FIRST(TPOP, ::ptopipe::OP_TPOP, ::ptopipe::tile_id(tile, s, true))
#undef PTOPIPE_TPIPE_TILE_FIRST

// TPUSH(pipe, tile) / TPOP(pipe, tile) / TALLOC(pipe, tensor) of a TPipe with no template
// arguments: pto-isa's forms take <Pipe, Tile, TileSplitAxis> and deduce no split (it is no
// argument), so neither pto-isa nor ptopipe builds the call - one message that spells the call,
// not a compiler's list of candidates that failed.  (The leading int &... pack takes no type:
// a call that names its template arguments, TPOP<Pipe, Tile>(pipe, tile), never selects it.)
#define PTOPIPE_NO_TEMPLATE_ARGUMENTS(NAME, ARG, TYPE)                                                      \
    template <int &...NoExplicitArguments, typename Pipe, typename T, typename... Rest,                      \
              ::ptopipe::if_tpipe<Pipe> = 0>                                                                 \
    inline RecordEvent NAME(Pipe &, T &, Rest &&...)                                                         \
    {                                                                                                        \
        static_assert(::ptopipe::unmodelled<T>::value,                                                       \
                      #NAME "(pipe, " ARG ") without template arguments: pto-isa deduces no split - write "    \
                      #NAME "<Pipe, " TYPE ", TileSplitAxis::TILE_UP_DOWN>(pipe, " ARG ") with the split of "  \
                      "the pipe's other end (TILE_NO_SPLIT, TILE_UP_DOWN or TILE_LEFT_RIGHT)");               \
        return RecordEvent();                                                                                \
    }
PTOPIPE_NO_TEMPLATE_ARGUMENTS(TPUSH, "tile", "Tile")
PTOPIPE_NO_TEMPLATE_ARGUMENTS(TPOP, "tile", "Tile")
PTOPIPE_NO_TEMPLATE_ARGUMENTS(TALLOC, "tensor", "GlobalTensor")
#undef PTOPIPE_NO_TEMPLATE_ARGUMENTS
#undef PTOPIPE_TMPIPE_TILE_FIRST

// TSYNC(events...) waits for events; TSYNC<Op::X>() is a barrier on the pipe of vector op X
template <typename... E> inline void TSYNC(::ptopipe::AtEvent first, const E &...rest)
{
    ::ptopipe::inst(::ptopipe::OP_TSYNC, first.s, first.v, rest...);
}

template <Op... Ops> inline void TSYNC(::ptopipe::Site s = PTOPIPE_HERE)
{
    static_assert(sizeof...(Ops) > 0, "TSYNC<Op...>() names at least one op");
    ::ptopipe::inst(::ptopipe::OP_TSYNC_OP, s, Ops...);
}

// SYNCALL<CoreType>(): the barrier of every core of the launch CoreType names (the FFTS form);
// SYNCALL<Mode, CoreType>(gmWorkspace, usedCores): the same with Mode Soft - the GM-polling form,
// on an int32 workspace of at least 16 elements - or Hard (the workspace then unused), as
// pto-isa's pto_instr.hpp declares them
template <SyncCoreType CoreType = SyncCoreType::AIVOnly> inline void SYNCALL(::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_SYNCALL, s, CoreType);
}

template <SyncAllMode Mode, SyncCoreType CoreType = SyncCoreType::AIVOnly, typename GlobalData>
inline void SYNCALL(GlobalData &gmWorkspace, int32_t usedCores = 0, ::ptopipe::Site s = PTOPIPE_HERE)
{
    if constexpr (Mode == SyncAllMode::Hard) {
        ::ptopipe::inst(::ptopipe::OP_SYNCALL, s, CoreType);
    } else {
        ::ptopipe::inst(::ptopipe::OP_SYNCALL, s, CoreType, Mode, gmWorkspace, int64_t(usedCores));
    }
}
}  // namespace pto

// -- intra-core events and the core's identity (global names, as the device compiler's) -------
inline void set_flag(pipe_t src, pipe_t dst, event_t id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_set_flag, s, src, dst, id);
}

inline void wait_flag(pipe_t src, pipe_t dst, event_t id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_wait_flag, s, src, dst, id);
}

// an event id computed as an integer (pto-isa's cpu_stub.hpp takes int: wait_flag(PIPE_MTE3,
// PIPE_MTE2, slice & 1)): the simulator checks it names one of the pair's events
inline void set_flag(pipe_t src, pipe_t dst, int id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_set_flag, s, src, dst, int64_t(id));
}

inline void wait_flag(pipe_t src, pipe_t dst, int id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_wait_flag, s, src, dst, int64_t(id));
}

// event.hpp's PtoSetWaitFlag<Src, Dst>(setId, waitId): a set_flag and its wait_flag, back to back
namespace pto {
template <pipe_t SrcPipe, pipe_t DstPipe>
inline void PtoSetWaitFlag(event_t set_id = EVENT_ID0, event_t wait_id = EVENT_ID0, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::set_flag(SrcPipe, DstPipe, set_id, s);
    ::wait_flag(SrcPipe, DstPipe, wait_id, s);
}
}  // namespace pto

inline void pipe_barrier(pipe_t p, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_pipe_barrier, s, p);
}

// the device compiler's vector-mask setup, which ptoas writes at the start of a Vector kernel
// (set_mask_norm(); set_vector_mask(-1, -1);): pto-isa's tile instructions set the mask they need
// themselves (their tails included), so a kernel's own setting reaches no tile instruction - and
// ptopipe has no other vector instruction it could
inline void set_mask_norm() {}
inline void set_vector_mask(uint64_t, uint64_t) {}

// A5's buffer tokens between the pipes of a core (the device compiler's get_buf / rls_buf, which
// ptoas writes for pto.get_buf / pto.rls_buf): ptopipe does not model them - a kernel that calls
// them runs in the auto synchronisation mode, where the scoreboard orders its pipes
// (cpp.build.Kernels.buffer_tokens)
inline void get_buf(pipe_t, int64_t, int64_t = 0) {}
inline void rls_buf(pipe_t, int64_t, int64_t = 0) {}

inline int64_t get_subblockid(::ptopipe::Site s = PTOPIPE_HERE)
{
    return ::ptopipe::inst(::ptopipe::OP_get_subblockid, s);
}

inline int64_t get_block_idx(::ptopipe::Site s = PTOPIPE_HERE)
{
    return ::ptopipe::inst(::ptopipe::OP_get_block_idx, s);
}

// pto-isa's cpu_stub.hpp: the blocks of the launch (ptopipe.run(blocks=N), --blocks N) and the
// cluster's Vector sub-blocks
inline uint32_t get_block_num(::ptopipe::Site s = PTOPIPE_HERE)
{
    return uint32_t(::ptopipe::inst(::ptopipe::OP_get_block_num, s));
}

inline uint32_t get_subblockdim(::ptopipe::Site s = PTOPIPE_HERE)
{
    return uint32_t(::ptopipe::inst(::ptopipe::OP_get_subblockdim, s));
}

// the device compiler's builtin variables ``block_idx`` / ``block_num`` (pto-isa's NPU test kernels
// offset their GM views by ``block_idx``): read as get_block_idx() / get_block_num() where used
struct BlockIdxVar {
    operator int64_t() const { return get_block_idx(); }
};
struct BlockNumVar {
    operator int64_t() const { return int64_t(get_block_num()); }
};
constexpr BlockIdxVar block_idx{};
constexpr BlockNumVar block_num{};

// the FFTS base address a device kernel sets before cross-core flags: ptopipe's cross-core
// flags are the simulator's own (no FFTS block to point at), so it sets nothing
inline void set_ffts_base_addr(uint64_t) {}

// cross-core flags a kernel sets and waits on itself (the CCE intrinsics; ptoas lowers
// pto.sync.set / pto.sync.wait to them): A2A3 ffts_cross_core_sync(pipe, getFFTSMsg(mode, id)) /
// wait_flag_dev(id) - FFTS mode 2, a Cube SET reaching every Vector core that runs -, A5
// set_intra_block(pipe, id) / wait_intra_block(pipe, id) - on the Cube ids 16..31 are AIV1's
// (ptopipe.isa.crosscore)
constexpr uint16_t FFTS_MODE_VAL = 2;
constexpr uint16_t getFFTSMsg(uint16_t mode, uint16_t eventId, uint16_t baseConst = 0x1)
{
    return uint16_t((baseConst & 0xf) + ((mode & 0x3) << 4) + ((eventId & 0xf) << 8));
}

inline void ffts_cross_core_sync(pipe_t p, uint64_t msg, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_ffts_cross_core_sync, s, p, int64_t(msg));
}

inline void wait_flag_dev(int64_t id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_wait_flag_dev, s, id);
}

inline void set_intra_block(pipe_t p, int64_t id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_set_intra_block, s, p, id);
}

inline void wait_intra_block(pipe_t p, int64_t id, ::ptopipe::Site s = PTOPIPE_HERE)
{
    ::ptopipe::inst(::ptopipe::OP_wait_intra_block, s, p, id);
}

// -- what pto-isa declares and ptopipe does not model ------------------------------------------
// Declared so that a kernel naming it compiles up to its use, where a static_assert says what is
// not modelled (not an undeclared identifier).  A refusing call's result converts to what the
// kernel expects of it, so the static_assert is the call's only error; it takes pto-isa's mode
// template arguments or, in its second form (whose first type is never deduced), type ones.
namespace ptopipe {
struct Refused {
    template <typename T> operator T() const { return T(); }
};
}  // namespace ptopipe
#define PTOPIPE_REFUSED(NAME, WHY)                                                                       \
    template <auto... M, typename... A> inline ::ptopipe::Refused NAME(A &&...)                          \
    {                                                                                                    \
        static_assert(::ptopipe::unmodelled<A...>::value, #NAME ": " WHY);                               \
        return {};                                                                                       \
    }                                                                                                    \
    template <typename T0, typename... T, typename... A> inline ::ptopipe::Refused NAME(A &&...)         \
    {                                                                                                    \
        static_assert(::ptopipe::unmodelled<A...>::value, #NAME ": " WHY);                               \
        return {};                                                                                       \
    }

namespace pto {
// custom pad values (constants.hpp): PadValue::CustomBase | the fill's bits, which TFILLPAD reads
// in the tile's element type (the low 16 / 8 bits for a 2- / 1-byte type)
constexpr PadValue custom_pad(uint32_t bits)
{
    return static_cast<PadValue>(static_cast<uint64_t>(PadValue::CustomBase) | bits);
}
constexpr bool isCustomPadValue(PadValue pv)
{
    return static_cast<uint64_t>(pv) >= static_cast<uint64_t>(PadValue::CustomBase);
}
constexpr uint32_t getCustomPadBits(PadValue pv) { return static_cast<uint32_t>(static_cast<uint64_t>(pv)); }
constexpr PadValue PadValueCustom(float v) { return custom_pad(__builtin_bit_cast(uint32_t, v)); }
constexpr PadValue PadValueCustom(int32_t v) { return custom_pad(static_cast<uint32_t>(v)); }
constexpr PadValue PadValueCustom(uint32_t v) { return custom_pad(v); }
constexpr PadValue PadValueCustom(int16_t v) { return custom_pad(static_cast<uint16_t>(v)); }
constexpr PadValue PadValueCustom(int8_t v) { return custom_pad(static_cast<uint8_t>(v)); }
constexpr PadValue PadValueCustom(uint8_t v) { return custom_pad(v); }
inline PadValue PadValueCustom(half v) { return custom_pad(v.bits); }
inline PadValue PadValueCustom(bfloat16_t v) { return custom_pad(v.bits); }
#ifdef __FLT16_MAX__            // the CPU simulator's spelling: PadValueCustom((_Float16)-1.0)
constexpr PadValue PadValueCustom(_Float16 v) { return custom_pad(__builtin_bit_cast(uint16_t, v)); }
#endif
constexpr PadValue PadValueCustom16(uint16_t bits16) { return custom_pad(bits16); }
// PadCustom<-1.0f>, PadCustom<42>: a float's bits, an integer's value
template <auto V> inline constexpr PadValue PadCustom = [] {
    if constexpr (std::is_floating_point_v<decltype(V)>)
        return custom_pad(__builtin_bit_cast(uint32_t, static_cast<float>(V)));
    else
        return custom_pad(static_cast<uint32_t>(V));
}();

// pto-isa's 4-bit integer (type.hpp): a file naming it compiles, a tile or tensor of one does not
// (dtype_code; the 4- and 8-bit floats are declared with the 16-bit ones)
struct int4b_t {
    uint8_t storage = 0;
};
}  // namespace pto

// pto-isa's communication between ranks (include/pto/comm): ptopipe simulates one cluster
namespace pto::comm {
enum class NotifyOp : uint8_t { AtomicAdd = 0, Set = 1 };
enum class WaitCmp : uint8_t { EQ = 0, NE = 1, GT = 2, GE = 3, LT = 4, LE = 5 };
enum class ReduceOp : uint8_t { Sum = 0, Max = 1, Min = 2 };
enum class DmaEngine : uint8_t { SDMA = 0, URMA = 1, RDMA = 2 };
using Signal = GlobalTensor<int32_t, Shape<1, 1, 1, 1, 1>, Stride<1, 1, 1, 1, 1>, Layout::ND>;
struct AsyncSession {};
// what an asynchronous transfer returns (comm_types.hpp): TPREFETCH_ASYNC's (ptopipe.isa.prefetch_async);
// handle 0 is the empty event (nothing submitted).  A wait returns at once: ptopipe does not simulate
// the SDMA engine (an empty event's returns at once on the device too)
struct AsyncEvent {
    uint64_t handle = 0;
    DmaEngine engine = DmaEngine::SDMA;
    constexpr AsyncEvent() = default;
    constexpr AsyncEvent(uint64_t h, DmaEngine e) : handle(h), engine(e) {}
    constexpr bool valid() const { return handle != 0; }
    bool Wait(const AsyncSession &) const { return true; }
    bool Test(const AsyncSession &) const { return true; }
};
namespace sdma {
// the SDMA engine's transfer parameters a kernel builds its async session with (async_types.hpp)
struct SdmaBaseConfig {
    uint64_t block_bytes;
    uint64_t comm_block_offset;
    uint32_t queue_num;
};
using sdma_base_config_t = SdmaBaseConfig;
}  // namespace sdma
#define PTOPIPE_NO_COMM                                                                                  \
    "ptopipe simulates one cluster (a Cube core and two Vector cores): pto-isa's communication between " \
    "ranks (pto::comm) is not modelled"
template <typename GlobalData> struct ParallelGroup {
    static_assert(::ptopipe::unmodelled<GlobalData>::value, "pto::comm::ParallelGroup: " PTOPIPE_NO_COMM);
    template <typename... A> ParallelGroup(A &&...) {}
};
PTOPIPE_REFUSED(TPUT, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TGET, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(BuildAsyncSession, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TPUT_ASYNC, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TGET_ASYNC, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TNOTIFY, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TWAIT, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TTEST, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TBROADCAST, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TREDUCE, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TGATHER, PTOPIPE_NO_COMM)
PTOPIPE_REFUSED(TSCATTER, PTOPIPE_NO_COMM)
#undef PTOPIPE_NO_COMM
}  // namespace pto::comm
#undef PTOPIPE_REFUSED

// TPREFETCH_ASYNC(src, ctx): pto-isa's L2 prefetch through the SDMA engine (TPrefetchAsyncImpl.hpp;
// ptopipe.isa.prefetch_async): no data changes; its context's workspace crosses the ABI (nullptr: none),
// its SDMA scratch is UB 0x0..0xff (scratchTile, as pto-isa places it)
namespace pto {
struct PrefetchAsyncContext {
    __gm__ uint8_t *workspace = nullptr;
    comm::AsyncSession session;
    comm::AsyncSession *externalSession = nullptr;
    Tile<TileType::Vec, uint8_t, 1, 256> scratchTile;
    PrefetchAsyncContext() = default;
    explicit PrefetchAsyncContext(__gm__ uint8_t *w) : workspace(w) {}
    PrefetchAsyncContext(__gm__ uint8_t *w, comm::AsyncSession *external) : workspace(w), externalSession(external) {}
    comm::AsyncSession &GetSession() { return externalSession != nullptr ? *externalSession : session; }
};
template <typename G, class E0 = ::ptopipe::NoEvent, class E1 = ::ptopipe::NoEvent, class E2 = ::ptopipe::NoEvent,
          ::ptopipe::if_events<E0, E1, E2> = 0, std::enable_if_t<::ptopipe::is_global<G>::value, int> = 0>
inline comm::AsyncEvent TPREFETCH_ASYNC(G &src, PrefetchAsyncContext &ctx, const E0 &e0 = {}, const E1 &e1 = {},
                                        const E2 &e2 = {}, ::ptopipe::Site s = PTOPIPE_HERE)
{
    const int64_t h = ctx.workspace != nullptr
                          ? ::ptopipe::inst(::ptopipe::OP_TPREFETCH_ASYNC, s, src, ctx.workspace, e0, e1, e2)
                          : ::ptopipe::inst(::ptopipe::OP_TPREFETCH_ASYNC, s, src, nullptr, e0, e1, e2);
    return comm::AsyncEvent(uint64_t(h), comm::DmaEngine::SDMA);
}
}  // namespace pto

// cpu_stub.hpp's device cache and barrier intrinsics: no-ops, as there (the simulator's memories
// are coherent), and the core id pto-isa's CPU simulator gives (its block index)
#ifndef __COSTMODEL
using mem_dsb_t = int;
struct cache_line_t {
    static constexpr int SINGLE_CACHE_LINE = 0;
    static constexpr int ENTIRE_DATA_CACHE = 0;
    static constexpr int CACHELINE_OUT = 0;
};
struct dcci_dst_t {
    static constexpr int CACHELINE_OUT = 0;
};
inline constexpr mem_dsb_t DSB_DDR = 0;
inline constexpr mem_dsb_t DSB_ALL = 0;
inline constexpr mem_dsb_t DSB_UB = 0;
inline void dcci(const volatile void *, int) {}
inline void dcci(const volatile void *, int, int) {}
inline void dsb(mem_dsb_t) {}
#endif
inline uint32_t get_coreid(::ptopipe::Site s = PTOPIPE_HERE) { return uint32_t(get_block_idx(s)); }

#endif  // PTOPIPE_PTO_INST_HPP

// pto_tile.hpp includes debug.h: PTO_ASSERT / DEBUG_CHECK come with <pto/pto-inst.hpp>
#include "common/debug.h"
