"""Cross-core pipes: ``reserve_buffer`` / ``import_reserved_buffer``, the pipe inits
(``aic_/aiv_initialize_pipe``, ``initialize_l2g2l_pipe`` / ``l2l``), and TPUSH / TPOP / TFREE
in both spellings, on the pipe of the way this core produces into or consumes from."""
from __future__ import annotations

from ... import isa
from ...arch.vocab import PLAIN_DIRECTION, PTOAS_SLOT_NUMS, Direction, TileSplitAxis, row_major_strides
from ...errors import CompileError, ConfigError, ParseError
from ...ir.layout import ring_size_problem
from ...protocol.model import cluster_model, nosplit_one_lane, platform_kind
from ...protocol.rings import FRONTEND, L2G2L, L2L, default_local_slot_num, ptoas_flag_bases, ptoas_local_slot_num
from ..pto_syntax import SPLIT_CODES, nosplit_conflict, split_mix_conflict
from .headers import tile_carry_refusals
from .op_checks import newer_ptoas_refusals
from .program import int_attr, res_type, str_attr, whole_tile_lanes
from .tile_ops import folded, tile_of
from .types import TileSpec
from .values import PipeVal, Reserved, View


def h_reserve(ex, fr, s):
    name = str_attr(s, "name", ex.prog)
    addr, size, _loc = ex.layout.reserves[(fr.f.name, name)]
    return Reserved(addr, name, size)


def h_import(ex, fr, s):
    name = str_attr(s, "name", ex.prog)
    peer = s.attr("peer_func")
    if not peer or peer[0].kind != "symbol":
        raise ex.perr(s.tok, "pto.import_reserved_buffer needs peer_func = @function")
    key = (peer[0].text[1:], name)
    if key not in ex.layout.reserves:
        raise ex.perr(peer[0], f"@{key[0]} reserves no buffer named {name!r}",
                      "name a pto.reserve_buffer of the peer function")
    addr, size, _ = ex.layout.reserves[key]
    return Reserved(addr, name, size)


def _named_operand(ex, fr, s, key):
    v = s.attr(key)
    if not v:
        return None
    return ex.val(fr, v[0]) if v[0].kind == "value" else int(v[0].text)


_GM_MASKS = frozenset(int(d) for d in PLAIN_DIRECTION)


def no_gm_slot_buffer(init: str, platform: str, nbytes: int, where) -> ConfigError:
    """The run's error at a pipe init (``init``: its op name) that names no gm_slot_buffer on a
    ``platform`` whose rings all live in GM - an A5 file run on A2A3 -; ``nbytes``: the ring's
    SLOT_NUM * SLOT_SIZE * directions.  The executor raises it at the init, and the static
    checks (:func:`ptopipe.codegen.pto_load.load_pto`'s ``refusals``) before any run."""
    return ConfigError(
        f"{init} names no gm_slot_buffer, but on {platform} every ring lives in GM: this init is "
        "written for A5 (rings in the consumer's local memory)", where=where,
        fix=f"run the file with --platform a5, or give the init a gm_slot_buffer operand: a !pto.ptr "
            f"parameter of SLOT_NUM * SLOT_SIZE * directions = {nbytes} bytes (ptoas "
            "lowers an A2A3 pipe to a TPipe over that GM buffer)")


def _init_pipe(ex, fr, s, dir_mask, slot_size, slot_num, local, flag, gm, c2v, v2c):
    plat = ex.core.cluster.platform
    both = dir_mask in (3, 7)
    n = slot_num or plat.slot_num_for(both)
    whole = ex.nosplit.get(id(s))
    if whole is None:               # (neither end says: the function's ops, TALLOCs included)
        whole = ex.nosplit[id(s)] = whole_tile_lanes(ex.prog, [fr.f.name])
    one_lane = whole and nosplit_one_lane(platform_kind(plat))
    ways = [d for d in (Direction.DIR_C2V, Direction.DIR_V2C) if dir_mask & int(d)]
    mask = dir_mask
    if not plat.ring_in_gm and gm is not None and s.name == "pto.initialize_l2g2l_pipe":
        mask = {1: 5, 2: 6, 3: 7}.get(dir_mask, dir_mask)      # A5: a ring asked for in GM
    elif plat.ring_in_gm and dir_mask in _GM_MASKS:            # A2A3: every ring is in GM anyway
        mask = int(PLAIN_DIRECTION[Direction(dir_mask)])
    buf = gm if (plat.ring_in_gm or mask in (5, 6, 7)) else None
    if plat.ring_in_gm and gm is None:
        raise no_gm_slot_buffer(s.name, plat.name, n * slot_size * len(ways), ex.where(s))
    for way, local_buf in ((Direction.DIR_C2V, c2v), (Direction.DIR_V2C, v2c)):
        # (a ring asked for in GM explicitly, dir_mask 5 / 6 / 7: its consumer reads the slots in
        # GM - the address flow - and its local buffer stages nothing; as the compiler's Validate)
        if way in ways and isinstance(local_buf, Reserved) and dir_mask not in _GM_MASKS:
            bad = ring_size_problem(local_buf.name, local_buf.size, n, slot_size,
                                    staged=local if buf is not None else None, spare_ok=True)
            if bad is not None:
                k = local_buf.size // slot_size if local_buf.size % slot_size == 0 else 0
                other = "" if k not in PTOAS_SLOT_NUMS else (
                    f", or give the init slot_num = {k}" if s.name not in FRONTEND_INITS else
                    f", or set the pipe up with a pto.initialize_l2l_pipe / initialize_l2g2l_pipe of "
                    f"slot_num = {k} ({s.name} takes no slot_num: ptoas builds 8 slots one way, 4 "
                    "both ways)")
                raise CompileError(bad[0], where=ex.where(s), fix=(
                    f"size the pto.reserve_buffer named \"{local_buf.name}\" as the ring needs" + other))
    peers = (0,) if one_lane else (0, 1)
    cfg = isa.TPipe(flag, isa.Direction(mask), slot_size, n,
                    default_local_slot_num(n) if local is None else local, peers=peers, stray_ok=True)
    handle = cfg(buf, int(c2v or 0), int(v2c or 0))
    pv = PipeVal(handle, ways, one_lane)
    for w in ways:                  # the frontend ops (tpush_to_aiv ...) name their pipe by id
        if s.name in FRONTEND_INITS:
            ex.pipes[(w, frontend_id(s))] = pv
        else:                       # the k-th lower-level ring of a way is id k (as the static reader
            k = ex.lower_rings[w] = ex.lower_rings.get(w, -1) + 1    # numbers them), for ops with no handle
            ex.pipes.setdefault((w, k), pv)
    return pv


