"""``ptopipe.passes.static_check.verify_program``: the static checks of ``check --static``
for a library caller - VerifyPipes on the kernels a mixed function becomes, then the rest of
the compiler's checks."""
import importlib.util

from ptopipe.passes import verify_pipes
from ptopipe.passes.static_check import verify_program
from test_expand_mixed import TWO_V2C
from test_verify_pipes import SMALL_RESERVE_FILE


def _program(tmp_path, text: str, name: str):
    """The program a kernel file defines (``pl`` reads the kernels' source from the file)."""
    f = tmp_path / f"{name}.py"
    f.write_text(text)
    spec = importlib.util.spec_from_file_location(f"static_check_{name}", f)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, "PROGRAM", None) or mod.program


def test_the_compilers_checks_run_after_verify_pipes(tmp_path):
    prog = _program(tmp_path, SMALL_RESERVE_FILE, "small")
    assert verify_pipes.verify(prog.clone(), "a2a3") == []           # VerifyPipes alone: nothing
    (e,) = verify_program(prog, "a2a3")
    assert "reserve_buffer 'ring' has 2048 bytes but the pipe that uses it needs SLOT_NUM * SLOT_SIZE" in e.what
    assert e.where.startswith(f"{tmp_path / 'small.py'}:")


def test_a_mixed_function_is_verified_as_the_kernels_it_becomes(tmp_path):
    """The Cube holds two V2C tiles at once: more than SLOT_NUM 1 holds.  SLOT_NUM 2 holds
    them, under spec; under pto-isa on A5 (SyncPeriod 2) the first tile's TFREE would come after
    the second's TPOP and test its index - pto-isa's free index - sending a credit too many per
    pair (the free_index finding; this test used to call it clean), where SLOT_NUM 3
    (SyncPeriod 1) is clean."""
    prog = _program(tmp_path, TWO_V2C, "two")
    (e,) = verify_program(prog, "a2a3")
    assert "holds 2 slots of the V2C ring at once, more than its SLOT_NUM 1" in e.what
    fixed = _program(tmp_path, TWO_V2C.replace("slot_num=1", "slot_num=2"), "two_fixed")
    assert verify_program(fixed, "a5", "spec") == []
    (e,) = verify_program(fixed, "a5", "pto-isa")
    assert e.kind == "free_index" and "tests this TPOP's index" in e.what, e
    fixed = _program(tmp_path, TWO_V2C.replace("slot_num=1", "slot_num=3"), "two_fixed3")
    warnings = []
    assert verify_program(fixed, "a5", "pto-isa", warnings=warnings) == []
    assert all(isinstance(w, str) for w in warnings)


def test_the_program_checked_is_left_as_it_is(tmp_path):
    """The checks run on a copy: the same program is checked for another platform, or run,
    after (the front end would leave no mixed function in it, the back end addresses)."""
    from ptopipe.ir import print_ir
    for text, name in ((TWO_V2C.replace("slot_num=1", "slot_num=2"), "two_fixed"),
                       (SMALL_RESERVE_FILE, "small")):
        prog = _program(tmp_path, text, name)
        before = print_ir(prog)
        verify_program(prog, "a5")
        assert print_ir(prog) == before, name


BIG_TILES = '''
import ptopipe.language as pl

@pl.incore(split=pl.TILE_UP_DOWN)
def big(a: pl.Tensor[[128, 64], pl.f32], b: pl.Tensor[[64, 128], pl.f32],
        out: pl.Tensor[[128, 128], pl.f32]):
    b0 = pl.move(pl.load(b, [0, 0], [64, 128], space=pl.Mat), space=pl.Right)
    for i in pl.range(2):
        a0 = pl.move(pl.load(a, [i * 64, 0], [64, 64], space=pl.Mat), space=pl.Left)
        x = pl.move(pl.matmul(a0, b0), space=pl.Vec)
        pl.store(pl.adds(x, 1.0), [i * 64, 0], out)

program = pl.program(big, name="big")
'''


def test_the_back_end_checks_the_staging_ring_a_compile_sizes(tmp_path):
    """A2A3, default SLOT_NUM 8 of 32 KiB tiles: SLOT_NUM staging slots would not fit UB, the
    one slot the kernel holds at once (what VerifyPipes sizes the compiled ring to) does - no
    finding, as the compile (and the run) has none."""
    from ptopipe.passes.manager import compile_program
    prog = _program(tmp_path, BIG_TILES, "big")
    compile_program(prog.clone(), "a2a3", protocol="spec")
    assert verify_program(prog, "a2a3") == []
    assert verify_program(prog, "a2a3", "pto-isa") == []
