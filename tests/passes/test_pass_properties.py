"""The typed pass contracts: every pass's REQUIRED / PRODUCED / INVALIDATED IR properties,
the PassManager refusing a pipeline that breaks a requirement before anything runs, the
verifier of each property (it accepts the compiled examples and rejects an IR without the
property), a pass whose output lacks what it claims, and invalidation."""
import dataclasses
import importlib.util
import pathlib
from types import SimpleNamespace

import pytest

from ptopipe.cli import main as cli_main
from ptopipe.driver.programs import programs_of
from ptopipe.errors import CompileError
from ptopipe.ir.vocab import AUTO
from ptopipe.passes import (REGISTRY, IRProperty, PassContext, PassInfo, PassManager, compile_program,
                            default_pipeline, manager, register)
from ptopipe.passes.properties import VERIFIERS, verify_property
from ptopipe.passes.util import functions, init_ops

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted(ROOT.glob("examples/mixed/*.py")) + sorted(ROOT.glob("examples/dsl/*.py"))
BAD = "resolve-peers,allocate-flags,lower-platform,expand-mixed,insert-tfree,validate"
P = IRProperty


def _load(path: pathlib.Path):
    name = f"props_{path.parent.name}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _programs():
    return [pytest.param(prog, id=f"{p.parent.name}/{p.stem}:{prog.name}")
            for p in EXAMPLES for prog in programs_of(_load(p))]


PROGRAMS = _programs()


def _s1_mixed():
    return programs_of(_load(ROOT / "examples/mixed/s1_cv_split.py"))[0]


def _s1_pair():
    return programs_of(_load(ROOT / "examples/dsl/s1_cv_split.py"))[0]


@pytest.fixture
def ran(monkeypatch):
    """The names of the passes that ran (every registered pass is wrapped)."""
    seen = []
    for name, info in list(REGISTRY.items()):
        def spy(program, ctx, _run=info.run, _name=name):
            seen.append(_name)
            return _run(program, ctx)
        monkeypatch.setitem(REGISTRY, name, dataclasses.replace(info, run=spy))
    return seen


@pytest.fixture
def registry():
    saved = dict(REGISTRY)
    yield REGISTRY
    REGISTRY.clear()
    REGISTRY.update(saved)


# -- declarations ---------------------------------------------------------------------------
def test_every_pass_declares_frozen_typed_property_sets():
    for info in REGISTRY.values():
        for sets in (info.required, info.produced, info.invalidated):
            assert isinstance(sets, frozenset) and all(isinstance(x, IRProperty) for x in sets), info.name
    made = {x for i in REGISTRY.values() for x in i.produced}
    assert made == set(IRProperty), "every property is made by some pass"
    assert set(VERIFIERS) == set(IRProperty), "every property has a verifier"


def test_a_property_spelled_as_a_string_is_refused(registry):
    with pytest.raises(CompileError) as ei:
        register(SimpleNamespace(NAME="stringly", PRODUCED=frozenset({"flags-allocated"}),
                                 run=lambda p, c: p))
    assert ei.value.what == "pass 'stringly' declares produced 'flags-allocated', which is not an IRProperty member"
    assert "IRProperty.FLAGS_ALLOCATED" in ei.value.fix
    with pytest.raises(CompileError, match="declares REQUIRES / PRODUCES, which nothing reads"):
        register(SimpleNamespace(NAME="old", REQUIRES=(), PRODUCES=("x",), run=lambda p, c: p))
    assert "stringly" not in REGISTRY and "old" not in REGISTRY


