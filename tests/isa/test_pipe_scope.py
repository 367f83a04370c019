"""A pipe object that goes out of scope (a C++ TPipe's destructor: ``binding.end_scope``) lets
its core construct the pipe again on the same FlagID, as pto-isa builds a TPipe per task: the
earlier object's teardown runs then - the producer waits for the drain its ``~TPipe()`` waits
for, a consumer must have freed what it popped - and the new object starts at slot 0.  Without
the end of scope a second construction stays a ConfigError."""
import numpy as np
import pytest

import ptopipe
from ptopipe import ConfigError, ProtocolError
from ptopipe.isa import *  # noqa: F403
from ptopipe.isa.pipe.binding import end_scope
from cube_parts import square_acc
from markers import line_of

T = 16
SLOT = T * T * 4


def tasks(n_tasks: int, per_task: int, ends: bool = True, hold: bool = False):
    """The Cube pushes ``per_task`` tiles per pipe object, the Vector cores pop them (``hold``:
    the last one is never freed), each task's object ending its scope (``ends``)."""
    def cube(x, fifo):
        acc = square_acc(x)
        for task in range(n_tasks):
            pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0x8000, 0)
            for t in range(per_task):
                TPUSH(pipe, acc, TILE_UP_DOWN)                                  # PUSH
            if ends:
                end_scope(pipe)

    def vec(x, fifo):
        y = Tile(TileType.Vec, float32, T // 2, T, addr=0)
        for task in range(n_tasks):
            pipe = TPipe(0, DIR_C2V, SLOT, 2)(fifo, 0x8000, 0)                  # BIND
            for t in range(per_task):
                TPOP(pipe, y, TILE_UP_DOWN)
                if not (hold and t == per_task - 1):
                    TFREE(pipe, TILE_UP_DOWN)
            if ends:
                end_scope(pipe)
    return cube, vec


def _run(kernels, protocol, platform="a5"):
    return ptopipe.run(*kernels, dict(x=np.zeros((T, T), np.float32), fifo=ptopipe.gm_buffer(2 * SLOT)),
                       platform=platform, protocol=protocol, timeout=20)


@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_a_pipe_constructed_again_after_its_scope_ended_runs(protocol):
    res = _run(tasks(3, 2), protocol)
    assert not res.summary.leaks and res.summary.pipes[0]["pushes"] == 6
    with pytest.raises(ConfigError, match="a second time in one launch"):
        _run(tasks(2, 2, ends=False), protocol)


def test_an_object_whose_drain_leaves_a_slot_in_use_is_reported_at_the_next_objects_push():
    """pto-isa's ~TPipe after 3 pushes through 2 slots (SyncPeriod 2) waits for no credit: the next
    object's push #0 overwrites a slot the Vector cores have not popped - said with the drain."""
    cube, vec = tasks(2, 3)
    with pytest.raises(ProtocolError) as ei:
        _run((cube, vec), "pto-isa")
    assert ei.value.where.endswith(f"test_pipe_scope.py:{line_of(cube, 'PUSH')}"), ei.value.where
    assert "the earlier object" in ei.value.fix and "pushed 3 tiles" in ei.value.fix, ei.value.fix


def test_an_object_that_ends_holding_a_popped_tile_is_reported_at_the_next_binding():
    cube, vec = tasks(2, 2, hold=True)
    with pytest.raises(ProtocolError) as ei:
        _run((cube, vec), "spec")
    assert ei.value.where.endswith(f"test_pipe_scope.py:{line_of(vec, 'BIND')}"), ei.value.where
    assert "holding 1 popped tile" in ei.value.what and "TFREE every popped tile" in ei.value.fix
