"""The public Python API refuses what it cannot run with a ConfigError (what, where, fix) -
never a raw Python exception from deep inside, and never by silently taking a wrong value:
run()'s kernels, args, gm_extra, switches and schedule seed, an argument a kernel uses as
the wrong kind (a list as a GM tensor, an array as a number), explore()'s target and
schedule count, a Scenario's run fields at its own line, an unknown output of a result; and
ptopipe.check is the Python form of ``ptopipe check``."""
from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import ptopipe
from ptopipe.errors import ConfigError
from ptopipe.isa import TLOAD, TSTORE, GlobalTensor, Tile, TileType, float32
from ptopipe.isa.explore import explore

HERE = os.path.abspath(__file__)


def vector(x, out, n):
    t = Tile(TileType.Vec, float32, 4, 8, addr=0)
    for i in range(n // 4):                                                     # USE-N
        TLOAD(t, GlobalTensor(x.data() + i * 32, (4, 8)))
        TSTORE(GlobalTensor(out.data() + i * 32, (4, 8)), t)                    # USE-OUT


def _args(**over) -> dict:
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    return {**dict(x=x, out=np.zeros_like(x), n=8), **over}


def _line(marker: str) -> int:
    src, start = inspect.getsourcelines(vector)
    (i,) = [k for k, t in enumerate(src) if f"# {marker}" in t]
    return start + i


def _here(err) -> bool:
    """Is the error located at a line of this file (the call the test made)?"""
    return err.where is not None and os.path.abspath(err.where.rsplit(":", 1)[0]) == HERE


def _bad_run(**kw):
    return ptopipe.run(**{"aic": None, "aiv": (vector, None), "args": _args(), **kw})


@pytest.mark.parametrize("kw,what,fix", [
    (dict(aic="cube"), "run(): aic is 'cube', not a kernel function", "pass the kernel function"),
    (dict(aiv=42), "run(): aiv is 42, not a kernel function", "pass the kernel function"),
    (dict(aiv=(vector, vector, vector)), "run(): aiv takes one kernel or a pair (aiv0, aiv1), got 3",
     "aiv=(vector0, vector1)"),
    (dict(args=[1, 2]), "run(): args is a list, not a dict of the kernels' arguments", "args={parameter name"),
    (dict(gm_extra=-1), "run(): gm_extra=-1 is not a number of bytes", "gm_extra >= 0"),
    (dict(checks="no"), "run(): checks='no' is not True or False", "checks=False"),
    (dict(schedule_seed="x"), "run(): schedule_seed='x' is not an integer", "integer seed"),
], ids=["aic-str", "aiv-int", "aiv-three", "args-list", "gm-extra", "checks-str", "seed-str"])
def test_a_bad_run_argument_is_a_config_error_at_the_call(kw, what, fix):
    with pytest.raises(ConfigError) as ei:
        _bad_run(**kw)
    assert ei.value.what == what and fix in ei.value.fix
    assert _here(ei.value), ei.value.where


def test_a_list_given_for_a_gm_tensor_names_the_argument_at_the_kernel_line():
    with pytest.raises(ConfigError) as ei:
        _bad_run(args=_args(out=[[0.0] * 8] * 8))
    e = ei.value
    assert e.what.startswith("argument 'out' is a list, which the kernel uses as a GM tensor (.data)")
    assert "np.asarray" in e.fix and e.where.endswith(f":{_line('USE-OUT')}")


def test_an_array_given_for_a_scalar_names_the_argument_at_the_kernel_line():
    with pytest.raises(ConfigError) as ei:
        _bad_run(args=_args(n=np.array([8])))
    e = ei.value
    assert e.what == "argument 'n' is a GM tensor (run() was given a numpy array for it), used here as a number"
    assert "Python number" in e.fix and e.where.endswith(f":{_line('USE-N')}")


def test_a_zero_dimensional_array_names_the_argument():
    with pytest.raises(ConfigError) as ei:
        _bad_run(args=_args(n=np.array(8)))
    assert ei.value.what == "argument 'n' has 0 dimensions; GM tensors have 1 to 5"
    assert ei.value.where == "args['n']" and "args['n'] = 8" in ei.value.fix


def test_an_unknown_output_names_the_outputs_there_are():
    res = _bad_run()
    for get in (lambda: res["nope"], lambda: res.outputs["nope"]):
        with pytest.raises(KeyError) as ei:         # a KeyError, as a dict's ...
            get()
        e = ei.value
        assert isinstance(e, ConfigError) and e.what == "the run has no output 'nope'"   # ... and located
        assert e.fix == "outputs are the array arguments: 'x', 'out'" and _here(e)
        assert str(e).startswith("the run has no output 'nope'")


def _scenario(**kw):
    return ptopipe.Scenario("sc", None, (vector, None), lambda rng: _args(), lambda a: {}, **kw)


@pytest.mark.parametrize("kw,what", [
    (dict(launches=0), "scenario 'sc': launches=0 is not a number of launches"),
    (dict(blocks=-2), "scenario 'sc': blocks=-2 is not a number of blocks"),
    (dict(sync="bogus"), "scenario 'sc': sync='bogus': unknown synchronisation mode 'bogus'"),
    (dict(platform="a6"), "scenario 'sc': platform='a6': unknown platform 'a6'"),
    (dict(protocol="pto_isa"), "scenario 'sc': protocol='pto_isa': unknown protocol 'pto_isa'"),
    (dict(rtol="a"), "scenario 'sc': rtol='a' is not a tolerance (a finite number >= 0)"),
    (dict(atol=-1e-3), "scenario 'sc': atol=-0.001 is not a tolerance (a finite number >= 0)"),
    (dict(atol=float("nan")), "scenario 'sc': atol=nan is not a tolerance (a finite number >= 0)"),
], ids=["launches", "blocks", "sync", "platform", "protocol", "rtol-str", "atol-negative", "atol-nan"])
def test_a_scenario_field_a_run_would_refuse_is_refused_at_the_scenario(kw, what):
    with pytest.raises(ConfigError) as ei:
        _scenario(**kw)
    assert ei.value.what == what and ei.value.fix and _here(ei.value), ei.value


def test_tolerances_zero_and_numpy_numbers_are_taken():
    assert (_scenario(rtol=0, atol=np.float32(1e-3)).rtol, _scenario(rtol=0).atol) == (0, 1e-5)


def test_a_scenarios_platform_and_protocol_are_the_default_of_its_runs():
    """A Scenario that names its platform / protocol runs there unless a call says otherwise:
    its run, its check and explore's default schedule alike (the CLI passes the same)."""
    from ptopipe.isa.context import current_core

    def on_a5(x, out, n):
        cl = current_core().cluster
        if (cl.platform.name, cl.context.protocol_name) != ("a5", "pto-isa"):
            raise ValueError(f"ran on {cl.platform.name} under {cl.context.protocol_name}")
        vector(x, out, n)
    sc = ptopipe.Scenario("sc", None, (on_a5, None), lambda rng: _args(), lambda a: {}, platform="a5",
                          protocol="pto-isa")
    sc.run()
    sc.check()
    assert explore(sc, schedules=2).ok
    with pytest.raises(ValueError, match="ran on a2a3"):
        sc.run(platform="a2a3")


@pytest.mark.parametrize("args,kw,what", [
    ((), {}, "run_pto() needs the path of a .pto file"),
    ((5,), {}, "run_pto(path): 5 is an int, not the path of a .pto file"),
    ((), dict(text=b"module {}"), "run_pto(text=): a bytes, not the text of a .pto file"),
    (("k.pto",), dict(inputs=[1]), "run_pto(inputs=): a list, not a dict {parameter: array or number}"),
], ids=["no-path", "int-path", "bytes-text", "inputs-list"])
def test_a_bad_run_pto_call_is_a_config_error_at_the_call(args, kw, what):
    with pytest.raises(ConfigError) as ei:
        ptopipe.run_pto(*args, **kw)
    assert ei.value.what == what and ei.value.fix and _here(ei.value), ei.value


def test_explore_refuses_a_kernel_for_a_scenario_and_a_negative_count():
    with pytest.raises(ConfigError) as ei:
        explore(vector, schedules=3)
    assert ei.value.what == ("explore() takes a Scenario or an (aic, aiv) pair of kernels, got a kernel "
                             "function ('vector')")
    assert "explore(SCENARIO, schedules=N)" in ei.value.fix and _here(ei.value)
    with pytest.raises(ConfigError) as ei:
        explore(_scenario(), schedules=-1)
    assert ei.value.what == "explore(): schedules=-1 is not a number of schedules" and _here(ei.value)


def test_ptopipe_check_is_the_python_form_of_the_check_command():
    assert "check" in ptopipe.__all__
    res = ptopipe.check(_scenario(), schedules=0)
    assert res.ok and res.runs == 1
    with pytest.raises(ConfigError):
        ptopipe.check(vector)
    with pytest.raises(ConfigError) as ei:
        ptopipe.check(vector)
    assert ei.value.what.startswith("check() takes a Scenario or an (aic, aiv) pair")


@pytest.mark.parametrize("call,what,fix", [
    (lambda: ptopipe.check(_scenario(), schedules=0, blcks=4), "check() got unknown keyword 'blcks'",
     "or run()'s, which it passes on ("),
    (lambda: explore(_scenario(), schedules=0, blcks=4, tracee=1), "explore() got unknown keywords 'blcks', 'tracee'",
     "use explore's keywords (schedules, seed, variant"),
    (lambda: ptopipe.check(_scenario(), schedules=0, variant="nope"), "scenario sc has no variant 'nope'",
     "choose one of: default"),
    (lambda: ptopipe.check(_scenario(), schedules=0, platform="a9"), "unknown platform 'a9'", "a2a3"),
    (lambda: ptopipe.check((None, (vector, None)), schedules=0), "kernel vector needs argument 'x' but args has "
     "nothing", "add 'x' to args="),
], ids=["check-keyword", "explore-keywords", "variant", "platform", "pair-without-args"])
def test_a_bad_check_call_raises_a_config_error_not_a_schedule_failure(call, what, fix):
    """What is wrong with the call itself is raised as run() raises it (a ConfigError at the
    call, or at the kernel's definition for its missing argument), not returned as the default
    schedule's failure nor a raw TypeError from run()."""
    with pytest.raises(ConfigError) as ei:
        call()
    assert ei.value.what == what and fix in ei.value.fix, ei.value
    assert ei.value.where is not None and ("test_api_misuse.py" in ei.value.where)
    if "blcks" in what:
        assert "blocks" in ei.value.fix       # the keyword meant is among those named


def _ring_user(fifo, how):
    """A Vector kernel that passes a ring instruction something other than a bound pipe."""
    from ptopipe.isa import DIR_C2V, TFREE, TPOP, TPipe, TILE_UP_DOWN
    pipe_type = TPipe(0, DIR_C2V, 1024, 2)
    t = Tile(TileType.Vec, float32, 8, 32)
    if how == "type":
        TPOP(pipe_type, t, TILE_UP_DOWN)                                        # NOT-A-PIPE
    elif how == "buffer":
        TPOP(fifo, t, TILE_UP_DOWN)                                             # NOT-A-PIPE
    else:
        TFREE(pipe_type)                                                        # NOT-A-PIPE


@pytest.mark.parametrize("how,fix", [
    ("type", "call the TPipe with its ring buffer to bind it on this core and pass what the call returns"),
    ("buffer", "pass the pipe handle that TPipe(...)(...) or aic_/aiv_initialize_pipe returned"),
    ("free", "call the TPipe with its ring buffer to bind it on this core and pass what the call returns"),
])
def test_a_ring_instruction_given_no_bound_pipe_says_how_to_get_one(how, fix):
    """TPOP / TFREE of a TPipe that was never called with its buffers (the pipe's type, not a
    pipe of this core) or of the GM ring buffer itself: an error at the line whose fix says how
    to get the pipe handle, not only what it got."""
    with pytest.raises(ptopipe.PtoPipeError) as ei:
        ptopipe.run(None, (_ring_user, None), dict(fifo=ptopipe.gm_buffer(2048), how=how))
    src, start = inspect.getsourcelines(_ring_user)
    lines = [start + k for k, t in enumerate(src) if "# NOT-A-PIPE" in t]
    assert int(ei.value.where.rsplit(":", 1)[1]) in lines and _here(ei.value), ei.value.where
    assert ei.value.fix.startswith(fix), ei.value.fix


@pytest.mark.parametrize("slot_size, slot_num, peers, what, fix", [
    (0, 2, (0, 1), "pipe needs SlotNum >= 1 and SlotSize > 0 (got 2, 0)", "TPipe(flag_id, direction, slot_size"),
    (1024, 0, (0, 1), "pipe needs SlotNum >= 1 and SlotSize > 0 (got 0, 1024)", "TPipe(flag_id, direction, slot_size"),
    (1024, 100, (0, 1), "SlotNum 100 exceeds the FIFO depth limit 8 of a2a3", "give the pipe at most 8 slots"),
    (1024, 2, (2,), "pipe peers must be Vector sub-blocks 0 and/or 1, got (2,)", "give peers=(0, 1)"),
])
def test_a_pipe_configuration_no_ring_takes_says_how_to_fix_it(slot_size, slot_num, peers, what, fix):
    from ptopipe.isa import DIR_C2V, TPipe, gm_buffer

    def cube(fifo):
        TPipe(0, DIR_C2V, slot_size, slot_num, peers=peers)(fifo, 0x10000)     # BIND
    with pytest.raises(ConfigError) as ei:
        ptopipe.run(cube, None, dict(fifo=gm_buffer(4096)), protocol="pto-isa")
    assert ei.value.what == what and ei.value.fix.startswith(fix), ei.value
    assert ei.value.where.endswith(f":{inspect.getsourcelines(cube)[1] + 1}")


@pytest.mark.parametrize("mistake, what, fix", [
    ("push_array", "TPUSH expects a Tile or GlobalTensor, got ndarray", "TPUSH(pipe, tile, split)"),
    ("pop_array", "TPOP expects a Tile or GlobalTensor, got ndarray", "TPOP(pipe, tile, split)"),
    ("pop_mat", "TPOP on C2V: the consumer tile must be Vec, got", "pop into a Tile(TileType.Vec, ...)"),
])
def test_a_ring_operand_of_the_wrong_kind_says_what_to_pass(mistake, what, fix):
    from ptopipe.isa import DIR_C2V, TFREE, TPOP, TPUSH, TILE_UP_DOWN, TPipe, gm_buffer

    def cube(fifo):
        pipe = TPipe(0, DIR_C2V, 1024, 2)(fifo, 0x10000)
        TPUSH(pipe, np.zeros((16, 16), np.float32) if mistake == "push_array" else
              Tile(TileType.Acc, float32, 16, 16, addr=0), TILE_UP_DOWN)

    def vec(fifo):
        pipe = TPipe(0, DIR_C2V, 1024, 2)(fifo, 0x10000)
        t = (np.zeros((8, 16), np.float32) if mistake == "pop_array" else
             Tile(TileType.Mat if mistake == "pop_mat" else TileType.Vec, float32, 8, 16))
        TPOP(pipe, t, TILE_UP_DOWN)
        TFREE(pipe)
    with pytest.raises(ptopipe.PtoPipeError) as ei:
        ptopipe.run(cube, vec, dict(fifo=gm_buffer(2048)))
    assert ei.value.what.startswith(what) and ei.value.fix.startswith(fix), ei.value
