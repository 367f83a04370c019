// The instruction callback of ptopipe's C++ ABI written against the CPython C API (built by
// ptopipe/cpp/bridge.py when Python.h is present; otherwise ptopipe calls a ctypes callback).
// It has the signature of ptopipe::Callback (pto/pto-inst.hpp) and does what
// Dispatcher.callback and Dispatcher.run do in Python (ptopipe/cpp/abi.py) - the same steps,
// in the same order - without ctypes' argument objects or a Python frame of its own:
//
//  * the words before the buffer shared with the kernel libraries hold the run's context
//    (words[-6]: Dispatcher.context), its event counter (words[-5]), the generation of its
//    call cache (words[-4]: bumped when the cache is emptied) and the address of its front
//    table (words[-3]: a direct-mapped table of recent keys and their entries, which spares
//    hashing a bytes key into the cache dict at each call);
//  * it splits the argument words by the context's layout (per argument kind, three bytes: its
//    payload words, 1 + the index of the one that changes between calls or 0, 1 if that one is
//    a double's bits) into the call's key - op, call site and every fixed word - and its
//    changing values (ints, or floats);
//  * a key in the cache names the call site's entry (prepared call, source location, whether
//    its result is an Event to keep): it sets the calling core's location, calls the prepared
//    call with the changing values (vectorcall) and keeps its Event in the event window; an
//    exception is kept for the core's greenlet and the call returns ABORT (the kernel unwinds);
//  * a key not there goes to the context's miss callable with (op, n, file, line, key), which
//    decodes the words, keeps the entry and runs it as above, in Python.
//
// The kernel runs from a ctypes.PyDLL call, so the GIL is held here.
#include <Python.h>

#include <cstdint>
#include <cstring>

namespace {
constexpr int64_t ABORT = INT64_MIN;
constexpr int MAX_VALUES = 64;          // changing values of one call (a call has <= 128 words)
constexpr int MAX_KEY = 8 + 128;

// Dispatcher.context, in this order
enum { C_CACHE, C_MISS, C_LAYOUT, C_GETCURRENT, C_ERRORS, C_EV_OP, C_EV_CORE, C_EV_END, C_WINDOW, C_KEEP, C_EVENT,
       C_LAST };

PyObject *s_core, *s_loc;

// the pending exception kept for greenlet ``g`` (Dispatcher.raise_pending raises it)
int64_t keep_error(PyObject *errors, PyObject *g)
{
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (tb != nullptr && v != nullptr) PyException_SetTraceback(v, tb);
    if (v == nullptr || g == nullptr || PyDict_SetItem(errors, g, v) < 0) {
        PyErr_Restore(t, v, tb);         // (cannot be kept: ctypes raises it when the kernel returns)
        return ABORT;
    }
    Py_XDECREF(t);
    Py_XDECREF(v);
    Py_XDECREF(tb);
    return ABORT;
}

int64_t as_int(PyObject *ctx, PyObject *r, PyObject *g)
{
    int64_t out = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (out == -1 && PyErr_Occurred()) return keep_error(PyTuple_GET_ITEM(ctx, C_ERRORS), g);
    return out;
}

// Dispatcher.run: the entry's location, its call, its Event kept
int64_t run(PyObject *ctx, int64_t *counter, PyObject *entry, PyObject *const *vals, int nv)
{
    PyObject *errors = PyTuple_GET_ITEM(ctx, C_ERRORS);
    PyObject *g = PyObject_CallNoArgs(PyTuple_GET_ITEM(ctx, C_GETCURRENT));
    if (g == nullptr) return keep_error(errors, g);
    // the core of greenlet g: the context's last [greenlet, core] pair (holding them, so the
    // greenlet's address is not another's), else its attribute
    PyObject *last = PyTuple_GET_ITEM(ctx, C_LAST), *core;
    if (PyList_GET_ITEM(last, 0) == g) {
        core = PyList_GET_ITEM(last, 1);
        Py_INCREF(core);
    } else {
        core = PyObject_GetAttr(g, s_core);
        if (core != nullptr) {
            PyObject *old_g = PyList_GET_ITEM(last, 0), *old_core = PyList_GET_ITEM(last, 1);
            Py_INCREF(g);
            Py_INCREF(core);
            PyList_SET_ITEM(last, 0, g);
            PyList_SET_ITEM(last, 1, core);
            Py_XDECREF(old_g);
            Py_XDECREF(old_core);
        }
    }
    if (core == nullptr || PyObject_SetAttr(core, s_loc, PyTuple_GET_ITEM(entry, 1)) < 0) {
        Py_XDECREF(core);
        int64_t a = keep_error(errors, g);
        Py_DECREF(g);
        return a;
    }
    Py_DECREF(core);
    PyObject *r = PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), vals, size_t(nv), nullptr);
    if (r == nullptr) {
        int64_t a = keep_error(errors, g);
        Py_DECREF(g);
        return a;
    }
    int64_t out;
    if (PyTuple_GET_ITEM(entry, 2) != Py_True) {
        out = as_int(ctx, r, g);
    } else if (r == Py_None) {
        Py_DECREF(r);
        out = 0;
    } else if (PyObject_TypeCheck(r, reinterpret_cast<PyTypeObject *>(PyTuple_GET_ITEM(ctx, C_EVENT)))) {
        // an Event: a tuple (op, core, end)
        int64_t n = ++*counter;
        Py_ssize_t i = Py_ssize_t(n % PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, C_WINDOW)));
        for (int f = 0; f < 3; ++f) {
            PyObject *list = PyTuple_GET_ITEM(ctx, C_EV_OP + f), *item = PyTuple_GET_ITEM(r, f);
            PyObject *old = PyList_GET_ITEM(list, i);
            Py_INCREF(item);
            PyList_SET_ITEM(list, i, item);
            Py_XDECREF(old);
        }
        Py_DECREF(r);
        out = n;
    } else {                                                         // Dispatcher.keep reports it
        PyObject *k = PyObject_CallOneArg(PyTuple_GET_ITEM(ctx, C_KEEP), r);
        Py_DECREF(r);
        out = k == nullptr ? keep_error(errors, g) : as_int(ctx, k, g);
    }
    Py_DECREF(g);
    return out;
}

