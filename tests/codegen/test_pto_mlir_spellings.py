"""MLIR spellings ptoas prints and reads that say nothing new: the short ``call @f(...)`` and
``func.return`` of the func dialect, and source locations (``loc("k.py":3:4)`` after an op or a
region, ``#loc1 = loc(...)`` aliases).  Both readers take them - the static verifier's value IR
reads the file as it reads the plain spelling, and every other token keeps its line:col."""
import pathlib
import re

import numpy as np
import pytest

from ptopipe.codegen import read_pto
from ptopipe.codegen.pto_load import run_pto, static_findings
from ptopipe.errors import ParseError
from ptopipe.ir import first_difference

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLAIN = (ROOT / "tests" / "pto" / "both_ways_a5.pto").read_text()


def _respelled(text: str) -> str:
    text = text.replace("func.call @", "call @").replace("    return\n", "    func.return\n")
    text = re.sub(r"(arith\.constant \d+ : index)\n", r'\1 loc("k.py":3:4)\n', text)
    text = text.replace("    scf.if %is0 {", '    scf.if %is0 { // loc("not one")')
    text = re.sub(r"\n    }\n    pto.tfree_from_aic", "\n    } loc(#loc1)\n    pto.tfree_from_aic", text)
    return '#loc1 = loc("k.py":1:1)\n' + text.replace("\n}\n", '\n} loc(fused["a"("k.py":9:9), #loc1])\n')


def test_the_respelling_changes_what_it_should():
    text = _respelled(PLAIN)
    assert "    call @cube(" in text and "func.return" in text and ' loc("k.py":3:4)' in text
    assert "} loc(#loc1)" in text and text.startswith("#loc1 = loc(")


def test_both_readers_read_the_short_func_ops_and_locations_as_the_plain_file():
    text = _respelled(PLAIN)
    assert first_difference(read_pto(PLAIN, "k.pto"), read_pto(text, "k.pto")) is None
    assert static_findings("<pto>", None, "spec", {}, text)[1] is None     # the static verifier read it too
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((16, 16)).astype(np.float32), rng.standard_normal((16, 16)).astype(np.float32)
    outs = [run_pto(text=t, inputs={"x": x, "b": b, "out": np.zeros((16, 16), np.float32)}).outputs["out"]
            for t in (PLAIN, text)]
    np.testing.assert_allclose(outs[0], x @ b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[1], outs[0])


@pytest.mark.parametrize("reader", ["static", "run"])
def test_an_error_after_a_location_keeps_its_column(reader):
    text = _respelled(PLAIN).replace("pto.tmatmul ins", "pto.tmatmull ins", 1)
    line = next(i + 1 for i, ln in enumerate(text.splitlines()) if "pto.tmatmull" in ln)
    with pytest.raises(ParseError) as ei:
        if reader == "static":
            read_pto(text, "k.pto")
        else:
            run_pto(text=text, static=False)
    assert ei.value.where == f"k.pto:{line}:5" if reader == "static" else ei.value.where.endswith(f":{line}:5")