# -- requirements, before anything runs -----------------------------------------------------
def test_the_pipeline_that_numbers_flags_before_the_split_is_refused(ran):
    """resolve-peers and allocate-flags work on the AIC / AIV kernels' rings and pipes, which
    a mixed function does not have until expand-mixed makes them: run first they see none,
    and the pipes expand-mixed makes later keep ``flag_id=None``.  resolve-peers comes
    first, so the error names it; allocate-flags' missing property (the same one) is in the
    details, and the fix names the pass that produces it.  Nothing runs."""
    with pytest.raises(CompileError) as ei:
        compile_program(_s1_mixed(), "a2a3", BAD)
    e = ei.value
    assert e.what == ("pass 'resolve-peers' requires 'mixed-kernels-expanded', which the input program "
                      "does not have (mixed @pl.incore function 's1' is not split into AIC / AIV kernels) "
                      "and no earlier pass of the pipeline produces")
    assert e.fix == "run 'expand-mixed' before 'resolve-peers'"
    assert e.details.startswith("also: pass 'allocate-flags' requires 'mixed-kernels-expanded' "
                                "(run 'expand-mixed' before 'allocate-flags')")
    assert ran == []
    # what the requirement prevents: told that the input is split, the pipeline runs and its
    # pipes are left without flags
    pm = PassManager(BAD, available=(P.MIXED_KERNELS_EXPANDED,), verify_properties=False)
    op = pm.run(_s1_mixed().clone(), PassContext("a2a3"))
    inits = [i for f in functions(op) for i in init_ops(f)]
    assert inits and all(i.attributes.get("flag_id") is None for i in inits)
    # ... a claim property verification checks on the input
    with pytest.raises(CompileError) as ei:
        PassManager(BAD, available=("mixed-kernels-expanded",)).run(_s1_mixed().clone(), PassContext())
    assert ei.value.what == ("the input program does not have 'mixed-kernels-expanded', which the pipeline "
                             "is told it has (available=): mixed @pl.incore function 's1' is not split "
                             "into AIC / AIV kernels")


def test_available_names_a_property():
    with pytest.raises(CompileError) as ei:
        PassManager("lower-platform", available=("peers-resolved", "flags-alocated"))
    assert ei.value.what == "'flags-alocated' is not an IR property"
    assert "flags-allocated" in ei.value.fix


def test_a_split_input_has_the_property_and_an_unsplit_one_is_checked_before_running(ran):
    PassManager("resolve-peers,allocate-flags,lower-platform").run(_s1_pair().clone(), PassContext())
    assert ran == ["resolve-peers", "allocate-flags", "lower-platform"]
    ran.clear()
    with pytest.raises(CompileError, match="pass 'insert-tfree' requires 'mixed-kernels-expanded'"):
        PassManager("insert-tfree").run(_s1_mixed().clone(), PassContext())
    assert ran == []


def test_an_invalidated_property_must_be_produced_again(ran):
    """expand-mixed makes new kernels whose pipes have no flags yet: it invalidates
    flags-allocated, so lower-platform after it needs allocate-flags again."""
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers,allocate-flags,expand-mixed,lower-platform")
    assert ei.value.what == ("pass 'lower-platform' requires 'peers-resolved', which pass 'expand-mixed' "
                             "before it invalidates")
    assert ei.value.fix == "run 'resolve-peers' again after 'expand-mixed'"
    assert ei.value.details == ("also: pass 'lower-platform' requires 'flags-allocated' "
                                "(run 'allocate-flags' again after 'expand-mixed')")
    pm = PassManager("resolve-peers,allocate-flags,expand-mixed,resolve-peers,allocate-flags,lower-platform")
    assert P.FLAGS_ALLOCATED in pm.provides and P.PLATFORM_LOWERED in pm.provides
    pm.run(_s1_pair().clone(), PassContext())
    assert ran[-1] == "lower-platform"


def test_a_pass_that_invalidates_removes_the_property(registry):
    register(PassInfo("renumber", lambda p, c: p, invalidated=frozenset({P.FLAGS_ALLOCATED})))
    pm = PassManager("resolve-peers,allocate-flags,renumber")
    assert P.FLAGS_ALLOCATED not in pm.provides and P.PEERS_RESOLVED in pm.provides
    with pytest.raises(CompileError, match="requires 'flags-allocated', which pass 'renumber' before it "
                                           "invalidates"):
        PassManager("resolve-peers,allocate-flags,renumber,lower-platform")
    PassManager("resolve-peers,allocate-flags,renumber,allocate-flags,lower-platform")


