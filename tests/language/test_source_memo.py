"""The frontend's memo of a kernel's source (``frontend._code_definition``: the ``def``'s
syntax tree read once per code object, file, line and file state) gives what reading the
source every time gives: the same IR for every function a factory makes, each file's own
locations for equal code in two files, and the new text of a file edited in place.  The
annotations of this module are strings (``from __future__ import annotations``), read with the
kernel's source: an error in one is at its own line."""
from __future__ import annotations

import importlib.util
import os
import re

import pytest

import ptopipe.language as pl
from ptopipe.errors import CompileError
from ptopipe.ir import print_ir, structural_equal
from ptopipe.ir.vocab import FunctionKind
from ptopipe.language import frontend

KERNEL = '''import ptopipe.language as pl


def build():
    @pl.aiv
    def copy(x: pl.Tensor[[16, 16], pl.f32], out: pl.Tensor[[16, 16], pl.f32], n: pl.Scalar[pl.index]):
        z: {ann} = n + n
        t = pl.load(x, [0, 0], [16, 16])
        pl.store(t, [0, 0], out)
        {bad}
    return copy
'''
#: a local's annotation is not compiled: these two spellings (of one length) give equal code
GOOD, WRONG = "pl.Scalar[pl.index]", "pl.Scalar[ pl.i32 ]"
STAMP = 1_700_000_000_000_000_000          # one mtime for files that must differ by more


def _load(path, ann=GOOD, bad="pass"):
    path.write_text(KERNEL.format(ann=ann, bad=bad))
    os.utime(path, ns=(STAMP, STAMP))
    spec = importlib.util.spec_from_file_location(f"memo_{path.parent.name}_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build


def test_a_factory_kernel_parses_to_the_ir_of_its_source_every_time(tmp_path):
    build = _load(tmp_path / "k.py")
    first, second = build(), build()
    assert first.pyfunc is not second.pyfunc and first.pyfunc.__code__ is second.pyfunc.__code__
    file, start, indent, fdef = frontend._definition(first.pyfunc)          # read afresh
    fresh = frontend.FunctionParser(fdef, FunctionKind.AIV, frontend._namespace(first.pyfunc),
                                    frontend.Source(file, start - 1, indent),
                                    dict(first.pyfunc.__annotations__)).parse()
    assert structural_equal(first.ir, second.ir) and structural_equal(first.ir, fresh)
    assert print_ir(first.ir) == print_ir(fresh)


def test_equal_code_in_two_files_is_reported_in_its_own_file(tmp_path):
    wheres = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        build = _load(tmp_path / d / "k.py", bad="pl.no_such_op(t)")
        with pytest.raises(CompileError) as ei:
            build()
        wheres.append(ei.value.where)
    assert wheres[0].startswith(str(tmp_path / "a" / "k.py") + ":"), wheres
    assert wheres[1].startswith(str(tmp_path / "b" / "k.py") + ":"), wheres


def test_a_file_edited_in_place_is_read_again(tmp_path):
    path = tmp_path / "k.py"
    _load(path)()                                        # parses: the annotation fits
    build = _load(path, ann=WRONG)
    os.utime(path, ns=(STAMP, STAMP + 1_000_000))        # (edited a millisecond later)
    with pytest.raises(CompileError) as ei:
        build()
    assert "'z' is annotated i32 scalar but the value is an index scalar" in ei.value.what


def test_a_bad_shape_annotation_is_reported_at_its_line():
    # (the string annotation is evaluated as code whose lines count from the kernel's first
    # line: the error was put at the docstring's line)
    for bad in ("float", "negative"):
        with pytest.raises(CompileError, match="bad type annotation") as ei:
            if bad == "float":
                @pl.aiv
                def k(out: pl.Tensor[[16, 16], pl.f32],
                      a: pl.Tensor[[1.5, 16], pl.f32]):    # the float dimension
                    """Copies a."""
                    pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], out)
            else:
                @pl.aiv
                def k(out: pl.Tensor[[16, 16], pl.f32],
                      a: pl.Tensor[[-2, 16], pl.f32]):     # the negative dimension
                    """Copies a."""
                    pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], out)
        m = re.match(r"(.*):(\d+):(\d+)$", ei.value.where)
        assert m and m.group(1) == __file__, ei.value.where
        with open(__file__) as f:
            line = f.read().splitlines()[int(m.group(2)) - 1]
        assert line.endswith(f"# the {bad} dimension"), (bad, ei.value.where)
        assert line[int(m.group(3)) - 1:].startswith("pl.Tensor[[") and "16, 16" not in line, ei.value.where
