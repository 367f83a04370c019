"""A fix told to a .pto user is in the file's spelling - attributes (`slot_num = 4`,
`auto = true`), `pto.reserve_buffer {...}`, ptoas's events
(`pto.set_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE1>, #pto.event<EVENT_IDn>]`) - whether the static passes or the run
find the problem (one mechanism: ``pto_load.pto_words``), and says what fits the file: an
`auto = true` reserve that overruns its memory needs fewer bytes, not another base."""
import pathlib

import pytest

from ptopipe.codegen.pto_load import load_pto, run_pto
from ptopipe.errors import CompileError, DataRaceError
from ptopipe.ir.layout import reserve_fit_problem

ROOT = pathlib.Path(__file__).resolve().parents[2]
SYNC = (ROOT / "tests" / "pto_corpus" / "c_mm_sync_flags_a3.pto").read_text()
NOSPLIT = (ROOT / "tests" / "pto" / "nosplit_c2v_a5.pto").read_text()
_EVENTS = ("      pto.set_flag[<PIPE_MTE2>, <PIPE_MTE1>, <EVENT_ID0>]\n"
           "      pto.wait_flag[<PIPE_MTE2>, <PIPE_MTE1>, <EVENT_ID0>]\n")


def test_a_manual_sync_race_of_a_pto_run_suggests_ptoas_events():
    assert _EVENTS in SYNC
    with pytest.raises(DataRaceError) as ei:
        run_pto(text=SYNC.replace(_EVENTS, "", 1), static=False, sync="manual")
    fix = ei.value.fix
    assert "pto.set_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE1>, #pto.event<EVENT_IDn>]" in fix
    assert "pto.wait_flag[#pto.pipe<PIPE_MTE2>, #pto.pipe<PIPE_MTE1>, #pto.event<EVENT_IDn>]" in fix
    assert "pto.barrier #pto.pipe<PIPE_ALL>" in fix
    assert "set_flag(" not in fix and "set_flag(" not in ei.value.details


def test_a_short_reserve_fix_is_spelled_as_attributes():
    text = NOSPLIT.replace('name = "c2v_fifo", size = 2048', 'name = "c2v_fifo", size = 1024', 1)
    with pytest.raises(CompileError) as ei:
        load_pto("k.pto", text=text)
    assert ei.value.fix.startswith('pto.reserve_buffer {name = "c2v_fifo", size = SLOT_NUM * SLOT_SIZE, ...}')


def test_an_auto_reserve_past_its_memory_needs_fewer_bytes_not_a_base():
    text = NOSPLIT.replace('name = "c2v_fifo", size = 2048', 'name = "c2v_fifo", size = 262144', 1)
    with pytest.raises(CompileError) as ei:
        load_pto("k.pto", text=text)
    assert "its base was chosen after the function's tiles" in ei.value.what
    assert ei.value.fix.startswith("reserve at most ") and "base" not in ei.value.fix
    assert "auto" not in ei.value.fix


def test_a_given_base_past_its_memory_is_told_to_move():
    what, fix = reserve_fit_problem("r", 0x800, 1024, "a5", "UB", 2048)
    assert fix == "lower its base: 1024 bytes fit at a base up to 0x400 (or base=pl.AUTO)"
