// The pools view: the pool tree from GET /api/v1/orchid/pools, each pool
// with its bars (bars.js), statuses, operation counts and limits and, for
// integral pools, the volume with a sparkline of its recent history.
// Only expanded pools have their children in the page, at most PAGE
// children per pool until "Show more"; rows are kept and updated in place
// between refreshes, so focus and scroll stay where they are.

import { api } from './api.js';
import {
  h, text, pct, num, amount, seconds, ratio, statusBadges, statusClass, badge, reconcile, RESOURCE_LABELS,
} from './dom.js';
import { ShareBars, resourceToggle, resourceOf, legend, sparkline } from './bars.js';

export const ROOT = '<Root>';
const PAGE = 100;
const MAX_MATCHES = 200;
const HISTORY = 120;
const EXPANDED_KEY = 'fairsched.expanded';

// volumes keeps integral pools' volumes across views: pool → samples.
const volumes = new Map();

function loadExpanded() {
  try {
    const v = JSON.parse(sessionStorage.getItem(EXPANDED_KEY) || 'null');
    if (Array.isArray(v)) return new Set(v);
  } catch { /* default below */ }
  return new Set([ROOT]);
}

function operationsLink(name) {
  return '#/operations?pool=' + encodeURIComponent(name);
}

// PoolRow is one pool's row, made once and updated in place.
class PoolRow {
  constructor(view, name) {
    this.name = name;
    this.toggle = h('button', {
      type: 'button', class: 'toggle', 'aria-expanded': 'false',
      onclick: () => view.setExpanded(name, this.toggle.getAttribute('aria-expanded') !== 'true'),
    });
    this.toggle.setAttribute('aria-label', 'Show the child pools of ' + name);
    this.spacer = h('span', { class: 'toggle-spacer' });
    this.link = h('a', { class: 'pool-link', href: operationsLink(name), dataset: { pool: name } }, name);
    this.link.title = 'Operations of ' + name;
    this.badges = h('span', { class: 'badges' });
    this.path = h('span', { class: 'path' });
    this.page = h('a', { class: 'pool-page', href: '#/pools/' + encodeURIComponent(name) }, 'history');
    this.page.setAttribute('aria-label', 'History and changes of ' + name);
    this.nameCell = h('div', { class: 'pool-name' }, this.spacer, this.link, this.badges, this.path, this.page);
    this.bars = new ShareBars();
    this.counts = h('dl', { class: 'counts' });
    this.integral = h('div', { class: 'integral-cell' });
    this.row = h('div', { class: 'pool-row', dataset: { pool: name } },
      this.nameCell, this.bars.el, this.counts, this.integral);
    this.children = h('ul');
    this.children.id = 'children-' + Math.random().toString(36).slice(2);
    this.toggle.setAttribute('aria-controls', this.children.id);
    this.li = h('li', null, this.row);
    this.status = null;
    this.hasKids = null;
  }

  update(p, depth, hasKids, expanded, res, pathText) {
    this.nameCell.style.paddingLeft = (depth * 1.25) + 'rem';
    if (hasKids !== this.hasKids) {
      this.hasKids = hasKids;
      (hasKids ? this.spacer : this.toggle).replaceWith(hasKids ? this.toggle : this.spacer);
    }
    this.toggle.setAttribute('aria-expanded', expanded ? 'true' : 'false');
    if (expanded && hasKids) {
      if (this.children.parentNode !== this.li) this.li.append(this.children);
    } else if (this.children.parentNode) {
      this.children.remove();
    }
    const st = [p.status, p.starvation_status, p.mode].join();
    if (st !== this.status) {
      this.status = st;
      this.row.className = 'pool-row ' + statusClass(p);
      this.badges.replaceChildren(...statusBadges(p), p.mode === 'fifo' ? badge('mode', 'fifo') : '');
    }
    text(this.path, pathText || '');
    this.bars.update(p, res);
    this.updateCounts(p);
    this.updateIntegral(p, res);
  }

