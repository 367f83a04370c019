"""Bracket matching in C++ source text: where the bracket opened at an index closes.

The kernel finder (:mod:`.build`) and the gtest host-code remover (:mod:`.gtest_host`) read
function bodies, namespace blocks and template heads by their brackets; comments and string
literals are blanked before (:func:`.build.visible_code`), so counting brackets is enough."""
from __future__ import annotations


def closing(code: str, i: int, pair: str = "{}") -> int:
    """The index of the bracket closing the one ``pair[0]`` at ``code[i]`` (``len(code)`` when
    it never closes)."""
    opening, close = pair
    depth = 0
    while i < len(code):
        c = code[i]
        if c == opening:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return len(code)
