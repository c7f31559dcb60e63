// The operations view (GET /api/v1/operations, every page, filtered by
// pool and state on the server, sorted here) and the operation page (GET
// /api/v1/orchid/operations/{id}: bars, statuses, allocations by
// preemption status, tasks, recent preemptions with their reasons, and
// the explanation of its state from GET /api/v1/operations/{id}/explain).

import { api, all, ApiError, objectOrMissing } from './api.js';
import {
  h, text, width, pct, num, seconds, ratio, resources, statusBadges, statusClass, badge, dominant, query, reconcile,
  RESOURCE_LABELS,
} from './dom.js';
import { ShareBars, resourceToggle, resourceOf, legend } from './bars.js';

const PAGE = 100;
const STATES = ['pending', 'running', 'completed', 'aborted'];
const SORTS = { start: 'start time', usage: 'usage', satisfaction: 'satisfaction' };

// opResource is the resource an operation of the list is drawn for: the
// chosen one, or its dominant resource by demand.
function opResource(o, choice) {
  return choice === 'dominant' ? dominant(o.demand_share) : choice;
}

function stateBadge(state) {
  return badge(state, state);
}

// OpRow is one row of the operations table, updated in place.
class OpRow {
  constructor(id) {
    this.link = h('a', { href: '#/operations/' + encodeURIComponent(id), class: 'op-link' }, id);
    this.pool = h('a');
    this.state = h('td');
    this.start = h('td', { class: 'num' });
    this.usageBar = h('div', { class: 'seg usage' });
    this.usageVal = h('span', { class: 'num' });
    this.fairBar = h('div', { class: 'seg weight' });
    this.fairVal = h('span', { class: 'num' });
    this.sat = h('td', { class: 'num' });
    this.status = h('td');
    this.allocs = h('td', { class: 'num' });
    this.pending = h('td', { class: 'num' });
    this.tr = h('tr', { dataset: { op: id } },
      h('th', { scope: 'row' }, this.link),
      h('td', null, this.pool),
      this.state, this.start,
      h('td', null, h('div', { class: 'cell-bar' }, h('div', { class: 'track', 'aria-hidden': 'true' }, this.usageBar), this.usageVal)),
      h('td', null, h('div', { class: 'cell-bar' }, h('div', { class: 'track', 'aria-hidden': 'true' }, this.fairBar), this.fairVal)),
      this.sat, this.status, this.allocs, this.pending);
  }

  update(o, res) {
    text(this.pool, o.pool);
    this.pool.href = '#/pools?pool=' + encodeURIComponent(o.pool);
    const key = o.state + o.status + o.starvation_status;
    if (this.key !== key) {
      this.key = key;
      this.state.replaceChildren(stateBadge(o.state));
      this.status.replaceChildren(...statusBadges(o));
      this.tr.className = statusClass(o);
    }
    text(this.start, seconds(o.start_time_s));
    width(this.usageBar, o.usage_share[res]);
    text(this.usageVal, `${pct(o.usage_share[res])} ${RESOURCE_LABELS[res]}`);
    width(this.fairBar, o.fair_share[res]);
    text(this.fairVal, pct(o.fair_share[res]));
    text(this.sat, ratio(o.satisfaction_ratio));
    text(this.allocs, num(o.allocation_counts.running));
    text(this.pending, num(o.pending_job_count));
  }
}

