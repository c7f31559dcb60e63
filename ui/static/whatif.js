// The what-if view: a snapshot (docs/api.md, Solve) pasted or uploaded,
// sent to POST /api/v1/solve, and the fair shares of each of its updates
// drawn as the pools view draws the live tree. The server's state is not
// touched. The tree's shape comes from the snapshot itself (the answer
// lists elements by name, in tree order).

import { api, ApiError } from './api.js';
import { h, text, num, pct, amount, RESOURCE_LABELS } from './dom.js';
import { ShareBars, resourceToggle, resourceOf, legend } from './bars.js';

const MAX_ROWS = 2000;
const STORE_KEY = 'fairsched.whatif';

// EXAMPLE is a small snapshot: a production pool with a strong guarantee,
// a research pool of weight 2 and an ad-hoc fifo pool with a cpu limit,
// and a second update a minute later in which research's demand doubles.
const EXAMPLE = {
  total_resources: { user_slots: 400, cpu: 200, memory: 858993459200 },
  tree: {
    children: [
      {
        pool: 'production',
        strong_guarantee_resources: { cpu: 80 },
        children: [
          { operation: 'etl', demand: { user_slots: 100, cpu: 100, memory: 214748364800 }, usage: { user_slots: 40, cpu: 40, memory: 85899345920 } },
        ],
      },
      {
        pool: 'research',
        weight: 2,
        children: [
          { operation: 'train', demand: { user_slots: 60, cpu: 120, memory: 429496729600 } },
          { operation: 'sweep', weight: 0.5, demand: { user_slots: 200, cpu: 50, memory: 107374182400 } },
        ],
      },
      {
        pool: 'adhoc',
        mode: 'fifo',
        resource_limits: { cpu: 20 },
        children: [{ operation: 'notebook', demand: { user_slots: 4, cpu: 8, memory: 34359738368 } }],
      },
    ],
  },
  updates: [
    { elapsed_s: null, label: 'now' },
    { elapsed_s: 60, label: "a minute later: train's demand doubles", set: { 'train.demand': { user_slots: 120, cpu: 240, memory: 858993459200 } } },
  ],
};

// shape returns the elements of a snapshot's tree in tree order, the root
// first, each with its depth and kind.
function shape(snapshot) {
  const out = [{ name: '<Root>', depth: 0, kind: 'pool' }];
  const walk = (children, depth) => {
    for (const c of children || []) {
      if (out.length > MAX_ROWS) return;
      const kind = c.operation !== undefined ? 'operation' : 'pool';
      out.push({ name: kind === 'operation' ? c.operation : c.pool, depth, kind });
      walk(c.children, depth + 1);
    }
  };
  walk(snapshot && snapshot.tree && snapshot.tree.children, 1);
  return out;
}

export class WhatIfView {
  constructor(root, params, app) {
    this.app = app;
    this.result = null;
    this.elements = [];
    this.textarea = h('textarea', { id: 'snapshot', spellcheck: 'false', autocomplete: 'off', 'aria-describedby': 'snapshot-help' });
    try { this.textarea.value = sessionStorage.getItem(STORE_KEY) || ''; } catch { /* empty */ }
    this.file = h('input', { type: 'file', id: 'snapshot-file', accept: '.json,application/json', onchange: () => this.load() });
    this.status = h('p', { class: 'muted', 'aria-live': 'polite' });
    this.updateSel = h('select', { id: 'whatif-update', onchange: () => this.render() });
    this.updatePicker = h('span', { hidden: true }, h('label', { for: 'whatif-update' }, 'Update '), this.updateSel);
    this.list = h('ul', { class: 'tree whatif-tree', 'aria-label': 'Fair shares of the snapshot' });
    this.out = h('section', { 'aria-labelledby': 'h-result', hidden: true },
      h('h2', { id: 'h-result' }, 'Fair shares'),
      h('div', { class: 'toolbar' }, this.updatePicker, resourceToggle(app.resource, (r) => { app.setResource(r); this.render(); })),
      legend(),
      h('div', { class: 'tree-head', 'aria-hidden': 'true' },
        h('span', null, 'element'), h('span', null, 'shares of the cluster'), h('span', null, 'weight, jobs'), h('span', { class: 'integral-head' }, 'integral volume')),
      this.list);
    root.append(
      h('h1', null, 'What-if'),
      h('form', { class: 'whatif-input', onsubmit: (e) => { e.preventDefault(); this.solve(); } },
        h('label', { for: 'snapshot' }, 'Snapshot (JSON)'),
        h('p', { id: 'snapshot-help', class: 'muted' },
          'The cluster, the tree with its pools and operations, and the updates to run, as fairsched solve reads them (docs/api.md, Solve). ' +
          'The server computes the fair shares without touching its own state.'),
        this.textarea,
        h('div', { class: 'actions' },
          h('button', { type: 'submit', class: 'primary' }, 'Solve'),
          h('span', null, h('label', { for: 'snapshot-file' }, 'or upload a file '), this.file),
          h('button', { type: 'button', onclick: () => { this.textarea.value = JSON.stringify(EXAMPLE, null, 2); this.status.textContent = 'The example is loaded: press Solve.'; } }, 'Load an example'))),
      this.status,
      this.out);
  }

