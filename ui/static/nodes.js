// The nodes view (GET /api/v1/nodes, every page): each node with bars of
// its usage against its resources, its tags, its allocation count and how
// long ago it sent its last heartbeat; and the node page (GET
// /api/v1/orchid/nodes/{id}) with its allocations.

import { api, all, objectOrMissing } from './api.js';
import { h, text, width, num, amount, seconds, badge, reconcile, RESOURCES, RESOURCE_LABELS } from './dom.js';

const PAGE = 100;
const SHOWN = ['cpu', 'memory', 'gpu', 'user_slots'];

// usageCell is a bar of used against limit with the amounts as text.
function usageCell(res) {
  const bar = h('div', { class: 'seg usage' });
  const val = h('span', { class: 'num' });
  const track = h('div', { class: 'track', 'aria-hidden': 'true' }, bar);
  return {
    td: h('td', { dataset: { resource: res } }, h('div', { class: 'cell-bar node-bar' }, track, val)),
    update(used, limit) {
      width(bar, limit > 0 ? used / limit : 0);
      track.classList.toggle('over', used > limit);
      text(val, limit > 0 || used > 0 ? `${amount(res, used)} / ${amount(res, limit)}` : '—');
      track.title = `${RESOURCE_LABELS[res]}: ${amount(res, used)} used of ${amount(res, limit)}`;
    },
  };
}

class NodeRow {
  constructor(id) {
    this.cells = Object.fromEntries(SHOWN.map((r) => [r, usageCell(r)]));
    this.tags = h('td');
    this.allocs = h('td', { class: 'num' });
    this.age = h('td', { class: 'num' });
    this.tr = h('tr', { dataset: { node: id } },
      h('th', { scope: 'row' }, h('a', { href: '#/nodes/' + encodeURIComponent(id), class: 'node-link' }, id)),
      SHOWN.map((r) => this.cells[r].td), this.tags, this.allocs, this.age);
  }

  update(n, late, hide) {
    for (const r of SHOWN) {
      this.cells[r].td.hidden = hide.has(r);
      this.cells[r].update(n.resource_usage[r] || 0, n.resource_limits[r] || 0);
    }
    const tk = n.tags.join('\n');
    if (this.tagKey !== tk) {
      this.tagKey = tk;
      this.tags.replaceChildren(...(n.tags.length ? n.tags.map((t) => h('span', { class: 'tag' }, t)) : [h('span', { class: 'muted' }, 'none')]));
    }
    text(this.allocs, num(n.allocation_count));
    const ak = seconds(n.last_heartbeat_age_s) + late;
    if (this.ageKey !== ak) {
      this.ageKey = ak;
      this.age.replaceChildren(seconds(n.last_heartbeat_age_s) + ' ago', late ? ' ' : '', late ? badge('stale', 'late') : '');
    }
  }
}

const SORTS = {
  id: ['id', (a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)],
  cpu: ['cpu usage', (a, b) => frac(b, 'cpu') - frac(a, 'cpu')],
  memory: ['memory usage', (a, b) => frac(b, 'memory') - frac(a, 'memory')],
  allocations: ['allocations', (a, b) => b.allocation_count - a.allocation_count],
  heartbeat: ['last heartbeat (oldest first)', (a, b) => b.last_heartbeat_age_s - a.last_heartbeat_age_s],
};

function frac(n, r) {
  const l = n.resource_limits[r] || 0;
  return l > 0 ? (n.resource_usage[r] || 0) / l : 0;
}

