"""The attribute keys of PTO-AS ops, and the reader's checks of the keys a file writes.

:data:`ATTRIBUTE_KEYS`: the ops whose pieces the executor looks up by name - any other key
of theirs is refused (a misspelled one would be ignored: ``stride =`` for ``strides =`` reads
the view as dense).  Every other op's keys are checked against :data:`KNOWN_KEYS`, the keys
ptoas's ops and MLIR's take: a key that is none of them but close to one (``maskPatern``,
``vaild_row``) is a misspelling - ptoas refuses it where its syntax names the key, and keeps it
as an unknown attribute it ignores in an attribute dictionary; either way the op would run
without the attribute meant.  A key like no known one is left alone (a discardable attribute
of a tool's own), as is a ``dialect.name`` key.
"""
from __future__ import annotations

import difflib
import re

from ...errors import ParseError

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


#: every attribute / keyword key ptoas's ops and MLIR's builtin ops take (the ops' inherent
#: attributes, the keywords of their custom syntax, the keys of the types' ``<...>``)
KNOWN_KEYS = frozenset().union(*ATTRIBUTE_KEYS.values(), (
    # pto ops' attributes
    "accToVecMode", "atomicType", "autoAlloc", "block_bytes", "buf_id", "channel_group_idx", "cmpMode",
    "comm_block_offset", "config", "descending", "dst_op", "dst_pipe", "event_id", "exhausted", "ffts_mode",
    "format", "gatherOob", "init_out_buffer", "isBinary", "isMSB", "mode", "offset", "op_type", "pad_mode",
    "pipe", "quant_type", "queue_num", "reluPreMode", "rmode", "rounds", "sat_mode", "scatterAtomicOp",
    "scatterOob", "src_op", "src_pipe", "stPhase", "sync_id", "upperOrLower", "kValue", "blockLen", "excuted",
    # keywords of the pto ops' custom syntax
    "addr", "valid_row", "valid_col", "gm_addr", "local_addr", "peer_local_addr", "pad_value",
    "left_padding_num", "right_padding_num", "init_condition", "offsets",
    # MLIR's builtin / func / arith / scf ops
    "sym_name", "sym_visibility", "function_type", "arg_attrs", "res_attrs", "value", "callee", "predicate",
    "fastmath", "overflowFlags", "roundingmode", "operandSegmentSizes", "resultSegmentSizes", "no_inline",
    "unsigned"))


def written_keys(text: str) -> set:
    """The keys ``text`` writes as ``key =`` / ``key =...`` (one split of the whole file: the
    check of each op's keys below runs only for the ops that hold an unknown one)."""
    out = set()
    for chunk in {c[c.rfind(" ") + 1:] for c in text.split(" =")[:-1]}:
        if chunk[:1] == "%":
            continue                         # (a result: `%x = ...`)
        m = _TAIL_KEY.search(chunk)
        if m is not None:
            out.add(m.group(1))
    return out


_TAIL_KEY = re.compile(r"(?<![%\w.$#-])([A-Za-z_][\w]*)$")


#: the keys of the types' ``<...>`` (``!pto.tile_buf<loc=vec, ...>``): no attribute's
_TYPE_KEYS = frozenset(("loc", "dtype", "rows", "cols", "v_row", "v_col", "blayout", "slayout", "fractal", "pad",
                        "valid", "count", "compact", "s_fractal_size"))


def misspelled(keys) -> dict:
    """key -> the known key it misspells, of ``keys`` (from :func:`written_keys`; a key of
    fewer than four letters is not taken for a misspelling: ``idx`` may well not mean ``id``)."""
    out = {}
    for k in keys:
        if k in KNOWN_KEYS or k in _TYPE_KEYS or len(k) < 4:
            continue
        near = difflib.get_close_matches(k, _KNOWN_SORTED, n=1, cutoff=0.8)
        if near:
            out[k] = near[0]
    return out


_KNOWN_SORTED = sorted(KNOWN_KEYS)


def check_misspelled(s, near: dict, path: str) -> None:
    """A ParseError when ``s`` writes one of the misspelled keys ``near`` (key -> the known
    key) as ``key =``."""
    text = s.text()
    for k, want in near.items():
        m = re.search(r"(?<![%\w.$#-])" + re.escape(k) + r"\s*=(?!=)", text)
        if m is None:
            continue
        line, col = s.position(m.start())
        raise ParseError(f"{s.name} has no attribute {k!r}: did you mean {want!r}? (ptoas refuses it where "
                         "the op's syntax names its keys, and ignores it in an attribute dictionary: the op "
                         "would run without it)", where=f"{path}:{line}:{col}", fix=f"write {want!r}")