// the front table: words [0] slots (a power of two), [1] key words a slot holds; then per slot
// [hash, generation, key words, entry (borrowed from the cache dict: valid while the
// generation is), key...]
int64_t *front_slot(int64_t *front, const int64_t *key, int nk, uint64_t &hash)
{
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < nk; ++i) h = (h ^ uint64_t(key[i])) * 1099511628211ull;
    hash = h ^ (h >> 29);
    return front + 2 + (hash & uint64_t(front[0] - 1)) * (4 + front[1]);
}

int64_t call(int32_t op, int32_t n, const int64_t *words, const char *file, int32_t line)
{
    PyObject *ctx = reinterpret_cast<PyObject *>(static_cast<intptr_t>(words[-6]));
    int64_t *counter = const_cast<int64_t *>(words - 5);
    const int64_t gen = words[-4];
    int64_t *front = reinterpret_cast<int64_t *>(static_cast<intptr_t>(words[-3]));
    if (s_core == nullptr) {
        s_core = PyUnicode_InternFromString("core");
        s_loc = PyUnicode_InternFromString("loc_override");
    }
    PyObject *layout_b = PyTuple_GET_ITEM(ctx, C_LAYOUT);
    const unsigned char *layout = reinterpret_cast<const unsigned char *>(PyBytes_AS_STRING(layout_b));
    Py_ssize_t nkinds = PyBytes_GET_SIZE(layout_b) / 3;

    int64_t key[MAX_KEY];
    PyObject *vals[MAX_VALUES];
    int nk = 0, nv = 0;
    key[nk++] = op;
    key[nk++] = line;
    key[nk++] = int64_t(reinterpret_cast<intptr_t>(file));
    key[nk++] = n;
    bool cacheable = n >= 0 && n <= MAX_KEY - 8;
    for (int i = 0; cacheable && i < n;) {
        int64_t k = words[i++];
        key[nk++] = k;
        if (k < 0 || k >= nkinds || i + layout[3 * k] > n) {
            cacheable = false;          // not an argument of this ABI: the miss path reports it
            break;
        }
        int len = layout[3 * k], changing = layout[3 * k + 1] - 1;
        for (int j = 0; j < len; ++j, ++i) {
            if (j != changing) {
                key[nk++] = words[i];
            } else if (nv == MAX_VALUES) {
                cacheable = false;
            } else {
                double d;
                std::memcpy(&d, &words[i], 8);
                PyObject *v = layout[3 * k + 2] ? PyFloat_FromDouble(d) : PyLong_FromLongLong(words[i]);
                if (v == nullptr) cacheable = false;
                else vals[nv++] = v;
            }
        }
    }
    PyErr_Clear();                      // (a value that could not be made: the miss path decodes)
    int64_t out = ABORT;
    uint64_t hash = 0;
    int64_t *slot = cacheable && nk <= front[1] ? front_slot(front, key, nk, hash) : nullptr;
    if (slot != nullptr && slot[0] == int64_t(hash) && slot[1] == gen && slot[2] == nk &&
        std::memcmp(slot + 4, key, size_t(8 * nk)) == 0) {
        PyObject *entry = reinterpret_cast<PyObject *>(static_cast<intptr_t>(slot[3]));
        Py_INCREF(entry);               // (a call may empty the cache)
        out = run(ctx, counter, entry, vals, nv);
        Py_DECREF(entry);
        for (int m = 0; m < nv; ++m) Py_DECREF(vals[m]);
        return out;
    }
    PyObject *kb = PyBytes_FromStringAndSize(reinterpret_cast<const char *>(key), Py_ssize_t(8 * nk));
    PyObject *entry = (kb != nullptr && cacheable) ? PyDict_GetItemWithError(PyTuple_GET_ITEM(ctx, C_CACHE), kb) : nullptr;
    if (entry != nullptr && slot != nullptr) {
        slot[0] = int64_t(hash);
        slot[1] = gen;
        slot[2] = nk;
        slot[3] = int64_t(reinterpret_cast<intptr_t>(entry));
        std::memcpy(slot + 4, key, size_t(8 * nk));
    }
    if (entry != nullptr) {
        Py_INCREF(entry);               // (a call may clear the cache)
        out = run(ctx, counter, entry, vals, nv);
        Py_DECREF(entry);
    } else if (kb != nullptr && !PyErr_Occurred()) {
        PyObject *a[5] = {PyLong_FromLong(op), PyLong_FromLong(n),
                          PyLong_FromLongLong(int64_t(reinterpret_cast<intptr_t>(file))), PyLong_FromLong(line),
                          cacheable ? kb : Py_None};
        if (a[0] && a[1] && a[2] && a[3]) {
            PyObject *r = PyObject_Vectorcall(PyTuple_GET_ITEM(ctx, C_MISS), a, 5, nullptr);
            if (r != nullptr) {
                out = PyLong_AsLongLong(r);
                Py_DECREF(r);
            }
        }
        for (int m = 0; m < 4; ++m) Py_XDECREF(a[m]);
    }
    Py_XDECREF(kb);
    for (int m = 0; m < nv; ++m) Py_DECREF(vals[m]);
    return out;
}
}  // namespace

extern "C" __attribute__((visibility("default"))) void *ptopipe_bridge_callback()
{
    return reinterpret_cast<void *>(&call);
}
