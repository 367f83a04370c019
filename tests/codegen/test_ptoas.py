"""The ``.pto`` ptopipe writes, through the real assembler (``PTOAS=/path/to/ptoas``; skipped
when unset, e.g. ``PTOAS=../shared/tools/ptoas``).

For every compiled example (examples/mixed, examples/dsl; each Scenario variant) on A2A3 and
A5, ptoas
(``--pto-arch=a3|a5``, its default level2; level3 for a program with events, whose tiles
the writer places) accepts the file - or rejects it where the writer
said it would (``write_pto``'s notes: a ring of a SlotNum ptoas does not build, the address
flow) - and the ``TPipe<FlagID, Dir, SlotSize, SlotNum, LocalSlotNum, nosplit>`` of each
kernel in ptoas's C++ is the one of ptopipe's own pto-isa C++ (``write_cpp``) of the same
program: the ring ptopipe simulated.  LocalSlotNum is compared where a ring is in GM (A2A3,
or a ``*_GM`` direction): on A5 a consumer-local ring stages nothing (pto-isa's A5 TPOP
reads LOCAL_SLOT_NUM only from a GM FIFO) and ptoas prints 2 for every one.
"""
import os
import pathlib
import re
import subprocess

import pytest

import ptopipe  # noqa: F401  (installs the mixed compiler)
from ptopipe.driver.programs import programs_of
from ptopipe.driver.loader import load_module
from ptopipe.codegen import write_cpp, write_pto
from ptopipe.codegen.pto_syntax import PLACED_LEVEL
from ptopipe.passes import compile_program

PTOAS = os.environ.get("PTOAS")
pytestmark = pytest.mark.skipif(not PTOAS, reason="PTOAS (a ptoas binary) is not set")

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(str(p.relative_to(ROOT)) for d in ("mixed", "dsl")
                  for p in (ROOT / "examples" / d).glob("*.py"))
#: every Scenario variant of every example (ring depths, splits, shapes, dtypes)
CASES = [(rel, v) for rel in EXAMPLES for v in load_module(str(ROOT / rel)).SCENARIO.variants]
ARCH = {"a2a3": "a3", "a5": "a5"}
#: a reason the writer notes -> what ptoas says when it rejects the file for it
REJECTS = {"SLOT_NUM": "expects 'slot_num' to be 4 or 8",
           "address flow": "is unknown",
           "ring in GM by its direction": "expects 'dir_mask' to be 1, 2, or 3",
           "pto.tcvt of": "'pto.tcvt' op expects src and dst to have compatible shapes"}
_KERNEL = re.compile(r"AICORE (?:inline )?void (\w+)\(")
_TPIPE = re.compile(r"TPipe<(\d+), Direction::(\w+), (\d+), (\d+), (\d+), (true|false)>")


def tpipes(cpp: str) -> dict:
    """``{kernel: (FlagID, Dir, SlotSize, SlotNum, LocalSlotNum, nosplit)}`` of a C++ file:
    the TPipe each kernel function uses (kernels without a pipe are left out)."""
    heads = list(_KERNEL.finditer(cpp))
    out = {}
    for h, nxt in zip(heads, heads[1:] + [None]):
        found = set(_TPIPE.findall(cpp, h.end(), nxt.start() if nxt else len(cpp)))
        if found:
            assert len(found) == 1, (h.group(1), found)
            out[h.group(1)] = found.pop()
    return out


def four_slots(text: str) -> str:
    """``text`` with every ring of 4 slots (LocalSlotNum at most 4): a SlotNum ptoas builds."""
    text = re.sub(r"(?<!local_)slot_num = \d+", "slot_num = 4", text)
    return re.sub(r"local_slot_num = (\d+)", lambda m: f"local_slot_num = {min(int(m.group(1)), 4)}", text)


def run_ptoas(pto: pathlib.Path, platform: str, *extra) -> subprocess.CompletedProcess:
    """ptoas on ``pto``, at level3 when the writer placed its tiles (it says so on its first line)."""
    cpp = pto.with_suffix(".cpp")
    if pto.read_text().startswith(f"// {PLACED_LEVEL}"):
        extra = (*extra, "--pto-level=level3")
    return subprocess.run([PTOAS, f"--pto-arch={ARCH[platform]}", *extra, str(pto), "-o", str(cpp)],
                          capture_output=True, text=True, timeout=300)


