"""The executor: a function's statements run in order on one core of a running cluster, each
through its handler (:data:`HANDLERS`, else the op catalogue's generic form), with the core's
source location set to the statement's line:col so every ISA error and checker report names it.
In a function reached through ``func.call`` the location carries the calls that led there
(``h.pto:3:5 (called from k.pto:20:5)``, ``SourceLoc.via``), as the Python front end's does."""
from __future__ import annotations

import numpy as np

from ...errors import KernelError, ParseError, PtoPipeError
from ...sim.location import SourceLoc
from ...sim.periodic.loops import SkipPlan
from ..pto_lexer import Token
from ..pto_tree import Stmt
from .control_ops import h_call, h_condition, h_for, h_if, h_return, h_while, h_yield
from .pipe_ops import h_fifo_tile, h_free, h_import, h_init, h_pop, h_push, h_reserve, h_talloc
from .placement import Layout
from .program import Func, Program, SYNTAX_SLIPS, malformed
from .scalar_ops import FLOAT_OPS, INT_OPS, h_arith, h_cast, h_constant
from .skip import pto_forms
from .sync_ops import (OWN_EVENTS, h_buffer_token, h_cross_core, h_event, h_eventid_array, h_eventid_get, h_eventid_set, h_section, h_syncall,
                       h_set_ffts)
from .tile_ops import (h_addptr, h_alloc, h_alloc_multi, h_multi_get, h_bind_tile, h_bitcast, h_block_idx, h_block_num, h_getval, h_subset, h_subview,
                       h_io, h_load_scalar, h_partition, h_pointer_cast, h_print, h_reinterpret,
                       h_reshape, h_set_validshape, h_setval, h_store_scalar, h_subblock,
                       h_subblock_num, h_tassign, h_tprint, h_trap, h_view, h_view_dim, op_catalogue)
from .values import Reserved, Return


class Frame:
    """One function's execution on one core; ``via``: the ``func.call`` locations that led to
    it, innermost first (none for the function the launch runs)."""

    def __init__(self, ex: "Executor", f: Func, args: list, via: tuple = ()):
        self.ex, self.f, self.via = ex, f, via
        self.env = {}
        for (name, _ty, _tok), a in zip(f.params, args):
            self.env[name] = a


