"""The interactive swimlane of the HTML report: the lanes' instructions and waits as a
compact JSON block and the inline script that redraws the visible window of the SVG at any
zoom (mouse wheel: zoom around the pointer, drag: pan, double click: the whole run).

The server-side drawing (:mod:`.swimlane`) merges items closer than half a pixel at the
full-run scale, so a long run's busy lane is a solid band; the script re-merges, with the
same rule, only the items inside the window at the window's scale, so zooming in shows the
single instructions, each with its tooltip (instruction, core, pipe, cycles, args and the
kernel's ``file:line``), and the TPUSH -> TPOP arrows while at most ``ARROW_CAP`` are in view.

The page stays self-contained and offline (no external script).  Runs of more than
``ITEM_CAP`` instructions and waits embed no data: their page keeps the static drawing and
says to zoom in Perfetto (``ptopipe trace``), so the file size stays bounded.
"""
from __future__ import annotations

import json

from .swimlane import ARROW_CAP, LABEL_W, LANE_GAP, LANE_H, RING_H, args_text, lane_of
from .timeline import Timeline
from ..sim.trace import Hold

ITEM_CAP = 200_000


def view_data(tl: Timeline, rows: list, width: int) -> "dict | None":
    """The JSON-able data the script draws from (None above ``ITEM_CAP`` items)."""
    if sum(len(lane.items) for lane in rows) > ITEM_CAP:
        return None
    colors, texts, locs = {}, {}, {}

    def index(table: dict, key) -> int:
        k = table.get(key)
        if k is None:
            k = table[key] = len(table)
        return k

    out_lanes = []
    for lane in rows:
        core = tl.core_names[lane.core]
        cols = {"s": [], "e": [], "c": [], "x": [], "l": [], "o": []}
        longest = 0
        for s, e, color, rec in lane.items:
            if type(rec) is Hold:
                text, outlined = f"{core} issue waits ({rec.kind})", 0
            else:
                text = f"{rec.name} {lane.label}|{args_text(rec.args)}"
                outlined = int(rec.name in ("TPUSH", "TPOP", "TFREE", "TALLOC"))
            cols["s"].append(s)
            cols["e"].append(e)
            cols["c"].append(index(colors, color))
            cols["x"].append(index(texts, text))
            cols["l"].append(-1 if rec.loc is None else index(locs, str(rec.loc)))
            cols["o"].append(outlined)
            longest = max(longest, e - s)
        out_lanes.append({"label": lane.label, "waits": lane.label.endswith(" issue"),
                          "longest": longest, **cols})
    y = {lane.label: 20 + k * (LANE_H + LANE_GAP) for k, lane in enumerate(rows)}
    arrows = []
    for a, b in tl.push_pop:
        la, lb = lane_of(a, tl.core_names), lane_of(b, tl.core_names)
        if la in y and lb in y:
            arrows.append([(a.start + a.end) / 2, y[la], (b.start + b.end) / 2, y[lb]])
    arrows.sort()
    rings = [{"y": 20 + len(rows) * (LANE_H + LANE_GAP) + k * (RING_H + 14) + 14,
              "top": max(r.slot_num, r.peak, 1), "steps": [list(p) for p in r.occupancy]}
             for k, r in enumerate(tl.rings)]
    return {"cycles": max(tl.cycles, 1), "width": width, "labelW": LABEL_W, "laneH": LANE_H,
            "ringH": RING_H, "arrowCap": ARROW_CAP, "colors": list(colors), "texts": list(texts),
            "locs": list(locs), "lanes": out_lanes, "laneY": [y[lane.label] for lane in rows],
            "arrows": arrows, "rings": rings}


def view_html(tl: Timeline, rows: list, width: int) -> str:
    """The data block and the script (empty when the run is above ``ITEM_CAP``)."""
    data = view_data(tl, rows, width)
    if data is None:
        return ""
    # "</" cannot end the script element early inside the JSON
    blob = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    return (f'<script type="application/json" id="swimlane-data">{blob}</script>'
            f"<script>{SCRIPT}</script>")


