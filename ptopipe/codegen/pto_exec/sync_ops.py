"""Intra-core synchronisation: ``record_event`` / ``wait_event`` / ``set_flag[_dyn]`` /
``wait_flag[_dyn]`` / ``barrier`` / ``barrier_sync`` / ``tsync`` (pipes named directly or as ptoas's sync op
types), event-id arrays, ``pto.section.cube`` / ``.vector``, the cross-core ``pto.sync.set`` /
``pto.sync.wait``, the all-core barrier ``pto.syncall``, and the ops that add no order the
simulator lacks (``set_ffts``, ``get_buf`` / ``rls_buf``)."""
from __future__ import annotations

import re

from ... import isa
from ...arch.vocab import SyncAllMode, SyncCoreType, SyncPipe
from ...protocol.model import nosplit_one_lane, platform_kind
from ..pto_syntax import FREE_ORDER, SYNC_OP_PIPE
from .program import kind_runs_here, lane0_scope


#: the ops by which a kernel orders its own pipes (intra-core events and barriers)
OWN_EVENTS = frozenset(("pto.set_flag", "pto.wait_flag", "pto.set_flag_dyn", "pto.wait_flag_dyn",
                        "pto.record_event", "pto.wait_event", "pto.barrier", "pto.pipe_barrier",
                        "pto.barrier_sync", "pto.tsync"))


def own_event(prog):
    """The first statement of ``prog`` (in file order) that orders its core's pipes with an
    event or barrier of the kernel's own - not one the compiler placed before a TFREE for the
    protocol (``{ptopipe.free_order}``) - else None."""
    found = [s for f in prog.funcs.values() for s in f.statements()
             if s.name in OWN_EVENTS and FREE_ORDER not in s.text()]
    return min(found, key=lambda s: (s.tok.line, s.col), default=None)


def h_eventid_array(ex, fr, s):
    """``pto.declare_eventid_array -> !pto.eventid_array<N>``: N event ids, 0 until set."""
    ty = s.arrow_type() or s.types()
    n = int(re.search(r"<(\d+)>", "".join(t.text for t in ty[-1])).group(1)) if ty else 8
    return [[0] * n]                       # one result: the array


def _array_index(ex, fr, s):
    vs = s.values()
    arr, idx = ex.val(fr, vs[0]), ex.ival(fr, vs[1])
    if not 0 <= idx < len(arr):
        raise ex.err(s, f"{s.name}: index {idx} of an event-id array of {len(arr)}")
    return arr, idx, vs


def h_eventid_get(ex, fr, s):
    arr, idx, _ = _array_index(ex, fr, s)
    return arr[idx]


def h_eventid_set(ex, fr, s):
    arr, idx, vs = _array_index(ex, fr, s)
    arr[idx] = ex.ival(fr, vs[2])


def h_section(ex, fr, s):
    """``pto.section.cube { ... }`` / ``pto.section.vector { ... }``: the region runs on that
    kind of core only (ptoas's ``#if defined(__DAV_CUBE__)`` / ``__DAV_VEC__``); on A5 a Vector
    region that moves whole tiles and reads no sub-block runs on AIV0 only (ptoas's
    ``get_subblockid() == 0`` guard of the section, :func:`~.program.lane0_scope`)."""
    kind = "cube" if s.name.endswith("cube") else "vector"
    if not kind_runs_here(kind, ex.core_name):
        return
    body = s.regions[0][0].stmts
    if kind == "vector" and ex.core_name == "aiv1":
        lane0 = ex.decoded.get(id(s))
        if lane0 is None:
            lane0 = ex.decoded[id(s)] = nosplit_one_lane(platform_kind(ex.core.cluster.platform)) and lane0_scope(body)
        if lane0:
            return
    ex.block(fr, body)


def h_set_ffts(ex, fr, s):
    """``pto.set_ffts %base``: A2A3's FFTS base address for cross-core flags.  The simulated
    cluster's flags need no address; the operand is read (it must be defined)."""
    for v in s.values():
        ex.val(fr, v)


