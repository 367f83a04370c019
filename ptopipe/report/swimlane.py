"""Swimlane drawings of a traced run: an SVG (inside a self-contained, offline HTML report
with the profile tables) and the same lanes as a PNG through matplotlib (optional extra
``pip install "ptopipe[plot]"``).

One lane per (core, pipe) that did work, one ``issue`` lane per core showing when its
instruction issue was held (waiting for data / a free slot / an event), and one step
chart per ring with its slots in use.
"""
from __future__ import annotations

import html

from ..arch import PipeUnit
from ..errors import ConfigError
from ._io import save_png, write_atomic
from .profile import Profile, profile
from .timeline import Timeline, timeline

PIPE_COLORS = {"M": "#d62728", "V": "#1f77b4", "MTE2": "#2ca02c", "MTE3": "#9467bd",
               "MTE1": "#ff7f0e", "FIX": "#8c564b", "S": "#7f7f7f"}
WAIT_COLORS = {"ready": "#fdae6b", "free": "#fb6a4a", "event": "#bdbdbd", "flag": "#bdbdbd"}
_RING_OPS = ("TPUSH", "TPOP", "TFREE", "TALLOC")


def lanes(tl: Timeline) -> list:
    """``[(label, [(start, end, color, tooltip, outlined)])]`` in display order."""
    out = []
    cores = sorted({i.core for i in tl.instrs} | {h[0] for h in tl.holds})
    for c in cores:
        name = tl.core_names[c]
        holds = [(s, e, WAIT_COLORS.get(k, "#bdbdbd"), f"{name} issue waits ({k}) {s}-{e}", False)
                 for cc, k, s, e, _w in tl.holds if cc == c]
        out.append((f"{name} issue", holds))
        for p in PipeUnit:
            items = [(i.start, i.end, PIPE_COLORS.get(p.name, "#999999"),
                      f"{i.name} {name} {p.name} {i.start}-{i.end} "
                      + " ".join(f"{k}={v}" for k, v in i.args.items()),
                      i.name in _RING_OPS)
                     for i in tl.instrs if i.core == c and i.pipe == int(p)]
            if items:
                out.append((f"{name} {p.name}", items))
    return out


def _merge_px(items, scale: float) -> list:
    """Merge rectangles closer than half a pixel (same colour) so huge runs stay small."""
    out = []
    for s, e, color, tip, outl in sorted(items, key=lambda x: x[0]):
        if out and out[-1][2] == color and (s - out[-1][1]) * scale < 0.5 \
                and (e - out[-1][0]) * scale < 4:
            last = out[-1]
            n = last[5] + 1
            out[-1] = (last[0], max(last[1], e), color, f"{n} instructions {last[0]}-{max(last[1], e)}",
                       last[4] or outl, n)
        else:
            out.append((s, e, color, tip, outl, 1))
    return out