def frontend_id(s) -> int:
    """The ``id`` of a frontend init or push / pop / free: the name of its pipe (pypto's
    frontend pipe id; absent: 0, as ptoas reads it) - no flag number (:func:`flag_bases`)."""
    v = s.attr("id")
    return int(v[0].text) if v and v[0].text.lstrip("-").isdigit() else 0


def init_flag(s) -> int | None:
    """The FlagID an init names: ``flag_base`` (a lower-level init's ``id`` too, another
    spelling ptopipe reads there); a frontend init's ``id`` names its pipe instead."""
    v = s.attr("flag_base") or (None if s.name in FRONTEND_INITS else s.attr("id"))
    return int(v[0].text) if v else None


def flag_bases(ex, f) -> dict:
    """The FlagID of each pipe init of function ``f`` (by statement), as ptoas assigns them
    under this run's protocol model (:func:`~ptopipe.protocol.rings.ptoas_flag_bases`), so
    two frontend pipes ``{id = 0}`` / ``{id = 1}`` get flags of their own on both ends."""
    got = ex.flag_bases.get(f.name)
    if got is None:
        inits = [s for s in f.statements() if s.name in INIT_OPS]
        plat = ex.core.cluster.platform
        rows = []
        for s in inits:
            d = int_attr(s, "dir_mask", ex.prog)
            n = int_attr(s, "slot_num", ex.prog, 0) or plat.slot_num_for(d & 3 == 3)
            rows.append((frontend_id(s) if s.name in FRONTEND_INITS else None, d, n, init_flag(s)))
        bases = ptoas_flag_bases(rows, cluster_model(ex.core.cluster))
        got = ex.flag_bases[f.name] = {id(s): b for s, b in zip(inits, bases)}
    return got


def h_init(ex, fr, s):
    where = ex.where(s)
    if where in ex.inited:
        raise ConfigError(
            f"the pipe init at {where} runs a second time on {ex.core_name}: it sits in a loop, or "
            f"the function that holds it is called more than once, so every run sets up one more "
            f"ring (flags and slot buffer of its own) next to the rings of the earlier runs",
            where=where, fix="initialise each pipe once per kernel: move the init out of the loop, "
                             "or call the function that holds it once (the entry's kernel calls)")
    ex.inited.add(where)
    dir_mask = int_attr(s, "dir_mask", ex.prog)
    slot_size = int_attr(s, "slot_size", ex.prog)
    slot_num = int_attr(s, "slot_num", ex.prog, 0) or None
    named = init_flag(s)
    if s.name in FRONTEND_INITS:
        pid = frontend_id(s)
        for w in (Direction.DIR_C2V, Direction.DIR_V2C):
            other = ex.pipes.get((w, pid))
            if dir_mask & int(w) and other is not None and other.where != where:
                raise ConfigError(
                    f"a second {w.name[4:]} pipe named id = {pid} in @{fr.f.name} (the first initialised at "
                    f"{other.where}): its pushes, pops and frees name their pipe by id, so they cannot tell "
                    "the two apart (ptoas: \"requires unique initialize_pipe id in function\")", where=where,
                    fix="give each frontend pipe of the function its own id = N, and name it on its "
                        "tpush / tpop / tfree ops")
    flag = flag_bases(ex, fr.f)[id(s)]
    kind = {"pto.initialize_l2g2l_pipe": L2G2L, "pto.initialize_l2l_pipe": L2L}.get(s.name, FRONTEND)
    local = ptoas_local_slot_num(kind, dir_mask, ex.core.cluster.platform, slot_num,
                                 int_attr(s, "local_slot_num", ex.prog, 0) or None, named)
    if s.name in ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe"):
        vs = [t for t in s.values()]
        vals = [ex.val(fr, v) for v in vs]
        gm = vals[0] if s.name == "pto.initialize_l2g2l_pipe" and vals else None
        locals_ = vals[1:] if gm is not None else vals
        c2v = locals_[0] if dir_mask & 1 and locals_ else 0
        v2c = locals_[-1] if dir_mask & 2 and locals_ else 0
    else:
        gm = _named_operand(ex, fr, s, "gm_slot_buffer")
        c2v = _named_operand(ex, fr, s, "c2v_consumer_buf")
        v2c = _named_operand(ex, fr, s, "v2c_consumer_buf")
    try:
        pv = _init_pipe(ex, fr, s, dir_mask, slot_size, slot_num, local, flag, gm, c2v, v2c)
        pv.where = where
        return pv
    except ConfigError as e:
        if "flags per direction" in (e.what or ""):   # the DSL's fix does not apply to a .pto
            e.fix = ("a .pto's ring has ptoas's SlotNum (8 one way, 4 both ways); under the spec model "
                     "each slot has a flag of its own, so the pipes of one direction share 8 flags - "
                     "run it with --protocol pto-isa (counter flags: two per ring), or give the "
                     "pipes fewer slots (slot_num = 4, the fewest ptoas builds: on the frontend init "
                     "for a newer ptoas, or a pto.initialize_l2g2l_pipe / l2l)"
                     + (f"; and check that both ends name FlagID {named} (flag_base): ends with "
                        "different FlagIDs never meet" if named is not None else ""))
            e.args = (e.render(),)
        raise


