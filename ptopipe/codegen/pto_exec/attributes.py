"""The attribute keys of PTO-AS ops, and the reader's checks of the keys a file writes.

:data:`ATTRIBUTE_KEYS`: the ops whose pieces the executor looks up by name - any other key
of theirs is refused (a misspelled one would be ignored: ``stride =`` for ``strides =`` reads
the view as dense).  :data:`OP_KEYS`: the other ops whose keys are all known, each with its
own; a key such an op does not take but close to one it does (``maskPatern``, ``vaild_row``)
is a misspelling - ptoas refuses it where its syntax names the key, and keeps it as an
unknown attribute it ignores in an attribute dictionary; either way the op would run without
the attribute meant.  Any other key in an op's attribute dictionary is a discardable attribute
MLIR keeps (``{names = "k1"}`` on an ``arith.addi``, ``{round = 1}`` on a ``pto.tadd``): left
alone, as is a ``dialect.name`` key.
"""
from __future__ import annotations

import difflib
import re
from functools import lru_cache

from ...errors import ParseError
from ..pto_syntax import TILE_KEYS

_INIT_KEYS = ("dir_mask", "slot_size", "slot_num", "local_slot_num", "flag_base", "nosplit", "id")
_PIPE_OP_KEYS = frozenset(("split", "id"))
#: the inherent attributes of the ops whose pieces the executor looks up by name (a misspelled
#: one would be ignored: ``stride =`` for ``strides =`` reads the view as dense); a discardable
#: ``dialect.name`` attribute may be anywhere
ATTRIBUTE_KEYS = {
    "pto.make_tensor_view": frozenset(("shape", "strides", "layout")),
    "pto.partition_view": frozenset(("offsets", "sizes")),
    "pto.reserve_buffer": frozenset(("name", "size", "location", "auto", "base")),
    "pto.import_reserved_buffer": frozenset(("name", "peer_func")),
    **dict.fromkeys(("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe"), frozenset(
        _INIT_KEYS + ("c2v_consumer_buf", "v2c_consumer_buf", "gm_slot_buffer"))),
    **dict.fromkeys(("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe"), frozenset(_INIT_KEYS)),
    **dict.fromkeys(("pto.tpush_to_aiv", "pto.tpush_to_aic", "pto.tpop_from_aic", "pto.tpop_from_aiv",
                     "pto.tfree_from_aic", "pto.tfree_from_aiv", "pto.talloc_to_aiv", "pto.talloc_to_aic",
                     "pto.tpush", "pto.tpop", "pto.tfree"), _PIPE_OP_KEYS),
}


