"""The ISA reference page (``docs/isa.md``), made from the op catalogue: every tile
instruction with its spellings (ISA / C++, ``.pto``, ``pl`` DSL), operand form, pipe, the
dtypes each platform takes and its vector cost.  ``python -m ptopipe.report.isa_reference``
prints the page; a test keeps the committed page equal to it, so the page cannot drift from
what ptopipe runs.
"""
from __future__ import annotations

import sys

from ..arch.catalogue import INDEXED_PIPES, OPS, ROWS_FROM_DST, platform_label
from ..arch.dtypes import short_name
from ..arch.platform import PlatformID
from ..arch.vocab import TCVT_PAIRS
from ..codegen.pto_syntax import pto_op_name
from ..ir.ops import NO_DSL_FORM

#: operand form -> the operands, as the ISA takes them (destination first)
FORMS = {
    "binary": "dst, src0, src1", "scalar": "dst, src, scalar", "unary": "dst, src",
    "row_reduce": "dst, src[, tmp]", "col_reduce": "dst, src", "row_expand": "dst, src0, src1 (per row)",
    "row_bcast": "dst, src (per row)", "fill": "dst, scalar", "convert": "dst, src[, RoundMode]",
    "matmul": "c, a, b", "matmul_acc": "c_out, c_in, a, b", "matmul_bias": "c, a, b, bias",
    "load": "tile, GlobalTensor", "store": "GlobalTensor, tile", "move": "dst, src",
    "extract": "dst, src, row, col", "move_fp": "dst, src, fp", "extract_fp": "dst, src, fp, row, col",
    "insert_fp": "dst, src, fp, row, col", "store_fp": "GlobalTensor, src, fp",
    "relu_conv": "dst, src0, src1", "matmul_mx": "c, a, a_scale, b, b_scale[, bias] / c_out, c_in, a, a_scale, b, b_scale",
}


def _dtypes(op) -> str:
    if op.name == "TCVT":
        return "the pairs of the TCVT table below"
    allowed = op.allowed()
    if allowed is None:
        return "any"
    if op.form == "matmul_mx":           # formats outside the vector ops' dtype set (fp4)
        allowed = tuple(op.dtypes.on(p) for p in PlatformID)
    a2, a5 = (sorted(d.name for d in allowed[p]) for p in (PlatformID.PLATFORM_A2A3, PlatformID.PLATFORM_A5))
    if a2 == a5:
        return ", ".join(a2) or "-"
    return f"A2A3: {', '.join(a2) or '-'}; A5: {', '.join(a5) or '-'}"


def _pipe(op) -> str:
    """The pipe column: the op's pipe; per platform for MGATHER / MSCATTER (the pipes of their
    Vec forms, ``catalogue.INDEXED_PIPES``); else routed by its operands."""
    if op.pipe is not None:
        return op.pipe.name
    per = [(p, sorted({x for (name, form), (walk, move, _, _) in forms.items() if name == op.name and form != "L1"
                       for x in (walk, move)})) for p, forms in INDEXED_PIPES.items()]
    if any(pipes for _, pipes in per):
        return "; ".join(f"{platform_label(p)}: {', '.join(x.name for x in pipes)}" for p, pipes in per)
    return "by operands"


def _cost(op) -> str:
    if op.cost is None:
        moves = ("load", "store", "move", "extract", "TIMG2COL")
        return "by path / bytes" if op.pipe is None or op.form in moves else "platform table"
    per, head, tail = op.cost
    return f"{per} / 256 B + {head} + {tail}"


def page() -> str:
    """The whole page, one row per instruction in catalogue order."""
    rows = ["# ISA reference", "",
            "Every tile instruction ptopipe runs, made from the op catalogue "
            "(`ptopipe/arch/catalogue.py`; `python -m ptopipe.report.isa_reference` prints this page).",
            "The ISA / C++ name is the pto-isa function (`TADD(dst, src0, src1)`; `from ptopipe.isa "
            "import *`), `.pto` the PTO-AS op (`pto.tadd ins(src0, src1) outs(dst)`: `outs` then `ins` "
            "are the ISA's operands), DSL the `pl.<name>` of the `pl` language where it has one, "
            "else why it has none.  "
            "Cost: the vector unit's cycles per 256-byte repeat + head + tail (`ptopipe/arch/costs.py`); "
            "moves cost by path and bytes.  Semantics are pto-isa's ISA pages (`docs/isa/` in "
            "hw-native-sys/pto-isa), checked against numpy in `tests/isa/`.", "",
            "| ISA / C++ | .pto | DSL | operands | pipe | dtypes | cost | what |",
            "|---|---|---|---|---|---|---|---|"]
    for op in OPS.values():
        pto = pto_op_name(op.name)
        dsl = f"`pl.{op.dsl}`" if op.dsl else f"none: {NO_DSL_FORM[op.name]}".replace("|", "\\|")
        pipe = _pipe(op)
        what = " ".join(op.doc.split()).replace("|", "\\|")
        rows_on = [p for p, names in ROWS_FROM_DST.items() if op.name in names]
        if rows_on:
            what = (what + "; " if what else "") + (
                f"{'/'.join(platform_label(p) for p in rows_on)}: over dst's valid rows, which may differ from "
                "src's (src's valid columns must be dst's)")
        rows.append(f"| `{op.name}` | `{pto}` | {dsl} | {FORMS.get(op.form, op.form)} | {pipe} | "
                    f"{_dtypes(op)} | {_cost(op)} | {what} |")
    return "\n".join(rows + _tcvt_rows()) + "\n"


def _tcvt_rows() -> list:
    """The conversions TCVT has on each platform (``vocab.TCVT_PAIRS``); another pair is an
    error at its line naming a two-step route."""
    a2, a5 = (TCVT_PAIRS[p] for p in (PlatformID.PLATFORM_A2A3, PlatformID.PLATFORM_A5))
    srcs = sorted({s for s, _ in a2 | a5}, key=lambda n: short_name(n))

    def dsts(pairs, src):
        return ", ".join(sorted(short_name(d) for s, d in pairs if s == src)) or "-"
    return ["", "## TCVT conversions", "",
            "The destination dtypes TCVT converts each source dtype to (pto-isa's npu/a2a3 and "
            "npu/a5 TCvt.hpp; `vocab.TCVT_PAIRS`).  Another pair is a KernelError at its line "
            "(a CompileError for `pl.cast`) naming a two-step route where there is one.", "",
            "| source | A2A3 | A5 |", "|---|---|---|"] + \
        [f"| {short_name(s)} | {dsts(a2, s)} | {dsts(a5, s)} |" for s in srcs]


if __name__ == "__main__":
    sys.stdout.write(page())
