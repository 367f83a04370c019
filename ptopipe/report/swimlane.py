"""Swimlane drawings of a traced run: an SVG (inside a self-contained, offline HTML report
with the profile tables) and the same lanes as a PNG through matplotlib (optional extra
``pip install "ptopipe[plot]"``).

One lane per (core, pipe) that did work, one ``issue`` lane per core showing when its
instruction issue was held (waiting for data / a free slot / an event), and one step
chart per ring with its slots in use.

A screen shows a few thousand boxes per lane, a long run has millions of instructions:
items closer together than half a pixel are merged into one bar (a busy interval that
keeps its instruction count and busy cycles, drawn fainter the less of it is busy), and a
ring's occupancy is drawn as its mean per pixel once it has more steps than pixels.
The page says when it did either.  Cost and output size are linear in the run / bounded
by the drawing width, whatever the run length.
"""
from __future__ import annotations

import html
from typing import NamedTuple

from ..arch import PipeUnit
from ..errors import ConfigError
from ..sim.trace import Hold, Instr
from ._io import atomic_open, save_png
from .profile import Profile, profile
from .timeline import Timeline, arg_dict, timeline

PIPE_COLORS = {"M": "#d62728", "V": "#1f77b4", "MTE2": "#2ca02c", "MTE3": "#9467bd",
               "MTE1": "#ff7f0e", "FIX": "#8c564b", "S": "#7f7f7f"}
WAIT_COLORS = {"ready": "#fdae6b", "free": "#fb6a4a", "event": "#bdbdbd", "flag": "#bdbdbd"}
_RING_OPS = ("TPUSH", "TPOP", "TFREE", "TALLOC")
LABEL_W, LANE_H, LANE_GAP, RING_H = 120, 16, 3, 40   # drawing geometry in pixels
ARROW_CAP = 400      # TPUSH -> TPOP arrows drawn only while at most this many are in view
_GAP_PX = 0.5        # items closer than this merge into one bar ...
_BAR_PX = 4.0        # ... while the bar stays narrower than this
# so a lane has at most plot_px / _GAP_PX + 2 * plot_px / _BAR_PX + 1 bars: every bar but the
# last ends at a gap of >= _GAP_PX, or it and the next one together span >= _BAR_PX


class Lane(NamedTuple):
    label: str
    core: int
    items: list          # [(start, end, color, record)], record an Instr or a Hold, by start


class Bar(NamedTuple):
    """One drawn box: a single instruction / wait, or several merged (n > 1)."""
    start: int
    end: int
    busy: int            # cycles covered by its items (== end - start for a single one)
    n: int               # items merged into it
    color: str
    outlined: bool       # holds a ring instruction (TPUSH/TPOP/TFREE/TALLOC)
    record: object       # the item when n == 1 (for its tooltip), else None


def lanes(tl: Timeline) -> list:
    """The lanes in display order, built in one pass over the trace."""
    colors = {p: PIPE_COLORS.get(p.name, "#999999") for p in PipeUnit}
    per_pipe, holds = {}, {}
    for ins in tl.instrs:           # (a PipeUnit and its int are the same dict key)
        per_pipe.setdefault((ins.core, ins.pipe), []).append(
            (ins.start, ins.end, colors.get(ins.pipe, "#999999"), ins))
    for h in tl.holds:
        holds.setdefault(h.core, []).append((h.start, h.end, WAIT_COLORS.get(h.kind, "#bdbdbd"), h))
    out = []
    for c in sorted({c for c, _p in per_pipe} | set(holds)):
        name = tl.core_names[c]
        out.append(Lane(f"{name} issue", c, sorted(holds.get(c, []), key=_start)))
        for p in PipeUnit:
            items = per_pipe.get((c, p))
            if items:
                out.append(Lane(f"{name} {p.name}", c, sorted(items, key=_start)))
    return out


def _start(item) -> int:
    return item[0]


def _pipe_name(pipe) -> str:
    try:
        return PipeUnit(pipe).name
    except ValueError:
        return str(pipe)


