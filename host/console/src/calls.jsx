// The Live calls page: calls in flight (with Cancel) and the most recent ended ones.
import { useState } from 'preact/hooks';
import { post, seg } from './api.js';
import { useNow } from './live.js';
import { RecordPanel, rowOpener } from './record.jsx';
import * as fmt from './format.js';
import { nest } from './tree.js';

/** The tool's cell: indented under the call that made it (a script's tool calls). */
function ToolCell({ tool, depth }) {
  return (
    <td data-testid="call-tool" data-depth={depth} style={depth ? { paddingLeft: `${depth * 1.5 + 0.5}em` } : undefined}>
      {depth ? '\u21b3 ' : ''}
      {tool}
    </td>
  );
}

/** Which daemon of a fleet runs or ran the call (nothing on a daemon alone). */
function Daemon({ name }) {
  if (!name) return null;
  return (
    <span class="muted" data-testid="call-daemon">
      {' on '}
      {fmt.text(name)}
    </span>
  );
}

function RunningRow({ call, depth, now, onOpen, selected }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const cancel = async (e) => {
    e.stopPropagation();
    setBusy(true);
    setError('');
    try {
      await post(`calls/${seg(call.call_id)}/cancel`);
    } catch (err) {
      setError(err.message);
      setBusy(false);
    }
  };
  const tool = fmt.text(call.tool);
  return (
    <tr
      data-testid="running-row"
      data-call-id={String(call.call_id)}
      class={selected ? 'selected' : undefined}
      {...rowOpener(onOpen, `Show the record of this call of ${tool}`)}
    >
      <ToolCell tool={tool} depth={depth} />
      <td data-testid="call-caller">{fmt.caller(call.caller)}</td>
      <td data-testid="call-origin">
        {fmt.text(call.origin)}
        <Daemon name={call.daemon} />
      </td>
      <td data-testid="call-state" class={call.waiting ? 'warn' : 'running'}>
        {call.waiting ? 'waiting for approval' : 'running'}
      </td>
      <td data-testid="elapsed" class="num">
        {fmt.since(call.started_at, now)}
      </td>
      <td>
        <button
          type="button"
          data-testid="cancel"
          disabled={busy}
          aria-label={`Cancel this call of ${tool}`}
          onClick={cancel}
          onKeyDown={(e) => e.stopPropagation()}
        >
          Cancel
        </button>
        {error ? (
          <span class="error" role="alert" data-testid="cancel-error">
            {' '}
            {error}
          </span>
        ) : null}
      </td>
    </tr>
  );
}

function RecentRow({ record, depth, onOpen, selected }) {
  const tool = fmt.text(record.tool);
  return (
    <tr
      data-testid="recent-row"
      data-call-id={String(record.call_id)}
      class={selected ? 'selected' : undefined}
      {...rowOpener(onOpen, `Show the record of this call of ${tool}`)}
    >
      <td data-testid="call-ended">{fmt.time(record.ts_end)}</td>
      <ToolCell tool={tool} depth={depth} />
      <td data-testid="call-caller">
        {fmt.caller(record.caller)}
        <Daemon name={record.daemon} />
      </td>
      <td data-testid="call-decision">{fmt.decision(record.decision)}</td>
      <td data-testid="call-outcome" class={fmt.outcomeClass(record)}>
        {fmt.outcome(record)}
      </td>
      <td data-testid="call-duration" class="num">{fmt.micros(record.duration_us)}</td>
      <td data-testid="call-fuel" class="num">{fmt.count(record.fuel_used)}</td>
      <td data-testid="call-memory" class="num">{fmt.bytes(record.peak_memory_bytes)}</td>
    </tr>
  );
}

export function Calls({ live }) {
  const now = useNow(1000);
  const [open, setOpen] = useState(null);

  return (
    <div class={open ? 'with-panel' : undefined}>
      <section aria-labelledby="running-title">
        <h2 id="running-title">
          Running <span class="muted" data-testid="running-count">({live.running.length})</span>
        </h2>
        <table class="grid" data-testid="running-table">
          <thead>
            <tr>
              <th scope="col">Tool</th>
              <th scope="col">Caller</th>
              <th scope="col">Front end</th>
              <th scope="col">State</th>
              <th scope="col">Elapsed</th>
              <th scope="col"><span class="sr-only">Actions</span></th>
            </tr>
          </thead>
          <tbody>
            {live.running.length === 0 ? (
              <tr><td colSpan={6} class="empty" data-testid="running-empty">No calls are running.</td></tr>
            ) : (
              nest(live.running).map(({ item: c, depth }) => (
                <RunningRow key={c.call_id} call={c} depth={depth} now={now} selected={open === c.call_id} onOpen={() => setOpen(c.call_id)} />
              ))
            )}
          </tbody>
        </table>
      </section>
      <section aria-labelledby="recent-title">
        <h2 id="recent-title">
          Recent <span class="muted" data-testid="recent-count">({live.recent.length})</span>
        </h2>
        <table class="grid" data-testid="recent-table">
          <thead>
            <tr>
              <th scope="col">Ended</th>
              <th scope="col">Tool</th>
              <th scope="col">Caller</th>
              <th scope="col">Decision</th>
              <th scope="col">Outcome</th>
              <th scope="col">Duration</th>
              <th scope="col">Fuel</th>
              <th scope="col">Peak memory</th>
            </tr>
          </thead>
          <tbody>
            {live.recent.length === 0 ? (
              <tr><td colSpan={8} class="empty" data-testid="recent-empty">No calls have ended yet.</td></tr>
            ) : (
              nest(live.recent).map(({ item: r, depth }) => (
                <RecentRow key={r.call_id} record={r} depth={depth} selected={open === r.call_id} onOpen={() => setOpen(r.call_id)} />
              ))
            )}
          </tbody>
        </table>
      </section>
      {open ? <RecordPanel callId={open} onClose={() => setOpen(null)} /> : null}
    </div>
  );
}