export class OperationsView {
  constructor(root, params, app) {
    this.app = app;
    this.minInterval = 5;
    this.rows = new Map();
    this.ops = null;
    this.setParams(params, true);

    this.poolInput = h('input', { type: 'text', id: 'op-pool', list: 'op-pools', autocomplete: 'off', placeholder: 'any pool', value: this.pool });
    this.poolList = h('datalist', { id: 'op-pools' });
    this.stateSel = h('select', { id: 'op-state' },
      h('option', { value: '' }, 'any state'), STATES.map((s) => h('option', { value: s, selected: s === this.state }, s)));
    const form = h('form', {
      class: 'toolbar', role: 'search', 'aria-label': 'Filter operations',
      onsubmit: (e) => { e.preventDefault(); this.apply(); },
    },
    h('span', null, h('label', { for: 'op-pool' }, 'Pool '), this.poolInput, this.poolList),
    h('span', null, h('label', { for: 'op-state' }, 'State '), this.stateSel),
    h('button', { type: 'submit' }, 'Filter'),
    resourceToggle(app.resource, (r) => { app.setResource(r); this.render(); }));
    this.stateSel.addEventListener('change', () => this.apply());
    this.poolInput.addEventListener('change', () => this.apply());

    this.heads = {};
    const th = (label, sortKey) => {
      if (!sortKey) return h('th', { scope: 'col' }, label);
      const cell = h('th', { scope: 'col' }, h('button', { type: 'button', onclick: () => this.sortBy(sortKey) }, label));
      this.heads[sortKey] = cell;
      return cell;
    };
    this.tbody = h('tbody');
    this.count = h('p', { class: 'muted', 'aria-live': 'polite' }, 'Loading operations…');
    this.prev = h('button', { type: 'button', onclick: () => this.goPage(this.page - 1) }, 'Previous page');
    this.next = h('button', { type: 'button', onclick: () => this.goPage(this.page + 1) }, 'Next page');
    this.pageInfo = h('span');
    root.append(
      h('h1', null, 'Operations'),
      form,
      this.count,
      h('table', { class: 'ops' },
        h('caption', { class: 'sr-only' }, 'Operations; the sortable columns have buttons in their headers'),
        h('thead', null, h('tr', null,
          th('Operation'), th('Pool'), th('State'), th('Started (s since server start)', 'start'), th('Usage', 'usage'),
          th('Fair share'), th('Satisfaction', 'satisfaction'), th('Status'), th('Allocations'), th('Pending jobs'))),
        this.tbody),
      h('nav', { class: 'pager', 'aria-label': 'Pages' }, this.prev, this.pageInfo, this.next));
    api('/api/v1/pools').then((d) => {
      this.poolList.replaceChildren(h('option', { value: '<Root>' }), ...d.pools.map((p) => h('option', { value: p.name })));
    }).catch(() => {});
  }

  setParams(p, init) {
    this.pool = p.pool || '';
    this.state = STATES.includes(p.state) ? p.state : '';
    this.sort = SORTS[p.sort] ? p.sort : 'start';
    this.dir = p.dir === 'asc' ? 'asc' : (p.dir === 'desc' ? 'desc' : (this.sort === 'satisfaction' ? 'asc' : 'desc'));
    this.page = Math.max(0, parseInt(p.page || '0', 10) || 0);
    if (!init) {
      this.poolInput.value = this.pool;
      this.stateSel.value = this.state;
    }
  }

  updateHash() {
    const q = query({ pool: this.pool, state: this.state, sort: this.sort, dir: this.dir, page: this.page || '' });
    history.replaceState(null, '', '#/operations' + q);
  }

  apply() {
    const pool = this.poolInput.value.trim();
    const state = this.stateSel.value;
    if (pool === this.pool && state === this.state) return;
    this.pool = pool;
    this.state = state;
    this.page = 0;
    this.ops = null;
    this.updateHash();
    text(this.count, 'Loading operations…');
    this.app.refreshNow();
  }

  sortBy(key) {
    if (this.sort === key) this.dir = this.dir === 'asc' ? 'desc' : 'asc';
    else {
      this.sort = key;
      this.dir = key === 'satisfaction' ? 'asc' : 'desc';
    }
    this.page = 0;
    this.updateHash();
    this.render();
  }

  goPage(n) {
    this.page = n;
    this.updateHash();
    this.render();
    this.tbody.closest('table').scrollIntoView({ block: 'start' });
  }

  async refresh() {
    this.ops = await all('/api/v1/operations' + query({ pool: this.pool, state: this.state }), 'operations');
    this.render();
  }

