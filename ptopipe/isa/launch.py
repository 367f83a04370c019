"""Launching kernels: ``run(aic=..., aiv=..., args=...)``.

``run`` plays the orchestration role: it lays the numpy arguments out in GM, passes each
kernel a :class:`GlobalTensor` per array (scalars as they are), runs the Cube kernel and
the Vector kernel (on both sub-blocks) on a simulated :class:`~ptopipe.sim.Cluster`, and
returns the GM contents of every array argument plus a run summary; with ``blocks=N`` it
runs N blocks, each on a cluster of its own sharing one GM (:mod:`.blocks` checks them
against each other), and with ``launches=K`` it runs them K times.  The golden comparison lives in :mod:`.golden`.
"""
from __future__ import annotations

import inspect
from inspect import CO_VARKEYWORDS
import time
from dataclasses import dataclass, field
from types import FunctionType
from collections.abc import Mapping
from typing import Callable

import numpy as np

from ..arch import PipeUnit, Platform, get_platform
from ..arch.dtypes import is_element_type
from .debug import flush_prints, prints
from ..errors import (CompileError, ConfigError, DeadlockError, LeakError, ParseError, PtoPipeError, user_line,
                      with_article)
from ..sim import Cluster, CoreState, GmArg, RunContext, gm_layout
from ..sim.bounds import Deadline, deadline, expired_before
from ..sim.memory import MemoryPool
from ..sim.location import raised_at
from ..sim.periodic import applies
from ..sim.determinacy import Determinacy, outside
from ..sim.pipesync import event_leaks, event_words, watch_gm
from .blocks import checker_class, cross_block_races, written
from .checks import flag_leaks
from .context import refuse_nested_run
from .golden import compare, compare_launches
from .skip import take_whole
from ..protocol.versions import parse as parse_protocol
from .pipe import leaks
from .pipe.diagnostics import held_repops, unpaired_frees, zeroed_pops
from .pipe.teardown import (TEARDOWN_LEAK_FIX, carried_credit, describe_row, explain_carried, ledger,
                            teardown)
from .tensor import GlobalTensor, GMPtr


#: the largest gm_buffer: a GM of 64 GiB, more than any Ascend device has
GM_BUFFER_MAX = 1 << 36


def gm_buffer(nbytes: int) -> np.ndarray:
    """A zeroed GM buffer argument of ``nbytes`` bytes (e.g. a GM_SLOT_BUFFER)."""
    n = nbytes if isinstance(nbytes, (int, np.integer)) and not isinstance(nbytes, bool) else None
    if n is None or n < 0 or n > GM_BUFFER_MAX:
        from ..sim.location import user_loc
        raise ConfigError(f"gm_buffer({nbytes!r}): a buffer size is a non-negative integer number of bytes"
                          + (f", at most {GM_BUFFER_MAX:,} (64 GiB)" if n is not None and n > 0 else ""),
                          where=str(user_loc() or "gm_buffer"),
                          fix="give the size in bytes, e.g. gm_buffer(slot_num * slot_size), slot_num >= 1")
    try:
        return np.zeros(int(n), dtype=np.uint8)
    except MemoryError:
        from ..sim.location import user_loc
        raise ConfigError(f"gm_buffer({nbytes!r}): this machine cannot hold {int(n):,} bytes",
                          where=str(user_loc() or "gm_buffer"), fix="give a smaller buffer") from None


def _protocol(p) -> tuple:
    """(Protocol, pto-isa release or None) of ``run(protocol=...)`` (protocol.versions.parse)."""
    return parse_protocol(p)


def kernels_problem(aic, aiv) -> "tuple[str, str] | None":
    """(what, fix) of what is wrong with ``aic`` / ``aiv`` as the kernels of a run - a kernel
    is a callable or None (that core runs nothing); ``aiv`` one kernel (both Vector cores run
    it) or a pair ``(aiv0, aiv1)`` - or None when nothing is (``run`` and ``Scenario`` ask)."""
    fix = "pass the kernel function (or None for a core that runs nothing)"

    def problem(what: str, k):
        if k is None:
            return None
        if not callable(k):
            return f"{what} is {k!r}, not a kernel function", fix
        # a callable that is no kernel function says so (a @pl kernel: compiled from its source)
        said = getattr(k, "not_a_kernel_function", None)
        return (f"{what} is {said[0]}", said[1]) if said else None

    bad = problem("aic", aic)
    if bad:
        return bad
    if isinstance(aiv, (tuple, list)):
        if not 1 <= len(aiv) <= 2:
            return (f"aiv takes one kernel or a pair (aiv0, aiv1), got {len(aiv)}",
                    "pass aiv=vector (both Vector cores run it) or aiv=(vector0, vector1); a cluster has "
                    "two Vector cores")
        return next((b for b in (problem(f"aiv[{i}]", k) for i, k in enumerate(aiv)) if b), None)
    return problem("aiv", aiv)


