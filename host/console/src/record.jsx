// The side panel with one call's full record as JSON text; fetched by call id or given directly.
import { useEffect, useState } from 'preact/hooks';
import { get, seg } from './api.js';
import { json } from './format.js';

export function RecordPanel({ callId, record, onClose }) {
  const [state, setState] = useState({ loading: !record, record, error: '' });

  useEffect(() => {
    if (record) {
      setState({ loading: false, record, error: '' });
      return undefined;
    }
    let stale = false;
    setState({ loading: true, record: null, error: '' });
    get(`calls/${seg(callId)}`)
      .then((r) => !stale && setState({ loading: false, record: r, error: '' }))
      .catch((e) => !stale && setState({ loading: false, record: null, error: e.message }));
    return () => {
      stale = true;
    };
  }, [callId, record]);

  return (
    <aside class="panel" data-testid="record-panel" aria-label="Call record">
      <header class="panel-head">
        <h3>
          Call <code data-testid="record-call-id">{String(callId ?? (record && record.call_id) ?? '')}</code>
        </h3>
        <button type="button" data-testid="close-record" aria-label="Close the record" onClick={onClose}>
          Close
        </button>
      </header>
      {state.loading ? <p class="muted">Loading…</p> : null}
      {state.error ? (
        <p class="error" role="alert" data-testid="record-error">
          {state.error}
        </p>
      ) : null}
      {state.record ? (
        <pre class="json" data-testid="record-json">
          {json(state.record)}
        </pre>
      ) : null}
    </aside>
  );
}

/** Props that make a table row open something on click or Enter, as a keyboard-reachable control. */
export function rowOpener(open, label) {
  return {
    tabIndex: 0,
    'aria-label': label,
    onClick: open,
    onKeyDown: (e) => {
      if (e.key === 'Enter' || e.key === ' ') {
        e.preventDefault();
        open();
      }
    },
  };
}
