"""The hand-written flash-attention DSL pair (examples/dsl/fa_forward.py): it matches numpy on
both platforms and protocols with the checkers on, for the shapes of the mixed example;
`ptopipe check --static` passes every variant; the Cube really runs one key block ahead."""
import importlib.util
import os
import pathlib

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.errors import MismatchError

ROOT = pathlib.Path(__file__).resolve().parents[2]
FA_DSL = ROOT / "examples" / "dsl" / "fa_forward.py"


def _load(path):
    spec = importlib.util.spec_from_file_location(f"_fa_{path.parent.name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FA = _load(FA_DSL)
MIXED = _load(ROOT / "examples" / "mixed" / "fa_forward.py")


def test_same_variants_and_shapes_as_the_mixed_example():
    assert FA.VARIANTS == MIXED.VARIANTS
    assert (FA.D, FA.TQ, FA.TK) == (MIXED.D, MIXED.TQ, MIXED.TK)


@pytest.mark.parametrize("variant", sorted(FA.VARIANTS))
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("protocol", ["spec", "pto-isa"])
def test_fa_pair_matches_numpy(variant, platform, protocol, no_hang):
    res = FA.SCENARIO.check(variant, platform, protocol)       # checkers on, compared to golden
    assert res.summary.cycles > 0


def test_a_wrong_golden_is_caught():
    """check compares `out` with the golden: one element off fails."""
    sc = FA.SCENARIO

    def bad(args, **kw):
        out = FA.golden(args, **kw)["out"].copy()
        out[3, 7] += 1e-2
        return {"out": out}
    with pytest.raises(MismatchError):
        type(sc)(sc.name, sc.aic, sc.aiv, sc.make_args, bad, sc.variants,
                 rtol=1e-4, atol=1e-5).check("default")


@pytest.mark.parametrize("platform", ["a2a3", "a5"])
def test_check_static_passes_every_variant(platform, capsys):
    assert cli_main(["check", "--static", os.fspath(FA_DSL), "--variant", "all",
                     "--platform", platform]) == 0
    out = capsys.readouterr().out
    for v in FA.VARIANTS:
        assert f"PASS dsl_fa_forward[{v}] on {platform}/spec: VerifyPipes" in out


def test_cube_computes_the_next_s_before_it_waits_for_p():
    """The run-ahead is real: in the Cube's loop body the S push comes before the P pop."""
    from ptopipe.ir import print_program
    text = print_program(FA.KERNELS.program(SQ=32, SK=64))
    cube = text[text.index("def cube"):text.index("def vector")]
    assert cube.index("pl.TPUSH(s_acc") < cube.index("pl.TPOP(v2c_buf")