# -- the verifiers on the compiled examples --------------------------------------------------
@pytest.mark.parametrize("platform", ["a2a3", "a5"])
@pytest.mark.parametrize("prog", PROGRAMS)
def test_each_pass_has_what_it_claims_on_the_examples(prog, platform):
    """Each pass of the default pipeline, run alone on the previous one's output: every
    property it declares produced verifies on its output, and so does every property the
    pipeline still has at the end."""
    op, ctx, have = prog.clone(), PassContext(platform), set()
    for name in default_pipeline():
        pm = PassManager([name], available=have, verify_properties=False)
        op = pm.run(op, ctx)
        for prop in REGISTRY[name].produced:
            assert verify_property(prop, op, ctx) == [], (name, prop)
        have = set(pm.provides)
    assert have == set(IRProperty)
    for prop in have:
        assert verify_property(prop, op, ctx) == [], prop


def _compiled(platform="a2a3"):
    return compile_program(_s1_mixed(), platform)


def _drop_flags(op):
    for f in functions(op):
        for i in init_ops(f):
            i.attributes["flag_id"] = None


def _first(op, name):
    return next(x for f in functions(op) for x in f.walk() if x.name == name)


def _erase_tfrees(op):
    for f in functions(op):
        for x in [x for x in f.walk() if x.name == "pl.tfree"]:
            x.erase()


def _auto_base(op):
    _first(op, "pl.reserve_buffer").attributes["base"] = AUTO


def _move_import(op):
    _first(op, "pl.import_peer_buffer").attributes["base"] += 32


def _relower(op):
    op.attributes["platform"] = "a5"


def _zero_slot_size(op):
    for f in functions(op):
        for i in init_ops(f):
            i.attributes["slot_size"] = 0


def _merge_mixed(op):
    functions(op)[0].attributes["kind"] = type(functions(op)[0].attributes["kind"]).InCore


#: a change of a compiled program that takes each property away, and what its verifier says
BREAK = {
    P.MIXED_KERNELS_EXPANDED: (_merge_mixed, "is not split into AIC / AIV kernels"),
    P.TFREES_INSERTED: (_erase_tfrees, "'s1_aiv' pops from the DIR_C2V ring but frees none of its slots"),
    P.PIPES_VERIFIED: (_erase_tfrees, "holds 2 slots of the C2V ring at once, more than its LocalSlotNum 1"),
    P.MEMORY_ALLOCATED: (_auto_base, "has no integer base"),
    P.PEERS_RESOLVED: (_move_import, "carries base="),
    P.FLAGS_ALLOCATED: (_drop_flags, "has no integer flag_id"),
    P.PLATFORM_LOWERED: (_relower, "lowered for platform 'a5', not 'a2a3'"),
    P.VALIDATED: (_zero_slot_size, "SLOT_SIZE 0 must be a positive number of bytes"),
}


@pytest.mark.parametrize("prop", list(IRProperty), ids=lambda p: p.value)
def test_each_verifier_rejects_an_ir_without_its_property(prop):
    op, ctx = _compiled(), PassContext("a2a3")
    assert verify_property(prop, op, ctx) == []
    breaker, says = BREAK[prop]
    breaker(op)
    problems = verify_property(prop, op, ctx)
    assert problems and says in problems[0], problems


def test_passes_that_move_tiles_invalidate_the_memory_plan():
    """A pass that changes how long tiles live (a handed-over tile of a pipelined loop lives
    one iteration longer) may make them no longer fit: memory-allocated must be made again."""
    fa = programs_of(_load(ROOT / "examples/mixed/fa_forward.py"))[0]
    front = "expand-mixed,insert-tfree,allocate-memory,pipeline-cross-core-loops"
    assert P.MEMORY_ALLOCATED not in PassManager(front).provides
    op = PassManager(front + ",allocate-memory").run(fa.clone(), PassContext("a5"))
    assert verify_property(P.MEMORY_ALLOCATED, op, PassContext("a5")) == []