def split_axis(ex, s) -> TileSplitAxis:
    v = s.attr("split")
    try:
        return TileSplitAxis(int(v[0].text)) if v else TileSplitAxis.TILE_NO_SPLIT
    except ValueError:
        raise ex.perr(v[0], f"split = {v[0].text}: expected {SPLIT_CODES}") from None


def _pipe_form(ex, s, producer: bool, free: bool = False) -> tuple:
    """What a push / pop / free statement says, read once (``ex.decoded``): the ring it uses
    on this core and its split (None: a free that names none)."""
    got = ex.decoded.get(id(s))
    if got is None:
        split = split_axis(ex, s) if not free or s.attr("split") else None
        got = ex.decoded[id(s)] = (way_of(ex, s, producer), split)
    return got


def pipe_of(ex, fr, s, way: Direction, handle_tok=None) -> PipeVal:
    if handle_tok is not None:
        pv = ex.val(fr, handle_tok)
        if isinstance(pv, PipeVal):
            return pv
    pid = frontend_id(s)
    pv = ex.pipes.get((way, pid))
    if pv is None:
        named = f" pipe id = {pid}" if pid else " direction"
        raise ex.err(s, f"{s.name} on the {way.name[4:]}{named}, which no pipe init of "
                        f"@{fr.f.name} has set up", "initialise the pipe first"
                     + (" (a frontend init with the same id = N)" if pid else ""))
    return pv


#: the kernel a frontend pipe op belongs in: ``pto.aic_initialize_pipe``, ``tpush_to_aiv`` /
#: ``tpop_from_aiv`` / ``tfree_from_aiv`` the Cube's, the ``aiv`` / ``*_aic`` ones a Vector
#: kernel's - a function whose ``pto.kernel_kind`` says so (:func:`check_frontend_kernel`)
FRONTEND_OP_KIND = {"pto.aic_initialize_pipe": "cube", "pto.tpush_to_aiv": "cube", "pto.tpop_from_aiv": "cube",
                    "pto.tfree_from_aiv": "cube", "pto.aiv_initialize_pipe": "vector",
                    "pto.tpush_to_aic": "vector", "pto.tpop_from_aic": "vector", "pto.tfree_from_aic": "vector"}


def way_of(ex, s, producer: bool) -> Direction:
    """The ring this core produces into (the Cube: C2V) or consumes from (a frontend op is on
    the core it names: :func:`check_frontend_kernel` read it so)."""
    cube = ex.core_name == "aic"
    return Direction.DIR_C2V if producer == cube else Direction.DIR_V2C


#: the ring a frontend push / pop / free moves tiles on
_FRONTEND_WAY = {"pto.tpush_to_aiv": Direction.DIR_C2V, "pto.tpop_from_aic": Direction.DIR_C2V,
                 "pto.tfree_from_aic": Direction.DIR_C2V, "pto.tpush_to_aic": Direction.DIR_V2C,
                 "pto.tpop_from_aiv": Direction.DIR_V2C, "pto.tfree_from_aiv": Direction.DIR_V2C}


def check_frontend_kernel(f, path: str) -> None:
    """ptoas's verifier of the frontend pipe ops, a ParseError at the op before anything runs:
    each is in a function whose ``pto.kernel_kind`` is the kernel the op names
    (:data:`FRONTEND_OP_KIND`; "'pto.aic_initialize_pipe' op must be inside a cube kernel
    function" - a ``pto.section.cube`` in a function without one does not do: the sections take
    the lower-level pipe ops), and a function initialises each frontend pipe id once ("requires
    unique initialize_pipe id in function"; ptoas 0.27 takes one init per function)."""
    first = {}
    for s in f.statements():
        want = FRONTEND_OP_KIND.get(s.name)
        if want is None:
            continue
        where = f"{path}:{s.tok.line}:{s.tok.col}"
        if f.kind != want:
            has = (f"@{f.name} is a {f.kind} kernel" if f.kind else
                   f"@{f.name} has no pto.kernel_kind (a pto.section.{want} does not make it a {want} kernel)")
            fix = (f"move it into the {want} kernel: this side's op names the other core (tpush_to_aic / "
                   f"tpop_from_aiv ...)" if f.kind else
                   f"give @{f.name} attributes {{pto.kernel_kind = #pto.kernel_kind<{want}>}}, or, in a "
                   f"pto.section.{want}, set the pipe up with the lower-level ops (pto.initialize_l2l_pipe / "
                   f"pto.initialize_l2g2l_pipe, pto.tpush / pto.tpop / pto.tfree), which a section takes")
            raise ParseError(f"{s.name} belongs in a {want} kernel, but {has} (ptoas: '{s.name}' op must be "
                             f"inside a {want} kernel function)", where=where, fix=fix)
        if s.name in FRONTEND_INITS:
            pid = frontend_id(s)
            before = first.setdefault(pid, s)
            if before is not s:
                raise ParseError(
                    f"a second {s.name} of pipe id = {pid} in @{f.name} (the first at {before.tok.line}:"
                    f"{before.tok.col}): its pushes, pops and frees name their pipe by id, so they cannot tell "
                    "the two apart (ptoas: \"requires unique initialize_pipe id in function\"; 0.27: \"requires "
                    "at most one matching initialize_pipe op per function\")", where=where,
                    fix="initialise each pipe once; a second pipe of the function needs an id = N of its own, "
                        "named on its tpush / tpop / tfree (a newer ptoas), or a pto.initialize_l2l_pipe / "
                        "pto.initialize_l2g2l_pipe (ptoas 0.27)")


