"""The pipe inits of a file as ptoas pairs them (PTOAS ``PTOResolveReservedBuffersPass``,
``PTOInferValidatePipeInitPass``): the checks run when the file is read, in every function
(ptoas checks the whole module, functions no entry calls included), and the ``nosplit`` ptoas
infers for each pipe (:func:`pipe_nosplit`, the run's lanes).

* An init without an explicit ``flag_base`` - every frontend init (``pto.aic_/aiv_initialize_pipe``,
  which ptoas lowers to a lower-level init with none), a ``pto.initialize_l2l_pipe`` /
  ``initialize_l2g2l_pipe`` that names none - finds its other end through its local address:
  that address must be the result of a ``pto.reserve_buffer`` (the consumer's ring) or of a
  ``pto.import_reserved_buffer`` (the producer's view of it).  ptoas: "requires local_addr to
  come from pto.reserve_buffer or pto.import_reserved_buffer when 'flag_base' is not explicit".
* The inits whose local address is such a buffer (one logical pipe per buffer and direction)
  come in exactly one pair: one in the function that reserves the buffer, one in the function
  that imports it.  ptoas: "requires a complete peer init pair when local_addr comes from
  pto.reserve_buffer or pto.import_reserved_buffer".
* The pair's two ends move tiles alike, whole (``split = 0``) or split: ptoas infers the pipe's
  ``nosplit`` from both ends' ops ("conflicting pipe split usage across peer pipe init ops").

Each is a ParseError at the init (its operand), before anything runs."""
from __future__ import annotations

from ...errors import ParseError
from .pipe_ops import FRONTEND_INITS, INIT_OPS, init_flag, frontend_id

_BUFFER_OPS = ("pto.reserve_buffer", "pto.import_reserved_buffer")
_LOWER_INITS = ("pto.initialize_l2g2l_pipe", "pto.initialize_l2l_pipe")
_CONSUMER_BUFS = ("c2v_consumer_buf", "v2c_consumer_buf")


def _local_operands(s) -> list:
    """``[(operand token, direction key)]`` of an init's local addresses as ptoas keys its
    logical pipe: with ``dir_mask = 3`` the local address is the C2V consumer buffer (key 1)
    and the peer local address the V2C one (key 2); else the one local address, keyed by the
    mask.  [] when the mask or the operands are not literal / values."""
    m = s.attr("dir_mask")
    if not m or not m[0].text.isdigit():
        return []
    mask = int(m[0].text)
    if s.name in FRONTEND_INITS:
        named = {k: (s.attr(k) or [None])[0] for k in _CONSUMER_BUFS}
        locs = ([named["c2v_consumer_buf"], named["v2c_consumer_buf"]] if mask == 3 else
                [named["c2v_consumer_buf"] if mask == 1 else named["v2c_consumer_buf"] if mask == 2 else None])
    else:
        vals = s.values()
        locs = vals[1:3] if s.name == "pto.initialize_l2g2l_pipe" else vals[:2]
        locs = locs if mask == 3 else locs[:1]
    keys = (1, 2) if mask == 3 else (mask,)
    return [(t, k) for t, k in zip(locs, keys) if t is not None and t.kind == "value"]


def _definitions(f) -> dict:
    """name -> the statements of ``f`` that define it (a name may be reused in sibling regions)."""
    defs = {}
    for s in f.statements():
        for r in s.results:
            defs.setdefault(r, []).append(s)
    return defs


def _buffer_key(name: str, defs: dict, func: str, depth: int = 8) -> tuple | None:
    """``(owner function, buffer name)`` of the buffer the local address ``name`` is: a
    ``pto.reserve_buffer`` / ``pto.import_reserved_buffer`` result, or an ``arith`` op that
    MLIR's canonicalizer folds back to one before ptoas looks (:func:`_folds_to`: ``addi %buf,
    %c0``, ``muli %buf, %c1``, ``ori %buf, %buf`` ...); else None - an address computed from
    the buffer (``addi %buf, %c32``) is not the buffer, and ptoas refuses it."""
    for d in defs.get(name, ()):
        if d.name in _BUFFER_OPS:
            named = d.attr("name")
            peer = d.attr("peer_func")
            owner = peer[0].text[1:] if d.name == "pto.import_reserved_buffer" and peer else func
            return owner, named[0].text.strip('"') if named else ""
        v = _folds_to(d, defs) if depth else None
        if v is not None:
            return _buffer_key(v, defs, func, depth - 1)
    return None


