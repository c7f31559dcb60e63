// The dashboard's access to the HTTP API (docs/api.md) of the server that
// serves it. A bearer token, when one is set, is kept in this tab's
// sessionStorage and sent in the Authorization header; it never goes into
// a URL. An answer 401 asks the page for a token (onUnauthorized).

const TOKEN_KEY = 'fairsched.token';

// ApiError is an answer with a status of 400 or more (or no answer:
// status 0), with the API's error code, message and JSON path.
export class ApiError extends Error {
  constructor(status, code, message, path) {
    super(message);
    this.status = status;
    this.code = code;
    this.path = path || '';
  }
}

let unauthorized = () => {};

// onUnauthorized sets what to do when the API answers 401.
export function onUnauthorized(fn) { unauthorized = fn; }

export function token() {
  try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(t) {
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch { /* storage disabled: the token lasts until the page is left */ }
}

// api sends a request to path (relative to the server's root, "/api/v1/…")
// and returns the decoded JSON answer.
export async function api(path, { method = 'GET', body, signal } = {}) {
  const headers = { Accept: 'application/json' };
  const t = token();
  if (t) headers.Authorization = 'Bearer ' + t;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let r;
  try {
    r = await fetch(path, { method, headers, body, signal, cache: 'no-store', credentials: 'same-origin' });
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', `cannot reach the server (${method} ${path}): ${e.message}`);
  }
  const raw = await r.text();
  let data = null;
  if (raw) {
    try { data = JSON.parse(raw); } catch { data = null; }
  }
  if (r.status === 401) {
    unauthorized(t !== '');
    throw new ApiError(401, 'unauthorized', t ? 'the server refused the token (401)' : 'the server asks for a token (401)');
  }
  if (!r.ok) {
    const e = (data && data.error) || {};
    throw new ApiError(r.status, e.code || 'http_' + r.status, e.message || `${method} ${path} answered ${r.status}`, e.path);
  }
  return data;
}

// all fetches every page of a listing ("/api/v1/operations?…", key
// "operations") by following next_cursor, limit pages at a time.
export async function all(path, key, { signal, limit = 1000 } = {}) {
  const out = [];
  let cursor = '';
  const sep = path.includes('?') ? '&' : '?';
  for (let i = 0; i < 10000; i++) {
    const page = await api(`${path}${sep}limit=${limit}${cursor ? '&cursor=' + encodeURIComponent(cursor) : ''}`, { signal });
    for (const x of page[key]) out.push(x);
    if (!page.next_cursor) break;
    cursor = page.next_cursor;
  }
  return out;
}

// objectOrMissing is api(path) for an object's page (a pool, a node, an
// operation): when the server has no such object (404) or the name is not
// one (400), it hides page.body, shows why in page.missing (through note)
// and answers null; the page shows its body again once it has drawn it.
export async function objectOrMissing(path, page, note = (message) => message) {
  try {
    return await api(path);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 400)) {
      page.body.hidden = true;
      page.missing.hidden = false;
      const t = note(e.message);
      if (page.missing.textContent !== t) page.missing.textContent = t;
      return null;
    }
    throw e;
  }
}