#: key -> the pto ops that take it: their inherent attributes and the keywords
#: of their custom syntax (``valid_row = %n``), as ptoas's op definitions declare them
_PTO_TAKEN_BY = {
    "accToVecMode": ("pto.tmov",), "addr": ("pto.alloc_tile", "pto.tassign"), "atomicType": ("pto.tstore",),
    "auto": ("pto.reserve_buffer",), "autoAlloc": ("pto.reserve_buffer",), "base": ("pto.reserve_buffer",),
    "block_bytes": ("pto.build_async_session",), "blockLen": ("pto.tmrgsort",),
    "buf_id": ("pto.get_buf", "pto.rls_buf"),
    "c2v_consumer_buf": ("pto.aic_initialize_pipe", "pto.aiv_initialize_pipe"),
    "channel_group_idx": ("pto.build_async_session",), "cmpMode": ("pto.tcmp", "pto.tcmps", "pto.tgather"),
    "comm_block_offset": ("pto.build_async_session",), "config": ("pto.bind_tile", "pto.pointer_cast"),
    "descending": ("pto.tci",), "dst_op": ("pto.record_event", "pto.wait_event"),
    "dst_pipe": ("pto.set_flag", "pto.set_flag_dyn", "pto.wait_flag", "pto.wait_flag_dyn"),
    "event_id": (
        "pto.record_event", "pto.set_flag", "pto.set_flag_dyn", "pto.sync.set", "pto.sync.wait",
        "pto.wait_event", "pto.wait_flag", "pto.wait_flag_dyn"),
    "excuted": ("pto.tmrgsort",), "exhausted": ("pto.tmrgsort",), "ffts_mode": ("pto.sync.set",),
    "format": ("pto.print",), "gatherOob": ("pto.mgather",), "gm_addr": ("pto.initialize_l2g2l_pipe",),
    "init_condition": ("pto.tload",), "init_out_buffer": ("pto.tload",), "isBinary": ("pto.tcolsum",),
    "isMSB": ("pto.thistogram",), "kValue": ("pto.tgather",), "left_padding_num": ("pto.tload",),
    "local_addr": ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe"), "maskPattern": ("pto.tgather",),
    "mode": ("pto.get_buf", "pto.rls_buf"),
    "offset": (
        "pto.addptr", "pto.load_scalar", "pto.store_scalar", "pto.tdequant", "pto.tgather", "pto.tgetval",
        "pto.tquant", "pto.tsetval"),
    "offsets": ("pto.subset", "pto.tgatherb"), "op_type": ("pto.barrier_sync", "pto.get_buf", "pto.rls_buf"),
    "pad_mode": ("pto.tload",), "pad_value": ("pto.tload",),
    "peer_local_addr": ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe"),
    "pipe": ("pto.barrier", "pto.sync.set", "pto.sync.wait"), "quant_type": ("pto.tquant",),
    "queue_num": ("pto.build_async_session",), "reluPreMode": ("pto.tmov", "pto.tstore"),
    "right_padding_num": ("pto.tload",), "rmode": ("pto.tcvt",), "rounds": ("pto.trandom",),
    "sat_mode": ("pto.tcvt",), "scatterAtomicOp": ("pto.mscatter",), "scatterOob": ("pto.mscatter",),
    "sizes": ("pto.subset",), "src_op": ("pto.record_event", "pto.wait_event"),
    "src_pipe": ("pto.set_flag", "pto.set_flag_dyn", "pto.wait_flag", "pto.wait_flag_dyn"),
    "stPhase": ("pto.tstore",), "sync_id": ("pto.build_async_session",), "upperOrLower": ("pto.ttri",),
    "valid_row": (
        "pto.alloc_tile", "pto.bind_tile", "pto.pointer_cast", "pto.set_validshape", "pto.tpop_from_aic",
        "pto.tpop_from_aiv"),
    "valid_col": (
        "pto.alloc_tile", "pto.bind_tile", "pto.pointer_cast", "pto.set_validshape", "pto.tpop_from_aic",
        "pto.tpop_from_aiv"),
    "value": ("pto.eventid_array_set", "pto.store_scalar"),
}
_FAST = ("fastmath",)
#: the keys of MLIR's arith / func ops that take any (an op of theirs not named takes none
#: the reader knows of, and is not checked)
_MLIR_KEYS = {
    "arith.constant": ("value",), "arith.cmpi": ("predicate",), "arith.cmpf": ("predicate", "fastmath"),
    **dict.fromkeys(("arith.addi", "arith.subi", "arith.muli", "arith.shli", "arith.trunci"), ("overflowFlags",)),
    **dict.fromkeys(("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.remf", "arith.negf",
                     "arith.maximumf", "arith.minimumf", "arith.maxnumf", "arith.minnumf"), _FAST),
    "arith.truncf": ("roundingmode", "fastmath"),
    "func.func": ("sym_name", "sym_visibility", "function_type", "arg_attrs", "res_attrs", "no_inline"),
    "func.call": ("callee", "arg_attrs", "res_attrs", "no_inline"),
}


def _op_keys() -> dict:
    out = {}
    for key, ops in _PTO_TAKEN_BY.items():
        for op in ops:
            out.setdefault(op, set()).add(key)
    for op, keys in _MLIR_KEYS.items():
        out.setdefault(op, set()).update(keys)
    return {op: frozenset(keys) for op, keys in out.items()}


