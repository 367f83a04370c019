"""The run a cluster belongs to is typed: ``cluster.context`` (what the launch decided: the
protocol, the arguments' GM extents; frozen) and ``cluster.state`` (the bound pipes, the
prints, the report's timeline), each field with one default for every reader."""
import dataclasses

import numpy as np
import pytest

import ptopipe
from ptopipe.arch.vocab import Protocol
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.checks import ch_protocol
from ptopipe.protocol.model import PTO_ISA, SPEC, cluster_model
from ptopipe.sim import Cluster, GmArg, RunContext

T = 16


def _stream(n=2):
    """The Cube pushes ``n`` identity products of ``x``'s tiles; AIV0 pops them into ``out``."""
    def cube(x, fifo):
        pipe = TPipe(0, DIR_C2V, T * T * 4, 2, peers=(0,))(fifo.data(), 0x8000)
        acc = Tile(TileType.Acc, float32, T, T, addr=0)
        xl1 = Tile(TileType.Mat, float32, T, T, addr=0)
        xl0 = Tile(TileType.Left, float32, T, T, addr=0)
        eye = Tile(TileType.Right, float32, T, T, addr=0)
        eye.array[...] = np.eye(T, dtype=np.float32)
        for i in range(n):
            TLOAD(xl1, GlobalTensor(x.data() + i * T * T, (T, T)))
            TMOV(xl0, xl1)
            TMATMUL(acc, xl0, eye)
            TPUSH(pipe, acc)

    def vec(out, fifo):
        pipe = TPipe(0, DIR_C2V, T * T * 4, 2, peers=(0,))(fifo.data(), 0x8000)
        for i in range(n):
            t = Tile(TileType.Vec, float32, T, T)
            TPOP(pipe, t)
            TSTORE(GlobalTensor(out.data() + i * T * T, (T, T)), t)
            TFREE(pipe)
    x = np.arange(n * T * T, dtype=np.float32).reshape(n * T, T)
    return cube, (vec, None), dict(x=x, out=np.zeros_like(x), fifo=gm_buffer(2 * T * T * 4))


def test_a_cluster_made_without_a_launch_has_the_defaults():
    cl = Cluster("a2a3")
    assert cl.context == RunContext() and cl.context.protocol is Protocol.SPEC
    assert cl.context.gm_args == ()
    assert (cl.state.channels, cl.state.prints, cl.state.prints_flushed, cl.state.timeline) == ({}, [], False, None)
    assert not hasattr(cl, "shared")
    # every reader of the protocol sees the one default: the model, and the messages
    assert cluster_model(cl) is SPEC
    assert ch_protocol(cl) == "spec on a2a3"


def test_the_launch_context_is_frozen_and_typed():
    ctx = RunContext("pto-isa", [("a", 0, 64)])
    assert ctx.protocol is Protocol.PTO_ISA
    assert ctx.gm_args == (GmArg("a", 0, 64),) and ctx.gm_args[0].hi == 64
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.protocol = Protocol.SPEC
    with pytest.raises(ValueError):
        RunContext("spec-ish")


@pytest.mark.parametrize("protocol,model", [("spec", SPEC), ("pto-isa", PTO_ISA)])
def test_a_run_carries_its_context_and_state(protocol, model, no_hang):
    cube, vec, args = _stream()
    res = ptopipe.run(cube, vec, args, platform="a2a3", protocol=protocol, launches=2)
    np.testing.assert_array_equal(res["out"], args["x"])
    ctx = res.cluster.context
    assert ctx.protocol is Protocol(protocol) and cluster_model(res.cluster) is model
    assert [a.name for a in ctx.gm_args] == ["x", "out", "fifo"]
    lo = {a.name: a for a in ctx.gm_args}
    assert lo["x"].hi - lo["x"].lo == args["x"].nbytes
    (ch,) = res.cluster.state.channels.values()
    assert ch.model is model and res.summary.pipes[0]["pushes"] == 2
