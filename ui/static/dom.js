// DOM and formatting helpers shared by the views. Elements are built with
// createElement and text nodes only (never HTML parsed from strings), so that names from
// the API are always text; styles are set through the CSSOM, which the
// page's Content-Security-Policy allows.

export const RESOURCES = ['cpu', 'memory', 'gpu', 'user_slots', 'network'];

export const RESOURCE_LABELS = {
  cpu: 'cpu', memory: 'memory', gpu: 'gpu', user_slots: 'user slots', network: 'network',
};

// h builds an element: h('a', {href: '#/x', class: 'y', onclick: fn}, 'text', child).
// attrs: class, text, dataset (object), on<event> (function), boolean
// attributes (true/false), everything else setAttribute.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// s builds an SVG element as h does.
export function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// text sets an element's text when it differs (no layout work otherwise).
export function text(el, t) {
  t = String(t);
  if (el.textContent !== t) el.textContent = t;
}

// width sets a bar's width to a fraction of its track, clamped to [0, 1].
export function width(el, f) {
  const w = (Math.max(0, Math.min(1, f || 0)) * 100).toFixed(4) + '%';
  if (el.style.width !== w) el.style.width = w;
}

// pct formats a share (a fraction of the cluster) as a percentage.
export function pct(f) {
  if (f === undefined || f === null || Number.isNaN(f)) return '—';
  const p = f * 100;
  if (p === 0) return '0%';
  if (p < 0.01) return '<0.01%';
  if (p < 1) return p.toFixed(2) + '%';
  if (p < 1000) return p.toFixed(1) + '%';
  return Math.round(p).toLocaleString('en-US') + '%';
}

// num formats a number compactly.
export function num(x, digits = 3) {
  if (x === undefined || x === null) return '—';
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x)) return x.toLocaleString('en-US');
  return Number(x.toPrecision(digits)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];

export function bytes(b) {
  if (!b) return '0 B';
  let i = 0;
  while (b >= 1024 && i < UNITS.length - 1) { b /= 1024; i++; }
  return (b >= 100 || Number.isInteger(b) ? Math.round(b) : b.toPrecision(3)) + ' ' + UNITS[i];
}

// amount formats an amount of a resource: memory in bytes, cpu in cores.
export function amount(res, v) {
  if (res === 'memory') return bytes(v || 0);
  return num(v || 0);
}

// resources formats a resource object: "cpu 2, memory 8 GiB".
export function resources(r) {
  if (!r) return '—';
  const parts = RESOURCES.filter((k) => r[k]).map((k) => `${RESOURCE_LABELS[k]} ${amount(k, r[k])}`);
  return parts.length ? parts.join(', ') : 'none';
}

// seconds formats a duration.
export function seconds(t) {
  if (t === undefined || t === null) return '—';
  if (t < 1) return t.toFixed(2) + ' s';
  if (t < 60) return t.toFixed(1) + ' s';
  if (t < 3600) return Math.floor(t / 60) + ' min ' + Math.round(t % 60) + ' s';
  if (t < 86400) return Math.floor(t / 3600) + ' h ' + Math.round((t % 3600) / 60) + ' min';
  return (t / 86400).toFixed(1) + ' d';
}

// ratio formats a satisfaction ratio (1e9 stands for nothing to satisfy).
export function ratio(x) {
  if (x === undefined || x === null) return '—';
  if (x >= 1e9) return '—';
  return x.toFixed(2);
}

// dominant returns the resource of the largest value of a share.
export function dominant(share) {
  let best = 'cpu';
  let v = -1;
  for (const k of RESOURCES) {
    if (share && share[k] > v) { v = share[k]; best = k; }
  }
  return best;
}

// badge returns a status badge: its text is the status in words.
export function badge(kind, label) {
  return h('span', { class: 'badge ' + kind }, label || kind.replaceAll('_', ' '));
}

// statusBadges returns the badges of an element's statuses: starvation
// and below-fair-share, in words (colour is never the only cue).
export function statusBadges(attrs) {
  const out = [];
  if (attrs.starvation_status === 'starving') out.push(badge('starving'));
  if (attrs.starvation_status === 'aggressively_starving') out.push(badge('aggressively_starving'));
  if (attrs.status === 'below_fair_share') out.push(badge('below_fair_share'));
  return out;
}

// statusClass is the row class of the most severe status.
export function statusClass(attrs) {
  if (attrs.starvation_status === 'aggressively_starving') return 'aggressively_starving';
  if (attrs.starvation_status === 'starving') return 'starving';
  if (attrs.status === 'below_fair_share') return 'below_fair_share';
  return '';
}

// params parses the query part of a hash route.
export function params(q) {
  const out = {};
  for (const [k, v] of new URLSearchParams(q || '')) out[k] = v;
  return out;
}

// query builds a query string from an object, leaving out empty values.
export function query(obj) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(obj)) {
    if (v !== undefined && v !== null && v !== '') u.set(k, v);
  }
  const q = u.toString();
  return q ? '?' + q : '';
}

// reconcile makes parent's children the items, in order, touching the DOM
// only when they differ and keeping the focus.
export function reconcile(parent, items) {
  const cur = parent.children;
  if (cur.length === items.length && items.every((el, i) => cur[i] === el)) return;
  const active = document.activeElement;
  parent.replaceChildren(...items);
  if (active && active !== document.activeElement && active.isConnected) active.focus({ preventScroll: true });
}