  updateCounts(p) {
    const rows = [
      ['running', `${num(p.running_operation_count)} / ${num(p.max_running_operation_count)}`,
        p.running_operation_count >= p.max_running_operation_count],
      ['operations', `${num(p.operation_count)} / ${num(p.max_operation_count)}`, p.operation_count >= p.max_operation_count],
      ['pending', num(p.pending_operation_count), false],
      ['weight', num(p.weight), false],
      ['satisfaction', ratio(p.satisfaction_ratio), false],
    ];
    const key = rows.map((r) => r[1] + r[2]).join('|');
    if (this.countsKey === key) return;
    this.countsKey = key;
    this.counts.replaceChildren(...rows.flatMap(([dt, dd, full]) =>
      [h('dt', null, dt), h('dd', { class: full ? 'full' : '' }, dd, full ? h('span', { class: 'sr-only' }, ' (at the limit)') : '')]));
  }

  updateIntegral(p, res) {
    if (!p.integral_guarantee_type) {
      if (this.integralKey !== '-') {
        this.integralKey = '-';
        this.integral.replaceChildren(h('span', { class: 'muted' }, '—'), h('span', { class: 'sr-only' }, 'no integral guarantee'));
      }
      return;
    }
    const samples = volumes.get(p.name) || [];
    const fill = (x) => {
      const cap = x.cap ? x.cap[res] || 0 : 0;
      return cap > 0 ? (x.vol[res] || 0) / cap : 0;
    };
    const last = samples[samples.length - 1];
    const f = last ? fill(last) : 0;
    const vol = p.accumulated_resource_volume ? p.accumulated_resource_volume[res] || 0 : 0;
    const label = `${p.integral_guarantee_type}: volume ${amount(res, vol)}·s, ${pct(f)} of capacity`;
    this.integral.dataset.volume = String(vol);
    const key = label + samples.length + (last ? last.t : '');
    if (this.integralKey === key) return;
    this.integralKey = key;
    const extra = p.integral_guarantee_type === 'burst' && p.estimated_burst_usage_duration_seconds !== undefined
      ? ` · lasts ${p.estimated_burst_usage_duration_seconds === null ? 'for ever' : seconds(p.estimated_burst_usage_duration_seconds)}` : '';
    this.integral.replaceChildren(
      h('span', { class: 'volume' }, h('strong', null, p.integral_guarantee_type), ` ${pct(f)} of capacity`),
      h('span', { class: 'muted' }, extra),
      sparkline(samples.map(fill), {
        label: `${RESOURCE_LABELS[res]} volume over the last ${samples.length} refreshes, now ${pct(f)} of capacity (${amount(res, vol)}·s)`,
      }));
    this.integral.title = label + ` (ratio volume ${num(p.accumulated_resource_ratio_volume)})`;
  }
}

export class PoolsView {
  constructor(root, params, app) {
    this.app = app;
    this.rows = new Map();
    this.shown = new Map();
    this.expanded = loadExpanded();
    this.pools = [];
    this.byName = new Map();
    this.kids = new Map();
    this.sort = 'tree';
    this.find = '';
    this.reveal = params.pool || '';

    this.summary = h('p', { class: 'summary' }, 'Loading the pool tree…');
    const sortSel = h('select', { id: 'pool-sort', onchange: (e) => { this.sort = e.target.value; this.render(); } },
      [['tree', 'as configured'], ['name', 'name'], ['fair', 'fair share'], ['usage', 'usage'], ['demand', 'demand'],
        ['satisfaction', 'least satisfied']].map(([v, l]) => h('option', { value: v }, l)));
    this.findInput = h('input', {
      type: 'search', id: 'pool-find', placeholder: 'name', autocomplete: 'off',
      oninput: (e) => { this.find = e.target.value.trim(); this.render(); },
    });
    this.tree = h('ul', { class: 'tree', 'aria-label': 'Pool tree', onkeydown: (e) => this.keydown(e) });
    this.matches = h('p', { class: 'muted', 'aria-live': 'polite' });
    root.append(
      h('h1', null, 'Pools'),
      this.summary,
      h('div', { class: 'toolbar' },
        resourceToggle(app.resource, (r) => { app.setResource(r); this.render(); })),
      h('div', { class: 'toolbar' },
        h('span', null, h('label', { for: 'pool-sort' }, 'Sort children by '), sortSel),
        h('span', null, h('label', { for: 'pool-find' }, 'Find '), this.findInput),
        h('button', { type: 'button', onclick: () => this.expandAll(true) }, 'Expand all'),
        h('button', { type: 'button', onclick: () => this.expandAll(false) }, 'Collapse all')),
      legend(),
      h('div', { class: 'tree-head', 'aria-hidden': 'true' },
        h('span', null, 'pool'), h('span', null, 'shares of the cluster'), h('span', null, 'operations and limits'),
        h('span', { class: 'integral-head' }, 'integral guarantee')),
      this.matches,
      this.tree);
  }