def bars(items: list, scale: float) -> list:
    """Merge a lane's items (sorted by start) at ``scale`` pixels per cycle: items closer
    than half a pixel join one bar while it stays under 4 pixels wide.  A bar's ``busy``
    is the cycles its items cover (overlaps counted once), so the busy time of the lane is
    kept; its colour is the one with the most busy cycles."""
    out = []
    cur = None           # [start, end, busy, n, {color: busy}, outlined, record, covered_to]
    for s, e, color, rec in items:
        outl = type(rec) is Instr and rec.name in _RING_OPS
        if cur is not None and (s - cur[1]) * scale < _GAP_PX and (max(e, cur[1]) - cur[0]) * scale < _BAR_PX:
            new = max(0, e - max(s, cur[7]))
            cur[2] += new
            cur[3] += 1
            cur[4][color] = cur[4].get(color, 0) + new
            cur[5] = cur[5] or outl
            cur[6] = None
            if e > cur[1]:
                cur[1] = e
            if e > cur[7]:
                cur[7] = e
            continue
        if cur is not None:
            out.append(_bar(cur))
        cur = [s, e, e - s, 1, {color: e - s}, outl, rec, e]
    if cur is not None:
        out.append(_bar(cur))
    return out


def _bar(cur) -> Bar:
    by_color = cur[4]
    color = max(by_color, key=by_color.get) if len(by_color) > 1 else next(iter(by_color))
    return Bar(cur[0], cur[1], cur[2], cur[3], color, cur[5], cur[6])


def _tip(lane: Lane, b: Bar, core_name: str) -> str:
    rec = b.record
    if rec is None:
        what = "waits" if lane.label.endswith(" issue") else "instructions"
        width = max(b.end - b.start, 1)
        return f"{b.n} {what} {b.start}-{b.end}, busy {b.busy} cycles ({b.busy / width:.0%})"
    at = f" at {rec.loc}" if rec.loc is not None else ""
    if isinstance(rec, Hold):
        return f"{core_name} issue waits ({rec.kind}) {rec.start}-{rec.end}{at}"
    return f"{rec.name} {core_name} {_pipe_name(rec.pipe)} {rec.start}-{rec.end} {args_text(rec.args)}{at}"


def args_text(args) -> str:
    """An instruction's args as ``k=v`` words (its tooltip's middle part)."""
    return " ".join(f"{k}={v}" for k, v in arg_dict(args).items())


def occupancy_px(steps: list, cycles: int, scale: float) -> "tuple[list, bool]":
    """A ring's occupancy steps ``[(cycle, slots)]`` for a drawing at ``scale`` pixels per
    cycle: unchanged when there are at most as many steps as pixels, else the time-weighted
    mean slots in use per pixel column (second value True)."""
    cols = int(cycles * scale) + 1
    if len(steps) <= cols or cycles <= 0:
        return steps, False
    w = cycles / cols
    pts = list(steps) + [(cycles, steps[-1][1])]
    out, acc, i = [], 0.0, 0
    prev = 0.0
    for k in range(1, cols + 1):
        b = min(cycles, k * w)
        while i + 1 < len(pts) and pts[i + 1][0] <= b:
            acc += (pts[i + 1][0] - pts[i][0]) * pts[i][1]
            i += 1
        area = acc + (b - pts[i][0]) * pts[i][1]
        out.append(((k - 1) * w, (area - prev) / w))
        prev = area
    return out, True


class Drawing(NamedTuple):
    svg: str
    items: int           # instructions and waits in the lanes
    bars: int            # boxes drawn for them
    rings_averaged: int  # rings drawn as mean per pixel


def swimlane_svg(tl: Timeline, width: int = 1200) -> str:
    """The swimlane as an SVG string."""
    return _swimlane(tl, width).svg