export class NodesView {
  constructor(root, params, app) {
    this.app = app;
    this.minInterval = 2;
    this.rows = new Map();
    this.page = 0;
    this.sort = SORTS[params.sort] ? params.sort : 'id';
    this.find = params.find || '';
    this.timeout = 60;
    this.nodes = null;
    this.summary = h('p', { class: 'summary' }, 'Loading the nodes…');
    this.findInput = h('input', {
      type: 'search', id: 'node-find', autocomplete: 'off', placeholder: 'id or tag', value: this.find,
      oninput: (e) => { this.find = e.target.value.trim(); this.page = 0; this.render(); },
    });
    const sortSel = h('select', { id: 'node-sort', onchange: (e) => { this.sort = e.target.value; this.page = 0; this.render(); } },
      Object.entries(SORTS).map(([k, [l]]) => h('option', { value: k, selected: k === this.sort }, l)));
    this.heads = SHOWN.map((r) => h('th', { scope: 'col', dataset: { resource: r } }, RESOURCE_LABELS[r] + ' (used / total)'));
    this.tbody = h('tbody');
    this.prev = h('button', { type: 'button', onclick: () => { this.page--; this.render(); } }, 'Previous page');
    this.next = h('button', { type: 'button', onclick: () => { this.page++; this.render(); } }, 'Next page');
    this.pageInfo = h('span');
    root.append(
      h('h1', null, 'Nodes'),
      this.summary,
      h('div', { class: 'toolbar' },
        h('span', null, h('label', { for: 'node-find' }, 'Find '), this.findInput),
        h('span', null, h('label', { for: 'node-sort' }, 'Sort by '), sortSel)),
      h('table', { class: 'nodes' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Node'), this.heads,
          h('th', { scope: 'col' }, 'Tags'), h('th', { scope: 'col', class: 'num' }, 'Allocations'),
          h('th', { scope: 'col', class: 'num' }, 'Last heartbeat'))),
        this.tbody),
      h('nav', { class: 'pager', 'aria-label': 'Pages' }, this.prev, this.pageInfo, this.next));
    api('/api/v1/config').then((c) => {
      if (c && c.node_heartbeat_timeout_s) this.timeout = c.node_heartbeat_timeout_s;
    }).catch(() => {});
  }

  async refresh() {
    this.nodes = await all('/api/v1/nodes', 'nodes');
    this.render();
  }

  render() {
    if (!this.nodes) return;
    const q = this.find.toLowerCase();
    const list = (q ? this.nodes.filter((n) => n.id.toLowerCase().includes(q) || n.tags.some((t) => t.toLowerCase().includes(q))) : [...this.nodes])
      .sort(SORTS[this.sort][1]);
    // A resource no node has is left out.
    const hide = new Set(SHOWN.filter((r) => !this.nodes.some((n) => n.resource_limits[r] || n.resource_usage[r])));
    this.heads.forEach((th, i) => { th.hidden = hide.has(SHOWN[i]); });
    const pages = Math.max(1, Math.ceil(list.length / PAGE));
    this.page = Math.max(0, Math.min(this.page, pages - 1));
    const shown = list.slice(this.page * PAGE, (this.page + 1) * PAGE);
    const seen = new Set();
    const late = this.timeout / 2;
    const items = shown.map((n) => {
      let r = this.rows.get(n.id);
      if (!r) {
        r = new NodeRow(n.id);
        this.rows.set(n.id, r);
      }
      seen.add(n.id);
      r.update(n, n.last_heartbeat_age_s > late, hide);
      return r.tr;
    });
    for (const id of this.rows.keys()) if (!seen.has(id)) this.rows.delete(id);
    reconcile(this.tbody, items);

    const tot = (key, r) => this.nodes.reduce((s, n) => s + (n[key][r] || 0), 0);
    const lateCount = this.nodes.filter((n) => n.last_heartbeat_age_s > late).length;
    text(this.summary, `${num(this.nodes.length)} nodes${q ? ` (${num(list.length)} match)` : ''} · cpu ${amount('cpu', tot('resource_usage', 'cpu'))}` +
      ` of ${amount('cpu', tot('resource_limits', 'cpu'))} used · memory ${amount('memory', tot('resource_usage', 'memory'))}` +
      ` of ${amount('memory', tot('resource_limits', 'memory'))} · ${num(lateCount)} late (no heartbeat for over ${seconds(late)})`);
    text(this.pageInfo, list.length ? `${num(this.page * PAGE + 1)}–${num(this.page * PAGE + shown.length)} of ${num(list.length)}` : 'no nodes');
    this.prev.disabled = this.page === 0;
    this.next.disabled = this.page >= pages - 1;
  }
}

export class NodeView {
  constructor(root, params, app) {
    this.app = app;
    this.id = params.id;
    this.cells = Object.fromEntries(RESOURCES.map((r) => [r, usageCell(r)]));
    this.info = h('p');
    this.allocs = h('tbody');
    this.missing = h('p', { hidden: true });
    this.body = h('div', { hidden: true },
      this.info,
      h('table', { class: 'node-resources' },
        h('thead', null, h('tr', null, h('th', { scope: 'col' }, 'Resource'), h('th', { scope: 'col' }, 'Used / total'))),
        h('tbody', null, RESOURCES.map((r) => h('tr', null, h('th', { scope: 'row' }, RESOURCE_LABELS[r]), this.cells[r].td)))),
      h('h2', null, 'Allocations'),
      h('table', { class: 'node-allocs' },
        h('thead', null, h('tr', null, ['Allocation', 'Operation', 'Task', 'Resources', 'Started (s)', 'Preemption status', 'Preempted']
          .map((c) => h('th', { scope: 'col' }, c)))),
        this.allocs));
    root.append(h('p', null, h('a', { href: '#/nodes' }, '← Nodes')),
      h('h1', null, 'Node ', h('span', { class: 'mono' }, this.id)), this.missing, this.body);
  }

  async refresh() {
    const n = await objectOrMissing('/api/v1/orchid/nodes/' + encodeURIComponent(this.id), this);
    if (!n) return;
    this.missing.hidden = true;
    this.body.hidden = false;
    for (const r of RESOURCES) this.cells[r].update(n.resource_usage[r] || 0, n.resource_limits[r] || 0);
    text(this.info, `Last heartbeat at ${num(n.last_heartbeat_s, 6)} s since the server started · tags: ${n.tags.length ? n.tags.join(', ') : 'none'} · ${num(n.allocations.length)} allocations`);
    const key = JSON.stringify(n.allocations);
    if (key === this.key) return;
    this.key = key;
    this.allocs.replaceChildren(...n.allocations.map((a) => h('tr', null,
      h('td', { class: 'mono' }, a.id),
      h('td', null, h('a', { href: '#/operations/' + encodeURIComponent(a.operation_id) }, a.operation_id)),
      h('td', { class: 'num' }, a.task_index),
      h('td', null, Object.entries(a.resources).map(([k, v]) => `${RESOURCE_LABELS[k] || k} ${amount(k, v)}`).join(', ')),
      h('td', { class: 'num' }, num(a.start_time_s, 6)),
      h('td', null, a.preemption_status.replaceAll('_', ' ')),
      h('td', null, a.preempted ? `yes, by ${num(a.preemption_deadline_s, 6)} s` : 'no'))));
  }
}