  async refresh() {
    const data = await api('/api/v1/orchid/pools');
    this.pools = data.pools;
    this.byName = new Map();
    this.kids = new Map();
    for (const p of this.pools) {
      this.byName.set(p.name, p);
      if (p.parent !== undefined) {
        if (!this.kids.has(p.parent)) this.kids.set(p.parent, []);
        this.kids.get(p.parent).push(p.name);
      }
    }
    const now = Date.now();
    for (const p of this.pools) {
      if (!p.integral_guarantee_type) continue;
      if (!volumes.has(p.name)) volumes.set(p.name, []);
      const hs = volumes.get(p.name);
      hs.push({ t: now, vol: p.accumulated_resource_volume || {}, cap: p.integral_pool_capacity || {} });
      if (hs.length > HISTORY) hs.splice(0, hs.length - HISTORY);
    }
    for (const name of this.rows.keys()) {
      if (!this.byName.has(name)) this.rows.delete(name);
    }
    if (this.reveal && this.byName.has(this.reveal)) {
      const name = this.reveal;
      this.reveal = '';
      this.revealPool(name);
      return;
    }
    this.render();
  }

  row(name) {
    let r = this.rows.get(name);
    if (!r) {
      r = new PoolRow(this, name);
      this.rows.set(name, r);
    }
    return r;
  }

  sorted(names) {
    const res = this.app.resource;
    const key = {
      fair: (p) => p.fair_share[resourceOf(p, res)],
      usage: (p) => p.usage_share[resourceOf(p, res)],
      demand: (p) => p.demand_share[resourceOf(p, res)],
    }[this.sort];
    if (this.sort === 'name') return [...names].sort((a, b) => a.localeCompare(b));
    if (this.sort === 'satisfaction') {
      return [...names].sort((a, b) => this.byName.get(a).satisfaction_ratio - this.byName.get(b).satisfaction_ratio);
    }
    if (key) return [...names].sort((a, b) => key(this.byName.get(b)) - key(this.byName.get(a)));
    return names;
  }

  render() {
    if (!this.byName.size) return;
    this.renderSummary();
    if (this.find) {
      this.renderMatches();
      return;
    }
    text(this.matches, '');
    this.matches.hidden = true;
    this.renderLevel(this.tree, [ROOT], 0, null);
  }

  renderSummary() {
    const root = this.byName.get(ROOT);
    const starving = this.pools.filter((p) => p.name !== ROOT && p.starvation_status !== 'non_starving');
    const below = this.pools.filter((p) => p.name !== ROOT && p.status === 'below_fair_share');
    const key = [this.pools.length, root.running_operation_count, root.pending_operation_count,
      starving.map((p) => p.name + p.starvation_status).join(), below.length].join('|');
    if (this.summaryKey === key) return;
    this.summaryKey = key;
    const parts = [
      `${num(this.pools.length - 1)} pools · ${num(root.running_operation_count)} running operations` +
      ` (${num(root.pending_operation_count)} pending) · ${num(below.length)} below fair share · `,
    ];
    if (starving.length === 0) parts.push('none starving');
    else {
      parts.push(h('strong', null, `${starving.length} starving: `));
      starving.slice(0, 10).forEach((p, i) => {
        if (i) parts.push(', ');
        parts.push(h('a', {
          href: '#/pools?pool=' + encodeURIComponent(p.name), class: 'starving-link',
          onclick: (e) => { e.preventDefault(); this.revealPool(p.name); },
        }, p.name));
      });
      if (starving.length > 10) parts.push(` and ${starving.length - 10} more`);
    }
    this.summary.replaceChildren(...parts);
  }