SCRIPT = r"""
(function () {
  const D = JSON.parse(document.getElementById('swimlane-data').textContent);
  const svg = document.getElementById('swimlane');
  const status = document.getElementById('swimlane-window');
  const NS = svg.namespaceURI;
  const plotW = D.width - D.labelW - 10;
  let t0 = 0, t1 = D.cycles;
  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) { const t = document.createElementNS(NS, 'title'); t.textContent = text; e.appendChild(t); }
    return e;
  }
  function group(cls) {
    const g = svg.querySelector('g.' + cls);
    while (g.firstChild) g.removeChild(g.firstChild);
    return g;
  }
  function lowerBound(a, v) { let lo = 0, hi = a.length; while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; } return lo; }
  function tip(L, i) {
    const at = L.l[i] >= 0 ? ' at ' + D.locs[L.l[i]] : '';
    const t = D.texts[L.x[i]], bar = t.indexOf('|');
    if (bar < 0) return t + ' ' + L.s[i] + '-' + L.e[i] + at;
    return t.slice(0, bar) + ' ' + L.s[i] + '-' + L.e[i] + ' ' + t.slice(bar + 1) + at;
  }
  function draw() {
    const scale = plotW / (t1 - t0), X = t => D.labelW + (t - t0) * scale;
    const height = +svg.getAttribute('height');
    const axis = group('axis');
    let step = Math.max(1, Math.pow(10, Math.floor(Math.log10((t1 - t0) / 10))));
    for (const m of [1, 2, 5, 10]) if (m * step >= (t1 - t0) / 10) { step *= m; break; }
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      axis.appendChild(el('line', {x1: X(t), y1: 14, x2: X(t), y2: height - 5, stroke: '#eeeeee'}));
      const tx = el('text', {x: X(t), y: 11, 'text-anchor': 'middle', fill: '#555'}); tx.textContent = t; axis.appendChild(tx);
    }
    svg.querySelectorAll('g.bars').forEach((g, k) => {
      while (g.firstChild) g.removeChild(g.firstChild);
      const L = D.lanes[k], y = D.laneY[k];
      let cur = null;
      const flush = () => {
        if (!cur) return;
        let color = cur.c, best = -1;
        for (const c in cur.bc) if (cur.bc[c] > best) { best = cur.bc[c]; color = +c; }
        const a = {x: X(cur.s), y: y + 1, width: Math.max((cur.e - cur.s) * scale, 0.6), height: D.laneH - 2, fill: D.colors[color]};
        if (cur.o) { a.stroke = 'black'; a['stroke-width'] = 0.6; }
        let text;
        if (cur.n > 1) {
          const w = Math.max(cur.e - cur.s, 1);
          if (cur.busy < cur.e - cur.s) a['fill-opacity'] = Math.max(0.3, cur.busy / w).toFixed(2);
          text = cur.n + (L.waits ? ' waits ' : ' instructions ') + cur.s + '-' + cur.e + ', busy ' + cur.busy + ' cycles (' + Math.round(100 * cur.busy / w) + '%)';
        } else text = tip(L, cur.i);
        g.appendChild(el('rect', a, text));
      };
      for (let i = lowerBound(L.s, t0 - L.longest); i < L.s.length && L.s[i] <= t1; i++) {
        const s = L.s[i], e = L.e[i];
        if (e < t0) continue;
        if (cur && (s - cur.e) * scale < 0.5 && (Math.max(e, cur.e) - cur.s) * scale < 4) {
          const add = Math.max(0, e - Math.max(s, cur.cov));
          cur.busy += add; cur.n += 1; cur.bc[L.c[i]] = (cur.bc[L.c[i]] || 0) + add;
          cur.o = cur.o || L.o[i]; cur.e = Math.max(cur.e, e); cur.cov = Math.max(cur.cov, e);
          continue;
        }
        flush();
        cur = {s: s, e: e, busy: e - s, n: 1, bc: {[L.c[i]]: e - s}, c: L.c[i], o: L.o[i], i: i, cov: e};
      }
      flush();
    });
    const arrows = group('arrows');
    const inView = D.arrows.filter(a => (a[0] >= t0 && a[0] <= t1) || (a[2] >= t0 && a[2] <= t1));
    if (inView.length <= D.arrowCap) for (const a of inView)
      arrows.appendChild(el('line', {x1: X(a[0]), y1: a[1] + D.laneH / 2, x2: X(a[2]), y2: a[3] + D.laneH / 2,
                                      stroke: '#444', 'stroke-width': 0.7, 'marker-end': 'url(#arrowhead)'}));
    svg.querySelectorAll('g.rings polyline').forEach((p, k) => {
      const R = D.rings[k], pts = [], st = R.steps;
      let i = Math.max(0, lowerBound(st.map(q => q[0]), t0) - 1);
      for (; i < st.length && st[i][0] <= t1; i++) {
        const a = Math.max(st[i][0], t0), b = Math.min(i + 1 < st.length ? st[i + 1][0] : D.cycles, t1);
        const yy = R.y + D.ringH - st[i][1] / R.top * (D.ringH - 2);
        pts.push(X(a).toFixed(2) + ',' + yy.toFixed(2), X(b).toFixed(2) + ',' + yy.toFixed(2));
      }
      p.setAttribute('points', pts.join(' '));
    });
    svg.dataset.window = Math.round(t0) + '-' + Math.round(t1);
    status.textContent = 'cycles ' + Math.round(t0) + '-' + Math.round(t1) +
      (inView.length > D.arrowCap ? ' (' + inView.length + ' TPUSH-TPOP arrows in view: zoom in to draw them)' : '');
  }
  function at(ev) {
    const r = svg.getBoundingClientRect();
    return t0 + (ev.clientX - r.left - D.labelW) / plotW * (t1 - t0);
  }
  function show(a, b) {
    const span = Math.min(Math.max(b - a, 10), D.cycles);
    a = Math.min(Math.max(a, 0), D.cycles - span);
    t0 = a; t1 = a + span; draw();
  }
  svg.addEventListener('wheel', ev => {
    ev.preventDefault();
    const c = Math.min(Math.max(at(ev), t0), t1), f = ev.deltaY < 0 ? 0.8 : 1.25;
    show(c - (c - t0) * f, c + (t1 - c) * f);
  }, {passive: false});
  let drag = null;
  svg.addEventListener('mousedown', ev => { drag = {x: ev.clientX, t0: t0, t1: t1}; });
  window.addEventListener('mousemove', ev => {
    if (!drag) return;
    const dt = (ev.clientX - drag.x) / plotW * (drag.t1 - drag.t0);
    show(drag.t0 - dt, drag.t1 - dt);
  });
  window.addEventListener('mouseup', () => { drag = null; });
  svg.addEventListener('dblclick', () => show(0, D.cycles));
  draw();
})();
"""
