"""The op verifier's ring-buffer and program rules (what a DSL program must pass): a ring is
declared by the side that owns it (the consumer reserves what it TPOPs from, the producer
imports what it TPUSHes to; a reserve no TPOP reads is a kept region), once per name, in its core's memory; function names are unique;
``verify_program`` checks that every import names a buffer its peer function, on the other
core, reserves.  Each error at the op's location."""
from __future__ import annotations

import pytest

from ptopipe.errors import CompileError
from ptopipe.ir import parse_ir, verify_ops
from ptopipe.ir.op_verifier import verify_program

C0 = "%c0 = pl.const() {value = 0} : () -> index\n"
RESERVE = ('%buf = pl.reserve_buffer() {{name = "{name}", size = 4096, base = #pl.AUTO, '
           'memory_space = "{space}"}} : () -> buffer<reserve>\n')
IMPORT = ('%peer = pl.import_peer_buffer() {{name = "{name}", peer_func = "{peer}"}} : '
          '() -> buffer<import>\n')
AIV_INIT = ("pl.aiv_initialize_pipe(%fifo, %c0, %c0) {dir_mask = #dir.DIR_C2V, slot_size = 2048, "
            "slot_num = none, lanes = none, flag_id = none, local_slot_num = none} : "
            "(tensor<8192xu8>, index, index) -> ()\n")
AIC_INIT = AIV_INIT.replace("aiv_", "aic_")
TPOP = ("%p = pl.tpop(%buf) {type = tile<16x32xf32,Vec>, split = 0, direction = #dir.DIR_C2V} : "
        "(buffer<reserve>) -> tile<16x32xf32,Vec>\n")
TALLOC = ("%s = pl.talloc(%peer) {type = tensor<16x32xf32>, split = 0, direction = #dir.DIR_C2V} : "
          "(buffer<import>) -> tensor<16x32xf32>\n")


def _func(name: str, kind: str, body: str) -> str:
    lines = "".join(f"  {ln}\n" for ln in body.splitlines())
    return (f'pl.func() {{sym_name = "{name}", kind = #kind.{kind}}} ({{\n'
            f'^bb0(%fifo: tensor<8192xu8>):\n{lines}}}) : () -> ()\n')


def _program(*funcs: str) -> str:
    return 'pl.program() {sym_name = "p"} ({\n' + "".join(funcs) + "}) : () -> ()\n"


def _where(text: str, marker: str) -> str:
    n = next(k for k, ln in enumerate(text.splitlines(), 1) if marker in ln)
    return f"t.ir:{n}:"


CONSUMER = _func("v", "AIV", C0 + RESERVE.format(name="ring", space="UB") + AIV_INIT + TPOP)
PRODUCER = _func("c", "AIC", C0 + IMPORT.format(name="ring", peer="v") + AIC_INIT + TALLOC)


def _error(text: str, check=verify_ops) -> CompileError:
    with pytest.raises(CompileError) as ei:
        check(parse_ir(text, "t.ir"))
    return ei.value


def test_a_paired_program_passes():
    verify_program(parse_ir(_program(PRODUCER, CONSUMER), "t.ir"))


def test_a_ring_is_reserved_by_its_consumer_and_imported_by_its_producer():
    """A reserve no TPOP reads is a region the kernel keeps (pypto's allocator keeps one free
    before the tiles), an import no TPUSH writes an unused peer ring: both verify.  Using a
    buffer in the other side's role is the cross-core op's typing error, at the op."""
    verify_ops(parse_ir(_program(_func("v", "AIV", C0 + RESERVE.format(name="ring", space="UB"))),
                        "t.ir"))
    verify_ops(parse_ir(_program(_func("c", "AIC", IMPORT.format(name="ring", peer="v")), CONSUMER),
                        "t.ir"))
    push_to_reserve = TALLOC.replace("%peer", "%buf").replace("buffer<import>", "buffer<reserve>")
    text = _program(_func("c", "AIC", C0 + RESERVE.format(name="ring", space="L1") + push_to_reserve))
    e = _error(text)
    assert e.what == "TALLOC: 'buf' must be the producer's pl.import_peer_buffer(...), got %buf, <reserve buffer>"
    assert e.where.startswith(_where(text, "pl.talloc"))
    # a push from the ring's consumer (the wrong core): the fix says which side pushes
    assert e.fix.startswith("this function reserved the buffer, so it is the consumer of that ring")
    assert "push from the peer function that imports it" in e.fix
    pop_from_import = TPOP.replace("%buf", "%peer").replace("buffer<reserve>", "buffer<import>")
    text = _program(_func("v", "AIV", C0 + IMPORT.format(name="ring", peer="c") + pop_from_import))
    e = _error(text)
    assert e.what == "TPOP: 'buf' must be the consumer's pl.reserve_buffer(...), got %peer, <import buffer>"
    assert e.where.startswith(_where(text, "pl.tpop"))
    assert e.fix.startswith("this function imported the buffer, so it is the producer into that ring")
    assert "pop in the peer function that reserves it" in e.fix
    # a mixed function's sides are the compiler's: no role yet
    verify_ops(parse_ir(_program(_func("m", "InCore", RESERVE.format(name="ring", space="UB"))), "t.ir"))


def test_a_ring_is_reserved_once_in_its_cores_memory():
    text = _program(_func("v", "AIV", C0 + RESERVE.format(name="ring", space="L1") + AIV_INIT + TPOP))
    assert _error(text).what == "reserve_buffer in an aiv function lives in UB, not L1"
    twice = (C0 + RESERVE.format(name="ring", space="UB") + AIV_INIT + TPOP
             + RESERVE.format(name="ring", space="UB").replace("%buf", "%again"))
    text = _program(_func("v", "AIV", twice))
    e = _error(text)
    assert e.what == "reserve_buffer name 'ring' is declared twice in v"
    assert e.where.startswith(_where(text, "%again"))


def test_function_names_are_unique():
    text = _program(CONSUMER, CONSUMER.replace("%c0 = ", "%c0 = ", 1))
    e = _error(text)
    assert e.what == "two functions are called 'v'"
    assert e.where.startswith(f"t.ir:{CONSUMER.count(chr(10)) + 2}:")


def test_imports_name_a_buffer_the_peer_reserves():
    text = _program(PRODUCER.replace('peer_func = "v"', 'peer_func = "nobody"'), CONSUMER)
    verify_ops(parse_ir(text, "t.ir"))                       # a function alone: no peer rule
    e = _error(text, verify_program)
    assert e.what == "import_peer_buffer names peer_func 'nobody', which is not in program 'p' (functions: v)"
    assert e.where.startswith(_where(text, "import_peer_buffer"))
    e = _error(_program(PRODUCER.replace('name = "ring"', 'name = "rnig"'), CONSUMER), verify_program)
    assert e.what == "import_peer_buffer: v reserves no buffer named 'rnig' (it reserves 'ring')"
    e = _error(_program(PRODUCER.replace('peer_func = "v"', 'peer_func = "c"'), CONSUMER), verify_program)
    assert e.what == "import_peer_buffer names its own function as the peer"
    other = CONSUMER.replace('sym_name = "v", kind = #kind.AIV', 'sym_name = "v", kind = #kind.AIC')
    other = other.replace('memory_space = "UB"', 'memory_space = "L1"').replace("aiv_", "aic_")
    other = other.replace("tile<16x32xf32,Vec>", "tile<16x32xf32,Mat>").replace("DIR_C2V", "DIR_V2C")
    e = _error(_program(PRODUCER, other), verify_program)
    assert e.what == "import_peer_buffer: peer v runs on the same core kind (aic)"