  async load() {
    const f = this.file.files && this.file.files[0];
    if (!f) return;
    this.textarea.value = await f.text();
    text(this.status, `${f.name} is loaded (${num(f.size)} bytes).`);
    await this.solve();
  }

  async solve() {
    const raw = this.textarea.value;
    let snapshot;
    try {
      snapshot = JSON.parse(raw);
    } catch (e) {
      text(this.status, `The snapshot is not JSON: ${e.message}`);
      this.textarea.focus();
      return;
    }
    try { sessionStorage.setItem(STORE_KEY, raw.length < 1e6 ? raw : ''); } catch { /* not kept */ }
    text(this.status, 'Solving…');
    try {
      this.result = await api('/api/v1/solve', { method: 'POST', body: raw });
    } catch (e) {
      this.out.hidden = true;
      if (e instanceof ApiError) text(this.status, `The server refused the snapshot: ${e.message}${e.path ? ' (at ' + e.path + ')' : ''}`);
      else text(this.status, String(e));
      return;
    }
    this.elements = shape(snapshot);
    const ups = this.result.updates;
    this.updateSel.replaceChildren(...ups.map((u, i) => h('option', { value: i }, `${i + 1}. ${u.label || 'update ' + (i + 1)}`)));
    this.updateSel.value = String(ups.length - 1);
    this.updatePicker.hidden = ups.length < 2;
    this.out.hidden = false;
    text(this.status, `Solved: ${ups.length} ${ups.length === 1 ? 'update' : 'updates'}, ${num(this.elements.length)} elements.`);
    this.render();
  }

  render() {
    if (!this.result) return;
    const u = this.result.updates[Number(this.updateSel.value) || 0];
    const res = this.app.resource;
    this.list.replaceChildren(...this.elements.map((e) => {
      const a = u.elements[e.name];
      if (!a) return '';
      const bars = new ShareBars();
      bars.update(a, resourceOf(a, res));
      const r = resourceOf(a, res);
      const facts = [['weight', num(a.weight)], ['dominant', RESOURCE_LABELS[a.dominant_resource] || a.dominant_resource]];
      if (a.fitting_jobs !== undefined) facts.push(['fitting jobs', num(a.fitting_jobs)]);
      const volume = a.accumulated_resource_volume && a.integral_pool_capacity
        ? h('span', null, `${amount(r, a.accumulated_resource_volume[r] || 0)}·s`,
          a.integral_pool_capacity[r] ? ` (${pct((a.accumulated_resource_volume[r] || 0) / a.integral_pool_capacity[r])} of capacity)` : '')
        : h('span', { class: 'muted' }, '—');
      const name = h('div', { class: 'pool-name' },
        h('span', { class: 'toggle-spacer' }),
        h('strong', { class: 'element-name' }, e.name),
        e.kind === 'operation' ? h('span', { class: 'badge' }, 'operation') : '');
      name.style.paddingLeft = (e.depth * 1.25) + 'rem';
      return h('li', null, h('div', { class: 'pool-row', dataset: { element: e.name } },
        name, bars.el,
        h('dl', { class: 'counts' }, facts.flatMap(([k, v]) => [h('dt', null, k), h('dd', null, v)])),
        h('div', { class: 'integral-cell' }, volume)));
    }));
  }
}
