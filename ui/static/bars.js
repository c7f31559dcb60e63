// The drawing that every view shares: an element's fair share, usage and
// demand for one resource as horizontal bars on a scale of the whole
// cluster (0–100%), the fair share stacked in its three parts, the
// guarantees marked; the resource toggle; sparklines.

import { h, s, text, width, pct, RESOURCES, RESOURCE_LABELS } from './dom.js';

let toggles = 0;

// SHORT are the resources' names where room is short (the bars' label).
const SHORT = { cpu: 'cpu', memory: 'mem', gpu: 'gpu', user_slots: 'slots', network: 'net' };

// resourceToggle returns a group of radio buttons: "dominant" (each
// element its own dominant resource) or one resource for all.
export function resourceToggle(current, onChange) {
  const name = 'resource-' + (++toggles);
  const opts = [['dominant', 'dominant'], ...RESOURCES.map((r) => [r, RESOURCE_LABELS[r]])];
  return h('fieldset', { class: 'resource-toggle' },
    h('legend', null, 'Resource'),
    opts.map(([value, label]) => h('label', null,
      h('input', {
        type: 'radio', name, value, checked: value === current,
        onchange: (e) => { if (e.target.checked) onChange(value); },
      }),
      label)));
}

// resourceOf returns the resource an element is drawn for.
export function resourceOf(attrs, choice) {
  return choice === 'dominant' ? (attrs.dominant_resource || 'cpu') : choice;
}

function v(share, res) {
  return share ? (share[res] || 0) : 0;
}

// ShareBars draws one element's bars; update redraws them in place.
export class ShareBars {
  constructor() {
    this.strong = h('div', { class: 'seg strong' });
    this.integral = h('div', { class: 'seg integral' });
    this.weight = h('div', { class: 'seg weight' });
    this.gmark = h('div', { class: 'mark strong-mark', hidden: true });
    this.imark = h('div', { class: 'mark integral', hidden: true });
    this.fairTrack = h('div', { class: 'track fair', 'aria-hidden': 'true' },
      this.strong, this.integral, this.weight, this.gmark, this.imark);
    this.usage = h('div', { class: 'seg usage' });
    this.usageTrack = h('div', { class: 'track usage', 'aria-hidden': 'true' }, this.usage);
    this.demand = h('div', { class: 'seg demand' });
    this.demandTrack = h('div', { class: 'track demand', 'aria-hidden': 'true' }, this.demand);
    this.fairLabel = h('span', { class: 'bar-label' });
    this.fairValue = h('span', { class: 'bar-value fair-value' });
    this.fairDetail = h('span', { class: 'sr-only' });
    this.usageValue = h('span', { class: 'bar-value usage-value' });
    this.demandValue = h('span', { class: 'bar-value demand-value' });
    this.el = h('div', { class: 'bars', role: 'group' },
      this.fairLabel, this.fairTrack, h('span', { class: 'bar-value' }, this.fairValue, this.fairDetail),
      h('span', { class: 'bar-label' }, 'usage'), this.usageTrack, this.usageValue,
      h('span', { class: 'bar-label' }, 'demand'), this.demandTrack, this.demandValue);
  }

  // update draws attrs (an orchid or solve element) for resource res.
  update(attrs, res) {
    const d = attrs.detailed || {};
    const fair = v(attrs.fair_share, res);
    const strong = v(d.strong_guarantee, res);
    const integral = v(d.integral_guarantee, res);
    const weight = Math.max(0, v(d.weight_proportional, res));
    const g = v(attrs.strong_guarantee_share, res);
    const pi = v(attrs.proposed_integral_share, res);
    const usage = v(attrs.usage_share, res);
    const demand = v(attrs.demand_share, res);
    // Nothing to redraw when nothing changed (most rows, most refreshes).
    const key = `${res} ${fair} ${strong} ${integral} ${weight} ${g} ${pi} ${usage} ${demand}`;
    if (key === this.key) return;
    this.key = key;
    width(this.strong, strong);
    width(this.integral, integral);
    width(this.weight, weight);
    this.gmark.hidden = !(g > 0);
    if (g > 0) this.gmark.style.left = (Math.min(1, g) * 100).toFixed(4) + '%';
    this.imark.hidden = !(pi > 0);
    if (pi > 0) this.imark.style.left = (Math.min(1, g + pi) * 100).toFixed(4) + '%';
    width(this.usage, usage);
    width(this.demand, demand);
    this.usageTrack.classList.toggle('over', usage > 1);
    this.demandTrack.classList.toggle('over', demand > 1);

    text(this.fairLabel, 'fair · ' + SHORT[res]);
    this.fairLabel.title = 'fair share of ' + RESOURCE_LABELS[res];
    text(this.fairValue, pct(fair));
    text(this.usageValue, pct(usage));
    text(this.demandValue, pct(demand));
    const parts = `strong ${pct(strong)}, integral ${pct(integral)}, weight-proportional ${pct(weight)}`;
    const guarantees = `strong guarantee ${pct(g)}` + (pi > 0 ? `, integral guarantee ${pct(pi)}` : '');
    text(this.fairDetail, ` (${parts}; ${guarantees})`);
    this.fairTrack.title = `fair share ${pct(fair)} of the cluster's ${RESOURCE_LABELS[res]}: ${parts}; ${guarantees}`;
    this.usageTrack.title = `usage ${pct(usage)} of the cluster's ${RESOURCE_LABELS[res]}`;
    this.demandTrack.title = `demand ${pct(demand)} of the cluster's ${RESOURCE_LABELS[res]}`;
    this.el.setAttribute('aria-label', `${RESOURCE_LABELS[res]} as a share of the cluster`);
    this.el.dataset.resource = res;
  }
}

// legend explains the bars' colours and markers.
export function legend() {
  const item = (cls, label) => h('li', null, h('span', { class: 'swatch ' + cls, 'aria-hidden': 'true' }), label);
  return h('ul', { class: 'legend', 'aria-label': 'Legend' },
    item('strong', 'fair share from the strong guarantee'),
    item('integral', 'from the integral guarantee'),
    item('weight', 'weight-proportional'),
    item('usage', 'usage'),
    item('demand', 'demand'),
    item('swatch-mark', 'strong guarantee'),
    item('swatch-imark', 'strong + integral guarantee'),
    h('li', null, 'bars: share of the whole cluster; ▸ more than the cluster'));
}

// sparkline draws values (oldest first) as a small line from the least
// to the largest of them: it shows the trend, the label the amounts.
export function sparkline(values, { w = 110, hgt = 22, label = '' } = {}) {
  const n = values.length;
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const pts = values.map((y, i) => {
    const x = n === 1 ? w / 2 : 1 + (i * (w - 2)) / (n - 1);
    const f = hi > lo ? (y - lo) / (hi - lo) : 0.5;
    const yy = hgt - 2 - f * (hgt - 4);
    return x.toFixed(1) + ',' + yy.toFixed(1);
  }).join(' ');
  return s('svg', { class: 'spark', width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img', 'aria-label': label },
    s('rect', { x: 0.5, y: 0.5, width: w - 1, height: hgt - 1 }),
    s('polyline', { points: pts }));
}