def _swimlane(tl: Timeline, width: int) -> Drawing:
    rows = lanes(tl)
    cycles = max(tl.cycles, 1)
    plot_w = width - LABEL_W - 10
    scale = plot_w / cycles
    height = 30 + len(rows) * (LANE_H + LANE_GAP) + len(tl.rings) * (RING_H + 14) + 10
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" id="swimlane" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="11">',
         '<defs><marker id="arrowhead" markerWidth="6" markerHeight="6" refX="5" refY="3" '
         'orient="auto"><path d="M0,0 L6,3 L0,6 z" fill="#444"/></marker></defs>',
         f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
         '<g class="axis">']
    step = _nice_step(cycles / 10)          # ~10 ticks
    t = 0
    while t <= cycles:
        x = LABEL_W + t * scale
        o.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height - 5}" stroke="#eeeeee"/>')
        o.append(f'<text x="{x:.1f}" y="11" text-anchor="middle" fill="#555">{t}</text>')
        t += step
    o.append('</g><g class="lanes">')
    y = 20
    n_items = n_bars = averaged = 0
    lane_y = {}
    for lane in rows:
        core_name = tl.core_names[lane.core]
        o.append(f'<text x="4" y="{y + LANE_H - 4}">{html.escape(lane.label)}</text>')
        o.append(f'<rect x="{LABEL_W}" y="{y}" width="{plot_w}" height="{LANE_H}" fill="#fafafa"/>')
        lane_y[lane.label] = y
        drawn = bars(lane.items, scale)
        n_items += len(lane.items)
        n_bars += len(drawn)
        o.append('<g class="bars">')
        for b in drawn:
            x = LABEL_W + b.start * scale
            w = max((b.end - b.start) * scale, 0.6)
            stroke = ' stroke="black" stroke-width="0.6"' if b.outlined else ""
            if b.n > 1 and b.end > b.start and b.busy < b.end - b.start:
                stroke += f' fill-opacity="{max(0.3, b.busy / (b.end - b.start)):.2f}"'
            o.append(f'<rect x="{x:.2f}" y="{y + 1}" width="{w:.2f}" height="{LANE_H - 2}" '
                     f'fill="{b.color}"{stroke}><title>{html.escape(_tip(lane, b, core_name))}</title></rect>')
        o.append('</g>')
        y += LANE_H + LANE_GAP
    o.append('</g><g class="arrows">')
    if len(tl.push_pop) <= ARROW_CAP:
        for x1, y1, x2, y2 in _arrows(tl, lane_y, 0, scale):
            o.append(f'<line x1="{x1:.2f}" y1="{y1}" x2="{x2:.2f}" y2="{y2}" stroke="#444" '
                     'stroke-width="0.7" marker-end="url(#arrowhead)"/>')
    o.append('</g><g class="rings">')
    for r in tl.rings:
        y += 14
        occ, avg = occupancy_px(r.occupancy, cycles, scale)
        averaged += avg
        o.append(f'<text x="4" y="{y - 3}">{html.escape(r.name[:60])} - slots in use '
                 f'(peak {r.peak}/{r.slot_num}{", mean per pixel" if avg else ""})</text>')
        o.append(f'<rect x="{LABEL_W}" y="{y}" width="{plot_w}" height="{RING_H}" fill="#fafafa"/>')
        top = max(r.slot_num, r.peak, 1)
        pts = []
        occ = occ + [(cycles, occ[-1][1] if occ else 0)]
        for (t0, n), (t1, _n) in zip(occ, occ[1:]):
            yy = y + RING_H - n / top * (RING_H - 2)
            pts.append(f"{LABEL_W + t0 * scale:.2f},{yy:.2f}")
            pts.append(f"{LABEL_W + t1 * scale:.2f},{yy:.2f}")
        if pts:
            o.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#3182bd" stroke-width="1.2"/>')
        o.append(f'<text x="{LABEL_W - 4}" y="{y + 10}" text-anchor="end" fill="#555">{top}</text>')
        y += RING_H
    o.append("</g></svg>")
    return Drawing("\n".join(o), n_items, n_bars, averaged)


def lane_of(ins, core_names) -> str:
    """The label of the lane an instruction is drawn in."""
    return f"{core_names[ins.core]} {_pipe_name(ins.pipe)}"


def _arrows(tl: Timeline, lane_y: dict, t0: float, scale: float):
    """The TPUSH -> TPOP arrows as pixel lines ``(x1, y1, x2, y2)``: from the middle of the
    push's box to the middle of the pop's."""
    for a, b in tl.push_pop:
        ya, yb = lane_y.get(lane_of(a, tl.core_names)), lane_y.get(lane_of(b, tl.core_names))
        if ya is None or yb is None:
            continue
        yield (LABEL_W + ((a.start + a.end) / 2 - t0) * scale, ya + LANE_H / 2,
               LABEL_W + ((b.start + b.end) / 2 - t0) * scale, yb + LANE_H / 2)


