"""The mutation operators, filecheck style: for a small kernel source, every mutant each
operator makes - its kind, line and change - and that a mutant differs from the source only
where it says, with every other line where it was."""
import textwrap

import pytest

from ptopipe.mutate import HOOK, Mutation, mutants

SOURCE = textwrap.dedent('''\
    from ptopipe.isa import *


    def cube(fifo, split):
        pipe = TPipe(0, DIR_C2V, 2048, 4)(fifo, 0, 0)
        acc = Tile(TileType.Acc, float32, 16, 32, addr=0x0)
        TMATMUL(acc, a, b)
        TPUSH(pipe, acc, split)


    def vector(fifo, split):
        pipe = TPipe(0, DIR_C2V, 2048, 4)(fifo, 0, 0)
        part = Tile(TileType.Vec, float32, 8, 32)
        x = 1
        TPOP(pipe, part, split)
        wait_flag(PIPE_MTE2, PIPE_V, 0)
        TADD(o, part, b)
        TFREE(pipe)
        set_flag(PIPE_V, PIPE_MTE3, 0)


    SCENARIO = Scenario("k", cube, vector, None, None, {})
''')

EXPECTED = [
    (5, "flag-id", "FlagID 0 -> (0) + 1 on the Cube"),
    (5, "shrink-ring", "SlotNum 4 -> max(1, (4) // 2) on the Cube"),
    (5, "slot-size", "SlotSize 2048 -> (2048) // 2 on the Cube"),
    (8, "swap-split", "TPUSH(..., split) -> the other split"),
    (8, "reorder", "TPUSH(pipe, acc, split) above TMATMUL(acc, a, b)"),
    (12, "flag-id", "FlagID 0 -> (0) + 1 on Vector core 0"),
    (12, "shrink-ring", "SlotNum 4 -> max(1, (4) // 2) on Vector core 0"),
    (12, "slot-size", "SlotSize 2048 -> (2048) // 2 on Vector core 0"),
    (15, "swap-split", "TPOP(..., split) -> the other split"),
    (16, "drop-wait", "wait_flag(PIPE_MTE2, PIPE_V, 0) -> pass"),
    (16, "dup-wait", "wait_flag(PIPE_MTE2, PIPE_V, 0) twice"),
    (18, "drop-tfree", "TFREE(pipe) -> pass"),
    (18, "tfree-before-use", "TFREE(pipe) above TADD(o, part, b)"),
    (19, "drop-set", "set_flag(PIPE_V, PIPE_MTE3, 0) -> pass"),
    (19, "dup-set", "set_flag(PIPE_V, PIPE_MTE3, 0) twice"),
]


@pytest.mark.parametrize("built", [
    'scenario("k", cube, (vector, None), "a doc")',     # a factory of the file (examples/misuse/_common.py)
    'make_scenario("k", aic=cube, aiv=vector)',         # a factory given the kernels by keyword
])
def test_the_vector_kernel_of_a_scenario_built_by_a_factory_is_mutated_on_vector_core_0(built):
    """A pipe of the Vector kernel mutated "on the Cube" would never run mutated: an
    equivalent mutant, reported as a survivor the checks cannot see."""
    found = mutants(SOURCE.replace('Scenario("k", cube, vector, None, None, {})', built))
    sides = {(m.line, m.name): m.change.rpartition(" on ")[2] for m in found if m.name == "flag-id"}
    assert sides == {(5, "flag-id"): "the Cube", (12, "flag-id"): "Vector core 0"}, sides


def _diff(a: str, b: str) -> dict:
    la, lb = a.splitlines(), b.splitlines()
    assert len(la) == len(lb)                       # every other line keeps its number
    return {k + 1: (x, y) for k, (x, y) in enumerate(zip(la, lb)) if x != y}


def test_every_operator_on_a_small_kernel():
    found = mutants(SOURCE)
    assert [(m.line, m.name, m.change) for m in found] == sorted(EXPECTED, key=lambda e: (e[0], Mutation[e[1].upper().replace("-", "_")].value))