#: MLIR's identity folds of a binary integer op: (op, its neutral constant, which operand may
#: hold it: "rhs" or "either")
_NEUTRAL = {"arith.addi": (0, "either"), "arith.ori": (0, "either"), "arith.xori": (0, "either"),
            "arith.subi": (0, "rhs"), "arith.shli": (0, "rhs"), "arith.shrsi": (0, "rhs"), "arith.shrui": (0, "rhs"),
            "arith.muli": (1, "either"), "arith.divsi": (1, "rhs"), "arith.divui": (1, "rhs"),
            "arith.floordivsi": (1, "rhs"), "arith.ceildivsi": (1, "rhs"), "arith.ceildivui": (1, "rhs"),
            "arith.andi": (-1, "either")}
#: ops that are their operand when both operands are the same value
_IDEMPOTENT = ("arith.andi", "arith.ori", "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui")
_INDEX_CASTS = ("arith.index_cast", "arith.index_castui")


def _computed_from(name: str, defs: dict, depth: int = 8) -> str | None:
    """The ``pto.reserve_buffer`` / ``pto.import_reserved_buffer`` result that the ``arith``
    value ``name`` is computed from (``%ring`` of ``arith.addi %ring, %c32``), else None."""
    for d in defs.get(name, ()):
        if d.name.startswith("arith.") and depth:
            for v in d.values():
                if any(e.name in _BUFFER_OPS for e in defs.get(v.text, ())):
                    return v.text
                got = _computed_from(v.text, defs, depth - 1)
                if got is not None:
                    return got
    return None


def _literal(name: str, defs: dict) -> int | None:
    """The value of ``name`` when an ``arith.constant`` with an integer literal defines it."""
    for d in defs.get(name, ()):
        if d.name == "arith.constant" and d.toks and d.toks[0].text.lstrip("-").isdigit():
            v = int(d.toks[0].text)
            ty = d.toks[2].text if len(d.toks) > 2 else ""
            bits = 64 if ty == "index" else int(ty[1:]) if ty[1:].isdigit() else None
            return v - (1 << bits) if bits and v >= 1 << (bits - 1) else v
    return None


def _folds_to(d, defs: dict) -> str | None:
    """The operand statement ``d`` (an ``arith`` op) is after MLIR's canonicalization, where
    it folds to one of its operands: ``x + 0``, ``x * 1``, ``x & x``, ``select(c, x, x)``, a
    cast to ``index`` and back; else None."""
    vals = [t.text for t in d.values()]
    if d.name in _NEUTRAL and len(vals) == 2:
        k, side = _NEUTRAL[d.name]
        if _literal(vals[1], defs) == k:
            return vals[0]
        if side == "either" and _literal(vals[0], defs) == k:
            return vals[1]
    if d.name in _IDEMPOTENT and len(vals) == 2 and vals[0] == vals[1]:
        return vals[0]
    if d.name == "arith.select" and len(vals) == 3 and vals[1] == vals[2]:
        return vals[1]
    if d.name in _INDEX_CASTS and len(vals) == 1:
        inner = [e for e in defs.get(vals[0], ()) if e.name in _INDEX_CASTS]
        if inner and len(inner[0].values()) == 1:
            return inner[0].values()[0].text
    return None


def _what_defines(f, name: str, defs: list) -> str:
    if any(p[0] == name for p in f.params):
        return f"a parameter of @{f.name}"
    if defs:
        d = defs[0]
        return f"the result of {d.name} at {d.tok.line}:{d.col}"
    return f"no value @{f.name} defines"


def check_imports(funcs: dict, path: str) -> None:
    """Each ``pto.import_reserved_buffer`` names a buffer its ``peer_func`` reserves: else a
    ParseError at its ``name`` (ptoas: "expects matching peer reserve_buffer to exist"), before
    the pipe's pairing is judged - the init that names the import would otherwise be reported
    as the lone end of a pipe."""
    reserved = {}                 # function -> the names of the buffers it reserves
    for f in funcs.values():
        reserved[f.name] = [t[0].text.strip('"') for t in (s.attr("name") for s in f.statements()
                                                            if s.name == "pto.reserve_buffer") if t]
    for f in funcs.values():
        for s in f.statements():
            if s.name != "pto.import_reserved_buffer":
                continue
            peer, named = s.attr("peer_func"), s.attr("name")
            if not peer or peer[0].kind != "symbol" or not named or peer[0].text[1:] not in funcs:
                continue          # (a missing peer_func / name, an unknown function: the run's words)
            owner, name = peer[0].text[1:], named[0].text.strip('"')
            if name in reserved[owner]:
                continue
            has = reserved[owner]
            listed = ("it reserves " + ", ".join(f'"{n}"' for n in has)) if has else "it reserves none"
            raise ParseError(
                f"pto.import_reserved_buffer names buffer \"{name}\" of @{owner}, which reserves no buffer of that "
                f"name ({listed}) "
                "(ptoas: \"expects matching peer reserve_buffer to exist\")",
                where=f"{path}:{named[0].line}:{named[0].col}",
                fix=f"name the pto.reserve_buffer of @{owner}" + (f" (name = \"{has[0]}\")" if len(has) == 1 else "")
                    + ", or reserve the buffer there")


