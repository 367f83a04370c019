"""The pass pages' property sections (``docs/passes/``), made from the passes' declarations:
on each pass's page the IR properties it requires, produces and invalidates, and on the
README the pipeline table and the properties (what the IR has, from each verifier's
docstring; which passes make, need and break it).  Each section sits between two marker
comments; ``python -m ptopipe.report.pass_reference [DOCS_DIR]`` rewrites them (``--check``:
only lists the stale pages), and a test keeps the committed pages equal to them, so the
pages cannot drift from what the PassManager enforces.
"""
from __future__ import annotations

import os
import re
import sys

from ..passes import REGISTRY, default_pipeline
from ..passes.properties import VERIFIERS, IRProperty

BEGIN = "<!-- properties: made by python -m ptopipe.report.pass_reference -->"
END = "<!-- /properties -->"
DOCS = os.path.join("docs", "passes")


def _md(text: str) -> str:
    """A docstring's reST spans as markdown, on one line."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(text.split()))
    return text.replace("``", "`")


def _props(props, link: str = "README.md") -> str:
    if not props:
        return "nothing"
    return ", ".join(f"[`{p.value}`]({link}#{p.value})" for p in sorted(props, key=lambda p: p.value))


def _pipeline() -> list:
    return [REGISTRY[n] for n in default_pipeline()] + sorted(
        (p for n, p in REGISTRY.items() if n not in default_pipeline()), key=lambda p: p.name)


def pass_section(name: str) -> str:
    """The section of pass ``name``'s page."""
    p = REGISTRY[name]
    return "\n".join([
        BEGIN,
        f"**Requires:** {_props(p.required)}.  **Produces:** {_props(p.produced)}.  "
        f"**Invalidates:** {_props(p.invalidated)}.",
        END])


def readme_section() -> str:
    """The README's section: the pipeline and the properties."""
    passes = _pipeline()
    rows = [BEGIN, "| # | pass | requires | produces | invalidates |", "|---|---|---|---|---|"]
    for k, p in enumerate(passes, 1):
        rows.append(f"| {k} | [`{p.name}`]({p.name}.md) | {_props(p.required, '')} | "
                    f"{_props(p.produced, '')} | {_props(p.invalidated, '')} |")
    rows += ["", "### IR properties", "",
             "`ptopipe.passes.properties.IRProperty`; each has a verifier (`VERIFIERS`) that checks "
             "a program really has it, run after every pass with `--verify-each`.", ""]
    for prop in IRProperty:
        def who(attr):
            return ", ".join(f"`{p.name}`" for p in passes if prop in getattr(p, attr)) or "-"
        rows += [f"<a id=\"{prop.value}\"></a>**`{prop.value}`** - {_md(VERIFIERS[prop].__doc__)}  ",
                 f"Produced by {who('produced')}; required by {who('required')}; "
                 f"invalidated by {who('invalidated')}.", ""]
    rows[-1] = END
    return "\n".join(rows)


def sections() -> dict:
    """Page file name (in ``docs/passes``) -> its generated section."""
    out = {"README.md": readme_section()}
    for p in _pipeline():
        out[f"{p.name}.md"] = pass_section(p.name)
    return out


def stale(docs_dir: str = DOCS, write: bool = False) -> dict:
    """Page -> why its section is not the declarations' ("stale", rewritten when ``write``;
    "missing" / "no markers": left for a person to write)."""
    bad = {}
    for page, text in sections().items():
        path = os.path.join(docs_dir, page)
        if not os.path.exists(path):
            bad[page] = "missing"
            continue
        with open(path) as f:
            old = f.read()
        m = re.search(re.escape(BEGIN) + r".*?" + re.escape(END), old, re.S)
        if m is None:
            bad[page] = f"no markers (put {BEGIN} and {END} where the section goes)"
        elif m.group(0) != text:
            bad[page] = "stale"
            if write:
                with open(path, "w") as f:
                    f.write(old[:m.start()] + text + old[m.end():])
    return bad


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    docs_dir = args[0] if args else DOCS
    bad = stale(docs_dir, write=not check)
    for page, why in bad.items():
        done = " (rewritten)" if why == "stale" and not check else ""
        print(f"{os.path.join(docs_dir, page)}: {why}{done}")
    return 1 if any(check or why != "stale" for why in bad.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