def lone_vector_lanes(reads_subblock: bool, call: str,
                      kernel: str = "a Vector kernel with no Cube kernel") -> "tuple[int, str]":
    """(Vector cores, the note saying so) of a Vector kernel with no Cube kernel beside it,
    in every front end: it runs on AIV0 alone, as the device runs a Vector-only launch (one
    Vector core per block: pto-isa's single-core tests read and write their output, and on
    both sub-blocks they would race themselves) - unless it reads its sub-block index
    (``call``, in its front end's spelling): a kernel that splits its work between the two
    sub-blocks is written for both, and both run it.  ``kernel`` names such a kernel in the
    front end's words."""
    if reads_subblock:
        return 2, f"{kernel} that reads its sub-block index ({call}): run on both Vector cores, AIV0 and AIV1"
    return 1, f"{kernel}, and no {call} in the file: run on AIV0, one Vector core, as a Vector-only launch runs it"


#: the switches of ``run`` (True / False)
_SWITCHES = ("trace", "leak_check", "timing", "checks", "record_writes", "causal", "echo_prints", "fast_paths",
             "determinacy")


def _check_call(aic, aiv, args, gm_extra, schedule_seed, switches: dict) -> None:
    """The arguments of a ``run`` call that it would otherwise take the wrong way (a string
    switch is true) or fail on deep inside (a raw Python error): a ConfigError at the
    caller's line for each."""
    where = user_line()
    bad = kernels_problem(aic, aiv)
    if bad is not None:
        raise ConfigError(f"run(): {bad[0]}", where=where, fix=bad[1])
    if args is not None and not isinstance(args, Mapping):
        raise ConfigError(f"run(): args is {with_article(type(args).__name__)}, not a dict of the kernels' "
                          "arguments", where=where,
                          fix="pass args={parameter name: value}: numpy arrays (GM tensors) and scalars, "
                              "each given to the kernels by their parameter names")
    if isinstance(gm_extra, bool) or not isinstance(gm_extra, (int, np.integer)) or gm_extra < 0:
        raise ConfigError(f"run(): gm_extra={gm_extra!r} is not a number of bytes", where=where,
                          fix="give gm_extra >= 0: the bytes of GM beyond the arguments (0: none)")
    if schedule_seed is not None and (isinstance(schedule_seed, bool)
                                      or not isinstance(schedule_seed, (int, np.integer))):
        raise ConfigError(f"run(): schedule_seed={schedule_seed!r} is not an integer", where=where,
                          fix="give an integer seed for a random schedule, or None for the default schedule")
    for name, v in switches.items():
        if not isinstance(v, (bool, np.bool_)) and v not in (0, 1):
            raise ConfigError(f"run(): {name}={v!r} is not True or False", where=where,
                              fix=f"pass {name}=True or {name}=False (a non-empty string such as "
                                  f"{v!r} would count as True)")


def _argument_misuse(e: AttributeError, args: dict) -> "ConfigError | None":
    """The ConfigError of a kernel's AttributeError on a run argument that is not a numpy
    array (e.g. ``out.data()`` of a Python list): the argument named, at the kernel line."""
    obj = getattr(e, "obj", None)
    if obj is None or isinstance(obj, np.ndarray):
        return None
    name = next((k for k, v in args.items() if v is obj), None)
    if name is None:
        return None
    loc = raised_at(e.__traceback__)
    return ConfigError(f"argument {name!r} is {with_article(type(obj).__name__)}, which the kernel uses as a "
                       f"GM tensor (.{e.name}): run() makes a GlobalTensor only of a numpy array",
                       where=str(loc) if loc is not None else f"args[{name!r}]",
                       fix=f"pass args[{name!r}] as a numpy array, e.g. np.asarray(value, dtype=np.float32)")


def _select_kwargs(fn, args: dict) -> dict:
    """The arguments of ``args`` kernel ``fn`` takes (all of them for a ``**kwargs``)."""
    if fn.__class__ is FunctionType and not fn.__dict__:
        # a plain function (no __wrapped__ / __signature__ that inspect.signature would follow):
        # its parameters from its code object - inspect.signature costs a tenth of a short run,
        # and this runs for every kernel of every run; tests/isa/test_kernel_arguments.py
        # checks both ways agree
        code = fn.__code__
        if code.co_flags & CO_VARKEYWORDS:
            return dict(args)
        n = code.co_argcount + code.co_kwonlyargcount
        names = code.co_varnames[:n]
        if all(a in args for a in names):
            return {a: args[a] for a in names}
    return _select_by_signature(fn, args)