  render() {
    for (const [k, cell] of Object.entries(this.heads)) {
      cell.setAttribute('aria-sort', k === this.sort ? (this.dir === 'asc' ? 'ascending' : 'descending') : 'none');
    }
    if (!this.ops) return;
    const res = this.app.resource;
    const key = {
      start: (o) => o.start_time_s,
      usage: (o) => o.usage_share[opResource(o, res)],
      satisfaction: (o) => o.satisfaction_ratio,
    }[this.sort];
    const sign = this.dir === 'asc' ? 1 : -1;
    const sorted = [...this.ops].sort((a, b) => sign * (key(a) - key(b)) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const pages = Math.max(1, Math.ceil(sorted.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    const shown = sorted.slice(this.page * PAGE, (this.page + 1) * PAGE);
    const seen = new Set();
    const items = shown.map((o) => {
      let r = this.rows.get(o.id);
      if (!r) {
        r = new OpRow(o.id);
        this.rows.set(o.id, r);
      }
      seen.add(o.id);
      r.update(o, opResource(o, res));
      return r.tr;
    });
    for (const id of this.rows.keys()) if (!seen.has(id)) this.rows.delete(id);
    reconcile(this.tbody, items);
    const filt = [this.pool && `in pool ${this.pool}`, this.state].filter(Boolean).join(', ');
    text(this.count, `${num(sorted.length)} operations${filt ? ' (' + filt + ')' : ''}, sorted by ${SORTS[this.sort]}` +
      ` (${this.dir === 'asc' ? 'ascending' : 'descending'}).`);
    text(this.pageInfo, sorted.length ? `${num(this.page * PAGE + 1)}–${num(this.page * PAGE + shown.length)} of ${num(sorted.length)}` : '');
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
  }
}

// findingNumbers lists a finding's numbers (every key but code and
// message): scalars as terms, lists of objects as small tables.
function findingNumbers(f) {
  const items = [];
  for (const [k, v] of Object.entries(f)) {
    if (k === 'code' || k === 'message' || v === null || v === undefined) continue;
    let dd;
    if (Array.isArray(v) && v.length && typeof v[0] === 'object') {
      const cols = [...new Set(v.flatMap((x) => Object.keys(x)))];
      dd = h('table', null, h('thead', null, h('tr', null, cols.map((c) => h('th', { scope: 'col' }, c.replaceAll('_', ' '))))),
        h('tbody', null, v.map((x) => h('tr', null, cols.map((c) => h('td', null, fmtValue(x[c])))))));
    } else {
      dd = fmtValue(v);
    }
    items.push(h('dt', null, k.replaceAll('_', ' ')), h('dd', { dataset: { key: k } }, dd));
  }
  return items.length ? h('dl', null, items) : '';
}

function fmtValue(v) {
  if (v === undefined || v === null) return '—';
  if (typeof v === 'number') return num(v, 6);
  if (Array.isArray(v)) return v.map(fmtValue).join(', ');
  if (typeof v === 'object') return Object.entries(v).map(([k, x]) => `${k.replaceAll('_', ' ')} ${fmtValue(x)}`).join(', ');
  return String(v);
}

const STATUSES = ['non_preemptible', 'aggressively_preemptible', 'preemptible', 'preempted'];

export class OperationView {
  constructor(root, params, app) {
    this.app = app;
    this.id = params.id;
    this.bars = new ShareBars();
    this.title = h('h1', null, 'Operation ', h('span', { class: 'mono' }, this.id));
    this.head = h('p', { class: 'op-head' });
    this.facts = h('dl', { class: 'facts' });
    this.stack = h('div', { class: 'stack', 'aria-hidden': 'true' });
    this.allocTable = h('tbody');
    this.tasks = h('tbody');
    this.preemptions = h('tbody');
    this.noPreemptions = h('p', { class: 'muted' }, 'No preemptions recorded for this operation.');
    this.findings = h('ol', { class: 'findings' });
    this.explainNote = h('p', { class: 'muted', 'aria-live': 'polite' });
    this.body = h('div', { class: 'panel', hidden: true },
      this.head,
      h('section', { 'aria-labelledby': 'h-why', class: 'explain' },
        h('h2', { id: 'h-why' }, 'Why is it in this state?'),
        h('p', { class: 'muted' }, 'What decides the operation\'s state now, as the scheduler computes it (GET /api/v1/operations/{id}/explain): the binding condition first.'),
        this.findings, this.explainNote),
      h('section', { 'aria-labelledby': 'h-share' },
        h('h2', { id: 'h-share' }, 'Fair share, usage and demand'),
        h('div', { class: 'toolbar' }, resourceToggle(app.resource, (r) => { app.setResource(r); this.render(); })),
        legend(), this.bars.el, this.facts),
      h('section', { 'aria-labelledby': 'h-allocs' },
        h('h2', { id: 'h-allocs' }, 'Allocations by preemption status'),
        this.stack,
        h('table', { class: 'allocs' }, h('thead', null, h('tr', null,
          h('th', { scope: 'col' }, 'Preemption status'), h('th', { scope: 'col', class: 'num' }, 'Allocations'))), this.allocTable)),
      h('section', { 'aria-labelledby': 'h-tasks' },
        h('h2', { id: 'h-tasks' }, 'Tasks'),
        h('table', { class: 'tasks' }, h('thead', null, h('tr', null,
          h('th', { scope: 'col' }, '#'), h('th', { scope: 'col' }, 'Task'), h('th', { scope: 'col', class: 'num' }, 'Jobs'),
          h('th', { scope: 'col' }, 'Each job uses'), h('th', { scope: 'col', class: 'num' }, 'Duration hint'))), this.tasks)),
      h('section', { 'aria-labelledby': 'h-preempt' },
        h('h2', { id: 'h-preempt' }, 'Recent preemptions'),
        h('table', { class: 'preemptions' }, h('thead', null, h('tr', null,
          h('th', { scope: 'col', class: 'num' }, 'Time (s since server start)'), h('th', { scope: 'col' }, 'Allocation'),
          h('th', { scope: 'col' }, 'Node'), h('th', { scope: 'col' }, 'Reason'))), this.preemptions),
        this.noPreemptions));
    this.missing = h('p', { hidden: true });
    root.append(h('p', null, h('a', { href: '#/operations' }, '← Operations')), this.title, this.missing, this.body);
  }

  async refresh() {
    const op = await objectOrMissing('/api/v1/orchid/operations/' + encodeURIComponent(this.id), this,
      (m) => `${m}. A finished operation is forgotten some time after it finished.`);
    if (!op) return;
    this.op = op;
    try {
      this.why = await api('/api/v1/operations/' + encodeURIComponent(this.id) + '/explain');
      this.whyError = '';
    } catch (e) {
      if (!(e instanceof ApiError) || e.status === 401) throw e;
      this.why = null;
      this.whyError = e.message;
    }
    this.missing.hidden = true;
    this.body.hidden = false;
    this.render();
  }

  renderExplanation() {
    const w = this.why;
    const key = JSON.stringify([w, this.whyError]);
    if (this.whyKey === key) return;
    this.whyKey = key;
    if (!w) {
      this.findings.replaceChildren();
      text(this.explainNote, `No explanation: ${this.whyError}`);
      return;
    }
    const fs = w.findings || [];
    text(this.explainNote, fs.length ? `${fs.length} ${fs.length === 1 ? 'finding' : 'findings'} for the ${w.state} operation.` : `Nothing holds the ${w.state} operation back.`);
    this.findings.replaceChildren(...fs.map((f, i) => h('li', { class: 'finding' + (i === 0 ? ' binding' : ''), dataset: { code: f.code } },
      h('div', null, i === 0 ? badge('starving', 'binding') : '', i === 0 ? ' ' : '', h('span', { class: 'code' }, f.code)),
      h('p', { class: 'message' }, f.message),
      findingNumbers(f))));
  }

  render() {
    const o = this.op;
    if (!o) return;
    document.title = `${o.id} · fairsched`;
    this.renderExplanation();
    const res = resourceOf(o, this.app.resource);
    this.bars.update(o, res);
    const key = [o.state, o.pool, o.status, o.starvation_status].join();
    if (this.headKey !== key) {
      this.headKey = key;
      this.head.replaceChildren(stateBadge(o.state), ' in pool ',
        h('a', { href: '#/pools?pool=' + encodeURIComponent(o.pool), class: 'pool-of' }, o.pool), ' ',
        ...statusBadges(o), ' ',
        h('a', { href: '#/operations?pool=' + encodeURIComponent(o.pool) }, 'other operations of the pool'));
    }
    const facts = [
      ['weight', num(o.weight)],
      ['dominant resource', RESOURCE_LABELS[o.dominant_resource] || o.dominant_resource],
      ['satisfaction', ratio(o.satisfaction_ratio)],
      ['scheduling satisfaction', ratio(o.scheduling_satisfaction_ratio)],
      ['scheduling priority', o.scheduling_priority],
      ['preemption priority', o.preemption_priority],
      ['pending jobs', num(o.pending_job_count)],
      ['completed jobs', num(o.completed_job_count)],
      ['started (s since server start)', num(o.start_time_s)],
      ['demand', resources(o.demand)],
      ['usage', resources(o.usage)],
    ];
    if (o.waiting_for) facts.push(['waiting for', `${o.waiting_for.pool} (max ${o.waiting_for.max_running_operation_count} running)`]);
    const fk = JSON.stringify(facts);
    if (this.factsKey !== fk) {
      this.factsKey = fk;
      this.facts.replaceChildren(...facts.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v))));
    }

    const c = o.allocation_counts;
    const total = Math.max(1, c.running);
    const ak = JSON.stringify(c);
    if (this.allocKey !== ak) {
      this.allocKey = ak;
      this.stack.replaceChildren(...STATUSES.map((st) => {
        const seg = h('div', { class: 'seg ' + st });
        width(seg, c[st] / total);
        return seg;
      }));
      this.allocTable.replaceChildren(...STATUSES.map((st) => h('tr', { dataset: { status: st } },
        h('th', { scope: 'row' }, h('span', { class: 'swatch ' + st, 'aria-hidden': 'true' }), ' ', st.replaceAll('_', ' ')),
        h('td', { class: 'num' }, num(c[st])))),
      h('tr', null, h('th', { scope: 'row' }, 'running in all'), h('td', { class: 'num' }, num(c.running))));
    }

    const tk = JSON.stringify(o.tasks);
    if (this.tasksKey !== tk) {
      this.tasksKey = tk;
      this.tasks.replaceChildren(...(o.tasks || []).map((t, i) => h('tr', null,
        h('td', { class: 'num' }, i), h('td', null, t.name || h('span', { class: 'muted' }, 'unnamed')),
        h('td', { class: 'num' }, num(t.job_count)), h('td', null, resources(t.resources)),
        h('td', { class: 'num' }, t.duration_hint_s ? seconds(t.duration_hint_s) : '—'))));
    }

    const pk = JSON.stringify(o.recent_preemptions);
    if (this.preemptKey !== pk) {
      this.preemptKey = pk;
      const ps = o.recent_preemptions || [];
      this.noPreemptions.hidden = ps.length > 0;
      this.preemptions.replaceChildren(...ps.map((p) => h('tr', { dataset: { allocation: p.allocation_id } },
        h('td', { class: 'num' }, num(p.time_s, 6)),
        h('td', { class: 'mono' }, p.allocation_id),
        h('td', { class: 'nowrap' }, h('a', { href: '#/nodes/' + encodeURIComponent(p.node_id) }, p.node_id)),
        h('td', { class: 'reason' }, p.reason))));
    }
  }
}
