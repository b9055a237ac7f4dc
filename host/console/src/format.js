// Turning API values into short text. Everything returned here is rendered as text, never markup.

export function json(value) {
  try {
    return JSON.stringify(value, null, 2) ?? 'null';
  } catch (_) {
    return String(value);
  }
}

/** A caller is a string on questions and running calls, an object (or null) on audit records. */
export function caller(c) {
  if (c === null || c === undefined) return '—';
  if (typeof c === 'string') return c;
  if (typeof c === 'object') {
    const parts = [];
    if (c.subject !== undefined) parts.push(`sub="${c.subject}"`);
    if (c.issuer !== undefined) parts.push(`iss="${c.issuer}"`);
    if (c.client_id) parts.push(`client="${c.client_id}"`);
    return parts.length ? parts.join(' ') : json(c);
  }
  return String(c);
}

export function decision(d) {
  if (!d) return '—';
  if (typeof d === 'string') return d;
  switch (d.kind) {
    case 'allowed':
    case 'denied':
      return d.by ? `${d.kind} (${d.by})` : d.kind;
    case 'asked':
      return d.answer ? 'asked: approved' : 'asked: declined';
    case 'unanswered':
      return d.why ? `unanswered (${d.why})` : 'unanswered';
    default:
      return String(d.kind ?? json(d));
  }
}

export function outcome(r) {
  if (!r) return '—';
  if (r.event === 'begin' && r.outcome === undefined) return 'running';
  const o = String(r.outcome ?? '—');
  return r.error_kind && r.error_kind !== o ? `${o} (${r.error_kind})` : o;
}

/** A fixed CSS class for an outcome: never built from the value itself. */
export function outcomeClass(r) {
  const o = r && r.outcome;
  if (o === 'ok') return 'ok';
  if (o === 'cancelled' || o === 'input_required' || o === undefined) return 'warn';
  return 'bad';
}

export function micros(us) {
  if (us === null || us === undefined) return '—';
  const n = Number(us);
  if (n < 1000) return `${n} µs`;
  if (n < 1e6) return `${(n / 1000).toFixed(n < 1e4 ? 2 : 1)} ms`;
  return seconds(n / 1e6);
}

export function ms(value) {
  if (value === null || value === undefined) return '—';
  const n = Number(value);
  return n < 10 ? `${n.toFixed(2)} ms` : n < 1000 ? `${n.toFixed(0)} ms` : seconds(n / 1000);
}

export function seconds(s) {
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${Math.floor(s % 60)}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

export function bytes(n) {
  if (n === null || n === undefined) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Number(n);
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}

export function count(n) {
  if (n === null || n === undefined) return '—';
  return Number(n).toLocaleString('en-US');
}

export function percent(part, whole) {
  if (!whole) return '—';
  return `${((100 * part) / whole).toFixed(1)}%`;
}

/** Local time of an RFC 3339 string, or the string itself when it does not parse. */
export function time(t) {
  if (!t) return '—';
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? String(t) : d.toLocaleString();
}

/** Time left until `t` (RFC 3339) at `now` (ms), as "1m 05s left" or "expired". */
export function left(t, now) {
  const end = Date.parse(t);
  if (Number.isNaN(end)) return '—';
  const s = Math.floor((end - now) / 1000);
  if (s <= 0) return 'expired';
  const m = Math.floor(s / 60);
  return m ? `${m}m ${String(s % 60).padStart(2, '0')}s left` : `${s}s left`;
}

export function since(t, now) {
  const start = Date.parse(t);
  if (Number.isNaN(start)) return '—';
  return seconds(Math.max(0, (now - start) / 1000));
}

/** A datetime-local value ("2026-11-27T10:00") as RFC 3339 in UTC; "" when empty or invalid. */
export function rfc3339(local) {
  if (!local) return '';
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? '' : d.toISOString();
}

/** Any value as one line of text (JSON for objects). */
export function text(v) {
  if (v === null || v === undefined) return '—';
  return typeof v === 'string' ? v : JSON.stringify(v);
}
