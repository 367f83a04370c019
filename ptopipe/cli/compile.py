"""``ptopipe compile FILE``: run the pass pipeline on the DSL programs of a kernel file and
print the result (op IR text, DSL source with ``--emit dsl``, PTO-AS with ``--emit pto``,
pto-isa C++ with ``--emit cpp``),
or write it to ``-o FILE`` atomically (:func:`ptopipe.report._io.write_atomic`).

The programs of a file: :func:`ptopipe.driver.programs.programs_of` (a Scenario variant's:
``--variant``).  Warnings of the passes go to stderr."""
from __future__ import annotations

import sys

from ..driver.loader import load_module
from ..driver.programs import programs_of
from ..errors import CompileError, ConfigError, ParseError
from ..ir import print_ir, to_source
from ..passes.remarks import Remarks
from .common import STDOUT, add_platform, PROTOCOL_HELP, protocol_option


def add_parser(sub) -> None:
    p = sub.add_parser("compile", help="compile the DSL programs of a kernel file and print them")
    p.add_argument("file", help="kernel file (.py with pl.program(...), a KernelSet or @pl kernels; "
                                "or a .pto file, through the platform passes)")
    add_platform(p, "platform to lower for (default a2a3; a .pto file's pto.target_arch)")
    p.add_argument("--protocol", default=None, type=protocol_option, metavar="PROTOCOL",
                   help=PROTOCOL_HELP + "; the kernels are compiled for it (flag numbering, hold "
                        "limits, the A5 no-split lane; a pto-isa release or the CPU simulator: "
                        "for pto-isa's device code) (default: pto-isa with --emit cpp and --emit pto - "
                        "device code, a .pto being ptoas's input -, else spec)")
    p.add_argument("--passes", default=None, metavar="P1,P2,...",
                   help="the pipeline (default: every registered pass in pipeline order); a DSL file's "
                        "only: a .pto file goes through the passes its run uses")
    p.add_argument("--no-verify", action="store_true",
                   help="leave verify-pipes out of the pipeline: write out a kernel its static proof "
                        "refuses (a missing TPOP, a use after TFREE ...) to run it and see the misuse "
                        "reported at run time, at its line")
    p.add_argument("--print-after-all", action="store_true",
                   help="print the IR after each pass on stdout (with -o FILE as well: FILE gets "
                        "the final result only)")
    p.add_argument("--verify-each", action="store_true",
                   help="after each pass, check every IR property the IR should have with its "
                        "verifier (docs/passes/README.md), besides the op verifier that always runs")
    p.add_argument("--emit", default="ir", choices=["ir", "dsl", "pto", "cpp"],
                   help="print the result as op IR text (default), as pl DSL source, as PTO-AS "
                        "(.pto, docs/pto.md) or as pto-isa C++ (docs/cpp.md)")
    p.add_argument("-o", "--output", default=None, metavar="FILE",
                   help="write the result to FILE (atomically) instead of stdout (-: stdout)")
    p.add_argument("--remarks", nargs="?", const="missed", default=None, choices=["missed", "all"],
                   help="print each pass's optimization remarks on a DSL file's programs to "
                        "stderr, at their source line: "
                        "what it left alone and why (missed, the default), or also what it did "
                        "and what it found (all)")
    p.add_argument("--variant", default=None,
                   help="the Scenario variant whose parameters a program builder gets "
                        "(default: the scenario's default)")
    p.set_defaults(func=main, kernel_files="a kernel .py (pl.program, @pl kernels) or .pto file")   # (the FILE it takes)


#: the --emit kinds that are device code, compiled for the pto-isa protocol unless --protocol says
DEVICE_EMITS = ("cpp", "pto")


def _emit(kind: str, op, platform: str, protocol: str) -> str:
    if kind == "cpp":
        from ..codegen import write_cpp
        return write_cpp(op, platform, protocol)
    if kind == "pto":
        from ..codegen import write_pto
        notes = []
        text = write_pto(op, platform, notes)
        for what, where in notes:
            print(f"warning: ptoas will reject this .pto: {what}" + (f" (at {where})" if where else ""),
                  file=sys.stderr)
        return text
    return print_ir(op) if kind == "ir" else to_source(op)


def main(args) -> int:
    from ..passes import compile_program, unverified_pipeline
    from ..passes.manager import parse_pipeline
    out = getattr(args, "output", None)    # (a bad -o, or the input file, failed before: check_outputs)
    if out == STDOUT:
        out = None
    # the C++ and the .pto (ptoas's input) are device code: pto-isa's TPipe runs them
    protocol = args.protocol or ("pto-isa" if args.emit in DEVICE_EMITS else "spec")
    if args.file.endswith(".pto"):             # a PTO-AS file: read, through the platform passes
        if getattr(args, "no_verify", False):
            raise ConfigError("--no-verify is for DSL kernel files: a .pto file is always verified "
                              "as it is read (it is run and checked as ptoas would take it)",
                              where="option --no-verify", fix="leave --no-verify out for a .pto file")
        from ..codegen.pto_load import PTO_PASSES, load_pto
        if args.passes is not None:
            raise ConfigError("--passes is for DSL kernel files: a .pto file is already split into its kernels "
                              "and goes through the one pipeline its run and check use ("
                              + ", ".join(PTO_PASSES) + "), so that what is compiled is what runs",
                              where="option --passes",
                              fix="leave --passes out for a .pto file (--print-after-all shows the IR after "
                                  "each of those passes)")
        try:
            op, warnings, plat = load_pto(args.file, args.platform, protocol,
                                          verify_properties=args.verify_each or None,
                                          print_after_all=args.print_after_all, stream=sys.stdout)
        except ParseError:
            # a file the executor's reader refuses too gets its words, as from run and check (a
            # misspelt op with the name meant, an unclosed bracket with the line it runs into)
            from ..codegen.pto_exec import read_program, read_text
            read_program(read_text(args.file), args.file)
            raise
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        texts = [_emit(args.emit, op, plat, protocol)]
        return _write(texts, out)
    platform = args.platform or "a2a3"
    if args.passes is not None:
        try:
            parse_pipeline(args.passes)         # (a misspelt name: refused at the option)
        except CompileError as e:
            e.where = "option --passes"
            e.args = (e.render(),)
            raise
    passes = unverified_pipeline(args.passes) if getattr(args, "no_verify", False) else args.passes
    mod = load_module(args.file, kinds=args.kernel_files)
    progs = programs_of(mod, args.variant)
    if not progs:
        raise ConfigError(f"{args.file} defines no DSL program",
                          fix="define pl.program(...) of @pl kernels (or @pl kernels / a KernelSet)")
    texts = []
    for prog in progs:
        if args.print_after_all:
            print(f"// ===== {prog.sym_name} =====")
        warnings, remarks = [], Remarks()
        op = compile_program(prog, platform, passes, protocol=protocol,
                             print_after_all=args.print_after_all, stream=sys.stdout,
                             verify_properties=args.verify_each or None, warnings=warnings,
                             remarks=remarks)
        for w in warnings:
            print(f"warning: {w}", file=sys.stderr)
        if getattr(args, "remarks", None):
            for r in remarks.select(args.remarks):
                print(r.render(), file=sys.stderr)
        texts.append(_emit(args.emit, op, platform, protocol))
    return _write(texts, out)


def _write(texts: list, out) -> int:
    from ..report._io import write_atomic
    if out is None:
        for t in texts:
            print(t)
    else:
        write_atomic(out, "\n".join(t if t.endswith("\n") else t + "\n" for t in texts))
    return 0
