"""Which loops of a Python kernel the fast-forward engine may take whole (ptopipe.isa.skip):
a ``for ... in range(...)`` whose body is instructions and integer arithmetic affine in the
loop variable, every name assigned before it is read in an iteration, branches on values
that do not move or guards of the body's own.  ``skippable`` names the loops' lines; the
kernels are never run here (tests/sim/test_periodic_python_skip.py runs them)."""
from __future__ import annotations

import functools
import importlib.util
import inspect
import sys
import textwrap

import pytest

from ptopipe.isa import *  # noqa: F403
from ptopipe.isa import skip
from ptopipe.isa.skip import hooked, take_whole
from markers import line_of

T = 16


def skippable(fn) -> tuple:
    """The lines of ``fn``'s loops that may be taken whole."""
    return tuple(loop.line for loop in skip.skippable(fn))


def stream(x, out, pipe, a, b, o, n):
    src = GlobalTensor(x.data(), (T, T))
    sub = get_subblockid()
    for i in range(n):  # loop: stream
        src.assign(x.data() + i * T * T)
        TLOAD(a, src)
        TMOV(b, a)
        off = (i * T + sub * (T // 2)) * T
        off += T
        TSTORE(GlobalTensor(out.data() + off - T, (T // 2, T)), o)
        if i < n - 1:
            TPUSH(pipe, b, TILE_UP_DOWN)
        else:
            TFREE(pipe)
        if i == 0:
            TMULS(o, o, 2.0)
        if sub == 1:
            TADDS(o, o, 1.0)
        for t in (a, b):
            TMOV(t, o)
        for k in range(2):
            TLOAD(a, GlobalTensor(x.data() + (2 * i + k) * T, (1, T)))
        pass


def nested(x, a, n, m):
    for j in range(m):  # loop: outer
        first = j * n
        for i in range(n):  # loop: inner
            TLOAD(a, GlobalTensor(x.data() + first + i, (1, T)))


def carried(x, a, n):
    off = 0
    for i in range(n):
        off += T
        TLOAD(a, GlobalTensor(x.data() + off, (1, T)))


def modulo(x, a, n):
    for i in range(n):
        TLOAD(a, GlobalTensor(x.data() + (i % 4) * T, (1, T)))


def printing(x, a, n):
    for i in range(n):
        print(i)
        TLOAD(a, x)


def logging(x, a, n, log):
    for i in range(n):
        log.append(i)
        TLOAD(a, x)


def assigned_late(x, a, n):
    src = GlobalTensor(x.data(), (T, T))
    for i in range(n):
        TLOAD(a, src)
        src.assign(x.data() + i * T * T)


def branch_on_parity(x, a, n):
    for i in range(n):
        if i % 2:
            TLOAD(a, x)


def guard_in_a_branch(x, a, n, sub):
    for i in range(n):
        if sub == 0:
            if i < 5:
                TLOAD(a, x)


def guard_in_a_nested_loop(x, a, n):
    for i in range(n):
        for k in range(2):
            if i + k < 5:
                TLOAD(a, x)


def two_comparisons(x, a, n):
    for i in range(n):
        if 0 < i < n - 1:
            TLOAD(a, x)


def field_of_a_tile(x, a, n):
    for i in range(n):
        TLOAD(a, GlobalTensor(x.data() + a.addr, (1, T)))


def early_exit(x, a, n):
    for i in range(n):
        if i == 3:
            break
        TLOAD(a, x)


def variable_set(x, a, n):
    for i in range(n):
        TLOAD(a, x)
        i = i + 1


def with_else(x, a, n):
    for i in range(n):
        TLOAD(a, x)
    else:
        TLOAD(a, x)


def moving_bound(x, a, n):
    for i in range(n):
        for k in range(i):
            TLOAD(a, x)


def unknown_instruction(x, a, n):
    for i in range(n):
        TPRINT(a)


def not_a_range(x, a, tiles):
    for t in tiles:
        TLOAD(t, x)


def product_of_moving(x, a, n):
    for i in range(n):
        TLOAD(a, GlobalTensor(x.data() + i * i, (1, T)))


def counted_globally(x, a, n):
    global T
    for i in range(n):
        TLOAD(a, GlobalTensor(x.data() + i * T, (1, T)))


def assigned_in_one_branch(x, a, n, sub):
    for i in range(n):
        if sub:
            off = i * T
        TLOAD(a, GlobalTensor(x.data() + off, (1, T)))


def leftover_after_nested(x, a, n):
    for i in range(n):
        off = i
        for k in range(0):
            off = 0
        if off < 5:
            TLOAD(a, x)


def guard_operand_set_again(x, a, n):
    for i in range(n):
        k = i
        if k < n - 5:
            TLOAD(a, x)
        k = i + 1000


def guard_calling(x, a, n):
    for i in range(n):
        if i < n + get_subblockid() * 3:
            TLOAD(a, x)


REFUSED = [guard_operand_set_again, guard_calling, carried, modulo, printing, logging, assigned_late, branch_on_parity, guard_in_a_branch,
           guard_in_a_nested_loop, two_comparisons, field_of_a_tile, early_exit, variable_set, with_else,
           moving_bound, unknown_instruction, not_a_range, product_of_moving, counted_globally,
           assigned_in_one_branch, leftover_after_nested]


def _loops(fn) -> list:
    """The lines of ``fn``'s ``for`` statements, outermost first."""
    lines, first = inspect.getsourcelines(fn)
    return [first + k for k, ln in enumerate(lines) if ln.lstrip().startswith("for ")]


def test_a_streaming_loop_qualifies():
    assert skippable(stream) == (line_of(stream, "loop: stream"),)


def test_the_outermost_loop_that_qualifies():
    assert skippable(nested) == (line_of(nested, "loop: outer"),)


@pytest.mark.parametrize("kernel", REFUSED, ids=lambda f: f.__name__)
def test_loops_that_do_not_qualify(kernel):
    """The outer loop is refused; a loop nested in it may qualify on its own (its body does
    not read its variable the refused way)."""
    outer, *inner = _loops(kernel)
    assert skippable(kernel) == tuple(inner if kernel in (guard_in_a_nested_loop, moving_bound,
                                                          leftover_after_nested) else ())
    assert outer not in skippable(kernel)


def test_guards_and_values_read_at_a_skip():
    """The guards are the two comparisons of the loop variable; every value that meets a
    moving one is read at a skip (the GM pointer of ``x.data() + ...`` may stand there)."""
    (spec,) = skip.skippable(stream)
    assert [g.pred for g in spec.guards] == ["<", "=="]
    assert sum(ptr for _, ptr in spec.ints) == 3        # (x.data() + ..., twice, and out.data() + off)


def test_the_kernel_runs_as_written():
    """The rewritten kernel keeps its name, lines, defaults, closure cells and globals; only
    its loops' ``range`` is the engine's (outside a run: the range itself)."""
    scale = [3]

    def kernel(n, log, k=2):
        for i in range(n):
            log.append(i * scale[0] * k)

    plain = take_whole(kernel)
    assert plain is kernel                              # (log.append: nothing to take whole)

    def counting(n, k=2):
        total = 0
        for i in range(n):
            total = i * scale[0] * k
        return total

    fn = take_whole(counting)
    assert fn is not counting
    assert fn.__name__ == "counting" and fn.__defaults__ == (2,)
    assert fn.__code__.co_firstlineno == counting.__code__.co_firstlineno
    assert fn(5) == counting(5) == 24
    scale[0] = 5                                        # (the same cell)
    assert fn(5) == 40
    assert take_whole(counting).__code__ is fn.__code__     # (read once)


def test_a_decorated_kernel():
    def keep(f):
        return f

    @keep
    def kernel(x, a, n):
        for i in range(n):
            TLOAD(a, GlobalTensor(x.data() + i * T, (1, T)))

    assert skippable(kernel) == (kernel.__code__.co_firstlineno + 2,)

    @functools.lru_cache
    def wrapped(n):
        for i in range(n):
            pass
    assert skippable(wrapped) == ()


def test_source_that_is_not_the_running_code(tmp_path, monkeypatch):
    """A kernel whose file changed since it was imported is run as it is, not as its file
    now reads."""
    path = tmp_path / "edited_kernel.py"
    body = textwrap.dedent("""
        from ptopipe.isa import *
        def kernel(x, a, n):
            for i in range(n):
                TLOAD(a, GlobalTensor(x.data() + i * 16, (1, 16)))
        """)
    path.write_text(body)
    spec = importlib.util.spec_from_file_location("edited_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "edited_kernel", mod)
    spec.loader.exec_module(mod)
    assert skippable(mod.kernel) == (4,)
    path.write_text(body.replace("i * 16", "i * 32"))
    import linecache
    linecache.checkcache(str(path))
    assert skippable(mod.kernel) == ()
    assert take_whole(mod.kernel) is mod.kernel


def test_kernels_without_source():
    ns = {}
    exec("from ptopipe.isa import *\ndef kernel(x, a, n):\n    for i in range(n):\n        TLOAD(a, x)\n", ns)
    assert skippable(ns["kernel"]) == ()
    assert skippable(lambda n: [i for i in range(n)]) == ()


def test_the_instructions_the_engine_records():
    for f in (TLOAD, TSTORE, TMOV, TMATMUL, TMATMUL_ACC, TPUSH, TPOP, TFREE, TADD, TMULS, TEXP, TROWSUM, TCVT):
        assert hooked(f), f.__name__
    for f in (TPRINT, TGATHER, TALLOC, GlobalTensor, get_subblockid, print):
        assert not hooked(f), getattr(f, "__name__", f)