def h_buffer_token(ex, fr, s):
    """``pto.get_buf`` / ``pto.rls_buf [op type, id]``: A5's buffer tokens between two pipes
    of a core.  The scoreboard already orders every same-core dependency (``sync=auto``), so
    the tokens add no order the run lacks; their operands are checked."""
    text = "".join(t.text for t in s.toks)
    if not _OP_TYPE_RE.search(text) and not _PIPE_RE.search(text):
        raise ex.perr(s.tok, f"{s.name} needs a pipe or sync op type, e.g. [#pto.pipe_event_type<TLOAD>, 0]")


_PIPE_RE = re.compile(r"PIPE_[A-Z0-9]+")


_EVENT_RE = re.compile(r"EVENT_ID(\d+)")


_OP_TYPE_RE = re.compile(r"(?:pipe_event_type|sync_op_type)<(\w+)>")


def h_event(ex, fr, s):
    text = " ".join(t.text for t in s.toks)
    text = _OP_TYPE_RE.sub(lambda m: SYNC_OP_PIPE.get(m.group(1), m.group(0)), text.replace(" ", ""))
    pipes = _PIPE_RE.findall(text)
    src = s.attr("src")
    dst = s.attr("dst")
    if src and dst:
        ends = [_OP_TYPE_RE.sub(lambda m: SYNC_OP_PIPE.get(m.group(1), m.group(0)), "".join(t.text for t in x))
                for x in (src, dst)]
        pipes = [m.group(0) for m in (_PIPE_RE.search(e) for e in ends) if m]
    unknown = next((p for p in pipes if p not in SyncPipe.__members__), None)
    if unknown is not None:
        raise ex.perr(next((t for t in s.toks if t.text == unknown), s.tok),
                      f"{s.name}: {unknown} is not a pipe ptopipe models (ptoas: \"expected ::mlir::pto::PIPE to be "
                      "one of: PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, ...\")",
                      f"use one of {', '.join(SyncPipe.__members__)}")
    if s.name == "pto.tsync":       # TSYNC(operands...): waits for their pending work; a
        isa.pipe_barrier(SyncPipe("PIPE_ALL"))   # barrier on every pipe is at least that strong
        return None
    if s.name in ("pto.barrier", "pto.pipe_barrier", "pto.barrier_sync"):
        if not pipes:               # ``pto.barrier_sync[<TVEC>]``: a sync op type
            m = re.search(r"<(\w+)>", text)
            pipes = [SYNC_OP_PIPE.get(m.group(1), "PIPE_ALL")] if m else []
        isa.pipe_barrier(SyncPipe(pipes[0] if pipes else "PIPE_ALL"))
        return None
    if len(pipes) < 2:
        raise ex.perr(s.tok, f"{s.name} needs a source and a destination pipe")
    m = _EVENT_RE.search(text)
    vals = s.values()
    if m:
        eid = int(m.group(1))
        if eid >= 8:                # no member of ptoas's EVENT enum: the file does not parse
            tok = next((t for t in s.toks if t.text == m.group(0)), s.tok)
            raise ex.perr(tok, f"{s.name}: {m.group(0)} is not an event: ptoas refuses the file (expected "
                               "::mlir::pto::EVENT to be one of: EVENT_ID0 ... EVENT_ID7)",
                          "use an event id from EVENT_ID0 to EVENT_ID7")
    elif vals:
        eid = ex.ival(fr, vals[-1])
        if not 0 <= eid < 8:
            raise ex.err(s, f"{s.name}: event id {eid} ({vals[-1].text}) is not EVENT_ID0..7",
                         "use an event id from 0 to 7")
    else:
        raise ex.perr(s.tok, f"{s.name} needs an event id")
    fn = isa.set_flag if s.name in ("pto.record_event", "pto.set_flag", "pto.set_flag_dyn") else isa.wait_flag
    fn(SyncPipe(pipes[0]), SyncPipe(pipes[1]), eid)
    return None