  renderLevel(ul, names, depth, parent) {
    const limit = parent === null ? names.length : (this.shown.get(parent) || PAGE);
    const items = [];
    const res = this.app.resource;
    for (const name of names.slice(0, limit)) {
      const p = this.byName.get(name);
      const kids = this.kids.get(name) || [];
      const open = kids.length > 0 && this.expanded.has(name);
      const r = this.row(name);
      r.update(p, depth, kids.length > 0, open, resourceOf(p, res), '');
      if (open) this.renderLevel(r.children, this.sorted(kids), depth + 1, name);
      items.push(r.li);
    }
    if (names.length > limit) {
      const rest = names.length - limit;
      items.push(h('li', { class: 'more' }, h('button', {
        type: 'button',
        onclick: () => { this.shown.set(parent, limit + PAGE); this.render(); },
      }, `Show ${Math.min(PAGE, rest)} more of ${parent}'s pools (${rest} not shown)`)));
    }
    reconcile(ul, items);
  }

  renderMatches() {
    const q = this.find.toLowerCase();
    const found = this.pools.filter((p) => p.name.toLowerCase().includes(q));
    const res = this.app.resource;
    const items = found.slice(0, MAX_MATCHES).map((p) => {
      const r = this.row(p.name);
      r.update(p, 0, false, false, resourceOf(p, res), this.pathOf(p.name));
      return r.li;
    });
    this.matches.hidden = false;
    text(this.matches, found.length > MAX_MATCHES
      ? `${found.length} pools match; the first ${MAX_MATCHES} are shown.`
      : `${found.length} ${found.length === 1 ? 'pool matches' : 'pools match'}.`);
    reconcile(this.tree, items);
  }

  pathOf(name) {
    const parts = [];
    for (let p = this.byName.get(name); p && p.parent !== undefined; p = this.byName.get(p.parent)) parts.unshift(p.parent);
    return parts.length > 1 ? 'in ' + parts.slice(1).join(' / ') : '';
  }

  setExpanded(name, open) {
    if (open) this.expanded.add(name);
    else this.expanded.delete(name);
    this.saveExpanded();
    this.render();
  }

  saveExpanded() {
    try { sessionStorage.setItem(EXPANDED_KEY, JSON.stringify([...this.expanded])); } catch { /* not kept */ }
  }

  expandAll(open) {
    if (open) for (const [name, kids] of this.kids) { if (kids.length) this.expanded.add(name); }
    else this.expanded = new Set([ROOT]);
    this.saveExpanded();
    this.render();
  }

  // revealPool expands a pool's ancestors (showing enough of each level)
  // and moves the focus to it.
  revealPool(name) {
    if (this.find) {
      this.find = '';
      this.findInput.value = '';
    }
    for (let p = this.byName.get(name); p && p.parent !== undefined; p = this.byName.get(p.parent)) {
      this.expanded.add(p.parent);
      const idx = this.sorted(this.kids.get(p.parent) || []).indexOf(p.name);
      if (idx >= (this.shown.get(p.parent) || PAGE)) this.shown.set(p.parent, idx + 1);
    }
    this.saveExpanded();
    this.render();
    const r = this.rows.get(name);
    if (r && r.link.isConnected) {
      r.link.focus({ preventScroll: true });
      r.row.scrollIntoView({ block: 'center' });
    }
  }

  // keydown moves between the pools' links with the arrow keys and opens
  // and closes pools with right and left (the tree pattern).
  keydown(e) {
    const a = e.target.closest('a.pool-link');
    if (!a || e.altKey || e.ctrlKey || e.metaKey) return;
    const links = [...this.tree.querySelectorAll('a.pool-link')];
    const i = links.indexOf(a);
    const name = a.dataset.pool;
    const r = this.rows.get(name);
    const focus = (el) => { if (el) { el.focus(); e.preventDefault(); } };
    switch (e.key) {
      case 'ArrowDown': focus(links[i + 1]); break;
      case 'ArrowUp': focus(links[i - 1]); break;
      case 'Home': focus(links[0]); break;
      case 'End': focus(links[links.length - 1]); break;
      case 'ArrowRight':
        if (r && r.hasKids && !this.expanded.has(name)) { this.setExpanded(name, true); e.preventDefault(); }
        else if (r && r.hasKids) focus(r.children.querySelector('a.pool-link'));
        break;
      case 'ArrowLeft':
        if (r && r.hasKids && this.expanded.has(name) && !this.find) { this.setExpanded(name, false); e.preventDefault(); } else {
          const p = this.byName.get(name);
          if (p && p.parent !== undefined && this.rows.has(p.parent)) focus(this.rows.get(p.parent).link.isConnected ? this.rows.get(p.parent).link : null);
        }
        break;
      default:
    }
  }
}