def _compiled(rel, platform, variant=None):
    return compile_program(programs_of(load_module(str(ROOT / rel)), variant)[0], platform)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("rel,variant", CASES)
def test_ptoas_takes_the_written_pto_and_builds_the_simulated_ring(rel, variant, platform, tmp_path):
    op = _compiled(rel, platform, variant)
    notes = []
    pto = tmp_path / "k.pto"
    pto.write_text(write_pto(op, platform, notes))
    r = run_ptoas(pto, platform)
    if notes:                       # the writer says ptoas rejects it: it must, for that reason
        assert r.returncode != 0, f"{rel}: ptoas took a .pto the writer noted {notes}"
        said = [REJECTS[k] for k in REJECTS if any(k in what for what, _ in notes)]
        assert any(s in r.stderr for s in said), (notes, r.stderr[-1500:])
        if all("SLOT_NUM" in what for what, _ in notes):    # the rest of the file is ptoas's
            pto.write_text(four_slots(pto.read_text()))
            r = run_ptoas(pto, platform)
            assert r.returncode == 0, f"{rel} with a 4-slot ring:\n{r.stderr[-3000:]}"
        return
    assert r.returncode == 0, f"{rel} on {platform}: ptoas rejected the .pto:\n{r.stderr[-3000:]}"
    got = tpipes(pto.with_suffix(".cpp").read_text())
    want = tpipes(write_cpp(op, platform))
    assert got.keys() == want.keys() and got, (got, want)
    for kernel, ptoas_pipe in got.items():
        mine = want[kernel]
        in_gm = platform == "a2a3" or ptoas_pipe[1].endswith("_GM")
        keep = range(6) if in_gm else (0, 1, 2, 3, 5)
        assert [ptoas_pipe[i] for i in keep] == [mine[i] for i in keep], (kernel, ptoas_pipe, mine)


PADDED = [("up_down_cols", "a5"), ("left_right_rows", "a2a3"), ("left_right_rows", "a5")]


@pytest.mark.parametrize("case,platform", PADDED)
def test_ptoas_takes_tiles_declared_larger_than_their_data(case, platform, tmp_path):
    """Tiles pto-isa declares padded (tests/padded_tiles.py): the Mat tile TMOVed into a padded
    Left / Right tile in the destination's static shape (ptoas: "mat-source tmov ... matching
    src/dst shapes"), an A5 popped part at its slot's pitch and its copy; ptoas builds the ring
    ptopipe's C++ declares (its SlotSize the static part the Vector core binds)."""
    from padded_tiles import case as padded
    op = compile_program(padded(case)[0], platform, protocol="pto-isa")
    notes = []
    pto = tmp_path / "k.pto"
    pto.write_text(write_pto(op, platform, notes))
    assert notes == []
    r = run_ptoas(pto, platform)
    assert r.returncode == 0, f"{case} on {platform}: ptoas rejected the .pto:\n{r.stderr[-3000:]}"
    got, want = tpipes(pto.with_suffix(".cpp").read_text()), tpipes(write_cpp(op, platform))
    assert got.keys() == want.keys() and got, (got, want)
    assert all(got[k][2] == want[k][2] for k in got), (got, want)


def test_tpipes_reads_each_kernels_pipe():
    """The parser the comparison rests on: per kernel, its one TPipe."""
    cpp = ("static AICORE void k_aic(__gm__ float* v1) {\n  auto v2 = TPipe<0, Direction::DIR_C2V, "
           "2048, 4, 4, false>(v1, 0, 0);\n}\nstatic AICORE void k_aiv() {\n  TPOP<TPipe<1, "
           "Direction::DIR_BOTH, 1024, 8, 2, true>, Tile<...>>(v);\n}\nstatic AICORE void entry() {}\n")
    assert tpipes(cpp) == {"k_aic": ("0", "DIR_C2V", "2048", "4", "4", "false"),
                           "k_aiv": ("1", "DIR_BOTH", "1024", "8", "2", "true")}