def h_cross_core(ex, fr, s):
    """``pto.sync.set <PIPE_P>, id [{ffts_mode = M : i32}]`` / ``pto.sync.wait <PIPE_P>, id`` (id an
    integer or an index value): a cross-core flag the kernel sets / waits on itself, as ptoas
    lowers it (PTOAS ``PTOToEmitC``; :mod:`ptopipe.isa.crosscore`) - on A2A3
    ``ffts_cross_core_sync(P, getFFTSMsg(M, id))`` (M: 2 when absent) / ``wait_flag_dev(id)``, on A5
    ``set_intra_block(P, id)`` (and ``id + 16`` for ``PIPE_FIX``: the Cube's SET reaches AIV1 too,
    when AIV1 runs the Vector kernel) /
    ``wait_intra_block(P, id)``."""
    toks = s.toks
    pipes = _PIPE_RE.findall(" ".join(t.text for t in toks))
    if len(pipes) != 1 or pipes[0] not in SyncPipe.__members__:
        raise ex.perr(s.tok, f"{s.name} needs one pipe, e.g. {s.name} <PIPE_MTE3>, 0")
    pipe = SyncPipe[pipes[0]]
    comma = next((i for i, t in enumerate(toks) if t.text == ","), None)
    ev = toks[comma + 1] if comma is not None and comma + 1 < len(toks) else None
    if ev is None or (ev.kind != "value" and not ev.text.lstrip("-").isdigit()):
        raise ex.perr(ev or s.tok, f"{s.name} needs a flag id after the pipe: an integer or an index value")
    fid = ex.ival(fr, ev) if ev.kind == "value" else int(ev.text)
    mode = s.attr("ffts_mode")
    if mode and s.name != "pto.sync.set":
        raise ex.perr(mode[0], "pto.sync.wait takes no ffts_mode (ptoas: only pto.sync.set has one)")
    plat = ex.core.cluster.platform
    if plat.ring_in_gm:
        _needs_set_ffts(ex, fr, s)
    if ex.mixed:        # both halves on this one core, in program order: no peer to sync with
        msg = (f"{ex.where(s)}: {s.name} in a function of Cube and Vector tiles, run on one core: its "
               "cross-core flag has no peer here (program order already puts the Cube half before the "
               "Vector half); split the function into a cube and a vector kernel to check the sync")
        ex.warn(msg)
        return
    if plat.ring_in_gm:                 # A2A3: FFTS
        if not 0 <= fid < plat.hw_flag_ids:
            raise ex.err(s, f"{s.name}: cross-core flag id {fid} is outside 0..{plat.hw_flag_ids - 1} "
                            "(getFFTSMsg keeps its low 4 bits)")
        if s.name == "pto.sync.set":
            isa.ffts_cross_core_sync(pipe, isa.getFFTSMsg(int(mode[0].text) if mode else isa.FFTS_MODE_VAL, fid))
        else:
            isa.wait_flag_dev(fid)
    elif s.name == "pto.sync.set":
        if pipe is SyncPipe.PIPE_FIX and not 0 <= fid < isa.VEC_CORE_ID_OFFSET:
            raise ex.err(s, f"pto.sync.set <PIPE_FIX>, {fid}: ptoas lowers it on A5 to set_intra_block(PIPE_FIX, "
                            f"{fid}) and set_intra_block(PIPE_FIX, {fid + isa.VEC_CORE_ID_OFFSET}) (it mirrors a "
                            f"Cube SET to AIV1's id + {isa.VEC_CORE_ID_OFFSET}), and the Cube's ids are "
                            f"0..{2 * isa.VEC_CORE_ID_OFFSET - 1}",
                         f"give the PIPE_FIX set an id 0..{isa.VEC_CORE_ID_OFFSET - 1}: it reaches both Vector "
                         "cores (AIV0 at the id, AIV1 at id + 16)")
        isa.set_intra_block(pipe, fid)
        # (the mirror reaches AIV1 when it runs the Vector kernel: a kernel run on AIV0 alone
        # has no AIV1 to take it, as an A2A3 SET reaches the Vector cores that run)
        if pipe is SyncPipe.PIPE_FIX and ex.core.cluster.aiv(1).kernel is not None:
            isa.set_intra_block(pipe, fid + isa.VEC_CORE_ID_OFFSET)
    else:
        isa.wait_intra_block(pipe, fid)


