// Charts of a pool's history (GET /api/v1/pools/{name}/history): lines of
// shares over time on one scale, and a strip of the starvation states.
// Points without an update (samples 0: the server was down, the pool did
// not exist) break the lines. Each chart is an SVG with role="img", an
// aria-label that says what it shows, and data- attributes (the scale and
// the times) from which a test reads the drawn values back.

import { s, pct } from './dom.js';

export const W = 640;
export const H = 160;
export const PAD = 6;

// clock formats a Unix time (seconds) as the time of day, with the date
// when it is not today.
export function clock(t) {
  const d = new Date(t * 1000);
  const now = new Date();
  const hm = d.toLocaleTimeString('en-GB', { hour: '2-digit', minute: '2-digit' });
  return d.toDateString() === now.toDateString() ? hm : d.toLocaleDateString('en-GB', { day: 'numeric', month: 'short' }) + ' ' + hm;
}

// xOf places time t between from and to.
function xOf(t, from, to) {
  return PAD + (to > from ? (t - from) / (to - from) : 0.5) * (W - 2 * PAD);
}

// yOf places value v on a scale of 0 to top.
function yOf(v, top) {
  return H - PAD - (top > 0 ? Math.min(v, top) / top : 0) * (H - 2 * PAD);
}

// lineChart draws series ([{key, label, cls}]) of points on a scale of 0
// to the largest value drawn (at least 1e-6), a polyline per run of points
// with samples. label names the chart for screen readers.
export function lineChart(points, series, label) {
  const from = points.length ? points[0].time : 0;
  const to = points.length ? points[points.length - 1].time : 1;
  let top = 1e-6;
  for (const p of points) {
    if (!p.samples) continue;
    for (const se of series) top = Math.max(top, p[se.key]);
  }
  top *= 1.05;
  const kids = [
    s('rect', { class: 'chart-frame', x: 0.5, y: 0.5, width: W - 1, height: H - 1 }),
    s('line', { class: 'chart-axis', x1: PAD, x2: W - PAD, y1: yOf(0, top), y2: yOf(0, top) }),
  ];
  for (const se of series) {
    let run = [];
    const flush = () => {
      if (run.length === 1) {
        const [x, y] = run[0].split(',');
        kids.push(s('circle', { class: 'chart-dot ' + se.cls, cx: x, cy: y, r: 2, dataset: { series: se.key } }));
      } else if (run.length > 1) {
        kids.push(s('polyline', { class: 'chart-line ' + se.cls, points: run.join(' '), dataset: { series: se.key } }));
      }
      run = [];
    };
    for (const p of points) {
      if (!p.samples) { flush(); continue; }
      run.push(xOf(p.time, from, to).toFixed(2) + ',' + yOf(p[se.key], top).toFixed(2));
    }
    flush();
  }
  const last = [...points].reverse().find((p) => p.samples);
  const now = last ? ': ' + series.map((se) => `${se.label} ${pct(last[se.key])}`).join(', ') + ' at ' + clock(last.time) : ': no data yet';
  return s('svg', {
    class: 'chart', viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': label + now, dataset: { top: String(top), from: String(from), to: String(to), w: String(W), h: String(H), pad: String(PAD) },
  }, ...kids);
}

// STATES are the strip's classes, the worst state of each point.
function stateOf(p) {
  if (!p.samples) return 'none';
  if (p.starvation === 'aggressively_starving') return 'aggressively-starving';
  if (p.starvation === 'starving') return 'starving';
  if (p.below_fair_share) return 'below';
  return 'normal';
}

// stateStrip draws a cell per point: normal, below its fair share,
// starving, aggressively starving, or no data.
export function stateStrip(points, label) {
  const n = Math.max(points.length, 1);
  const cw = (W - 2 * PAD) / n;
  const counts = {};
  const cells = points.map((p, i) => {
    const st = stateOf(p);
    counts[st] = (counts[st] || 0) + 1;
    return s('rect', { class: 'cell ' + st, x: (PAD + i * cw).toFixed(2), y: 2, width: Math.max(cw, 0.5).toFixed(2), height: 16, dataset: { state: st } });
  });
  const summary = Object.entries(counts).map(([k, v]) => `${v} ${k.replaceAll('-', ' ')}`).join(', ') || 'no data';
  return s('svg', { class: 'strip', viewBox: `0 0 ${W} 20`, preserveAspectRatio: 'none', role: 'img', 'aria-label': `${label}: ${summary}` }, ...cells);
}