def check_frontend_rings(f, path: str) -> None:
    """A frontend push / pop / free of ``f`` follows an init of its pipe id whose ``dir_mask``
    enables its ring, as ptoas lowers them (PTOLowerFrontendPipeOps: "requires a frontend
    initialize_pipe op in the same function", "requires the dominating initialize_pipe op to
    enable V2C"): else a ParseError at the op.  (After :func:`check_pipe_directions`: two ends
    that disagree on the direction are said so first.)"""
    first, lower = {}, False
    later = {frontend_id(s): s for s in f.statements() if s.name in FRONTEND_INITS}
    for s in f.statements():
        if s.name in FRONTEND_INITS:
            first.setdefault(frontend_id(s), s)
            continue
        # (ptopipe's writer names a lower-level ring with the frontend ops in its address flow,
        # which ptoas has no ops for: such a function is the run's to check)
        lower = lower or s.name in INIT_OPS
        way = _FRONTEND_WAY.get(s.name)
        if way is None:
            continue
        pid = frontend_id(s)
        init = first.get(pid)
        if init is None and lower:
            continue
        where = f"{path}:{s.tok.line}:{s.tok.col}"
        if init is None:
            named = f" id = {pid}" if pid else ""
            side = "pto.aic" if FRONTEND_OP_KIND[s.name] == "cube" else "pto.aiv"
            after = later.get(pid)
            what = (f"{s.name} comes before the pipe's init at {after.tok.line}:{after.tok.col} (ptoas: '{s.name}' op "
                    "requires a dominating frontend initialize_pipe op)" if after is not None else
                    f"{s.name} has no frontend pipe init{named} in @{f.name} (ptoas: '{s.name}' op requires a "
                    "frontend initialize_pipe op in the same function)")
            raise ParseError(what, where=where,
                             fix=f"initialise the pipe ({side}_initialize_pipe{' {id = %d, ...}' % pid if pid else ''}) "
                                 f"in @{f.name} before its pushes and pops")
        mask = init.attr("dir_mask")
        mask = int(mask[0].text) if mask and mask[0].text.isdigit() else None
        if mask is not None and not mask & int(way):
            w = way.name[4:]
            raise ParseError(f"{s.name} moves a tile {w}, but the pipe init at {init.tok.line}:{init.tok.col} says "
                             f"dir_mask = {mask} ({_WAY.get(mask & 3, mask)}) (ptoas: '{s.name}' op requires the "
                             f"dominating initialize_pipe op to enable {w})", where=where,
                             fix=f"give the pipe both ways (dir_mask = 3 on its init and its peer's, each with its "
                                 f"consumer buffer) or move the tile on a pipe of the {w} direction")


def _slot_tensor(ex, s, spec) -> "isa.GlobalTensor | None":
    """The unplaced GlobalTensor of a push / pop statement's ``!pto.tensor_view<RxCxT>`` result
    (the address flow: TALLOC / TPOP give it the slot's address), else None."""
    if not (isinstance(spec, tuple) and spec[0] == "view"):
        return None
    _, dtype, shape = spec
    if not shape or None in shape:
        raise ex.perr(s.tok, f"{s.name}: a slot's tensor view needs a static shape",
                      "give the result type its shape, e.g. !pto.tensor_view<64x512xf32>")
    return isa.GlobalTensor(dtype, tuple(shape))


def _slot_view(gt, spec, s) -> View:
    """The tensor view (of type ``spec``) of slot tensor ``gt`` once placed: dense, row-major,
    what the file's ops take of a ``pto.make_tensor_view``."""
    shape = tuple(spec[2])
    return View(gt.data(), gt.dtype, shape, row_major_strides(shape), s.results[0] if s.results else "%slot")


def _slot_of(v):
    """A slot's tensor view (or tensor) as the GlobalTensor TPUSH / TFREE take, else ``v``."""
    return isa.GlobalTensor(v.ptr, v.shape, v.strides) if isinstance(v, View) else v