class Executor:
    """Executes a :class:`Program` on one core of a running cluster."""

    def __init__(self, prog: Program, core_name: str, plan: "Layout", lane0: frozenset = frozenset(),
                 nosplit: dict | None = None):
        self.prog, self.core_name, self.layout = prog, core_name, plan
        self.lane0 = lane0              # the Vector functions ptoas runs on AIV0 only (program.lane0_scope; A5)
        self.nosplit = {} if nosplit is None else nosplit   # id(pipe init) -> its pipe moves whole tiles
        self.mixed = False              # a function of Cube and Vector tiles, run on one core
        self.core = None
        self.pipes = {}                 # (Direction, frontend pipe id) -> PipeVal
        self.lower_rings = {}           # Direction -> the id of the last lower-level ring set up
        self.flag_bases = {}            # function name -> {id(init stmt): its FlagID}
        self.inited = set()             # locations of the pipe inits this core has run
        self.slot_ids = {}              # id(pipe) -> slot ids popped and not freed, in pop order
        self.warnings = []              # findings the run goes on after (the launch's list: warn)
        self.warned = {}                # finding -> (its core's clock, core, count, run): the launch's too
        self.pad_of = {}                # id(tile) -> its type's PadValue (what TFILLPAD fills with)
        self.folds = {}                 # function name -> its declarations ptoas folds (tile_ops.declare_folds)
        self._steps = {}                # id(a block's statement list) -> its steps (:meth:`steps`)
        self._via_locs = {}             # (id(statement), the calls that led to it) -> its SourceLoc
        self.via = ()                   # the calls that led to the running statement (Frame.via)
        self.decoded = {}               # id(statement) -> what its handler reads off it once (static)
        self._pop_views = {}            # id(popping statement) -> the views of memory its tiles share
        self._skips = {}                # id(scf.for statement) -> (windows, guards, terms, each with what it saw) or None
        # id(moving partition_view) -> [its offsets, its limits]; id(guard's cmpi) -> [its
        # operands]; id(term) -> [its value, its type's largest and smallest]: at its last
        # execution (.skip)
        self.seen = {}

    # -- errors / locations
    def where(self, s: Stmt) -> str:
        """``s``'s line:col, with the calls that led to it when it runs in a called function."""
        if not self.via:
            return s.where(self.prog.path)
        return str(SourceLoc(self.prog.path, s.tok.line, s.col, None, self.via))

    def forget(self, cluster) -> None:
        """The findings of the run on ``cluster`` are void (the run is made again exactly)."""
        void = [m for m, k in self.warned.items() if k[3] == id(cluster)]
        for m in void:
            del self.warned[m]
            self.warnings.remove(m)

    def warn(self, msg: str) -> None:
        """A finding the run goes on after, once: kept in the order of the simulated time its
        core met it at (then the core, then the core's order) - not the order the cores ran
        in, which the fast-forward engine does not keep."""
        warned = self.warned
        if msg in warned:
            return
        c = self.core
        if c.ff is not None and c.ff.recording:
            # (sim.periodic: a recorded call keeps no clock - the exact state first, whose
            # clock is the one the exact run meets the finding at)
            c.ff.unhooked(c, "a run warning")
        key = warned[msg] = (c.clock, c.index, len(warned), id(c.cluster))
        ws = self.warnings
        k = len(ws)
        while k and warned.get(ws[k - 1], key) > key:
            k -= 1
        ws.insert(k, msg)

    def err(self, s: Stmt, msg: str, fix: str | None = None) -> KernelError:
        return KernelError(msg, where=self.where(s), fix=fix)

    def perr(self, tok, msg, fix=None) -> ParseError:
        return ParseError(msg, where=f"{self.prog.path}:{tok.line}:{tok.col}", fix=fix)

    def pop_views(self, s: Stmt) -> dict:
        """The views of memory the tiles statement ``s`` pops into share (``Tile._views``, per
        core, address and valid shape): every execution makes a new tile of the statement's
        one type, and its binding to a slot then builds no view it had before."""
        v = self._pop_views.get(id(s))
        if v is None:
            v = self._pop_views[id(s)] = {}
        return v

    def skip_plan(self, s: Stmt, fr: "Frame"):
        """The :class:`~ptopipe.sim.periodic.loops.SkipPlan` of the ``scf.for`` statement ``s``
        run in frame ``fr`` (None: the engine may not take its iterations whole: :mod:`.skip`)."""
        got = self._skips.get(id(s), False)
        if got is False:
            forms = pto_forms(s)
            if forms is not None:
                sites, guards, terms = forms
                kept = self.seen.setdefault
                forms = (sites, tuple(kept(id(x.op), [None, None]) for x in sites),
                         guards, tuple(kept(id(g.op), [None, None]) for g in guards),
                         terms, tuple(kept(id(x.op), [None, None, None]) for x in terms))
            got = self._skips[id(s)] = forms
        if got is None:
            return None
        env = fr.env
        return SkipPlan(s, got[0], got[1], lambda tok: env[tok.text], *got[2:])

    # -- running
    def call(self, f: Func, args: list, via: tuple = ()):
        """Run ``f`` with ``args``; ``via``: the calls that led to it (:class:`Frame`).  On AIV1 a
        function of :attr:`lane0` does nothing (ptoas's ``if (get_subblockid() == 0)`` around its body)."""
        if f.name in self.lane0 and self.core_name == "aiv1":
            return []
        fr = Frame(self, f, args, via)
        outer, self.via = self.via, via
        try:
            self.block(fr, f.body)
        except Return as r:
            return r.values
        finally:
            self.via = outer
        return []

    def _with_via(self, s: Stmt, loc: SourceLoc, via: tuple) -> SourceLoc:
        """``loc`` of statement ``s`` with the calls ``via`` that led to it (made once per pair)."""
        key = (id(s), via)
        got = self._via_locs.get(key)
        if got is None:
            got = self._via_locs[key] = SourceLoc(loc.file, loc.line, loc.col, loc.func, via)
        return got

    def steps(self, fr: Frame, stmts) -> list:
        """``stmts`` (a block's statements, of ``fr``'s function) as the executor runs them:
        ``(statement, its SourceLoc, its handler, whether it ends the block)`` each, made at
        the block's first run (kept with the list: statements live as long as the program)."""
        got = self._steps.get(id(stmts))
        if got is None or got[0] is not stmts:
            path = self.prog.path
            got = self._steps[id(stmts)] = (stmts, [
                (s, SourceLoc(path, s.tok.line, s.col, fr.f.name), HANDLERS.get(s.name, op_catalogue),
                 s.name == "scf.yield" or s.name == "scf.condition") for s in stmts])
        return got[1]

    def block(self, fr: Frame, stmts, block_args=None):
        core = self.core
        via = fr.via
        for s, loc, h, ends in self.steps(fr, stmts):
            core.loc_override = loc if not via else self._with_via(s, loc, via)
            core.op_word = s.name
            try:
                res = h(self, fr, s)
            except SYNTAX_SLIPS as e:
                if isinstance(e, PtoPipeError):
                    raise
                raise malformed(e, self.prog.path) from None
            if ends:
                return res
            if s.results:
                if res is None:
                    res = []
                elif not isinstance(res, list):
                    res = [res]
                if len(res) != len(s.results):
                    raise self.err(s, f"{s.name} gives {len(res)} values for {len(s.results)} results")
                for n, v in zip(s.results, res):
                    fr.env[n] = v
                if s.result_group is not None:
                    fr.env[s.result_group] = res[0]
        return None

    def val(self, fr: Frame, tok: Token):
        try:
            return fr.env[tok.text]
        except KeyError:
            raise self.perr(tok, f"{tok.text} is used before it is defined in @{fr.f.name}",
                            "define the value before this op (SSA values are visible after their "
                            "definition, in the same or an enclosing region)") from None

    def ival(self, fr: Frame, tok: Token) -> int:
        v = self.val(fr, tok)
        if v.__class__ is int:
            return v
        if isinstance(v, Reserved):
            return v.addr
        if isinstance(v, (bool, np.bool_)):
            return int(v)
        if isinstance(v, (int, np.integer)):
            return int(v)
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            return int(v)
        raise self.perr(tok, f"{tok.text} is not an integer here (it is {type(v).__name__})")


