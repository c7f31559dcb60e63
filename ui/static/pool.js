// The pool page (#/pools/{name}): the pool's shares now (the orchid), its
// history as charts (GET /api/v1/pools/{name}/history: usage against fair
// share, demand, and the starvation states), and a form that changes the
// pool's attributes with a preview first: POST /api/v1/whatif answers every
// pool's fair share before and after the change, computed on a copy of the
// live tree, and only then does "Apply" send the PATCH.

import { api, ApiError, objectOrMissing } from './api.js';
import { h, text, pct, num, ratio, statusBadges, RESOURCE_LABELS } from './dom.js';
import { ShareBars, resourceToggle, resourceOf, legend } from './bars.js';
import { lineChart, stateStrip, clock } from './charts.js';

// WINDOWS are the history's windows: since (seconds before now; 0: all
// that is kept) and the step asked for.
const WINDOWS = [
  ['hour', 'last hour', -3600, 0],
  ['day', 'last 24 hours', 0, 0],
];

// The keys of the orchid's view a preview compares, per resource.
const SHARE_KEYS = [['fair_share', 'fair share'], ['strong_guarantee_share', 'strong guarantee'], ['limits_share', 'limits']];

// share is an orchid view's share of a resource (0 when absent).
function share(view, key, res) {
  return view && view[key] ? (view[key][res] || 0) : 0;
}

export class PoolView {
  constructor(root, params, app) {
    this.app = app;
    this.name = params.id;
    this.window = params.window === 'day' ? 'day' : 'hour';
    this.bars = new ShareBars();
    this.head = h('p', { class: 'op-head' });
    this.facts = h('dl', { class: 'facts' });
    this.charts = h('div', { class: 'charts' });
    this.windowSel = h('select', { id: 'history-window', onchange: () => { this.window = this.windowSel.value; this.histKey = ''; this.app.refreshNow(); } },
      WINDOWS.map(([v, label]) => h('option', { value: v, selected: v === this.window }, label)));
    this.histNote = h('p', { class: 'muted', 'aria-live': 'polite' });

    // The change form: the weight, and any other attributes as JSON.
    this.weight = h('input', { id: 'change-weight', type: 'number', min: '0', step: 'any', inputmode: 'decimal' });
    this.more = h('textarea', { id: 'change-more', rows: 3, spellcheck: 'false', 'aria-describedby': 'change-help' });
    this.previewOut = h('div', { class: 'preview', hidden: true });
    this.changeStatus = h('p', { class: 'muted', 'aria-live': 'polite' });
    this.applyBtn = h('button', { type: 'button', class: 'primary', id: 'change-apply', disabled: true, onclick: () => this.apply() }, 'Apply');
    this.previewed = null;

    this.body = h('div', { class: 'panel', hidden: true },
      this.head,
      h('section', { 'aria-labelledby': 'h-now' },
        h('h2', { id: 'h-now' }, 'Fair share, usage and demand now'),
        h('div', { class: 'toolbar' }, resourceToggle(app.resource, (r) => { app.setResource(r); this.render(); })),
        legend(), this.bars.el, this.facts),
      h('section', { 'aria-labelledby': 'h-history' },
        h('h2', { id: 'h-history' }, 'History'),
        h('div', { class: 'toolbar' }, h('label', { for: 'history-window' }, 'Window '), this.windowSel),
        h('p', { class: 'muted' }, 'Shares of the cluster in the pool\'s dominant resource at each fair-share update, averaged over each step.'),
        this.charts, this.histNote),
      h('section', { 'aria-labelledby': 'h-change' },
        h('h2', { id: 'h-change' }, 'Change the pool'),
        h('form', { class: 'change', onsubmit: (e) => { e.preventDefault(); this.preview(); } },
          h('div', { class: 'field' }, h('label', { for: 'change-weight' }, 'Weight'), this.weight),
          h('div', { class: 'field' }, h('label', { for: 'change-more' }, 'Other attributes (JSON)'), this.more),
          h('p', { id: 'change-help', class: 'muted' },
            'What PATCH /api/v1/pools/{name} takes, e.g. {"max_running_operation_count": 4} (docs/api.md, Pools). ' +
            'Preview computes every pool\'s fair share with the change on a copy of the live tree; nothing changes until Apply.'),
          h('div', { class: 'actions' }, h('button', { type: 'submit', id: 'change-preview' }, 'Preview'), this.applyBtn)),
        this.changeStatus, this.previewOut));
    this.missing = h('p', { hidden: true });
    root.append(h('p', null, h('a', { href: '#/pools' }, '← Pools')),
      h('h1', null, 'Pool ', h('span', { class: 'mono' }, this.name)), this.missing, this.body);
    for (const el of [this.weight, this.more]) el.addEventListener('input', () => this.invalidate());
  }