def test_each_mutant_changes_only_its_lines():
    by = {(m.line, m.name): m for m in mutants(SOURCE)}
    assert _diff(SOURCE, by[18, "drop-tfree"].source) == {18: ("    TFREE(pipe)", "    pass")}
    assert _diff(SOURCE, by[18, "tfree-before-use"].source) == {
        17: ("    TADD(o, part, b)", "    TFREE(pipe)"), 18: ("    TFREE(pipe)", "    TADD(o, part, b)")}
    assert _diff(SOURCE, by[16, "dup-wait"].source) == {
        16: ("    wait_flag(PIPE_MTE2, PIPE_V, 0)",
             "    wait_flag(PIPE_MTE2, PIPE_V, 0); wait_flag(PIPE_MTE2, PIPE_V, 0)")}
    assert _diff(SOURCE, by[15, "swap-split"].source) == {
        15: ("    TPOP(pipe, part, split)", f"    TPOP(pipe, part, {HOOK}.other_split(split))")}
    assert _diff(SOURCE, by[12, "flag-id"].source)[12][1] == \
        f"    pipe = TPipe({HOOK}.vector0_only(0, (0) + 1), DIR_C2V, 2048, 4)(fifo, 0, 0)"


def test_a_tpop_above_a_statement_it_does_not_depend_on_is_no_mutant():
    # TPOP(pipe, part, split) follows `x = 1`: moving it there changes nothing
    assert not [m for m in mutants(SOURCE) if m.line == 15 and m.name == "reorder"]


def test_a_multi_line_statement_keeps_the_lines_after_it():
    src = "def f(pipe):\n    TFREE(\n        pipe)\n    y = 2\n"
    (m,) = mutants(src)
    assert m.name == "drop-tfree" and m.source == "def f(pipe):\n    pass\n\n    y = 2\n"


DSL_SOURCE = textwrap.dedent('''\
    @pl.aiv
    def vector(buf, o, out):
        x = pl.TPOP(buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=s)
        pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, 0)
        y = pl.add(x, o)
        pl.TFREE(buf)
        pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, 0)
        pl.aiv_initialize_pipe(pl.DIR_C2V, 2048, out, slot_num=4)
''')


def test_a_dsl_kernel_gets_the_statement_operators_the_events_and_the_split_swap():
    """The DSL's events are mutated as wait_flag / set_flag are, and its split= (a
    compile-time constant, evaluated where the hook is bound) swapped; a pipe's
    configuration is not changed on one side (the DSL runs no expression on a core)."""
    found = [(m.line, m.name, m.change) for m in mutants(DSL_SOURCE, dsl=True)]
    assert found == [
        (3, "swap-split", "TPOP(..., s) -> the other split"),
        (4, "dup-wait", "pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, 0) twice"),
        (4, "drop-wait", "pl.wait_event(pl.PIPE_MTE2, pl.PIPE_V, 0) -> pass"),
        (6, "drop-tfree", "pl.TFREE(buf) -> pass"),
        (6, "tfree-before-use", "pl.TFREE(buf) above y = pl.add(x, o)"),
        (7, "dup-set", "pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, 0) twice"),
        (7, "drop-set", "pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, 0) -> pass")]
    by = {(m.line, m.name): m for m in mutants(DSL_SOURCE, dsl=True)}
    assert _diff(DSL_SOURCE, by[3, "swap-split"].source) == {3: (
        "    x = pl.TPOP(buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split=s)",
        f"    x = pl.TPOP(buf, pl.Tile[[8, 16], pl.f32, pl.Vec], split={HOOK}.other_split(s))")}
    assert _diff(DSL_SOURCE, by[7, "dup-set"].source) == {7: (
        "    pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, 0)",
        "    pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, 0); pl.record_event(pl.PIPE_V, pl.PIPE_MTE3, 0)")}


def test_a_tpop_is_not_moved_above_the_statement_that_binds_its_tile():
    # no kernel at all: the TPOP would name `part` before it exists (an UnboundLocalError)
    src = SOURCE.replace("    x = 1\n", "    part = Tile(TileType.Vec, float32, 8, 32)\n")
    assert "part = Tile(TileType.Vec, float32, 8, 32)\n    TPOP" in src
    assert not [m for m in mutants(src) if m.line == 15 and m.name == "reorder"]
