// The dashboard's entry point: the routes (the part of the URL after #),
// the refresh loop that polls the current view, the token form and the
// error banner. Each view is a class with a constructor(root, params, app)
// that builds its part of the page and, for live views, an async
// refresh() that fetches and redraws; minInterval (seconds) bounds how
// often a view with large answers is polled at the chosen rate.

import { onUnauthorized, setToken, token } from './api.js';
import { params as parseParams } from './dom.js';
import { PoolsView } from './pools.js';
import { PoolView } from './pool.js';
import { OperationsView, OperationView } from './operations.js';
import { NodesView, NodeView } from './nodes.js';
import { WhatIfView } from './whatif.js';

const RESOURCE_KEY = 'fairsched.resource';
const REFRESH_KEY = 'fairsched.refresh';

const $ = (id) => document.getElementById(id);
const main = $('main');
const refreshSel = $('refresh');
const updated = $('updated');
const errorBox = $('error');
const tokenForm = $('token-form');
const tokenInput = $('token');
const tokenForget = $('token-forget');

function stored(key, fallback) {
  try { return localStorage.getItem(key) || fallback; } catch { return fallback; }
}

function store(key, value) {
  try { localStorage.setItem(key, value); } catch { /* not kept */ }
}

// The refresh period: ?refresh=SECONDS in the page's URL (then exactly
// that, for tests and wall screens), else the menu's choice.
const urlRefresh = parseFloat(new URLSearchParams(location.search).get('refresh'));
const fixedRefresh = Number.isFinite(urlRefresh) && urlRefresh >= 0.1 ? urlRefresh : null;
if (fixedRefresh !== null) {
  if (![...refreshSel.options].some((o) => Number(o.value) === fixedRefresh)) {
    refreshSel.append(new Option(`${fixedRefresh} s`, String(fixedRefresh)));
  }
  refreshSel.value = String(fixedRefresh);
} else {
  refreshSel.value = stored(REFRESH_KEY, '2');
  if (!refreshSel.value) refreshSel.value = '2';
}

const app = {
  resource: stored(RESOURCE_KEY, 'dominant'),
  setResource(r) {
    app.resource = r;
    store(RESOURCE_KEY, r);
  },
  refreshNow() { tick(); },
};

const routes = [
  [/^pools$/, 'pools', 'Pools', PoolsView],
  [/^pools\/(.+)$/, 'pools', 'Pool', PoolView],
  [/^operations$/, 'operations', 'Operations', OperationsView],
  [/^operations\/(.+)$/, 'operations', 'Operation', OperationView],
  [/^nodes$/, 'nodes', 'Nodes', NodesView],
  [/^nodes\/(.+)$/, 'nodes', 'Node', NodeView],
  [/^whatif$/, 'whatif', 'What-if', WhatIfView],
];

let current = null;

function route() {
  const hash = location.hash || '#/pools';
  if (!hash.startsWith('#/')) return; // an in-page anchor
  const [path, q] = hash.slice(2).split('?');
  let match = null;
  for (const [re, nav, title, View] of routes) {
    const m = re.exec(path || 'pools');
    if (m) {
      match = { nav, title, View, params: { ...parseParams(q), id: m[1] ? decodeURIComponent(m[1]) : undefined } };
      break;
    }
  }
  main.replaceChildren();
  clearError();
  updated.textContent = '';
  if (!match) {
    current = null;
    main.append(Object.assign(document.createElement('h1'), { textContent: 'Not found' }),
      Object.assign(document.createElement('p'), { textContent: `The dashboard has no page ${hash}.` }));
    document.title = 'Not found · fairsched';
    return;
  }
  for (const a of document.querySelectorAll('.top nav a')) {
    if (a.dataset.view === match.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  document.title = (match.params.id ? `${match.params.id} · ` : '') + `${match.title} · fairsched`;
  current = new match.View(main, match.params, app);
  tick();
}

// ---- the refresh loop ----

let timer = 0;
let busy = false;
let again = false;

function period() {
  const s = Number(refreshSel.value) || 0;
  if (s <= 0) return 0;
  if (fixedRefresh !== null) return s;
  return Math.max(s, (current && current.minInterval) || 0);
}

async function tick() {
  clearTimeout(timer);
  if (busy) {
    again = true;
    return;
  }
  const view = current;
  if (view && view.refresh && !document.hidden) {
    busy = true;
    const t0 = performance.now();
    try {
      await view.refresh();
      if (view === current) {
        clearError();
        updated.textContent = 'updated ' + new Date().toLocaleTimeString();
        // How long the refresh took (fetch, decode, draw), for the curious
        // and the tests.
        updated.dataset.ms = String(Math.round(performance.now() - t0));
        updated.title = `the last refresh took ${updated.dataset.ms} ms`;
      }
    } catch (e) {
      if (view === current && e.name !== 'AbortError') showError(e);
    } finally {
      busy = false;
    }
  }
  if (again) {
    again = false;
    tick();
    return;
  }
  const p = period();
  if (p > 0 && current && current.refresh) timer = setTimeout(tick, p * 1000);
  else if (current && current.refresh) updated.textContent = 'refresh paused';
}

function showError(e) {
  if (e.status === 401) return; // the token form says it
  errorBox.hidden = false;
  errorBox.textContent = e.message || String(e);
}

function clearError() {
  if (!errorBox.hidden) {
    errorBox.hidden = true;
    errorBox.textContent = '';
  }
}

// ---- the token ----

onUnauthorized((hadToken) => {
  const wasHidden = tokenForm.hidden;
  tokenForm.hidden = false;
  $('token-why').firstChild.textContent = hadToken ? 'The server refused the token.' : 'The server asks for a token.';
  if (wasHidden) tokenInput.focus();
});

tokenForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const t = tokenInput.value.trim();
  if (!t) return;
  setToken(t);
  tokenInput.value = '';
  tokenForm.hidden = true;
  tokenForget.hidden = false;
  route();
});

tokenForget.addEventListener('click', () => {
  setToken('');
  tokenForget.hidden = true;
  tick();
});
tokenForget.hidden = token() === '';

refreshSel.addEventListener('change', () => {
  if (fixedRefresh === null) store(REFRESH_KEY, refreshSel.value);
  tick();
});

document.addEventListener('visibilitychange', () => {
  if (!document.hidden) tick();
});

$('skip').addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});

window.addEventListener('hashchange', route);
route();