#: op -> every key it takes, for the ops whose keys are all known (those of
#: :data:`ATTRIBUTE_KEYS` are checked exactly instead): a key of such an op that is not one of
#: them but close to one is that key misspelled; any other op's keys are not judged
OP_KEYS = _op_keys()
#: every key of :data:`OP_KEYS` (what a written key must resemble to be looked at op by op)
_ALL_KEYS = sorted(frozenset().union(*OP_KEYS.values()))


def written_keys(text: str) -> set:
    """The keys ``text`` writes as ``key =`` / ``key =...`` (one split of the whole file: the
    check of each op's keys below runs only for the ops that hold an unknown one)."""
    out = set()
    # (the piece of each chunk after its last blank; one starting with '%' is a result,
    # `%x = ...`, left out before it is cut: a file has a result per line)
    for chunk in {c[k + 1:] for c in text.split(" =")[:-1] if c[(k := c.rfind(" ")) + 1:k + 2] != "%"}:
        m = _TAIL_KEY.search(chunk)
        if m is not None:
            out.add(m.group(1))
    return out


_TAIL_KEY = re.compile(r"(?<![%\w.$#-])([A-Za-z_][\w]*)$")


#: the keys of the types' ``<...>`` (``!pto.tile_buf<loc=vec, ...>``, its short form's
#: ``valid=``, ``!pto.multi_tile_buf<..., count=N>``): no attribute's
_TYPE_KEYS = frozenset(TILE_KEYS) | frozenset(("valid", "count", "compact", "s_fractal_size"))


def misspelled(keys) -> frozenset:
    """The keys of ``keys`` (from :func:`written_keys`) that may misspell some op's key: close to
    one (a key of fewer than four letters is not taken for a misspelling: ``idx`` may well not
    mean ``id``).  Whether one does is the op's to say (:func:`check_misspelled`)."""
    return frozenset(k for k in keys if k not in _TYPE_KEYS and len(k) >= 4 and _near_a_key(k))


@lru_cache(maxsize=None)
def _near_a_key(key: str) -> bool:
    """``key`` is some op's key or close to one (files write the same few keys over and over)."""
    return key in _ALL_KEYS or bool(difflib.get_close_matches(key, _ALL_KEYS, n=1, cutoff=0.8))


@lru_cache(maxsize=None)
def _closest(op: str, key: str) -> str | None:
    """The key of ``op`` (an op of :data:`OP_KEYS`) that ``key`` is close to, if any (by op and
    key: a file's ops write the same keys over and over)."""
    want = difflib.get_close_matches(key, sorted(OP_KEYS[op]), n=1, cutoff=0.8)
    return want[0] if want else None


def check_misspelled(s, near: frozenset, path: str) -> None:
    """A ParseError when ``s``, an op of :data:`OP_KEYS`, writes ``key =`` with a key of ``near``
    that it does not take but that is close to one it does: the op would run without the
    attribute meant (ptoas refuses the key where the op's syntax names it, and keeps it as a
    discardable attribute it ignores in an attribute dictionary).  A key like none of the
    op's is a discardable attribute, left alone."""
    own = OP_KEYS.get(s.name)
    if own is None:
        return
    text = None
    for k in near:
        if k in own:
            continue
        text = s.text() if text is None else text
        if k not in text:
            continue
        want = _closest(s.name, k)
        if want is None:
            continue
        m = re.search(r"(?<![%\w.$#-])" + re.escape(k) + r"\s*=(?!=)", text)
        if m is None:
            continue
        line, col = s.position(m.start())
        raise ParseError(f"{s.name} has no attribute {k!r}: did you mean {want!r}? (ptoas refuses it where "
                         "the op's syntax names its keys, and ignores it in an attribute dictionary: the op "
                         "would run without it)", where=f"{path}:{line}:{col}", fix=f"write {want!r}")