def _needs_set_ffts(ex, fr, s) -> None:
    """A2A3: a ParseError at a ``pto.sync.set`` / ``pto.sync.wait`` whose function has no
    ``pto.set_ffts``, as ptoas refuses the file ("A3 inter-core sync requires explicit
    `pto.set_ffts` in the same function"): its FFTS messages need the base address that op
    gives the core."""
    key = ("set_ffts", id(fr.f))
    has = ex.decoded.get(key)
    if has is None:
        has = ex.decoded[key] = any(st.name == "pto.set_ffts" for st in fr.f.statements())
    if not has:
        raise ex.perr(s.tok, f"{s.name} in @{fr.f.name}, which has no pto.set_ffts: ptoas refuses it on A3 (\"A3 "
                             "inter-core sync requires explicit `pto.set_ffts` in the same function when using "
                             "`pto.sync.set`/`pto.sync.wait`\"); the core's FFTS base address is what its cross-core "
                             "flags go through",
                      f"give @{fr.f.name} the FFTS workspace as a parameter and set it before its first sync: "
                      "pto.set_ffts %ffts : memref<256xi64> (pypto: system.set_ffts(workspace))")


def _enum_attr(ex, s, key: str, enum, default):
    """``key = #pto.<name><value>`` of ``s`` as a member of ``enum`` (by value), else ``default``."""
    toks = s.attr(key)
    if not toks:
        return default
    word = toks[2].text if len(toks) >= 4 and toks[1].text == "<" else None
    try:
        return enum(word)
    except ValueError:
        raise ex.perr(toks[0], f"{s.name} {key} {''.join(t.text for t in toks)!r} is not one of "
                               f"{', '.join(m.value for m in enum)}") from None


def h_syncall(ex, fr, s):
    """``pto.syncall() mode = #pto.sync_all_mode<hard>, core_type = #pto.sync_core_type<C>`` or the
    soft form ``pto.syncall(%gm_pview[, %used] : !pto.partition_tensor_view<..xi32>[, i32]) mode =
    #pto.sync_all_mode<soft>, core_type = ...`` (pypto's ``system.syncall``): pto-isa's SYNCALL
    (:func:`ptopipe.isa.crosscore.SYNCALL`), C one of aiv_only, aic_only, mix (pypto's default)."""
    mode = _enum_attr(ex, s, "mode", SyncAllMode, SyncAllMode.Hard)
    core_type = _enum_attr(ex, s, "core_type", SyncCoreType, SyncCoreType.Mix)
    vs = s.values()
    if mode is SyncAllMode.Hard:
        if vs:
            raise ex.perr(vs[0], "the hard pto.syncall takes no operands", "write pto.syncall() mode = "
                                 "#pto.sync_all_mode<hard>, core_type = ..., or use the soft mode")
        isa.SYNCALL(core_type)
        return None
    if not 1 <= len(vs) <= 2:
        raise ex.perr(s.tok, "the soft pto.syncall takes its GM workspace and optionally the participant count: "
                             "pto.syncall(%ws[, %used] : !pto.partition_tensor_view<16xi32>[, i32]) mode = ...")
    ws = ex.val(fr, vs[0])
    used = ex.ival(fr, vs[1]) if len(vs) == 2 else 0
    isa.SYNCALL(core_type, mode, ws, used)
    return None