def h_talloc(ex, fr, s):
    """``%slot = pto.talloc_to_aiv|aic {split} -> !pto.tensor_view<..>`` (a ptopipe extension:
    the address flow): TALLOC - the next slot of the ring as a GM tensor to store into, which
    ``pto.tpush_to_aiv|aic(%slot : ...)`` then commits."""
    way, split = _pipe_form(ex, s, True)
    pv = pipe_of(ex, fr, s, way)
    spec = res_type(ex, s)
    gt = _slot_tensor(ex, s, spec)
    if gt is None:
        raise ex.perr(s.tok, f"{s.name} gives a !pto.tensor_view (the slot's GM tensor)")
    isa.TALLOC(pv.handle, gt, split)
    return _slot_view(gt, spec, s)


def h_push(ex, fr, s):
    vs = s.values()
    tile = _slot_of(ex.val(fr, vs[0]))
    way, split = _pipe_form(ex, s, True)
    pv = pipe_of(ex, fr, s, way, vs[1] if len(vs) > 1 else None)
    return isa.TPUSH(pv.handle, tile, split)


class SlotId:
    """``%sid = pto.tpop(%pipe) -> index``: a slot popped in the slot-id form; its tile comes
    from ``pto.get_fifo_tile(%pipe, %sid)`` (the TPOP happens there, as its consumer tile is
    known) and ``pto.tfree(%pipe, %sid)`` frees it."""
    __slots__ = ("pipe", "split", "tile", "where", "freed")

    def __init__(self, pipe, split, where):
        self.pipe, self.split, self.tile, self.where, self.freed = pipe, split, None, where, None


def h_pop(ex, fr, s):
    if s.name == "pto.tpop":
        vs = s.values()
        if not s.results:                          # pto.tpop(%tile, %pipe): destination passing
            pv = pipe_of(ex, fr, s, way_of(ex, s, False), vs[1] if len(vs) > 1 else None)
            tile = ex.val(fr, vs[0])
            isa.TPOP(pv.handle, tile, split_axis(ex, s))
            return None
        pv = pipe_of(ex, fr, s, way_of(ex, s, False), vs[0] if vs else None)
        sid = SlotId(pv, split_axis(ex, s), ex.where(s))     # %sid = pto.tpop(%pipe) -> index
        ex.slot_ids.setdefault(id(pv), []).append(sid)
        return sid
    way, split = _pipe_form(ex, s, False)
    pv = pipe_of(ex, fr, s, way)
    spec = res_type(ex, s)
    gt = _slot_tensor(ex, s, spec)
    if gt is not None:                  # the address flow: the popped slot as a GM tensor
        isa.TPOP(pv.handle, gt, split)
        return _slot_view(gt, spec, s)
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, f"{s.name} gives a !pto.tile_buf, or a !pto.tensor_view (the popped slot "
                             "in GM)")
    tile = folded(ex, fr, s)
    if tile is None:
        tile = tile_of(ex, s, spec, None, fr)
        tile._views = ex.pop_views(s)
    vs = s.values()
    if spec.v_rows is None and vs:
        tile.SetValid(ex.ival(fr, vs[-2]), ex.ival(fr, vs[-1]))
    isa.TPOP(pv.handle, tile, split)
    return tile


def h_fifo_tile(ex, fr, s):
    """``%t = pto.get_fifo_tile(%pipe, %sid) -> T``: the popped slot's tile (the TPOP)."""
    vs = s.values()
    sid = ex.val(fr, vs[1]) if len(vs) > 1 else None
    if not isinstance(sid, SlotId):
        raise ex.perr(s.tok, "pto.get_fifo_tile needs the slot id a pto.tpop(%pipe) gave")
    if sid.tile is not None:
        raise ex.err(s, "pto.get_fifo_tile of a slot whose tile was taken already",
                     "take each popped slot's tile once")
    spec = res_type(ex, s)
    if not isinstance(spec, TileSpec):
        raise ex.perr(s.tok, "pto.get_fifo_tile gives a !pto.tile_buf")
    sid.tile = tile_of(ex, s, spec, None, fr)
    sid.tile._views = ex.pop_views(s)
    isa.TPOP(sid.pipe.handle, sid.tile, sid.split)
    return sid.tile


def h_free(ex, fr, s):
    vs = s.values()
    way, split = _pipe_form(ex, s, False, free=True)
    pv = pipe_of(ex, fr, s, way, vs[0] if vs else None)
    sid = ex.val(fr, vs[1]) if len(vs) > 1 else None
    if isinstance(sid, SlotId):                    # pto.tfree(%pipe, %sid): that slot, once
        if sid.freed is not None:
            raise ex.err(s, f"pto.tfree of slot {vs[1].text} again: it was freed at {sid.freed}",
                         "free each popped slot once")
        held = ex.slot_ids.get(id(sid.pipe), [])
        if held and held[0] is not sid:
            raise ex.err(s, f"pto.tfree of slot {vs[1].text} (popped at {sid.where}) before the older slot "
                            f"popped at {held[0].where}: a ring frees its slots in pop order",
                         "free the slots in the order they were popped")
        if held:
            held.pop(0)
        sid.freed = ex.where(s)
    # no split: its TPOP's (docs/pto.md), which the ISA's TFREE takes as None
    held = _slot_of(ex.val(fr, vs[0])) if vs else None
    return isa.TFREE(pv.handle, held if isinstance(held, isa.GlobalTensor) else None, split)


INIT_OPS = ("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe", "pto.initialize_l2g2l_pipe",
            "pto.initialize_l2l_pipe")