  async refresh() {
    const view = await objectOrMissing('/api/v1/orchid/pools/' + encodeURIComponent(this.name), this);
    if (!view) return;
    const [, , since, step] = WINDOWS.find(([v]) => v === this.window);
    let hist = null;
    try {
      hist = await api(`/api/v1/pools/${encodeURIComponent(this.name)}/history?` + (since ? `since=${since}` : '') + (step ? `&step=${step}` : ''));
    } catch (e) {
      if (!(e instanceof ApiError) || e.status === 401) throw e;
      text(this.histNote, `The history is not available: ${e.message}`);
    }
    this.view = view;
    this.hist = hist;
    this.missing.hidden = true;
    this.body.hidden = false;
    if (this.weight.value === '' && document.activeElement !== this.weight) this.weight.value = String(view.weight);
    this.render();
  }

  render() {
    const p = this.view;
    if (!p) return;
    const res = resourceOf(p, this.app.resource);
    this.bars.update(p, res);
    const key = [p.status, p.starvation_status, p.parent].join();
    if (this.headKey !== key) {
      this.headKey = key;
      this.head.replaceChildren(...statusBadges(p), p.parent ? ' child of ' : '',
        p.parent ? h('a', { href: '#/pools/' + encodeURIComponent(p.parent) }, p.parent) : '', ' ',
        h('a', { href: '#/operations?pool=' + encodeURIComponent(p.name) }, 'its operations'));
    }
    const facts = [
      ['weight', num(p.weight)],
      ['dominant resource', RESOURCE_LABELS[p.dominant_resource] || p.dominant_resource],
      ['satisfaction', ratio(p.satisfaction_ratio)],
      ['running operations', num(p.running_operation_count)],
      ['pending operations', num(p.pending_operation_count)],
    ];
    const fk = JSON.stringify(facts);
    if (this.factsKey !== fk) {
      this.factsKey = fk;
      this.facts.replaceChildren(...facts.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v))));
    }
    this.renderHistory();
  }

  renderHistory() {
    const hs = this.hist;
    if (!hs) return;
    // From the first point with an update: a pool younger than the window
    // (or a history younger than the server) does not draw empty time.
    const first = hs.points.findIndex((p) => p.samples > 0);
    const pts = first < 0 ? [] : hs.points.slice(first);
    const hk = JSON.stringify([this.window, hs.step_s, pts]);
    if (this.histKey === hk) return;
    this.histKey = hk;
    const name = this.name;
    const scaled = (fig) => {
      const svg = fig.querySelector('svg.chart');
      fig.querySelector('figcaption').append(h('span', { class: 'muted' }, ` (scale 0 to ${pct(Number(svg.dataset.top))} of the cluster)`));
      return fig;
    };
    this.charts.replaceChildren(
      scaled(h('figure', { class: 'chart-fig', dataset: { chart: 'usage' } },
        h('figcaption', null, h('span', { class: 'swatch usage', 'aria-hidden': 'true' }), ' usage and ',
          h('span', { class: 'swatch fair', 'aria-hidden': 'true' }), ' fair share'),
        lineChart(pts, [{ key: 'fair_share', label: 'fair share', cls: 'fair' }, { key: 'usage', label: 'usage', cls: 'usage' }],
          `Usage and fair share of ${name}`))),
      scaled(h('figure', { class: 'chart-fig', dataset: { chart: 'demand' } },
        h('figcaption', null, h('span', { class: 'swatch demand', 'aria-hidden': 'true' }), ' demand'),
        lineChart(pts, [{ key: 'demand', label: 'demand', cls: 'demand' }], `Demand of ${name}`))),
      h('figure', { class: 'chart-fig', dataset: { chart: 'starving' } },
        h('figcaption', null, 'Status: ',
          h('span', { class: 'swatch cell-normal', 'aria-hidden': 'true' }), ' normal ',
          h('span', { class: 'swatch cell-below', 'aria-hidden': 'true' }), ' below fair share ',
          h('span', { class: 'swatch cell-starving', 'aria-hidden': 'true' }), ' starving ',
          h('span', { class: 'swatch cell-aggressively-starving', 'aria-hidden': 'true' }), ' aggressively starving'),
        stateStrip(pts, `Starvation of ${name}`)));
    const withData = pts.filter((p) => p.samples).length;
    text(this.histNote, pts.length
      ? `${pts.length} points of ${num(hs.step_s)} s from ${clock(pts[0].time)} to ${clock(pts[pts.length - 1].time)}; ${withData} with updates.`
      : 'No history yet in this window: the pool has had no fair-share update.');
  }

  // patchBody is the PATCH body the form describes, or throws a message.
  patchBody() {
    let body = {};
    const more = this.more.value.trim();
    if (more) {
      try { body = JSON.parse(more); } catch (e) { throw new Error(`The other attributes are not JSON: ${e.message}`); }
      if (!body || typeof body !== 'object' || Array.isArray(body)) throw new Error('The other attributes must be a JSON object.');
    }
    if (this.weight.value !== '' && Number(this.weight.value) !== this.view.weight) body.weight = Number(this.weight.value);
    if (!Object.keys(body).length) throw new Error('Nothing to change: set the weight or other attributes.');
    return body;
  }

  invalidate() {
    this.previewed = null;
    this.applyBtn.disabled = true;
  }

  async preview() {
    let body;
    try { body = this.patchBody(); } catch (e) { text(this.changeStatus, e.message); this.invalidate(); return; }
    text(this.changeStatus, 'Computing the preview…');
    let out;
    try {
      out = await api('/api/v1/whatif', {
        method: 'POST',
        body: JSON.stringify({ changes: [{ method: 'PATCH', path: '/api/v1/pools/' + encodeURIComponent(this.name), body }] }),
      });
    } catch (e) {
      this.invalidate();
      this.previewOut.hidden = true;
      text(this.changeStatus, `The change would be refused: ${e.message}${e.path ? ' (at ' + e.path + ')' : ''}`);
      return;
    }
    this.previewed = JSON.stringify(body);
    this.applyBtn.disabled = false;
    this.renderPreview(out.pools);
    text(this.changeStatus, `Preview of ${this.previewed}: nothing has changed yet. Apply makes the change.`);
  }

  renderPreview(pools) {
    const rows = [];
    for (const [name, ba] of Object.entries(pools)) {
      const before = ba.before;
      const after = ba.after;
      const res = (after || before).dominant_resource || 'cpu';
      for (const [key, label] of SHARE_KEYS) {
        const b = share(before, key, res);
        const a = share(after, key, res);
        if (key !== 'fair_share' && Math.abs(a - b) < 1e-9) continue;
        const changed = !before || !after || Math.abs(a - b) > 1e-9;
        rows.push(h('tr', { class: changed ? 'changed' : '', dataset: { pool: name, key, resource: res, before: before ? String(b) : '', after: after ? String(a) : '' } },
          h('th', { scope: 'row' }, name), h('td', null, label + ' (' + (RESOURCE_LABELS[res] || res) + ')'),
          h('td', { class: 'num before' }, before ? pct(b) : 'new'),
          h('td', { class: 'num after' }, after ? pct(a) : 'removed'),
          h('td', { class: 'num' }, before && after ? (a - b >= 0 ? '+' : '−') + pct(Math.abs(a - b)) : '')));
      }
      if (before && after && before.starvation_status !== after.starvation_status) {
        rows.push(h('tr', { class: 'changed', dataset: { pool: name, key: 'starvation_status' } },
          h('th', { scope: 'row' }, name), h('td', null, 'starvation'),
          h('td', { class: 'before' }, before.starvation_status), h('td', { class: 'after' }, after.starvation_status), h('td')));
      }
    }
    this.previewOut.replaceChildren(
      h('table', { class: 'preview-table' },
        h('caption', null, 'Every pool before and after the change (changed rows are marked)'),
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Pool'), h('th', { scope: 'col' }, 'What'),
          h('th', { scope: 'col', class: 'num' }, 'Before'), h('th', { scope: 'col', class: 'num' }, 'After'),
          h('th', { scope: 'col', class: 'num' }, 'Change'))),
        h('tbody', null, rows)));
    this.previewOut.hidden = false;
  }

  async apply() {
    let body;
    try { body = this.patchBody(); } catch (e) { text(this.changeStatus, e.message); return; }
    if (JSON.stringify(body) !== this.previewed) {
      this.invalidate();
      text(this.changeStatus, 'The change differs from the preview: preview it again.');
      return;
    }
    this.applyBtn.disabled = true;
    try {
      await api('/api/v1/pools/' + encodeURIComponent(this.name), { method: 'PATCH', body: this.previewed });
    } catch (e) {
      text(this.changeStatus, `The server refused the change: ${e.message}${e.path ? ' (at ' + e.path + ')' : ''}`);
      return;
    }
    text(this.changeStatus, `Applied ${this.previewed}. The fair shares follow at the next fair-share update.`);
    this.previewed = null;
    this.weight.value = '';
    this.more.value = '';
    this.previewOut.hidden = true;
    this.app.refreshNow();
  }
}