def swimlane_svg(tl: Timeline, width: int = 1200) -> str:
    """The swimlane as an SVG string."""
    label_w, lane_h, gap, ring_h = 120, 16, 3, 40
    rows = lanes(tl)
    cycles = max(tl.cycles, 1)
    plot_w = width - label_w - 10
    scale = plot_w / cycles
    height = 30 + len(rows) * (lane_h + gap) + len(tl.rings) * (ring_h + 14) + 10
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'font-family="sans-serif" font-size="11">',
         f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>']
    # axis with ~10 ticks
    step = _nice_step(cycles / 10)
    t = 0
    while t <= cycles:
        x = label_w + t * scale
        o.append(f'<line x1="{x:.1f}" y1="14" x2="{x:.1f}" y2="{height - 5}" stroke="#eeeeee"/>')
        o.append(f'<text x="{x:.1f}" y="11" text-anchor="middle" fill="#555">{t}</text>')
        t += step
    y = 20
    for label, items in rows:
        o.append(f'<text x="4" y="{y + lane_h - 4}">{html.escape(label)}</text>')
        o.append(f'<rect x="{label_w}" y="{y}" width="{plot_w}" height="{lane_h}" fill="#fafafa"/>')
        for s, e, color, tip, outl, _n in _merge_px(items, scale):
            x = label_w + s * scale
            w = max((e - s) * scale, 0.6)
            stroke = ' stroke="black" stroke-width="0.6"' if outl else ""
            o.append(f'<rect x="{x:.2f}" y="{y + 1}" width="{w:.2f}" height="{lane_h - 2}" '
                     f'fill="{color}"{stroke}><title>{html.escape(tip)}</title></rect>')
        y += lane_h + gap
    for r in tl.rings:
        y += 14
        o.append(f'<text x="4" y="{y - 3}">{html.escape(r.name[:60])} - slots in use '
                 f'(peak {r.peak}/{r.slot_num})</text>')
        o.append(f'<rect x="{label_w}" y="{y}" width="{plot_w}" height="{ring_h}" fill="#fafafa"/>')
        top = max(r.slot_num, r.peak, 1)
        pts = []
        occ = r.occupancy + [(cycles, r.occupancy[-1][1] if r.occupancy else 0)]
        for (t0, n), (t1, _n) in zip(occ, occ[1:]):
            yy = y + ring_h - n / top * (ring_h - 2)
            pts.append(f"{label_w + t0 * scale:.2f},{yy:.2f}")
            pts.append(f"{label_w + t1 * scale:.2f},{yy:.2f}")
        if pts:
            o.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#3182bd" stroke-width="1.2"/>')
        o.append(f'<text x="{label_w - 4}" y="{y + 10}" text-anchor="end" fill="#555">{top}</text>')
        y += ring_h
    o.append("</svg>")
    return "\n".join(o)


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
margin-right:4px;vertical-align:middle}.scroll{overflow-x:auto}"""


def report_html(run, title: str = "ptopipe run", width: int = 1400) -> str:
    """The self-contained HTML report (summary tables + swimlane SVG) of a traced run."""
    cluster = getattr(run, "cluster", run)
    tl = timeline(cluster)
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
    parts.append(f"<h2>Swimlane</h2><div class='legend'>{legend} "
                 "<span>(black outline: TPUSH/TPOP/TFREE/TALLOC; hover for details)</span></div>")
    parts.append(f"<div class='scroll'>{swimlane_svg(tl, width)}</div></body></html>")
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


def write_html(run, path: str, title: str = "ptopipe run") -> str:
    """Write the HTML report of a traced run to ``path`` (atomically)."""
    return write_atomic(path, report_html(run, title))


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("PNG output needs matplotlib, which is not installed",
                          fix='install the plotting extra: pip install "ptopipe[plot]" '
                              "(or use the HTML report, which needs nothing)") from None
    return plt


def write_png(run, path: str, title: str = "ptopipe run") -> str:
    """Write the swimlane of a traced run as a PNG (needs matplotlib)."""
    plt = _pyplot()
    cluster = getattr(run, "cluster", run)
    tl = timeline(cluster)
    rows = lanes(tl)
    n = len(rows) + len(tl.rings)
    fig, ax = plt.subplots(figsize=(14, 0.35 * n + 1.2))
    labels = []
    for k, (label, items) in enumerate(rows):
        y = n - 1 - k
        by_color = {}
        for s, e, color, _tip, _o in items:
            by_color.setdefault(color, []).append((s, max(e - s, 0.5)))
        for color, spans in by_color.items():
            ax.broken_barh(spans, (y - 0.4, 0.8), facecolors=color)
        labels.append((y, label))
    for j, r in enumerate(tl.rings):
        y = n - 1 - len(rows) - j
        top = max(r.slot_num, r.peak, 1)
        xs = [t for t, _ in r.occupancy] + [tl.cycles]
        ys = [y - 0.4 + 0.8 * v / top for _, v in r.occupancy]
        ax.step(xs[:-1] + [xs[-1]], ys + [ys[-1]], where="post", color="#3182bd")
        labels.append((y, f"{r.name.split(' (')[0]} slots (peak {r.peak}/{r.slot_num})"))
    ax.set_yticks([y for y, _ in labels], [lab for _, lab in labels])
    ax.set_xlim(0, max(tl.cycles, 1))
    ax.set_xlabel("cycles")
    ax.set_title(title)
    fig.tight_layout()
    return save_png(fig, path)