#: the attributes the bundled ptoas (0.27) takes in a frontend init's braces, in the order it
#: parses them (PTOAS PTOOps.td ``AicInitializePipeOp`` / ``AivInitializePipeOp``:
#: ``{dir_mask = .., slot_size = .. [, nosplit = ..]}``)
FRONTEND_INIT_KEYS = ("dir_mask", "slot_size", "nosplit")
#: what a newer ptoas (the 0.54 pypto writes for) takes there too: the pipe's name ``id``,
#: ``slot_num``, ``local_slot_num`` (PTOAS ``parseFrontendInitializePipeOp``)
NEWER_FRONTEND_INIT_KEYS = ("id", "slot_num", "local_slot_num")
#: the pypto-frontend pipe inits (a ``dir_mask`` and a pipe ``id``; ptoas assigns their FlagIDs)
FRONTEND_INITS = ("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe")


def _ptoas027_expects(keys: list) -> str:
    """What ptoas 0.27 says at the first key of a frontend init's braces it does not take,
    given the keys before it: it parses dir_mask, slot_size, then an optional nosplit."""
    for want in FRONTEND_INIT_KEYS:
        if want not in keys:
            return f"expected '{want}'"
    return "expected '}'"


def ptoas_refusals(prog) -> list:
    """Warnings, at their line:col, for the pipe inits of ``prog`` that ptoas's verifier
    refuses and ptopipe runs: an attribute other than :data:`FRONTEND_INIT_KEYS` in a
    frontend init's braces - :data:`NEWER_FRONTEND_INIT_KEYS`, which a newer ptoas takes (the
    bundled 0.27 says "expected 'dir_mask'" or the like), or ptopipe's own spelling of a
    ring ptoas cannot build that way -, a slot_num other than
    :data:`~ptopipe.arch.vocab.PTOAS_SLOT_NUMS` or a local_slot_num outside 1..slot_num
    (PTOAS PTO.cpp ``verifyPipeShape`` / ``InitializeL2G2LPipeOp::verify``); and, after them,
    the ring ops ptoas 0.27 refuses (:func:`ring_op_refusals`), the loops it does not lower
    (:func:`~.headers.tile_carry_refusals`) and what only a newer ptoas reads
    (:func:`~.op_checks.newer_ptoas_refusals`)."""
    out = []
    for f in prog.funcs.values():
        for s in f.statements():
            if s.name not in INIT_OPS:
                continue
            toks, at, seen = s.toks, None, []
            if s.name in FRONTEND_INITS and toks and toks[0].text == "{":
                depth = 0
                for i, t in enumerate(toks):
                    depth += (t.text == "{") - (t.text == "}")
                    if depth == 0:
                        break
                    if depth == 1 and t.kind == "word" and toks[i + 1].text == "=" and \
                            toks[i - 1].text in ("{", ","):
                        if t.text not in FRONTEND_INIT_KEYS:
                            at = t
                            break
                        seen.append(t.text)
                if at is not None:
                    said = _ptoas027_expects(seen)
                    if at.text in NEWER_FRONTEND_INIT_KEYS:
                        out.append(f"{prog.path}:{at.line}:{at.col}: ptoas refuses {at.text} on {s.name} - "
                                   f"ptoas 0.27, the bundled one (\"{said}\"); a newer ptoas (pypto writes "
                                   "for 0.54) accepts it, and ptopipe runs it as that ptoas builds it")
                    else:
                        out.append(f"{prog.path}:{at.line}:{at.col}: ptoas refuses {at.text} on {s.name} "
                                   f"(0.27: \"{said}\": its braces take {', '.join(FRONTEND_INIT_KEYS)}, a "
                                   f"newer ptoas also {', '.join(NEWER_FRONTEND_INIT_KEYS)}); ptopipe runs it "
                                   "as written - for another ring, write a pto.initialize_l2l_pipe / "
                                   "initialize_l2g2l_pipe")
                    continue
            n = s.attr("slot_num")
            if n and n[0].text.lstrip("-").isdigit():
                t, k = n[0], int(n[0].text)
                legal = " or ".join(map(str, PTOAS_SLOT_NUMS))
                if k not in PTOAS_SLOT_NUMS:
                    out.append(f"{prog.path}:{t.line}:{t.col}: ptoas refuses slot_num = {k} on {s.name} "
                               f"(\"expects 'slot_num' to be {legal}\"); ptopipe runs a ring of {k} "
                               f"slots as written - give it slot_num = {legal} for the device")
                    continue
                ls = s.attr("local_slot_num")
                if ls and ls[0].text.lstrip("-").isdigit() and not 0 < int(ls[0].text) <= k:
                    t = ls[0]
                    out.append(f"{prog.path}:{t.line}:{t.col}: ptoas refuses local_slot_num = {t.text} on "
                               f"{s.name} (it expects 1..slot_num = {k}); ptopipe runs it as written")
    return out + ring_op_refusals(prog) + tile_carry_refusals(prog) + newer_ptoas_refusals(prog)


#: the ops that name a split, and those of them that name their pipe by its handle
_SPLIT_OPS = ("pto.tpush_to_aiv", "pto.tpush_to_aic", "pto.tpop_from_aic", "pto.tpop_from_aiv",
              "pto.tfree_from_aic", "pto.tfree_from_aiv", "pto.tpush", "pto.tpop", "pto.tfree")
