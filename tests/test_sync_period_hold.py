"""Under pto-isa a consumer's frees reach the producer in batches of SyncPeriod (SLOT_NUM
<= 2: SLOT_NUM, else SLOT_NUM / 2), so on a consumer-local ring (A5) a TPOP may hold at
most SLOT_NUM - SyncPeriod + 1 slots, the popped one included; holding more hangs (the
simulator's DeadlockError, an AICPU timeout on the device).  VerifyPipes reports it at the
TPOP, statically, for the protocol of the compile / check; spec, A2A3 (a GM ring's TPOP
frees inside the TPOP) and a larger SLOT_NUM stay clean."""
import numpy as np
import pytest

import ptopipe
import ptopipe.language as pl
from ptopipe import CompileError, DeadlockError
from ptopipe.passes import compile_program
from ptopipe.passes.slot_buffer import with_slot_buffer
from ptopipe.runtime import kernels

from markers import line_of

N = 3


def hold_while_popping(slot_num):
    @pl.incore(slot_num=slot_num)
    def k(x: pl.Tensor[[N * 16, 16], pl.f32], w: pl.Tensor[[16, 16], pl.f32],
          out: pl.Tensor[[N * 16, 16], pl.f32], out0: pl.Tensor[[N * 16, 16], pl.f32]):
        w_r = pl.move(pl.load(w, [0, 0], [16, 16], space=pl.Mat), space=pl.Right)
        for i in pl.range(N):
            xi = pl.move(pl.load(x, [i * 16, 0], [16, 16], space=pl.Mat), space=pl.Left)
            s0 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)      # freed at once
            pl.store(pl.adds(s0, 1.0), [i * 16, 0], out0)
            s1 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)      # held ...
            s2 = pl.move(pl.matmul(xi, w_r), space=pl.Vec)  # SECOND
            pl.store(pl.add(s1, s2), [i * 16, 0], out)
    return k


def _args():
    rng = np.random.default_rng(9)
    return dict(x=rng.integers(-2, 3, (N * 16, 16)).astype(np.float32),
                w=rng.integers(-2, 3, (16, 16)).astype(np.float32),
                out=np.zeros((N * 16, 16), np.float32), out0=np.zeros((N * 16, 16), np.float32))


def test_holding_a_slot_while_popping_at_slot_num_2_is_an_error_under_pto_isa_on_a5():
    k = hold_while_popping(2)
    with pytest.raises(CompileError) as e:
        compile_program(pl.program(k), "a5", protocol="pto-isa")
    assert e.value.what.startswith("this TPOP holds 2 slots of the C2V ring at once, more than its "
                                   "pto-isa held-slot limit (SLOT_NUM - SyncPeriod + 1) 1")
    assert "a free every SyncPeriod 2 TFREEs" in e.value.what
    assert e.value.where.split(":")[-2] == str(line_of(k.pyfunc, "SECOND"))
    assert "raise SLOT_NUM" in e.value.fix


@pytest.mark.parametrize("platform,protocol,slot_num", [("a5", "spec", 2), ("a2a3", "pto-isa", 2),
                                                         ("a5", "pto-isa", 4), ("a5", "pto-isa", 3)])
def test_the_same_kernel_is_clean_and_right_where_the_hold_fits(platform, protocol, slot_num, no_hang):
    prog = pl.program(hold_while_popping(slot_num))
    tree = compile_program(prog, platform, protocol=protocol)[1]
    args = _args()
    aic, aiv = kernels(tree)
    res = ptopipe.run(aic, aiv, with_slot_buffer(tree, dict(args)), platform=platform, protocol=protocol)
    np.testing.assert_array_equal(res.outputs["out"], 2 * (args["x"] @ args["w"]))


def test_what_the_finding_prevents_is_a_hang(no_hang):
    """The guard: compiled without VerifyPipes, the kernel deadlocks on A5 under pto-isa."""
    from ptopipe.passes.manager import CANONICAL_ORDER
    prog = pl.program(hold_while_popping(2))
    passes = [p for p in CANONICAL_ORDER if p != "verify-pipes"]
    tree = compile_program(prog, "a5", passes, protocol="pto-isa")[1]
    aic, aiv = kernels(tree)
    with pytest.raises(DeadlockError):
        ptopipe.run(aic, aiv, with_slot_buffer(tree, _args()), platform="a5", protocol="pto-isa")