def _nice_step(x: float) -> int:
    if x <= 1:
        return 1
    p = 10 ** (len(str(int(x))) - 1)
    for m in (1, 2, 5, 10):
        if m * p >= x:
            return m * p
    return 10 * p


_CSS = """body{font-family:sans-serif;margin:20px;color:#222}table{border-collapse:collapse;margin:8px 0 16px}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left}.verdict{font-size:1.15em;font-weight:bold;margin:8px 0}
.legend span{display:inline-block;margin-right:12px}.sw{display:inline-block;width:12px;height:10px;
margin-right:4px;vertical-align:middle}.scroll{overflow-x:auto}.note{color:#555;font-size:.9em}"""


def report_html(run, title: str = "ptopipe run", width: int = 1400,
                tl: Timeline | None = None) -> str:
    """The self-contained HTML report (summary tables + swimlane SVG) of a traced run."""
    cluster = getattr(run, "cluster", run)
    tl = tl or timeline(cluster)
    prof = profile(cluster, tl)
    e = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<style>{_CSS}</style></head><body>", f"<h1>{e(title)}</h1>",
             f"<p>platform {e(prof.platform)}, cross-core latency "
             f"{cluster.platform.cross_core_latency} cycles: <b>{prof.cycles}</b> total cycles</p>",
             f"<div class='verdict'>{e(prof.bottleneck)}</div>"]
    parts.append(_tables(prof))
    legend = " ".join(f"<span><i class='sw' style='background:{c}'></i>{p}</span>"
                      for p, c in PIPE_COLORS.items())
    legend += " " + " ".join(f"<span><i class='sw' style='background:{WAIT_COLORS[k]}'></i>waits {k}</span>"
                             for k in ("ready", "free", "event"))
    drawing = _swimlane(tl, width)
    note = ""
    if drawing.bars < drawing.items or drawing.rings_averaged:
        note = (f"<p class='note'>{drawing.items} instructions and waits shown as "
                f"{drawing.bars} merged bars: items closer than half a pixel are merged into "
                "one busy interval (fainter = less of it busy; hover for its count and busy "
                "cycles)")
        if drawing.rings_averaged:
            note += (f"; {drawing.rings_averaged} ring occupancy chart(s) show the mean slots in "
                     "use per pixel")
        note += ".</p>"
    from .swimlane_view import view_html    # (it builds on this module's lanes and geometry)
    view = view_html(tl, lanes(tl), width)
    how = ("mouse wheel: zoom around the pointer, drag: pan, double click: the whole run; "
           if view else "a run this long is drawn whole only - zoom into it in Perfetto "
                        "(ptopipe trace -o trace.json, open it in ui.perfetto.dev); ")
    parts.append(f"<h2>Swimlane</h2><div class='legend'>{legend} "
                 "<span>(black outline: TPUSH/TPOP/TFREE/TALLOC; arrows: TPUSH to the TPOP "
                 "that takes its slot; hover for details and the kernel's file:line)</span></div>"
                 + note + f"<p class='note'>{how}<span id='swimlane-window'></span></p>"
                 "<p class='note'>An issue lane shows when a core's instruction issue was held "
                 "(waiting for data, a free slot or an event).  A hold while one of the core's "
                 "pipes is still busy overlaps useful work and is not a stall: the stall "
                 "breakdown above counts only the cycles in which no pipe of the core is busy.  "
                 "Times are cycles; in the Chrome / Perfetto trace (ptopipe trace) one time "
                 "unit (shown as 1 us) is one cycle.</p>")
    parts.append(f"<div class='scroll'>{drawing.svg}</div>{view}</body></html>")
    return "\n".join(parts)