_HANDLE_OPS = ("pto.tpush", "pto.tpop", "pto.tfree")
#: the frees (ptopipe's own ``pto.tfree_from_aic(%t : T)``, a free naming its tile, is not judged
#: here: ptoas refuses it whole, and the writer's notes say so)
_FREES = ("pto.tfree_from_aic", "pto.tfree_from_aiv", "pto.tfree")
#: the ring buffers ptoas 0.27 takes one of each per function (PTOAS PTO.cpp
#: ``ReserveBufferOp::verify`` / ``ImportReservedBufferOp::verify``)
ONE_PER_FUNCTION = ("pto.reserve_buffer", "pto.import_reserved_buffer")
#: the odd splits (TILE_UP_DOWN_ODD / TILE_LEFT_RIGHT_ODD) pypto writes for a newer ptoas
ODD_SPLITS = ("3", "4")


def ring_op_refusals(prog) -> list:
    """Warnings, at their line:col, for the ring ops of ``prog`` that ptoas 0.27 refuses and
    ptopipe runs as written: a second :data:`ONE_PER_FUNCTION` buffer in a function ("expects at
    most one reserve_buffer in the function"; ptopipe's writer spells a kernel with several
    rings of a direction so, and notes it), a free without its split ("expected '{'": ptopipe
    frees with its TPOP's), and an odd split (:data:`ODD_SPLITS`: "expects 'split' to be 0, 1,
    or 2"), which a newer ptoas takes."""
    out = []
    for f in prog.funcs.values():
        first = {}
        for s in f.statements():
            if s.name in ONE_PER_FUNCTION:
                if s.name not in first:
                    first[s.name] = s.tok.line
                    continue
                out.append(f"{prog.path}:{s.tok.line}:{s.tok.col}: ptoas 0.27 refuses a second {s.name} in "
                           f"@{f.name} (\"expects at most one {s.name[4:]} in the function\"; the first is at line "
                           f"{first[s.name]}); ptopipe runs it as written - for the device, reserve one buffer for "
                           "the function's rings and give each further ring's local address an offset into it "
                           "(arith.addi of the buffer's i32)")
            elif s.name in _SPLIT_OPS:
                v = s.attr("split")
                if not v and s.name in _FREES and (s.name == "pto.tfree" or not s.values()):
                    out.append(f"{prog.path}:{s.tok.line}:{s.tok.col}: ptoas refuses {s.name} without its split "
                               "(\"expected '{'\"); ptopipe frees with its TPOP's split - write it: "
                               "{split = N}, N the TPOP's")
                elif v and v[0].text in ODD_SPLITS:
                    out.append(f"{prog.path}:{v[0].line}:{v[0].col}: ptoas 0.27, the bundled one, refuses split = "
                               f"{v[0].text} on {s.name} (\"expects 'split' to be 0, 1, or 2\"); a newer ptoas "
                               "(pypto writes the odd splits for 0.54) takes it, and ptopipe runs it as pto-isa's "
                               "TILE_UP_DOWN_ODD / TILE_LEFT_RIGHT_ODD")
    return out


def check_nosplit_splits(f, path: str) -> None:
    """No push / pop / free of a pipe whose init says ``nosplit = true`` names split 1 or 2
    (ptoas refuses the file): a ParseError at the split, before anything runs.  A frontend op
    belongs to its function's frontend init, a handle op to the init whose handle it names."""
    frontend, handles = None, {}
    for s in f.statements():
        if s.name in INIT_OPS:
            ns = s.attr("nosplit")
            if ns and ns[0].text == "true":
                if s.name in ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe"):
                    handles.update(dict.fromkeys(s.results, s))
                else:
                    frontend = s
            continue
        if s.name not in _SPLIT_OPS:
            continue
        v = s.attr("split")
        if not v or v[0].text not in ("1", "2"):
            continue
        init = (next((handles[t.text] for t in s.values() if t.text in handles), None)
                if s.name in _HANDLE_OPS else frontend)
        if init is not None:
            what, fix = nosplit_conflict(s.name, int(v[0].text), init.tok.line)
            raise ParseError(what, where=f"{path}:{v[0].line}:{v[0].col}", fix=fix)


#: the pushes and pops, which ptoas reads only with their ``{split = N}`` ("expected '{'")
_PUSH_POP = ("pto.tpush_to_aiv", "pto.tpush_to_aic", "pto.tpop_from_aic", "pto.tpop_from_aiv", "pto.tpush",
             "pto.tpop")


def check_split_kinds(f, path: str) -> None:
    """A push or pop names its split (ptoas's parser: "expected '{'"; a free without one frees
    with its pop's, :func:`ring_op_refusals` warns of it): else a ParseError at the op.  A
    function's frontend pushes and pops move whole tiles (``split = 0``) or split ones, not both:
    a ParseError at the first that differs from the first one
    (:func:`~ptopipe.codegen.pto_syntax.split_mix_conflict`)."""
    first = None
    for s in f.statements():
        if s.name in _PUSH_POP and not s.attr("split"):
            # (where ptoas expects it: before a pop's `-> T`, else after the op)
            arrow = next((t for t in s.toks if t.text == "->"), None)
            end = arrow or (s.toks[-1] if s.toks else s.tok)
            raise ParseError(f"{s.name} without its split: ptoas refuses it (\"expected '{{'\" after the op: "
                             "a push or pop names how it splits the tile)",
                             where=f"{path}:{end.line}:{end.col + (0 if end is arrow else len(end.text))}",
                             fix="write {split = 0} for a whole tile, {split = 1} / {split = 2} for the Vector "
                                 "cores' up-down / left-right halves")
        if not s.name.startswith(("pto.tpush_to_", "pto.tpop_from_")):
            continue
        v = s.attr("split")
        split = int(v[0].text) if v and v[0].text.isdigit() else None
        if first is None:
            first = (s, split)
        elif (split in (None, 0)) != (first[1] in (None, 0)):
            what, fix = split_mix_conflict(f.name, s.name, split, first[0].name, first[1], first[0].tok.line)
            tok = v[0] if v else s.tok
            raise ParseError(what, where=f"{path}:{tok.line}:{tok.col}", fix=fix)


