"""The PTO-AS corpus (tests/pto_corpus/*.pto, every file accepted by the real ptoas) run through
``ptopipe.run_pto`` and checked against its numpy golden (tests/pto_corpus/goldens.py).

Each file starts with a header the harness reads::

    // ptopipe: platform=a2a3 level=level2 func=NAME
    // ptoas: --pto-arch=a3 --pto-level=level2 accepts this file

Files with a cross-core pipe run under one protocol each, "spec" and "pto-isa" in turn (under
PTOPIPE_FULL=1, under both); the others once.
With ``PTOAS=/path/to/ptoas`` set, the files are also re-checked against the real assembler.
Files the executor does not run yet are listed in ``EXECUTOR_GAPS`` with the cause: they are
strict xfails, so a fix turns them into failures until their entry is removed.
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import CompileError
from configs import FULL

CORPUS = Path(__file__).parents[1] / "pto_corpus"
sys.path.insert(0, str(CORPUS))
from goldens import GOLDENS  # noqa: E402

FILES = sorted(CORPUS.glob("*.pto"))
HEADER = re.compile(r"^// ptopipe: platform=(a2a3|a5) level=(level[123]) func=([\w.$+-]+)$", re.M)
PTOAS_LINE = re.compile(r"^// ptoas: --pto-arch=(a3|a5) --pto-level=(level[123]) accepts this file$", re.M)
PIPE = re.compile(r"pto\.(aic|aiv)_initialize_pipe|pto\.initialize_l2g?2l_pipe")
PARAM = re.compile(r"%(\w+)\s*:\s*(!pto\.ptr<(\w+)>|memref<[\dx?]*x(\w+)\b[^>]*>|index|i\d+)")


def header(path: Path):
    text = path.read_text()
    m = HEADER.search(text)
    assert m, f"{path.name}: no '// ptopipe: platform=... level=... func=...' header line"
    return text, m.group(1), m.group(2), m.group(3)


def signature(text: str, func: str) -> dict:
    """Parameter name -> element type ('f32', ...) or scalar type ('index', 'i32') of @func
    (``a+b``: a Cube / Vector pair without an entry, its parameters merged by name)."""
    sig = {}
    for name in func.split("+"):
        m = re.search(r"func\.func (?:private )?@" + re.escape(name) + r"\((.*?)\)\s*(?:->|attributes|\{)",
                      text, re.S)
        assert m, f"no function @{name}"
        sig.update({n: (ptr or mem or whole) for n, whole, ptr, mem in PARAM.findall(m.group(1))})
    return sig


#: file stem -> why ptopipe.run_pto does not match its golden (a finding ptopipe reports).  (Both
#: Vector cores run the NO_SPLIT V2C push of x_v2c_nosplit_a3 / x_both_nosplit_a3 on A2A3 - ptoas
#: guards it with get_subblockid() == 0 on A5 only - and push the same tile: a warning, the work
#: done twice, and the golden matches, as on the device, whose Cube waits for both lanes.)
EXECUTOR_GAPS: dict = {}
#: (file stem, protocol) -> (error class, words of its message): a file that is wrong under that
#: protocol - what ptopipe reports is asserted in place of the golden.  x_interleaved_pops_a5 holds
#: two popped tiles and frees both after the second TPOP: pto-isa's TFREE tests the index of the
#: latest TPOP (shouldNotifyFree(cons.tileIndex - 1)), so with SyncPeriod 4 the even tile's TFREE of
#: every second pair sends a credit the producer does not count on (docs/protocols.md, *The free
#: index*); ptoas's frontend init takes no slot_num to give the ring SyncPeriod 1
FINDINGS: dict = {("x_interleaved_pops_a5", "pto-isa"): (CompileError, "the TFREE tests this TPOP's index")}


def _case(path, protocol):
    gap = EXECUTOR_GAPS.get(path.stem)
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(path, protocol, id=f"{path.stem}-{protocol}", marks=marks)


_PIPED = [p for p in FILES if PIPE.search(p.read_text())]
CASES = [_case(p, proto) for p in FILES
         for proto in (("spec",) if p not in _PIPED else ("spec", "pto-isa") if FULL
                       else (("spec", "pto-isa")[_PIPED.index(p) % 2],))]


def test_corpus_is_complete():
    """Every file has a golden and a header, and every golden a file."""
    assert len(FILES) >= 80, len(FILES)
    names = {p.stem for p in FILES}
    assert names == set(GOLDENS), (sorted(names - set(GOLDENS)), sorted(set(GOLDENS) - names))
    assert set(EXECUTOR_GAPS) <= names, sorted(set(EXECUTOR_GAPS) - names)
    for p in FILES:
        text, platform, level, _ = header(p)
        arch, ptoas_level = PTOAS_LINE.search(text).groups()
        assert (arch == "a3") == (platform == "a2a3") and ptoas_level == level, p.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden_inputs_match_the_signature(path):
    """A golden gives every parameter with the declared dtype (ints for scalars) and names only
    parameters; it expects only outputs it was given buffers for."""
    text, _, _, func = header(path)
    sig = signature(text, func)
    g = GOLDENS[path.stem]
    inputs = g.inputs(path.stem)
    assert set(inputs) == set(sig), sorted(sig)
    for name, v in inputs.items():
        if sig[name] in ("index",) or re.fullmatch(r"i\d+", sig[name]) and not isinstance(v, np.ndarray):
            assert isinstance(v, int), (name, v)
        else:
            assert isinstance(v, np.ndarray) and v.dtype.name == {"f32": "float32", "f16": "float16",
                "bf16": "bfloat16", "i8": "int8", "i16": "int16", "i32": "int32", "ui32": "uint32", "ui64": "uint64"}[sig[name]], \
                (name, v.dtype)
    out = g.expect({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
    for k, v in out.items():
        assert isinstance(inputs.get(k), np.ndarray) and v.shape == inputs[k].shape, k


@pytest.mark.parametrize("path,protocol", CASES)
def test_corpus_file_matches_numpy(path, protocol, no_hang):
    if not hasattr(ptopipe, "run_pto"):
        pytest.skip("ptopipe.run_pto does not exist")
    _, platform, _, _ = header(path)
    g = GOLDENS[path.stem]
    inputs = g.inputs(path.stem)
    want = g.expect({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in inputs.items()})
    finding = FINDINGS.get((path.stem, protocol))
    if finding is not None:
        with pytest.raises(finding[0]) as ei:
            ptopipe.run_pto(str(path), func=None, inputs=inputs, platform=platform, protocol=protocol)
        assert finding[1] in str(ei.value), str(ei.value)
        return
    res = ptopipe.run_pto(str(path), func=None, inputs=inputs, platform=platform, protocol=protocol)
    for name, exp in want.items():
        got = np.asarray(res.outputs[name]).reshape(exp.shape)
        if exp.dtype.kind in "iub":
            np.testing.assert_array_equal(got, exp, err_msg=f"{path.name}: output {name}")
        else:
            np.testing.assert_allclose(got.astype(np.float64), exp.astype(np.float64), rtol=g.rtol,
                                       atol=g.atol, err_msg=f"{path.name}: output {name}")


@pytest.mark.skipif(not os.environ.get("PTOAS"), reason="PTOAS (path of the real ptoas) not set")
@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_ptoas_accepts(path, tmp_path):
    arch, level = PTOAS_LINE.search(path.read_text()).groups()
    r = subprocess.run([os.environ["PTOAS"], f"--pto-arch={arch}", f"--pto-level={level}", str(path),
                        "-o", str(tmp_path / "out.cpp")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
