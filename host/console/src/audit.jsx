// The Audit page: a filter form, one page of records at a time (newest first), "Load more" with the
// server's cursor, and the JSONL export of everything the same filters match.
import { useEffect, useState } from 'preact/hooks';
import { auditQuery, exportHref, get } from './api.js';
import { RecordPanel, rowOpener } from './record.jsx';
import * as fmt from './format.js';

const FIELDS = [
  { name: 'tool', label: 'Tool', hint: 'exact name' },
  { name: 'outcome', label: 'Outcome', hint: 'ok, error, timeout…', list: 'audit-outcomes' },
  { name: 'caller', label: 'Caller', hint: 'part of the subject' },
  { name: 'decision', label: 'Decision', hint: 'allowed, denied, asked…', list: 'audit-decisions' },
  { name: 'since', label: 'Since', type: 'datetime-local' },
  { name: 'until', label: 'Until', type: 'datetime-local' },
  { name: 'q', label: 'Text', hint: 'anywhere in the line', type: 'search' },
];
const OUTCOMES = ['ok', 'error', 'cancelled', 'input_required', 'unfinished', 'timeout', 'denied', 'suspended'];
const DECISIONS = ['allowed', 'denied', 'asked', 'unanswered', 'mismatched', 'not_reached'];
const blank = { tool: '', outcome: '', caller: '', decision: '', since: '', until: '', q: '' };

/** What the API receives: datetime-local values become RFC 3339 (UTC). */
function apiFilters(form) {
  return { ...form, since: fmt.rfc3339(form.since), until: fmt.rfc3339(form.until) };
}

export function Audit() {
  const [form, setForm] = useState(blank);
  const [applied, setApplied] = useState(null);
  const [result, setResult] = useState({ records: [], next: null, scanned: 0, pages: 0 });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [open, setOpen] = useState(null);

  const load = async (filters, cursor) => {
    setBusy(true);
    setError('');
    try {
      const page = await get('audit?' + auditQuery(filters, { cursor }));
      const records = (page && page.records) || [];
      setResult((prev) => ({
        records: cursor ? [...prev.records, ...records] : records,
        next: (page && page.next) || null,
        scanned: (cursor ? prev.scanned : 0) + Number((page && page.scanned_bytes) || 0),
        pages: (cursor ? prev.pages : 0) + 1,
      }));
      if (!cursor) setOpen(null);
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };

  const submit = (e) => {
    e.preventDefault();
    const filters = apiFilters(form);
    setApplied(filters);
    load(filters, null);
  };

  const reset = () => {
    setForm(blank);
    setApplied(null);
    setResult({ records: [], next: null, scanned: 0, pages: 0 });
    setError('');
    setOpen(null);
  };

  // The newest records once on opening the page (no polling: new calls show on Live calls).
  useEffect(() => {
    const filters = apiFilters(blank);
    setApplied(filters);
    load(filters, null);
  }, []);

  const selected = open === null ? null : result.records[open];
  return (
    <div class={selected ? 'with-panel' : undefined}>
      <section aria-labelledby="audit-title">
        <h2 id="audit-title">Audit log</h2>
        <form class="filters" data-testid="audit-form" onSubmit={submit} onReset={reset}>
          {FIELDS.map((f) => (
            <label key={f.name}>
              <span>{f.label}</span>
              <input
                name={f.name}
                type={f.type || 'text'}
                value={form[f.name]}
                placeholder={f.hint}
                list={f.list}
                data-testid={`filter-${f.name}`}
                onInput={(e) => {
                  const value = e.currentTarget.value;
                  setForm((prev) => ({ ...prev, [f.name]: value }));
                }}
              />
            </label>
          ))}
          <datalist id="audit-outcomes">{OUTCOMES.map((o) => <option key={o} value={o} />)}</datalist>
          <datalist id="audit-decisions">{DECISIONS.map((d) => <option key={d} value={d} />)}</datalist>
          <div class="form-actions">
            <button type="submit" data-testid="audit-search" disabled={busy}>Search</button>
            <button type="reset" data-testid="audit-reset">Clear</button>
            <a class="button" data-testid="audit-export" href={exportHref(apiFilters(form))} download="audit.jsonl">
              Export JSONL
            </a>
          </div>
        </form>
        {error ? <p class="error" role="alert" data-testid="audit-error">{error}</p> : null}
        {applied ? (
          <p class="muted" data-testid="audit-scanned">
            {result.records.length} record{result.records.length === 1 ? '' : 's'} shown; scanned{' '}
            {fmt.bytes(result.scanned)} of the log in {result.pages} page{result.pages === 1 ? '' : 's'}
            {result.next ? '; more may match further back' : '; reached the start of the log'}.
          </p>
        ) : (
          <p class="muted">Loading…</p>
        )}
        {applied ? (
          <table class="grid" data-testid="audit-table">
            <thead>
              <tr>
                <th scope="col">Ended</th>
                <th scope="col">Tool</th>
                <th scope="col">Caller</th>
                <th scope="col">Front end</th>
                <th scope="col">Decision</th>
                <th scope="col">Outcome</th>
                <th scope="col">Duration</th>
              </tr>
            </thead>
            <tbody>
              {result.records.length === 0 && !busy ? (
                <tr><td colSpan={7} class="empty" data-testid="audit-empty">No records match.</td></tr>
              ) : null}
              {result.records.map((r, i) => (
                <tr
                  key={i}
                  data-testid="audit-row"
                  data-call-id={String(r.call_id ?? '')}
                  class={open === i ? 'selected' : undefined}
                  {...rowOpener(() => setOpen(i), `Show this record of ${fmt.text(r.tool)}`)}
                >
                  <td>{fmt.time(r.ts_end || r.ts_start)}</td>
                  <td data-testid="audit-tool">{fmt.text(r.tool)}</td>
                  <td>{fmt.caller(r.caller)}</td>
                  <td>{fmt.text(r.origin)}</td>
                  <td data-testid="audit-decision">{fmt.decision(r.decision)}</td>
                  <td data-testid="audit-outcome" class={fmt.outcomeClass(r)}>{fmt.outcome(r)}</td>
                  <td class="num">{fmt.micros(r.duration_us)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        ) : null}
        {applied && result.next ? (
          <button type="button" data-testid="audit-more" disabled={busy} onClick={() => load(applied, result.next)}>
            {busy ? 'Loading…' : 'Load more'}
          </button>
        ) : null}
      </section>
      {selected ? <RecordPanel record={selected} callId={selected.call_id} onClose={() => setOpen(null)} /> : null}
    </div>
  );
}