def test_a_ring_ptoas_cannot_build_is_noted_and_rejected(tmp_path):
    """A 2-slot ring (s8_manual_sync's m128_d2): the writer notes it, and ptoas does reject it."""
    op = _compiled("examples/dsl/s8_manual_sync.py", "a2a3", "m128_d2")
    notes = []
    pto = tmp_path / "k.pto"
    pto.write_text(write_pto(op, "a2a3", notes))
    assert [w for w, _ in notes] == ["ptoas builds rings of SLOT_NUM 4 or 8 only: this ring has 2 slots"]
    r = run_ptoas(pto, "a2a3")
    assert r.returncode != 0 and "expects 'slot_num' to be 4 or 8" in r.stderr
    assert "slot_num = 2, local_slot_num = 2" in pto.read_text()
    pto.write_text(four_slots(pto.read_text()))
    assert "slot_num = 4, local_slot_num = 2" in pto.read_text()
    assert run_ptoas(pto, "a2a3").returncode == 0       # that was the only obstacle


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_ptoas_takes_stores_in_the_tensors_rank_and_empty_lane1_pushes(platform, tmp_path):
    """A store into a 1-D / 3-D tensor (partition sizes in the tensor's rank), and a no-split
    V2C Vector kernel: on A2A3 both lanes push, the tile empty on AIV1 (``alloc_tile valid_row =
    ...``), and ptoas gives it pto-isa's dynamic valid shape; on A5 AIV0 alone pushes (the
    pipe's one lane) its tile of static shape.  ptoas takes both."""
    from test_pto import _views_of_ranks
    from test_expand_mixed_nosplit import _v2c_program
    import ptopipe.language as pl
    for name, prog in (("ranks", pl.program(_views_of_ranks, name="ranks")), ("v2c", _v2c_program())):
        pto = tmp_path / f"{name}.pto"
        pto.write_text(write_pto(compile_program(prog, platform), platform))
        r = run_ptoas(pto, platform)
        assert r.returncode == 0, r.stderr[-2000:]
    cpp = (tmp_path / "v2c.cpp").read_text()
    valid = "-1, -1" if platform == "a2a3" else "16, 16"
    assert re.search(rf"TPUSH<TPipe<[^>]*>, Tile<TileType::Vec, float, 16, 16, BLayout::RowMajor, {valid},", cpp)