def check_pipe_pairs(funcs: dict, path: str) -> None:
    """The rules of the module docstring, over every function of the file (``funcs``: name ->
    :class:`~.program.Func`)."""
    check_imports(funcs, path)
    groups = {}                  # (owner, buffer name, direction key) -> [(init, its function, operand)]
    disputed = set()             # (owner, buffer name) a frontend init names for the way it does not enable
    for f in funcs.values():
        defs = None
        for s in f.statements():
            if s.name not in INIT_OPS:
                continue
            if defs is None:
                defs = _definitions(f)
            locs = _local_operands(s)
            keyed = False
            for tok, way in locs:
                key = _buffer_key(tok.text, defs, f.name)
                if key is not None:
                    groups.setdefault((*key, way), []).append((s, f.name, tok))
                    keyed = True
            if keyed or not locs or (s.name in _LOWER_INITS and init_flag(s) is not None):
                continue
            if s.name in FRONTEND_INITS:
                other = {_buffer_key(v[0].text, defs, f.name) for v in (s.attr(k) for k in _CONSUMER_BUFS)
                         if v and v[0].kind == "value"} - {None}
                if other:        # (the buffer given for the other way: the two ends' directions disagree,
                    disputed |= other          # which the launch says of both inits)
                    continue
            tok = locs[0][0]
            lower = s.name in _LOWER_INITS
            base = _computed_from(tok.text, defs)
            raise ParseError(
                f"{s.name}'s local address {tok.text} is {_what_defines(f, tok.text, defs.get(tok.text))}, "
                "not a pto.reserve_buffer or pto.import_reserved_buffer result, and the init "
                + ("names no flag_base" if lower else "has no flag_base to find its other end by")
                + ": ptoas refuses the file (\"requires local_addr to come from pto.reserve_buffer or "
                "pto.import_reserved_buffer when 'flag_base' is not explicit\")",
                where=f"{path}:{tok.line}:{tok.col}",
                fix=(f"pass {base} itself: ptoas finds the pipe's other end by the buffer, and an address "
                     f"computed from it is not the buffer (only what folds back to it, as {base} + 0, is); "
                     "for a ring at another address, reserve a buffer of its own" if base else
                     "pass the pipe's buffer: the result of the pto.reserve_buffer in the consumer's function, "
                     "of its pto.import_reserved_buffer in the producer's")
                    + (", or give the init an explicit flag_base = N (both ends the same N)" if lower else ""))
    pairs = {}
    for (owner, name, way), inits in groups.items():
        funcs_of = {fn for _, fn, _ in inits}
        if (owner, name) in disputed:
            continue
        if len(inits) == 2 and len(funcs_of) == 2 and owner in funcs_of:
            pairs.setdefault(tuple(id(i[0]) for i in inits), (name, owner, inits))
            continue
        s, fn, tok = inits[0]
        said = "; ".join(f"{i.name} at {i.tok.line}:{i.col} in @{g}" for i, g, _ in inits)
        raise ParseError(
            f"the {'C2V' if way == 1 else 'V2C' if way == 2 else f'dir_mask = {way}'} pipe over buffer "
            f"\"{name}\" (reserved by @{owner}) has {len(inits)} init{'s' if len(inits) != 1 else ''} naming "
            f"the buffer ({said}): ptoas pairs exactly two, one in @{owner} with the pto.reserve_buffer result "
            "and one in the peer function with its pto.import_reserved_buffer (\"requires a complete peer init "
            "pair when local_addr comes from pto.reserve_buffer or pto.import_reserved_buffer\")",
            where=f"{path}:{tok.line}:{tok.col}",
            fix=f"initialise the pipe once in @{owner} with the buffer it reserves and once in the function "
                "that imports it (pto.import_reserved_buffer {name = ..., peer_func = @" + owner + "})")
    for name, owner, inits in pairs.values():
        _check_split_usage(name, owner, inits, funcs, path)