def check_flag_ids(prog, names) -> None:
    """The two ends of a pipe name the same FlagID: where the Cube's and the Vector's inits of
    one direction both give ``flag_base`` (a lower-level init's ``id`` too; a frontend init's
    ``id`` names its pipe), a FlagID one side names and the other does not is a ConfigError at
    that init (on the device each end waits on its own flags: a hang)."""
    ends = {}                                    # (direction bit, kind) -> {flag: stmt}
    for n in dict.fromkeys(names):
        f = prog.funcs[n]
        for s in f.statements():
            if s.name not in INIT_OPS:
                continue
            fid = init_flag(s)
            kind = {"pto.aic_initialize_pipe": "cube", "pto.aiv_initialize_pipe": "vector"}.get(s.name, f.kind)
            if fid is None or kind not in ("cube", "vector"):
                continue
            mask = int_attr(s, "dir_mask", prog)
            for bit in (1, 2):
                if mask & bit:
                    ends.setdefault((bit, kind), {}).setdefault(fid, s)
    for bit, way in ((1, "C2V"), (2, "V2C")):
        cube, vec = ends.get((bit, "cube"), {}), ends.get((bit, "vector"), {})
        if not cube or not vec or set(cube) == set(vec):
            continue
        lone = sorted([(s.tok.line, flag, "Cube", vec) for flag, s in cube.items() if flag not in vec]
                      + [(s.tok.line, flag, "Vector", cube) for flag, s in vec.items() if flag not in cube])
        line, flag, side, other = lone[0]
        s = (cube if side == "Cube" else vec)[flag]
        o = next(iter(other.values()))
        raise ConfigError(
            f"the {way} pipe's two ends name different FlagIDs: the {side} end FlagID {flag}, the other "
            f"end {', '.join(map(str, sorted(other)))} (at {o.where(prog.path)}) - each end would "
            f"wait on flags the other never sets (a hang on the device)",
            where=s.where(prog.path), fix="give both inits of the pipe the same flag_base")


_WAY = {1: "C2V", 2: "V2C", 3: "both ways"}


def check_pipe_directions(prog, names) -> None:
    """The two ends of a pipe agree on its direction: where the Cube's and a Vector's frontend
    inits name the same reserved buffer (the pipe's consumer buffer: a ``pto.reserve_buffer``
    in one, its ``pto.import_reserved_buffer`` in the other) with different ``dir_mask``, a
    ConfigError at the later init naming both (ptoas: "requires peer pipe init ops to agree on
    direction and pipe shape"; 0.27 refuses the first push / pop of the direction an init does
    not enable) - before the run, which would otherwise find the rings' flags colliding."""
    ends = {}                                   # (owner function, buffer name) -> [(init, kind)]
    for n in dict.fromkeys(names):
        f = prog.funcs[n]
        bufs = {}
        for s in f.statements():
            if s.name in ("pto.reserve_buffer", "pto.import_reserved_buffer") and s.results:
                name = s.attr("name")
                peer = s.attr("peer_func")
                owner = peer[0].text[1:] if peer and peer[0].kind == "symbol" else f.name
                if name:
                    bufs[s.results[0]] = (owner, name[0].text.strip('"'))
            elif s.name in FRONTEND_INITS:
                kind = "Cube" if s.name == "pto.aic_initialize_pipe" else "Vector"
                for key in ("c2v_consumer_buf", "v2c_consumer_buf"):
                    v = s.attr(key)
                    if v and v[0].text in bufs:
                        ends.setdefault(bufs[v[0].text], []).append((s, kind))
    for (owner, name), inits in ends.items():
        cube = [s for s, k in inits if k == "Cube"]
        vec = [s for s, k in inits if k == "Vector"]
        if len(cube) != 1 or len(vec) != 1:
            continue
        (c,), (v,) = cube, vec
        dc, dv = int_attr(c, "dir_mask", prog) & 3, int_attr(v, "dir_mask", prog) & 3
        if dc == dv:
            continue
        first, later = sorted((c, v), key=lambda s: (s.tok.line, s.col))
        fk, lk = ("Cube", "Vector") if first is c else ("Vector", "Cube")
        fd, ld = (dc, dv) if first is c else (dv, dc)
        raise ConfigError(
            f"the two ends of the pipe over buffer \"{name}\" (reserved by @{owner}) disagree on its "
            f"direction: the {fk}'s init at {first.where(prog.path)} says dir_mask = {fd} ({_WAY.get(fd, fd)}), "
            f"the {lk}'s init at {later.where(prog.path)} dir_mask = {ld} ({_WAY.get(ld, ld)}) (ptoas: "
            "\"requires peer pipe init ops to agree on direction and pipe shape\")",
            where=later.where(prog.path),
            fix="give both inits the dir_mask of the way the tiles go (1: Cube to Vector, 2: Vector to "
                "Cube, 3: both), with the buffer as the consumer buffer of that way")