def _select_by_signature(fn, args: dict) -> dict:
    """:func:`_select_kwargs` for any callable (defaults, missing arguments: a ConfigError)."""
    sig = inspect.signature(fn)
    if any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(args)
    out = {}
    for name, p in sig.parameters.items():
        if name in args:
            out[name] = args[name]
        elif p.default is p.empty and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            raise ConfigError(f"kernel {_kernel_name(fn)} needs argument {name!r} but args has "
                              f"{', '.join(args) or 'nothing'}", where=_defined_at(fn),
                              fix=f"add {name!r} to args= (a kernel file's Scenario: to the dict its "
                                  "make_args returns)")
    return out


def _kernel_name(fn) -> str:
    """A kernel's name for messages: a function's, else its class's (a callable object, a
    functools.partial of a function: the function's)."""
    fn = getattr(fn, "func", fn)
    return getattr(fn, "__name__", type(fn).__name__)


def _defined_at(fn) -> str | None:
    """file:line of a kernel's definition (a callable object: its ``__call__``), if known."""
    fn = getattr(fn, "func", fn)
    code = getattr(fn, "__code__", None) or getattr(getattr(fn, "__call__", None), "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code is not None else None


@dataclass
class RunSummary:
    platform: str
    protocol: str
    cycles: int
    cores: dict            # name -> {instructions, busy{pipe}, stall{}, state}
    pipes: list            # [{name, tiles, pushes, pops, frees, lanes, slot_num, slot_size}]
    wall_seconds: float
    leaks: list = field(default_factory=list)
    #: the flag ledger at every kernel exit (:func:`~ptopipe.isa.pipe.teardown.ledger` rows,
    #: each with its ``launch``): credits inherited / sent / consumed / drained / left
    ledger: list = field(default_factory=list)
    launches: int = 1
    #: the blocks of each launch (one cluster each): cycles are the slowest block's, the
    #: instruction, busy and pipe counts summed over the blocks
    blocks: int = 1
    #: a kernel asked for its block index or the number of blocks (get_block_idx / get_block_num)
    asked_block: bool = False

    def format(self) -> str:
        many = (f"; {self.blocks} blocks: the slowest block's cycles; instructions, busy cycles and pipe "
                "counts summed over the blocks"
                if self.blocks > 1 else "")
        lines = [f"platform {self.platform}, protocol {self.protocol}: {self.cycles} cycles "
                 f"(simulated in {self.wall_seconds * 1e3:.1f} ms{many})"]
        for name, c in self.cores.items():
            if c["state"] == "idle":
                continue
            busy = ", ".join(f"{p} {v}" for p, v in c["busy"].items() if v)
            lines.append(f"  {name:5s} {c['instructions']:7d} instr  busy: {busy or '-'}")
        for p in self.pipes:
            # tiles are slot fills; TPUSH/TPOP/TFREE count instructions over all cores (a C2V
            # tile is popped once per lane, a V2C tile pushed once per lane)
            lanes = p["lanes"]
            lines.append(f"  {p['name']}: {p['tiles']} tile{'s' if p['tiles'] != 1 else ''} pushed ({p['pushes']} TPUSH), {p['pops']} TPOP, "
                         f"{p['frees']} TFREE, {lanes} lane{'s' if lanes != 1 else ''} "
                         f"(SlotNum {p['slot_num']} x {p['slot_size']} B)")
        for what, loc in self.leaks:
            lines.append(f"  warning: {what}" + (f" ({loc})" if loc else ""))
        if self.launches > 1:
            for k in range(1, self.launches + 1):
                rows = [r for r in self.ledger if r["launch"] == k]
                left = sum(r["left"] for r in rows)
                lines.append(f"  launch {k} exit: " + ("every cross-core flag at 0" if not left else
                                                        f"{left} credit(s) left on the flags"))
                lines.extend(f"    {'block %d: ' % r['block'] if 'block' in r else ''}{describe_row(r)}"
                             for r in rows)
        return "\n".join(lines)


class UnknownOutput(ConfigError, KeyError):
    """A result asked for an output it has not (a KeyError too, as a dict's)."""

    __str__ = ConfigError.__str__


class Outputs(dict):
    """A run's outputs by argument name (a dict); an unknown name says which there are."""

    def __missing__(self, name):
        raise UnknownOutput(f"the run has no output {name!r}", where=user_line(),
                            fix="outputs are the array arguments: "
                                + (", ".join(map(repr, self)) or "none (the run had no array argument)"))


@dataclass
class RunResult:
    outputs: dict
    summary: RunSummary
    cluster: Cluster
    #: with several launches: the outputs at the end of each launch (copies), in order
    launches: list = field(default_factory=list)
    #: the clusters of the last launch, by block (``cluster`` is block 0's)
    clusters: list = field(default_factory=list)

    def __post_init__(self):
        if not isinstance(self.outputs, Outputs):
            self.outputs = Outputs(self.outputs)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    @property
    def fast_forward(self):
        """What ``engine="periodic"`` did in the last launch's block 0
        (:class:`~ptopipe.sim.periodic.FastForwardReport`; None: the exact engine ran)."""
        return self.cluster.fast_forward

    @property
    def prints(self) -> list:
        """The texts the (last launch's) TPRINTs printed, in simulated-time order (block by block)."""
        return [t for cl in self.clusters or [self.cluster] for t in prints(cl)]


def run(aic: Callable | None = None, aiv=None, args: dict | None = None,
        platform: "str | Platform" = "a2a3", protocol: str = "spec",
        schedule_seed: int | None = None, trace: bool = False, leak_check: bool = True,
        max_instructions: int | None = None, gm_extra: int = 0, timing: bool = True,
        checks: bool = True, until_cycle: int | None = None,
        timeout: float | Deadline | None = None, record_writes: bool = False, sync: str | None = None,
        launches: int = 1, schedule=None, causal: bool = False, echo_prints: bool = True,
        fast_paths: bool = True, pool: MemoryPool | None = None, blocks: int = 1,
        engine: str | None = None, determinacy: bool = False) -> RunResult:
    """Run a Cube kernel and a Vector kernel together on one simulated cluster.

    ``aiv`` is one function (run on both sub-blocks; use ``get_subblockid()``) or a pair
    ``(fn_for_aiv0, fn_for_aiv1)`` (``None`` leaves that core idle).  Each kernel receives,
    by parameter name, the entries of ``args``: numpy arrays as GlobalTensors in GM, other
    values unchanged.  Returns a :class:`RunResult` whose ``outputs`` hold the final GM
    contents of every array argument.  ``trace=True`` records every instruction for the
    profile / swimlane / Chrome trace (:mod:`ptopipe.report`); ``timing=False`` skips the
    cost model (a functional run: cycles then only count issued instructions).  Raises a :class:`~ptopipe.PtoPipeError` subclass
    (e.g. DeadlockError, ProtocolError, ConfigError) on any problem; never hangs: a
    BudgetError naming each core's kernel line stops a run past ``max_instructions`` per
    core (instructions, TSYNCs and flag waits; None: 50,000,000), past ``until_cycle``
    simulated cycles (None: no such bound) or after ``timeout`` seconds of wall-clock time
    for the whole call, all launches together (None: 60 s; ``math.inf``: none; a
    :class:`~ptopipe.sim.bounds.Deadline` shares one bound between several calls).  The
    timeout stops a kernel looping in pure Python, from any thread; on the main thread
    also one blocked in a call such as ``time.sleep`` (elsewhere such a call is stopped
    when it returns: only the main thread receives signals).  A kernel raising a
    BaseException that is not an error, e.g. ``sys.exit()``'s SystemExit, is a KernelError
    at that line (a KeyboardInterrupt still propagates).
    ``checks=True`` (default) turns on the happens-before race checker, slot-reuse and
    use-after-free checks of the address flow, and leak checks at kernel end
    (:mod:`ptopipe.isa.checks`); ``leak_check=False`` reports leaks as summary warnings.
    ``causal=True`` makes the race checker stricter: a core's GM access is ordered before its
    cross-core SET only if it happens before it on the core (same pipe, a tile dependency,
    an event or a barrier: :mod:`ptopipe.sim.porder`), not merely because it finished
    earlier in the simulated timing - a TLOAD on MTE2 followed by a TPUSH that does not wait
    for it is a race however the cycles fall (docs/events.md).  ``ptopipe check`` and
    :func:`~ptopipe.isa.explore.explore` turn it on; it costs 25-30% of a checked run.
    ``record_writes=True`` (implies checks) also logs every GM write, for
    :func:`compare`'s explanation of a mismatch (slower; off by default).
    ``sync="manual"`` runs in the manual synchronisation mode: the pipes of a core are
    ordered only by ``set_flag`` / ``wait_flag`` / ``pipe_barrier`` (docs/events.md);
    None / ``"auto"`` (default): the scoreboard orders every same-core dependency.
    ``echo_prints=False`` keeps TPRINT / PRINT texts in the result (``prints``) without
    writing them to stdout (``check`` echoes only its default schedule's).
    ``fast_paths=False`` takes the reference path of every replayed fast path (TPUSH's queued
    copies, TPOP's re-binding, the race checker's inline GM regions): the same results, trace
    and errors, slower - for checking the fast paths.

    ``launches=K`` runs the kernels K times back to back on one cluster, as the device does
    when the next launch reuses the FlagIDs: GM, local memories and the cross-core flag
    counters carry over (the arguments are laid out once).  At every kernel exit each
    producer's teardown drains its pending free credits (the protocol model's
    ``teardown_drain``) and the summary's ``ledger`` records what is left on each flag; a
    WAIT that takes a credit an earlier launch left is reported there, naming that launch.
    Unpopped data and undrained credits of a launch that is not the last carry over
    instead of being reported as leaks at its exit - unless its teardown then hangs
    waiting for the free of an unpopped slot: that is the leak one launch reports (the
    push's line, "(in launch k of K)").

    ``blocks=N`` launches N blocks, as ``kernel<<<N, ...>>>`` does on the device: block b runs
    the kernels on a cluster of its own (its own local memories, rings and flags) and sees
    ``get_block_idx() == b`` and ``get_block_num() == N`` (C++ ``block_idx`` / ``block_num``,
    ``.pto`` ``pto.get_block_idx`` / ``pto.get_block_num`` and pypto's SPMD parameters alike).
    The blocks run one after another, 0 .. N-1, on one GM; with ``launches=K`` every launch
    runs all N blocks and block b carries block b's memories and flag counters of the launch
    before.  On the device the blocks run at the same time, so with ``checks`` on GM bytes
    one block writes and another block of the launch reads or writes are a DataRaceError
    naming both blocks (two blocks storing identical bytes: a warning, the work done twice);
    an error inside a block says "(in block b of N)".  The summary's cycles are the slowest
    block's, its instruction and pipe counts summed over the blocks.  With ``trace`` every
    block is traced; the result's ``cluster`` (its reports) is block 0's, ``clusters`` all
    of the last launch's, and a failed block's error carries that block's cluster.

    ``engine="periodic"`` fast-forwards the kernels' steady state (:mod:`ptopipe.sim.periodic`):
    once every core's calls repeat and the machine is proven to move by one constant per
    ring period, the repeated instructions are only recorded - the same outputs, cycles,
    counts and errors as the ``"exact"`` engine, which simulates every instruction (None:
    the environment's ``PTOPIPE_ENGINE``, else ``"exact"``).
    It applies in the automatic synchronisation mode with the trace, exploration,
    ``until_cycle``, ``record_writes`` and several ``blocks`` off, the checkers on or off
    (docs/engine.md); any other run is exact.

    ``schedule`` (a :mod:`ptopipe.sim.schedule` policy; ``schedule_seed``: a random one)
    makes every cross-core visible event a choice point (:mod:`ptopipe.isa.explore`).
    ``pool`` (a :class:`~ptopipe.sim.memory.MemoryPool`) gives the clusters the zeroed
    memories of earlier runs of the same check instead of fresh ones (the same bytes).
    A kernel function whose ``maps_gm`` attribute is true reads GM through a mapping of its own
    (a C++ kernel's ``__gm__`` pointers: :mod:`ptopipe.cpp.gmview`): the run's GM is then a
    shared-memory file (``Cluster(shared_gm=True)``).
    ``determinacy=True`` also judges whether every schedule of the run gives its result
    (``result.cluster.determinacy``, :mod:`ptopipe.sim.determinacy`; the run is then exact).
    """
    refuse_nested_run()
    _check_call(aic, aiv, args, gm_extra, schedule_seed,
                {n: v for n, v in zip(_SWITCHES, (trace, leak_check, timing, checks, record_writes, causal,
                                                  echo_prints, fast_paths, determinacy))})
    args = dict(args or {})
    if isinstance(launches, bool) or not isinstance(launches, (int, np.integer)) or launches < 1:
        raise ConfigError(f"launches={launches!r} is not a number of launches", where="launches",
                          fix="give launches >= 1 (1: one launch)")
    if isinstance(blocks, bool) or not isinstance(blocks, (int, np.integer)) or blocks < 1:
        raise ConfigError(f"blocks={blocks!r} is not a number of blocks", where="blocks",
                          fix="give blocks >= 1 (1: one block; N: the kernels run on N clusters, "
                              "get_block_idx() 0 .. N-1)")
    plat = get_platform(platform)
    proto, library = _protocol(protocol)
    limit = deadline(timeout)          # one wall-clock bound for all the launches
    if aic is None and aiv is None:
        raise ConfigError("run() needs at least one kernel", fix="pass aic=... and/or aiv=...")
    arrays = {k: np.ascontiguousarray(v) for k, v in args.items() if isinstance(v, np.ndarray)}
    for k, a in arrays.items():
        a = args[k]             # (ascontiguousarray makes a 0-d array 1-d)
        if not is_element_type(a.dtype):
            fix = "pass a numeric array, e.g. np.asarray(x, dtype=np.float32)"
            if a.dtype.kind == "V" and a.dtype.itemsize in (1, 2) and not a.dtype.fields:
                fix = (f"a {a.dtype} array is how np.load reads a saved bf16 / float8 array: view it as its "
                       f"type (x.view(ml_dtypes.{'bfloat16' if a.dtype.itemsize == 2 else 'float8_e4m3fn'})); "
                       "the CLI's --input does so for a parameter declared bf16 / float8")
            raise ConfigError(f"argument {k!r} is a numpy array of dtype {a.dtype}, which GM cannot hold",
                              where=f"args[{k!r}]", fix=fix)
        if a.ndim > 5 or a.ndim == 0:
            raise ConfigError(f"argument {k!r} has {a.ndim} dimensions; GM tensors have 1 to 5",
                              where=f"args[{k!r}]",
                              fix="reshape it" if a.ndim else
                                  f"pass a scalar as a Python number (args[{k!r}] = {a.item()!r}), an array "
                                  "as 1 to 5 dimensions")
    addrs, end = gm_layout([a.nbytes for a in arrays.values()])
    kargs = dict(args)
    for (name, a), addr in zip(arrays.items(), addrs):
        kargs[name] = GlobalTensor(GMPtr(addr, a.dtype, (addr, addr + a.nbytes, name)), a.shape, name=name)
    context = RunContext(proto, tuple(GmArg(name, addr, addr + a.nbytes)
                                      for (name, a), addr in zip(arrays.items(), addrs)), bool(fast_paths),
                         library, int(blocks))
    fns = aiv if isinstance(aiv, (tuple, list)) else (aiv, aiv)
    # a kernel that reads GM through its own mapping of GM's pages (a C++ kernel's ``__gm__``
    # pointers: ptopipe.cpp.gmview) needs GM to be a shared-memory file
    shared_gm = any(getattr(fn, "maps_gm", False) for fn in (aic, *fns))
    nblocks = int(blocks)
    checker = checker_class(record_writes, nblocks) if checks or record_writes else None
    # prev: the clusters of the last launch, by block, and exits their ledger rows; rows: every
    # exit's ledger rows
    prev, exits, rows, per_launch, wall, found = None, [], [], [], 0.0, []
    whole = {}                      # kernel -> itself as the periodic engine runs it (skip.take_whole)
    logs = {name: list(v) for name, v in args.items() if isinstance(v, list)}     # (a kernel may log into one)
    for k in range(1, int(launches) + 1):
        clusters, writes = [], []
        for b in range(nblocks):
            if limit.passed():         # (a bound shared with earlier runs, or between launches)
                raise expired_before(limit, _where_in_run(b, nblocks, k, launches) or "this run")
            engine_now, failed = engine, None
            while True:
                cluster = Cluster(plat, gm_size=end + int(gm_extra), schedule_seed=schedule_seed, trace=trace,
                                  max_instructions=max_instructions, timing=timing, until_cycle=until_cycle,
                                  timeout=limit, sync=sync, schedule=schedule, context=context, pool=pool,
                                  shared_gm=shared_gm, block=b, gm=clusters[0].gm if b else None, engine=engine_now)
                cluster.causal = causal and timing
                cluster.again_of = failed
                if determinacy:
                    Determinacy(cluster, outside(checks, causal, timing, cluster.until_cycle, launches, nblocks,
                                                 shared_gm))
                if checker is not None:
                    cluster.checker = checker(cluster)
                    if cluster.manual_sync:
                        watch_gm(cluster)
                if prev is None:
                    if b == 0:
                        for (name, a), addr in zip(arrays.items(), addrs):
                            cluster.gm.buf[addr:addr + a.nbytes] = a.reshape(-1).view(np.uint8)
                else:
                    _carry(prev[b], cluster, exits[b], gm=b == 0)
                clusters.append(cluster)
                kernels = {}
                if aic is not None:
                    kernels[cluster.aic] = (aic, _select_kwargs(aic, kargs))
                for sub, fn in enumerate(fns):
                    if fn is not None:
                        kernels[cluster.aiv(sub)] = (fn, _select_kwargs(fn, kargs))
                if cluster.engine == "periodic" and applies(cluster):     # (loops the engine may take whole)
                    kernels = {c: (whole[fn] if fn in whole else whole.setdefault(fn, take_whole(fn)), kw)
                               for c, (fn, kw) in kernels.items()}
                t0 = time.perf_counter()
                again = False
                try:
                    cluster.run(kernels)
                    wall += time.perf_counter() - t0
                    exited = _exit(cluster, k, k == launches, checks, leak_check)
                except AttributeError as e:
                    err = _argument_misuse(e, args)
                    if err is None:
                        raise
                    raise err from e
                except PtoPipeError as e:
                    again = _made_again(cluster, launches, nblocks) and not limit.passed()
                    if again:           # (made again exactly: the exact engine's error)
                        for name, items in logs.items():
                            args[name][:] = items
                        clusters.pop()
                        engine_now, failed = "exact", cluster
                        continue
                    if nblocks > 1 and not isinstance(e, (ParseError, CompileError)):   # (those: of every block)
                        e.add_detail(f"(in block {b} of {nblocks})")
                    if launches > 1:
                        e.add_detail(f"(in launch {k} of {launches})")
                    if trace:               # the traced run up to the error, for its reports
                        e.run_cluster = cluster
                        cluster.stopped_by = e
                    raise
                except Exception as e:
                    if trace and hasattr(e, "ptopipe_raised_by"):    # the kernel's own exception: the
                        e.run_cluster = cluster                       # same, its reports up to it
                        cluster.stopped_by = e
                    raise
                finally:
                    if echo_prints and not again:
                        flush_prints(cluster)   # TPRINT's output, also of a run that failed
                break
            if k == launches:
                found = exited if nblocks == 1 else found + [w for w in exited if w not in found]
            exit_rows = ledger(cluster, k)
            if nblocks > 1:
                for r in exit_rows:
                    r["block"] = b
                writes.append(written(cluster))
            rows.extend(exit_rows)
            if k < launches:
                exits[b:b + 1] = [exit_rows]
        if nblocks > 1 and checker is not None:
            try:
                twice = cross_block_races(clusters, writes)
            except PtoPipeError as e:
                if launches > 1:
                    e.add_detail(f"(in launch {k} of {launches})")
                if trace:               # the reports show the block of the access the error is at
                    named = (e.findings[0].get("blocks") if e.findings else None) or [len(clusters) - 1]
                    e.run_cluster = clusters[named[-1]]
                    e.run_cluster.stopped_by = e
                raise
            if k == launches:
                found.extend(twice)
        if launches > 1:
            per_launch.append({name: cluster.gm.buf[addr:addr + a.nbytes].view(a.dtype).reshape(a.shape).copy()
                               for (name, a), addr in zip(arrays.items(), addrs)})
        prev = clusters
    outputs = {}
    for (name, a), addr in zip(arrays.items(), addrs):
        # views of the final GM contents (no copy: the result owns the cluster's GM)
        outputs[name] = cluster.gm.buf[addr:addr + a.nbytes].view(a.dtype).reshape(a.shape)
    summary = summarize(prev, context.protocol_name, wall, found)
    summary.ledger, summary.launches = rows, int(launches)
    return RunResult(outputs, summary, prev[0], per_launch, prev)


def _made_again(cluster: Cluster, launches: int, blocks: int) -> bool:
    """Is a run that failed on ``cluster`` made again on the exact engine?  A run the periodic
    engine recorded: its error is then the exact run's in every word (after a cut the cores
    may run in another order than the exact run's, and which of two racing accesses comes
    first names the race).  A run of one launch on one block (a launch's prints are shown as
    it ends)."""
    ff = cluster.fast_forward
    return ff is not None and ff.blocks > 0 and launches == 1 and blocks == 1


def _where_in_run(b: int, blocks: int, k: int, launches: int) -> str:
    """'block 1 of 4, launch 2 of 3': which run of the kernels of a call ('' for the only one)."""
    return ", ".join(([f"block {b} of {blocks}"] if blocks > 1 else [])
                     + ([f"launch {k} of {launches}"] if launches > 1 else []))


def _carry(prev: Cluster, cluster: Cluster, rows: list, gm: bool = True) -> None:
    """A next launch on the same cluster: memories and flag counters as ``prev`` (the same
    block's cluster in the last launch; ``rows``: its exit's ledger rows) left them, and GM
    too (``gm``: the launch's first block; the others share its GM)."""
    if gm:
        cluster.gm.buf[:] = prev.gm.buf
    for old, new in zip(prev.cores, cluster.cores):
        for space, m in old.memories.items():
            new.memories[space].buf[:] = m.buf
    last = {r["name"]: r for r in rows}
    cluster.carry_flags(prev, origin=lambda f: last.get(f.name))
    cluster.carried_hooks.append(carried_credit)
    cluster.explainers.append(explain_carried)


def _exit(cluster: Cluster, k: int, final: bool, checks: bool, leak_check: bool) -> list:
    """Kernel exit of launch ``k``: leaks, the producers' teardown, flags left over.  Data
    pushed but never popped and credits the teardown left carry over to a next launch (they
    are reported where that launch trips on them), so they are leaks only at the last exit."""
    found = leaks(cluster, unpopped=final)
    if found and leak_check:
        _raise_leaks(found)
    events = event_leaks(cluster)       # intra-core set_flag never waited: within one launch
    if events and leak_check:
        _raise_leaks(events, event_leak_fix(cluster), "event leak", "event_leak")
    try:
        extra = teardown(cluster, k)
    except DeadlockError as hang:
        # a teardown waiting for the free of a slot nobody popped: the leak the last launch
        # reports before its teardown (data left over carries to the next launch only when
        # the teardown lets this one end), the hang it causes said after it
        stuck = [x for x in leaks(cluster, unpopped=True) if x not in found] if not final else []
        if stuck and leak_check:
            _raise_leaks(stuck, then=f"so the teardown hangs ({hang.where}): {hang.what}")
        raise
    flag_errors, flag_warnings = flag_leaks(cluster) if checks else ((), ())
    flag_warnings = list(flag_warnings) + unpaired_frees(cluster) + held_repops(cluster) + zeroed_pops(cluster) \
        + cluster.warnings
    if not final:
        flag_warnings, flag_errors, extra = list(flag_warnings) + list(flag_errors) + extra, (), []
    if (extra or flag_errors) and leak_check:
        _raise_leaks(list(extra) + list(flag_errors), TEARDOWN_LEAK_FIX if extra else None)
    return list(found) + list(events) + list(extra) + list(flag_errors) + list(flag_warnings)


def event_leak_fix(cluster) -> str:
    """How to fix an event leak, in the spelling of the kernels' front end."""
    w = event_words(next((c for c in cluster.cores if c.event_words is not None), None))
    return (f"consume every {w.set} with a {w.wait}: drain loop-carried events after the loop (one "
            f"{w.wait} per ID primed before it), or drop the extra set")


def _raise_leaks(allf: list, fix: str | None = None, title: str = "leak", kind: str = "leak",
                 then: str | None = None) -> None:
    what, loc = allf[0]
    raise LeakError(f"{title} at kernel end: {what}", where=str(loc) if loc else None,
                    details="\n".join([w + (f" ({l})" if l else "") for w, l in allf[1:]]
                                      + ([then] if then else [])) or None,
                    fix=fix or "pair every TPOP with TFREE and every TALLOC with TPUSH; pop everything pushed",
                    findings=[{"kind": kind, "what": w, "where": str(l) if l else None} for w, l in allf])



def _lanes(cluster, ch) -> int:
    """The Vector lanes of pipe ``ch`` for the summary: a lane only pto-isa's CPU simulator
    adds (``TPipe.sim_lanes``) counts once it popped a tile (its side's ``index``)."""
    idle = sum(1 for p in ch.cfg.sim_lanes if not getattr(ch.sides.get(cluster.aiv(p).index), "index", 0))
    return len(ch.peers) - idle


def summarize(cluster: "Cluster | list", proto: str, wall: float, found=()) -> RunSummary:
    """The summary of a run on ``cluster``, or on the clusters of the blocks of one launch (a
    list, by block): they ran at the same time, so the cycles are the slowest block's; the
    instructions, busy and stall cycles and the pipes' counts are summed over the blocks."""
    clusters = cluster if isinstance(cluster, list) else [cluster]
    cores, pipes = {}, {}
    for cl in clusters:
        for c in cl.cores:
            mine = {"instructions": c.instructions, "state": c.state.value,
                    "busy": {p.name: c.busy[p] for p in PipeUnit}, "stall": dict(c.stall), "end": c.end_time()}
            got = cores.get(c.name)
            if got is None:
                cores[c.name] = mine
                continue
            got["instructions"] += mine["instructions"]
            got["end"] = max(got["end"], mine["end"])
            if got["state"] == "idle":
                got["state"] = mine["state"]
            for p, v in mine["busy"].items():
                got["busy"][p] += v
            for why, v in mine["stall"].items():
                got["stall"][why] = got["stall"].get(why, 0) + v
        for ch in cl.state.channels.values():
            mine = {"name": ch.name, "tiles": ch.tiles, "pushes": ch.pushes, "pops": ch.pops, "frees": ch.frees,
                    "lanes": _lanes(cl, ch), "slot_num": ch.slot_num, "slot_size": ch.slot_size}
            got = pipes.get(ch.name)
            if got is None:
                pipes[ch.name] = mine
            else:
                for n in ("tiles", "pushes", "pops", "frees"):
                    got[n] += mine[n]
    first = clusters[0]
    out = RunSummary(first.platform.name, getattr(proto, "value", proto), max(cl.cycles for cl in clusters),
                     cores, list(pipes.values()), wall, list(found), blocks=len(clusters))
    out.asked_block = any(cl.state.asked_block for cl in clusters)
    return out


__all__ = ["RunResult", "RunSummary", "compare", "compare_launches", "gm_buffer", "run", "summarize",
           "PtoPipeError", "CoreState"]
