// The console's JSON API (docs/console.md): every request is same-origin with the session cookie;
// every POST carries the session's CSRF token. Errors become ApiError with the server's text.

const BASE = '/console/api/';

let csrf = '';
let onUnauthorized = () => {};

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Remembers the session's CSRF token and what to do when the session is gone (401). */
export function configure(token, unauthorized) {
  csrf = token || '';
  if (unauthorized) onUnauthorized = unauthorized;
}

/** One path segment, encoded: ids come from the server but are never trusted as paths. */
export function seg(value) {
  return encodeURIComponent(String(value));
}

async function errorText(res) {
  try {
    const body = await res.json();
    if (body && typeof body.error === 'string') return body.error;
  } catch (_) {
    // not JSON: fall back to the status line
  }
  return `${res.status} ${res.statusText || 'error'}`.trim();
}

async function request(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (method !== 'GET') {
    init.headers['Content-Type'] = 'application/json';
    init.headers['X-CSRF-Token'] = csrf;
    init.body = JSON.stringify(body === undefined ? {} : body);
  }
  let res;
  try {
    res = await fetch(BASE + path, init);
  } catch (e) {
    throw new ApiError(0, `network error: ${e.message}`);
  }
  if (!res.ok) {
    const message = await errorText(res);
    if (res.status === 401) onUnauthorized(message);
    throw new ApiError(res.status, message);
  }
  const type = res.headers.get('Content-Type') || '';
  return type.includes('json') ? res.json() : null;
}

export const get = (path) => request('GET', path);
export const post = (path, body) => request('POST', path, body);

/** The audit filters as a query string; only keys the API knows, only non-empty values. */
export function auditQuery(filters, extra) {
  const params = new URLSearchParams();
  const all = { ...filters, ...extra };
  for (const key of ['tool', 'outcome', 'caller', 'decision', 'since', 'until', 'q', 'limit', 'cursor']) {
    const value = all[key];
    if (value !== undefined && value !== null && String(value) !== '') params.set(key, String(value));
  }
  return params.toString();
}

/** Same-origin download URL for the audit export: our fixed path, the query from URLSearchParams. */
export function exportHref(filters) {
  const qs = auditQuery(filters);
  return BASE + 'audit/export' + (qs ? '?' + qs : '');
}
