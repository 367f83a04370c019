"""The two ways an instruction of a C++ kernel reaches ptopipe - the C-API bridge
(ptopipe/cpp/bridge.cpp, built against Python.h) and the ctypes callback it falls back to -
give the same run: outputs, cycles, the whole trace, and the same error at the same C++ line;
and a call site is decoded once (its later calls reuse the prepared call)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ptopipe.cpp import abi, bridge, run_cpp
from ptopipe.errors import LeakError, PtoPipeError
from ptopipe.report.chrome import chrome_trace

from cpp_support import cpp_cache, needs_cxx, pto_inst_precompiled  # noqa: F401 (fixtures)
from test_cpp_kernels import _both, _events, c2v_args, kernel

pytestmark = pytest.mark.usefixtures("pto_inst_precompiled")    # its kernels include <pto/pto-inst.hpp> first

needs_bridge = pytest.mark.skipif(bridge.python_include() is None, reason="no Python.h: no C-API bridge")


def _loop():
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    return dict(x=x, out=np.zeros_like(x)), {"out": x + 4}


def _both_ways(monkeypatch, run, prepared=None):
    """``run()`` through the bridge, then through ctypes: (result or error) of each; with a
    list ``prepared``, the number of call sites each decoded appended to it."""
    out = []
    if prepared is not None:
        calls = []
        prepare = abi.Dispatcher.prepare
        monkeypatch.setattr(abi.Dispatcher, "prepare", lambda self, *a: calls.append(a[0]) or prepare(self, *a))
    for env in ("1", "0"):
        monkeypatch.setenv(bridge.ENV, env)
        try:
            out.append(run())
        except PtoPipeError as e:
            out.append(e)
        if prepared is not None:
            prepared.append(len(calls))
            calls.clear()
    return out


@needs_cxx
@needs_bridge
def test_the_bridge_is_what_a_run_calls_and_ctypes_is_the_fallback(cpp_cache, monkeypatch):
    from ptopipe.cpp.runner import bridge as chosen
    assert chosen() is not None
    monkeypatch.setenv(bridge.ENV, "0")
    assert chosen() is None
    monkeypatch.setattr(bridge, "python_include", lambda: None)      # no Python.h
    monkeypatch.setenv(bridge.ENV, "1")
    assert chosen() is None


@needs_cxx
@needs_bridge
@pytest.mark.parametrize("name,make,opts", [("both_ways.cpp", lambda: _both()[0], {}),
                                            ("events_vec.cpp", lambda: _events()[0], {"aiv": "vec_kernel"}),
                                            ("events_loop.cpp", lambda: _loop()[0], {"aiv": "vec_kernel"})])
def test_bridge_and_ctypes_give_the_same_run_decoding_each_call_site_once(cpp_cache, monkeypatch, name, make,
                                                                        opts):
    prepared, named = [], []
    event = abi.Dispatcher.event
    def named_event(self, eid):
        e = event(self, eid)
        named.append(e and (e.op, e.end))
        return e
    monkeypatch.setattr(abi.Dispatcher, "event", named_event)
    a, b = _both_ways(monkeypatch, lambda: run_cpp(kernel(name), make(), platform="a5", protocol="pto-isa",
                                                   isolate=False, trace=True, **opts), prepared)
    assert a.outputs.keys() == b.outputs.keys()
    for k in a.outputs:
        np.testing.assert_array_equal(a[k], b[k])
    assert a.summary.cycles == b.summary.cycles
    assert a.summary.cores == b.summary.cores
    ta, tb = (json.dumps(chrome_trace(r), sort_keys=True) for r in (a, b))
    assert ta == tb
    # the events a kernel waits on are the instructions' own, both ways
    assert named[:len(named) // 2] == named[len(named) // 2:]
    ops = [e[0] for e in named[:len(named) // 2]]
    if name == "events_vec.cpp":
        assert ops == ["TADD", "TSTORE"]
    if name == "events_loop.cpp":
        assert ops == ["TLOAD"] + ["TADDS"] * (2 * 4), ops
        np.testing.assert_array_equal(a["out"], _loop()[1]["out"])
    # both ways decode the same call sites; a loop's later calls reuse their prepared calls
    assert prepared[0] == prepared[1] > 0
    if name == "both_ways.cpp":
        assert prepared[0] < sum(c["instructions"] for c in a.summary.cores.values()) / 2


@needs_cxx
@needs_bridge
def test_bridge_and_ctypes_report_the_same_error(cpp_cache, monkeypatch):
    a, b = _both_ways(monkeypatch, lambda: run_cpp(kernel("c2v_missing_tfree.cpp"), c2v_args(), platform="a2a3"))
    assert isinstance(a, LeakError) and type(b) is type(a)
    assert str(a) == str(b) and a.where == b.where