def test_memory_allocated_checks_that_the_tiles_fit(monkeypatch):
    """The tiles the allocator places for the IR must fit the platform's memories (a
    platform of 64-byte memories here)."""
    from ptopipe.passes import properties
    op, ctx = _compiled("a5"), PassContext("a5")
    assert verify_property(P.MEMORY_ALLOCATED, op, ctx) == []
    tiny = SimpleNamespace(name="tiny", mem_size=lambda space: 64, tile_space=lambda space: 64)
    monkeypatch.setattr(properties, "platform_of", lambda ctx: tiny)
    problems = verify_property(P.MEMORY_ALLOCATED, op, ctx)
    assert problems and all("at their peak but tiny has 64 bytes" in p for p in problems), problems


# -- a pass that lies --------------------------------------------------------------------------
def _lying_allocate_flags(monkeypatch):
    info = REGISTRY["allocate-flags"]

    def run(program, ctx):
        out = info.run(program, ctx)
        _drop_flags(out)
        return out
    monkeypatch.setitem(REGISTRY, "allocate-flags", dataclasses.replace(info, run=run))


def test_a_pass_whose_output_lacks_a_property_it_claims_is_named(monkeypatch):
    _lying_allocate_flags(monkeypatch)
    with pytest.raises(CompileError) as ei:
        compile_program(_s1_mixed(), "a2a3")
    e = ei.value
    assert e.what.startswith("pass 'allocate-flags' claims 'flags-allocated', but its output lacks it: "
                             "the pl.aic_initialize_pipe of 's1_aic' has no integer flag_id (flag_id=None)")
    assert e.fix.startswith("this is a bug of pass 'allocate-flags'")


def test_a_pass_that_breaks_a_property_it_keeps_is_named(registry):
    register(PassInfo("unflag", lambda p, c: (_drop_flags(p), p)[1]))
    with pytest.raises(CompileError) as ei:
        PassManager("resolve-peers,allocate-flags,unflag", verify_properties=True).run(
            _s1_pair().clone(), PassContext())
    assert ei.value.what.startswith("pass 'unflag' breaks 'flags-allocated', which it does not declare "
                                    "invalidated: ")
    PassManager("resolve-peers,allocate-flags,unflag", verify_properties=False).run(
        _s1_pair().clone(), PassContext())


def test_cli_verify_each_catches_the_lie(monkeypatch, capsys):
    _lying_allocate_flags(monkeypatch)
    monkeypatch.delenv(manager.VERIFY_EACH_ENV)                     # as outside the tests
    path = str(ROOT / "examples/mixed/s1_cv_split.py")
    assert cli_main(["compile", path]) == 0
    out, _err = capsys.readouterr()
    assert "flag_id = none" in out                                 # the lie goes through
    assert cli_main(["compile", path, "--verify-each"]) != 0
    _out, err = capsys.readouterr()
    assert "pass 'allocate-flags' claims 'flags-allocated', but its output lacks it" in err


def test_a_pass_that_breaks_the_pipe_proof_is_named_though_it_is_checked_at_the_end(registry, ran):
    """pipes-verified (a whole-program proof) is checked once where the pipeline ends; when it
    fails there the pipeline runs again from its input to name the pass that broke it, as the
    cheaper properties are named right after it."""
    def unpush(program, ctx):
        for f in functions(program):
            for x in [x for x in f.walk() if x.name == "pl.tpush"]:
                x.erase()
        return program
    register(PassInfo("unpush", unpush))
    pipeline = "expand-mixed,insert-tfree,verify-pipes,unpush,allocate-memory"
    with pytest.raises(CompileError) as ei:
        PassManager(pipeline, verify_properties=True).run(_s1_mixed().clone(), PassContext("a2a3"))
    assert ei.value.what.startswith("pass 'unpush' breaks 'pipes-verified', which it does not declare "
                                    "invalidated: ")
    assert ran.count("verify-pipes") == 2                     # the second run names the pass
    ran.clear()
    PassManager("expand-mixed,insert-tfree,verify-pipes,allocate-memory", verify_properties=True).run(
        _s1_mixed().clone(), PassContext("a2a3"))
    assert ran.count("verify-pipes") == 1