def test_the_default_a5_no_split_pto_runs_after_ptoas(tmp_path):
    """`compile --emit pto` (pto-isa by default) of the shipped A5 TILE_NO_SPLIT example: ptoas's
    C++ of it runs on ptopipe's headers under pto-isa (AIV0 the pipe's one lane) to numpy's numbers."""
    import numpy as np
    from ptopipe.cli import main as cli_main
    from ptopipe.cpp import run_cpp
    from ptopipe.isa.scenario import data_rng
    rel = "examples/mixed/s2_cv_nosplit.py"
    pto = tmp_path / "s2.pto"
    assert cli_main(["compile", str(ROOT / rel), "--emit", "pto", "--platform", "a5", "-o", str(pto)]) == 0
    assert run_ptoas(pto, "a5").returncode == 0
    sc = load_module(str(ROOT / rel)).SCENARIO
    args = sc.make_args(data_rng(0), **sc.params("default"))
    # ptoas names the parameters v1, v2, ... in the entry's order
    got = run_cpp(str(pto.with_suffix(".cpp")), {f"v{i + 1}": args[k] for i, k in enumerate(("a", "b", "bias", "out",
                                                                                               "gm_slot_buffer"))},
                  platform="a5", protocol="pto-isa")
    np.testing.assert_allclose(got["v4"], sc.golden(args, **sc.params("default"))["out"], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_a_cast_the_writer_notes_is_one_ptoas_rejects(platform, tmp_path):
    """The narrow f32 -> f16 cast the writer notes (two static shapes): ptoas rejects it so."""
    import ptopipe.language as pl
    from test_pto_ptoas_spelling import narrow_cast
    notes = []
    pto = tmp_path / "nc.pto"
    pto.write_text(write_pto(compile_program(pl.program(narrow_cast, name="nc"), platform), platform, notes))
    assert len(notes) == 1 and notes[0][0].startswith("pto.tcvt of")
    r = run_ptoas(pto, platform)
    assert r.returncode != 0 and REJECTS["pto.tcvt of"] in r.stderr, r.stderr[-2000:]


def test_an_a5_pto_isa_kernel_storing_a_popped_tile_runs_after_ptoas(tmp_path):
    """An A5 pto-isa kernel that stores the tile it popped: the compiler's own MTE3 -> V event
    before the TFREE leaves the file level2 (ptoas places the tiles), and ptoas's C++ of it runs
    as an auto-synchronised kernel (that event orders the free, not the kernel's pipes) to numpy's
    numbers."""
    import numpy as np
    import ptopipe.language as pl
    from ptopipe.cpp import run_cpp
    from test_pto import _store_popped
    pto = tmp_path / "sp.pto"
    pto.write_text(write_pto(compile_program(pl.program(_store_popped, name="sp"), "a5", protocol="pto-isa"), "a5"))
    assert not pto.read_text().startswith("//") and "{ptopipe.free_order}" in pto.read_text()
    r = run_ptoas(pto, "a5")
    assert r.returncode == 0, r.stderr[-2000:]
    rng = np.random.default_rng(2)
    a, b = (rng.integers(-3, 4, (16, 16)).astype(np.float32) for _ in range(2))
    got = run_cpp(str(pto.with_suffix(".cpp")), dict(v1=a, v2=b, v3=np.zeros((16, 16), np.float32),
                                                     v4=np.zeros(8192, np.uint8)), platform="a5", protocol="pto-isa")
    np.testing.assert_array_equal(got["v3"], a @ b)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_two_popped_tiles_held_at_once_stay_two_after_ptoas(platform, tmp_path):
    """ptoas's C++ of a kernel holding two popped tiles of one type keeps two Tile variables (the
    writer's second is an alloc_tile; two pto.declare_tile became one) and computes numpy's numbers."""
    import numpy as np
    import ptopipe.language as pl
    from ptopipe.cpp import run_cpp
    from test_pto import HOLDS_UNDER, _two_held, two_held_args
    protocol = HOLDS_UNDER[platform]        # (A5 under pto-isa frees each tile before the next TPOP)
    pto = tmp_path / "th.pto"
    pto.write_text(write_pto(compile_program(pl.program(_two_held, name="th"), platform, protocol=protocol), platform))
    r = run_ptoas(pto, platform)
    assert r.returncode == 0, r.stderr[-2000:]
    cpp = pto.with_suffix(".cpp").read_text()
    pops = re.findall(r"TPOP<TPipe<[^>]*>, Tile<[^>]*>, TileSplitAxis::\w+>\(\w+, (\w+)\);", cpp)
    assert len(pops) == 2 and pops[0] != pops[1], pops
    args, want = two_held_args(np.random.default_rng(4))
    gm = np.zeros(16384, np.uint8)
    got = run_cpp(str(pto.with_suffix(".cpp")), {"v1": args["a"], "v2": args["b1"], "v3": args["b2"], "v4": args["out"],
                                                 "v5": gm}, platform=platform, protocol=protocol)
    np.testing.assert_array_equal(got["v4"], want)


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_ptoas_takes_an_i32_parameter_in_index_arithmetic(platform, tmp_path):
    """A dynamic trip count and a clamped window of an i32 row count (``(n + 15) // 16``,
    ``pl.min(i * 16, n - 16)``): the writer casts ``%n`` to index where it meets index values,
    and ptoas takes the file (it refused ``arith.addi %n, %c15 : index`` with "use of value '%n'
    expects different type than prior uses")."""
    from test_pto_ptoas_spelling import _dynamic_rows_program
    pto = tmp_path / "k.pto"
    pto.write_text(write_pto(compile_program(_dynamic_rows_program(), platform), platform))
    r = run_ptoas(pto, platform)
    assert r.returncode == 0, r.stderr[-3000:]