HANDLERS = {
    "arith.constant": h_constant, "arith.select": h_arith, "arith.cmpi": h_arith, "arith.cmpf": h_arith,
    **{n: h_arith for n in list(INT_OPS) + list(FLOAT_OPS) + [
        "arith.divsi", "arith.divui", "arith.remsi", "arith.remui", "arith.floordivsi", "arith.ceildivsi",
        "arith.ceildivui", "arith.shli", "arith.shrsi", "arith.shrui", "arith.negf"]},
    **{n: h_cast for n in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui",
                           "arith.trunci", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
                           "arith.extf", "arith.truncf")},
    "scf.for": h_for, "scf.if": h_if, "scf.while": h_while, "scf.condition": h_condition,
    "scf.yield": h_yield, "func.return": h_return, "return": h_return, "func.call": h_call,
    "pto.make_tensor_view": h_view, "pto.partition_view": h_partition,
    "pto.alloc_tile": h_alloc, "pto.declare_tile": h_alloc, "memref.alloc": h_alloc,
    "pto.alloc_multi_tile": h_alloc_multi, "pto.multi_tile_get": h_multi_get,
    "pto.tassign": h_tassign, "pto.set_validshape": h_set_validshape,
    "pto.tload": h_io, "pto.tstore": h_io, "pto.tprint": h_tprint, "pto.print": h_print, "pto.trap": h_trap,
    "pto.get_tensor_view_dim": h_view_dim, "pto.get_subblock_num": h_subblock_num, "pto.bitcast": h_bitcast,
    "pto.pointer_cast": h_pointer_cast, "pto.tgetval": h_getval, "pto.tsetval": h_setval,
    "pto.load_scalar": h_load_scalar, "pto.store_scalar": h_store_scalar,
    "pto.get_subblockid": h_subblock, "pto.get_subblock_idx": h_subblock,
    "pto.get_block_idx": h_block_idx, "pto.get_block_num": h_block_num,
    **dict.fromkeys(OWN_EVENTS, h_event),
    "pto.sync.set": h_cross_core, "pto.sync.wait": h_cross_core, "pto.syncall": h_syncall,
    "pto.set_ffts": h_set_ffts, "pto.treshape": h_reshape, "pto.addptr": h_addptr, "memref.reinterpret_cast": h_reinterpret,
    "pto.bind_tile": h_bind_tile, "pto.subset": h_subset, "pto.subview": h_subview, "pto.get_buf": h_buffer_token, "pto.rls_buf": h_buffer_token,
    "pto.declare_eventid_array": h_eventid_array, "pto.eventid_array_get": h_eventid_get,
    "pto.eventid_array_set": h_eventid_set, "pto.section.cube": h_section, "pto.section.vector": h_section,
    "pto.reserve_buffer": h_reserve, "pto.import_reserved_buffer": h_import,
    "pto.aic_initialize_pipe": h_init, "pto.aiv_initialize_pipe": h_init,
    "pto.initialize_l2g2l_pipe": h_init, "pto.initialize_l2l_pipe": h_init,
    "pto.tpush_to_aiv": h_push, "pto.tpush_to_aic": h_push, "pto.tpush": h_push,
    "pto.tpop_from_aic": h_pop, "pto.get_fifo_tile": h_fifo_tile, "pto.tpop_from_aiv": h_pop, "pto.tpop": h_pop,
    "pto.tfree_from_aic": h_free, "pto.tfree_from_aiv": h_free, "pto.tfree": h_free,
    "pto.talloc_to_aiv": h_talloc, "pto.talloc_to_aic": h_talloc,
}