def _tables(prof: Profile) -> str:
    pipes = [p.name for p in PipeUnit if any(c.busy.get(p.name) for c in prof.cores.values())]
    rows = ["<h2>Pipes: busy cycles (utilisation)</h2><table><tr><th>core</th><th>instructions</th>"
            + "".join(f"<th>{p}</th>" for p in pipes) + "</tr>"]
    for c in prof.cores.values():
        rows.append(f"<tr><td>{c.name}</td><td>{c.instructions}</td>" + "".join(
            f"<td>{c.busy[p]} ({c.utilisation[p]:.0%})</td>" for p in pipes) + "</tr>")
    rows.append("</table><h2>Stall breakdown (cycles with no pipe busy)</h2><table><tr><th>core</th>"
                "<th>busy</th><th>waiting for data</th><th>waiting for free slot</th>"
                "<th>waiting for events</th><th>idle</th><th>finished at</th></tr>")
    t = max(prof.cycles, 1)
    for c in prof.cores.values():
        cells = [c.active] + [c.stalls.get(k, 0) for k in ("ready", "free", "event", "idle")]
        rows.append(f"<tr><td>{c.name}</td>" + "".join(f"<td>{v} ({v / t:.0%})</td>" for v in cells)
                    + f"<td>{c.end}</td></tr>")
    rows.append("</table>")
    if prof.rings:
        rows.append("<h2>Rings</h2><table><tr><th>ring</th><th>SlotNum</th><th>pushes</th>"
                    "<th>peak slots in use</th><th>mean slots in use</th></tr>")
        for r in prof.rings:
            rows.append(f"<tr><td>{html.escape(r.name)}</td><td>{r.slot_num}</td><td>{r.pushes}</td>"
                        f"<td>{r.peak}</td><td>{r.mean:.2f}</td></tr>")
        rows.append("</table>")
    return "\n".join(rows)


def write_html(run, path: str, title: str = "ptopipe run", tl: Timeline | None = None) -> str:
    """Write the HTML report of a traced run to ``path`` (atomically).  Its size is bounded
    by the drawing width, not the run length, so it is built in memory."""
    with atomic_open(path) as f:
        f.write(report_html(run, title, tl=tl))
    return path


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("PNG output needs matplotlib, which is not installed",
                          fix='install the plotting extra: pip install "ptopipe[plot]" (in a checkout: '
                              'pip install -e ".[plot]"), or use the HTML report, which needs nothing') from None
    return plt


def write_png(run, path: str, title: str = "ptopipe run") -> str:
    """Write the swimlane of a traced run as a PNG (needs matplotlib)."""
    return save_png(png_figure(run, title), path)


def png_figure(run, title: str = "ptopipe run"):
    """The matplotlib figure of :func:`write_png`: the lanes, the ring occupancy steps and a
    legend of the pipe and wait colours."""
    plt = _pyplot()
    from matplotlib.patches import Patch
    cluster = getattr(run, "cluster", run)
    tl = timeline(cluster)
    rows = lanes(tl)
    n = len(rows) + len(tl.rings)
    fig, ax = plt.subplots(figsize=(14, 0.35 * n + 1.2))
    cycles = max(tl.cycles, 1)
    scale = 1200 / cycles            # about the plot's width in pixels at 110 dpi
    labels = []
    for k, lane in enumerate(rows):
        y = n - 1 - k
        by_color = {}
        for b in bars(lane.items, scale):
            by_color.setdefault(b.color, []).append((b.start, max(b.end - b.start, 0.5)))
        for color, spans in by_color.items():
            ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=color)
        labels.append((y, lane.label))
    for j, r in enumerate(tl.rings):
        y = n - 1 - len(rows) - j
        top = max(r.slot_num, r.peak, 1)
        occ, _avg = occupancy_px(r.occupancy, cycles, scale)
        xs = [t for t, _ in occ] + [tl.cycles]
        ys = [y - 0.4 + 0.8 * v / top for _, v in occ]
        ax.step(xs[:-1] + [xs[-1]], ys + [ys[-1]], where="post", color="#3182bd")
        labels.append((y, f"{r.name.split(' (')[0]} slots (peak {r.peak}/{r.slot_num})"))
    ax.set_yticks([y for y, _ in labels], [lab for _, lab in labels])
    ax.set_xlim(0, max(tl.cycles, 1))
    ax.set_xlabel("cycles")
    ax.set_title(title)
    shown = {b_color for lane in rows for _s, _e, b_color, _r in lane.items}
    handles = [Patch(color=c, label=p) for p, c in PIPE_COLORS.items() if c in shown]
    handles += [Patch(color=WAIT_COLORS[k], label=f"waits {k}") for k in ("ready", "free", "event")
                if WAIT_COLORS[k] in shown]
    if tl.rings:
        from matplotlib.lines import Line2D
        handles.append(Line2D([], [], color="#3182bd", label="ring slots in use"))
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8,
              frameon=False)
    fig.tight_layout()
    return fig