_FRONTEND_PIPE_OPS = ("pto.tpush_to_aiv", "pto.tpush_to_aic", "pto.tpop_from_aic", "pto.tpop_from_aiv",
                      "pto.tfree_from_aic", "pto.tfree_from_aiv")
_HANDLE_PIPE_OPS = ("pto.tpush", "pto.tpop", "pto.tfree")


def _split_usage(s, f) -> tuple | None:
    """``(whole tiles?, the first op that says so)`` of the pushes, pops and frees on the pipe
    of init ``s`` in function ``f`` (a frontend init's: its function's frontend ops of its id;
    a lower-level init's: the ops naming its handle); None when they say nothing or both
    (a mix is the function's own error, :func:`~.pipe_ops.check_split_kinds`)."""
    handles = set(s.results)
    pid = frontend_id(s) if s.name in FRONTEND_INITS else None
    whole = split = None
    for o in f.statements():
        if s.name in FRONTEND_INITS:
            if o.name not in _FRONTEND_PIPE_OPS or frontend_id(o) != pid:
                continue
        elif o.name not in _HANDLE_PIPE_OPS or not any(v.text in handles for v in o.values()):
            continue
        v = o.attr("split")
        if not v and o.name.startswith("pto.tfree"):
            continue                     # (a free without a split frees with its pop's)
        if not v or v[0].text == "0":
            whole = whole or o
        else:
            split = split or o
    if (whole is None) == (split is None):
        return None
    return (True, whole) if whole is not None else (False, split)


def _check_split_usage(name: str, owner: str, inits: list, funcs: dict, path: str) -> None:
    """The two ends of a reserved buffer's pipe move tiles alike: whole (``split = 0``) on both or
    split (1 / 2) on both - ptoas infers the pipe's ``nosplit`` from both ends' ops, and refuses
    ends that disagree ("conflicting pipe split usage across peer pipe init ops")."""
    used = [(_split_usage(s, funcs[fn]), s, fn) for s, fn, _ in inits]
    if any(u is None for u, _, _ in used) or used[0][0][0] == used[1][0][0]:
        return
    used.sort(key=lambda x: (x[1].tok.line, x[1].col))

    def said(u, fn):
        whole, o = u
        return (f"@{fn}'s {o.name} at {o.tok.line}:{o.col} "
                + ("moves whole tiles (split = 0)" if whole else "splits them (split = 1 / 2)"))
    (u0, _, f0), (u1, later, f1) = used
    raise ParseError(
        f"the two ends of the pipe over buffer \"{name}\" (reserved by @{owner}) move tiles differently: "
        f"{said(u0, f0)}, {said(u1, f1)} (ptoas: \"conflicting pipe split usage across peer pipe init ops\")",
        where=later.where(path),
        fix="give both ends' pushes, pops and frees the same split: 0 on both (whole tiles; on A5 AIV0 "
            "alone takes them) or 1 / 2 on both (each Vector core its half)")


def pipe_nosplit(funcs: dict) -> dict:
    """``{id(init): nosplit}`` for the pipe inits of ``funcs`` whose nosplit the file decides, as
    ptoas decides it for the pair of inits over one reserved buffer (PTOAS
    ``PTOInferValidatePipeInitPass``): an explicit ``nosplit`` of either end, else the split
    the ops of either end use (``split = 0``: nosplit) - so an end without pushes or pops takes
    its peer's.  An init paired with none (an explicit flag_base) decides alone; one whose pair
    says nothing is left out (the caller's default)."""
    own, peers = {}, {}
    for f in funcs.values():
        defs = None
        for s in f.statements():
            if s.name not in INIT_OPS:
                continue
            defs = _definitions(f) if defs is None else defs
            ns = s.attr("nosplit")
            usage = _split_usage(s, f)
            own[id(s)] = ((ns[0].text == "true") if ns else None, usage[0] if usage else None)
            for tok, way in _local_operands(s):
                key = _buffer_key(tok.text, defs, f.name)
                if key is not None:
                    peers.setdefault((*key, way), []).append(id(s))
    comp = {k: {k} for k in own}
    for ids in peers.values():                   # (the inits of one buffer's pipe: one component)
        merged = set().union(*(comp[i] for i in ids))
        for i in merged:
            comp[i] = merged
    out = {}
    for k in own:
        ends = [own[i] for i in comp[k]]
        explicit = next((e for e, _ in ends if e is not None), None)
        inferred = next((u for _, u in ends if u is not None), None)
        got = explicit if explicit is not None else inferred
        if got is not None:
            out[k] = got
    return out
