"""The golden comparison passes an output equal to the expected array without the float64
comparison (golden._equal): it must pass exactly the outputs that comparison passes, for
every dtype pair, NaN, infinities, signed zeros and tolerances (negative ones included)."""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ptopipe.errors import MismatchError
from ptopipe.isa import golden
from ptopipe.isa.golden import compare

DTYPES = (np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint64, ml_dtypes.bfloat16)
SPECIAL = (0.0, -0.0, 1.0, -3.0, 2.0 ** 60 + 1, np.inf, -np.inf, np.nan, 1e-7, 65504.0)


def _closeness(got, exp, rtol, atol) -> bool:
    """The float64 comparison alone (numpy warns of the invalid tolerances this test includes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return bool(np.isclose(got.astype(np.float64), exp.astype(np.float64), rtol=rtol, atol=atol).all())


def _cast(values, dt) -> np.ndarray:
    with np.errstate(all="ignore"):
        a = np.array(values, dtype=np.float64)
        if np.issubdtype(np.dtype(dt), np.integer):
            info = np.iinfo(dt)
            a = np.nan_to_num(a, nan=0, posinf=info.max, neginf=info.min).clip(info.min, info.max)
        return a.astype(dt)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(SPECIAL) | st.floats(-1e6, 1e6), min_size=1, max_size=6),
       st.sampled_from(DTYPES), st.sampled_from(DTYPES), st.integers(-1, 5),
       st.sampled_from((0.0, 1e-5, -1e-5, 0.5, np.nan)), st.sampled_from((0.0, 1e-5, -1.0, np.inf)))
def test_an_equal_output_passes_exactly_as_the_float64_comparison_passes_it(values, dg, de, bump, rtol, atol):
    got = _cast(values, dg)
    with np.errstate(all="ignore"):                # (an infinity cast to an integer type)
        exp = got.astype(de) if bump < 0 else _cast(values, de)
    if bump > 0:                                  # one element moved
        exp = exp.copy()
        exp[bump % exp.size] = _cast([float(exp[bump % exp.size].astype(np.float64)) + bump], de)[0]
    ref = _closeness(got, exp, rtol, atol)
    if golden._equal(got, exp, rtol, atol):
        assert ref
    with np.errstate(all="ignore"):
        if ref:
            compare({"o": got}, {"o": exp}, rtol, atol)
        else:
            with pytest.raises(MismatchError):
                compare({"o": got}, {"o": exp}, rtol, atol)


def test_the_float64_comparison_is_skipped_for_an_equal_output(monkeypatch):
    seen = []
    isclose = np.isclose
    monkeypatch.setattr(np, "isclose", lambda *a, **k: seen.append(1) or isclose(*a, **k))
    out = np.arange(12, dtype=np.float32).reshape(3, 4)
    compare({"o": out}, {"o": out.astype(np.float64)}, 1e-5, 1e-5)
    assert seen == []
    bad = out.copy()
    bad[2, 1] += 1
    with pytest.raises(MismatchError, match="1 of 12 elements differ"):
        compare({"o": out}, {"o": bad}, 1e-5, 1e-5)
    assert seen == [1]


def test_a_golden_of_the_wrong_shape_is_the_goldens_fix_not_the_kernels():
    out = np.zeros((16, 32), np.float32)
    with pytest.raises(MismatchError) as ei:
        compare({"o": out}, {"o": np.zeros((3, 3))}, 1e-5, 1e-5)
    assert "golden" in ei.value.fix and "(16, 32)" in ei.value.fix and "tiling" not in ei.value.fix
    with pytest.raises(MismatchError) as ei:        # a wrong value is still the kernel's to look at
        compare({"o": out}, {"o": out + 1}, 1e-5, 1e-5)
    assert "tiling" in ei.value.fix and "check the golden" not in ei.value.fix


def test_a_golden_rounded_to_a_narrower_float_is_the_goldens_fix_not_the_kernels():
    """A float16 golden of a float32 output differs by float16's rounding alone: the mismatch
    says so and asks for the golden in the output's dtype, not for the kernel's tiling."""
    out = (np.arange(512, dtype=np.float32).reshape(16, 32) / 7).astype(np.float32)
    with pytest.raises(MismatchError) as ei:
        compare({"o": out}, {"o": out.astype(np.float16)}, 1e-5, 1e-5)
    assert "the golden's o is float16 and the output float32: rounded to float16, the output matches it" \
        in ei.value.details
    assert ei.value.fix == "check the golden: compute o in float32, the output's dtype, not float16"
    with pytest.raises(MismatchError) as ei:        # wrong beyond the rounding: the kernel's to look at
        compare({"o": out}, {"o": (out + 1).astype(np.float16)}, 1e-5, 1e-5)
    assert "rounded to" not in ei.value.details and "tiling" in ei.value.fix
