// The Health page: tools with their breakers, plugins with provenance, rejected plugins, tasks,
// and per-tool charts from the stats endpoint (refreshed every 10 s while the page is visible).
import { useEffect, useMemo, useState } from 'preact/hooks';
import { get } from './api.js';
import { Chart, columns } from './chart.jsx';
import * as fmt from './format.js';

const REFRESH_MS = 10000;
const COUNT_SERIES = [
  { label: 'calls', stroke: '#2563eb' },
  { label: 'errors', stroke: '#dc2626' },
];
const LATENCY_SERIES = [
  { label: 'p50 ms', stroke: '#16a34a' },
  { label: 'p95 ms', stroke: '#d97706' },
  { label: 'p99 ms', stroke: '#dc2626' },
];
const BREAKER_CLASS = { closed: 'ok', half_open: 'warn', open: 'bad' };

/** Calls `load` now, then every REFRESH_MS while the document is visible. */
function useRefresh(load) {
  useEffect(() => {
    load();
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') load();
    }, REFRESH_MS);
    const onVisible = () => document.visibilityState === 'visible' && load();
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisible);
    };
  }, []);
}

function Breaker({ breaker }) {
  const b = breaker || {};
  const state = String(b.state ?? 'closed');
  return (
    <span>
      <span class={BREAKER_CLASS[state] || 'warn'} data-testid="breaker-state">{state.replace('_', '-')}</span>
      {b.reason ? <span class="muted" data-testid="breaker-reason">{` — ${fmt.text(b.reason)}`}</span> : null}
      {b.reopens_at ? <span class="muted" data-testid="breaker-reopens">{` (trial at ${fmt.time(b.reopens_at)})`}</span> : null}
    </span>
  );
}

function Tools({ tools }) {
  return (
    <table class="grid" data-testid="health-tools">
      <thead>
        <tr>
          <th scope="col">Tool</th><th scope="col">Plugin</th><th scope="col">Calls</th><th scope="col">Errors</th>
          <th scope="col">Error rate</th><th scope="col">p50</th><th scope="col">p95</th><th scope="col">p99</th>
          <th scope="col">Breaker</th>
        </tr>
      </thead>
      <tbody>
        {tools.length === 0 ? <tr><td colSpan={9} class="empty">No tools are loaded.</td></tr> : null}
        {tools.map((t, i) => (
          <tr key={i} data-testid="health-tool" data-tool={fmt.text(t.name)}>
            <td title={fmt.text(t.description)} data-testid="health-tool-name">{fmt.text(t.name)}</td>
            <td>{fmt.text(t.plugin)}</td>
            <td class="num" data-testid="health-calls">{fmt.count(t.calls)}</td>
            <td class="num" data-testid="health-errors">{fmt.count(t.errors)}</td>
            <td class="num" data-testid="health-error-rate">{fmt.percent(t.errors, t.calls)}</td>
            <td class="num">{fmt.ms(t.p50_ms)}</td>
            <td class="num">{fmt.ms(t.p95_ms)}</td>
            <td class="num">{fmt.ms(t.p99_ms)}</td>
            <td><Breaker breaker={t.breaker} /></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Plugins({ plugins }) {
  return (
    <table class="grid" data-testid="health-plugins">
      <thead>
        <tr>
          <th scope="col">Plugin</th><th scope="col">Source</th><th scope="col">Digest</th>
          <th scope="col">Signature</th><th scope="col">Grants</th><th scope="col">Limits</th>
        </tr>
      </thead>
      <tbody>
        {plugins.length === 0 ? <tr><td colSpan={6} class="empty">No plugins are loaded.</td></tr> : null}
        {plugins.map((p, i) => (
          <tr key={i} data-testid="health-plugin">
            <td>{fmt.text(p.name)}</td>
            <td class="wrap" data-testid="plugin-source">{fmt.text(p.source)}</td>
            <td><code class="digest" data-testid="plugin-digest">{fmt.text(p.digest)}</code></td>
            <td class="wrap" data-testid="plugin-signature">{fmt.text(p.signature)}</td>
            <td><pre class="json small" data-testid="plugin-grants">{fmt.json(p.grants)}</pre></td>
            <td><pre class="json small" data-testid="plugin-limits">{fmt.json(p.limits)}</pre></td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Charts({ stats }) {
  const tools = useMemo(() => {
    const byTool = (stats && stats.tools) || {};
    return Object.keys(byTool)
      .sort()
      .map((name) => ({ name, ...columns(byTool[name], stats.interval_s) }));
  }, [stats]);
  if (!stats) return <p class="muted">Loading the series…</p>;
  if (tools.length === 0) return <p class="empty" data-testid="charts-empty">No calls in the last hour.</p>;
  return tools.map((t) => (
    <div class="tool-charts" key={t.name} data-testid="tool-charts" data-tool={t.name}>
      <h3>{t.name}</h3>
      <div class="chart-pair">
        <Chart title={`${t.name}: calls and errors per ${stats.interval_s} s`} series={COUNT_SERIES} data={t.counts} testid="chart-calls" yLabel="calls" />
        <Chart title={`${t.name}: latency`} series={LATENCY_SERIES} data={t.latency} testid="chart-latency" yLabel="ms" />
      </div>
    </div>
  ));
}

/** Every daemon of a fleet: alive (spoke within 5 s), ready, what it runs. */
function Fleet({ fleet, here }) {
  const daemons = fleet.daemons || [];
  return (
    <div>
      <p data-testid="fleet-status" class={fleet.status === 'ok' ? 'ok' : 'warn'}>
        {fmt.text(fleet.status)}: {fmt.count(fleet.alive)} of {fmt.count(daemons.length)} daemons alive,{' '}
        {fmt.count(fleet.ready)} ready{fleet.error ? ` (${fmt.text(fleet.error)})` : ''}
      </p>
      <table class="grid" data-testid="health-fleet">
        <thead>
          <tr>
            <th scope="col">Daemon</th><th scope="col">State</th><th scope="col">Tools</th>
            <th scope="col">Rejected</th><th scope="col">Running</th><th scope="col">In flight</th>
            <th scope="col">Last heard</th>
          </tr>
        </thead>
        <tbody>
          {daemons.map((d, i) => {
            const h = d.health || {};
            const state = fmt.text(d.state);
            return (
              <tr key={i} data-testid="health-daemon" data-daemon={fmt.text(d.daemon)}>
                <td>
                  <code>{fmt.text(d.daemon)}</code>
                  {d.daemon === here ? <span class="muted"> (this one)</span> : null}
                </td>
                <td data-testid="daemon-state" class={state === 'ready' ? 'ok' : 'warn'}>{state}</td>
                <td class="num">{fmt.count(h.tools)}</td>
                <td class="num">{fmt.count(h.rejected)}</td>
                <td class="num">{fmt.count(h.running)}</td>
                <td class="num">{fmt.count(h.in_flight)}</td>
                <td class="num">{fmt.count(Math.round((d.said_ms_ago || 0) / 1000))} s ago</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function Health() {
  const [health, setHealth] = useState(null);
  const [stats, setStats] = useState(null);
  const [error, setError] = useState('');
  const [statsError, setStatsError] = useState('');
  const [updated, setUpdated] = useState(0);

  // Health and stats apart: a failing stats route (or a slow one) must not hide the breakers.
  const load = async () => {
    const [h, s] = await Promise.allSettled([get('health'), get('stats')]);
    if (h.status === 'fulfilled') setHealth(h.value || {});
    if (s.status === 'fulfilled') setStats(s.value || { interval_s: 10, tools: {} });
    setError(h.status === 'rejected' ? h.reason.message : '');
    setStatsError(s.status === 'rejected' ? s.reason.message : '');
    if (h.status === 'fulfilled' || s.status === 'fulfilled') setUpdated(Date.now());
  };
  useRefresh(load);

  const h = health || {};
  return (
    <div>
      <h2>
        Health{' '}
        <button type="button" data-testid="health-refresh" aria-label="Refresh health and charts" onClick={load}>
          Refresh
        </button>{' '}
        {updated ? <span class="muted small" data-testid="health-updated">updated {new Date(updated).toLocaleTimeString()}</span> : null}
      </h2>
      {error ? <p class="error" role="alert" data-testid="health-error">{error}</p> : null}
      {health ? (
        <div>
          {h.fleet ? (
            <section aria-label="Fleet"><h3>Fleet</h3><Fleet fleet={h.fleet} here={h.daemon} /></section>
          ) : null}
          <section aria-label="Tools"><h3>Tools</h3><Tools tools={h.tools || []} /></section>
          <section aria-label="Charts">
            <h3>Last hour</h3>
            {statsError ? <p class="error" role="alert" data-testid="charts-error">{statsError}</p> : <Charts stats={stats} />}
          </section>
          <section aria-label="Plugins"><h3>Plugins</h3><Plugins plugins={h.plugins || []} /></section>
          <section aria-label="Rejected plugins">
            <h3>Rejected plugins</h3>
            {(h.rejected || []).length === 0 ? (
              <p class="empty" data-testid="rejected-empty">None.</p>
            ) : (
              <table class="grid" data-testid="health-rejected">
                <thead><tr><th scope="col">Plugin</th><th scope="col">Why</th></tr></thead>
                <tbody>
                  {h.rejected.map((r, i) => (
                    <tr key={i} data-testid="health-rejected-row">
                      <td>{fmt.text(r.name)}</td>
                      <td class="bad wrap">{fmt.text(r.why)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
          <section aria-label="Tasks">
            <h3>Tasks</h3>
            {(h.tasks || []).length === 0 ? (
              <p class="empty" data-testid="tasks-empty">No tasks.</p>
            ) : (
              <table class="grid" data-testid="health-tasks">
                <thead><tr><th scope="col">Task</th><th scope="col">Tool</th><th scope="col">State</th><th scope="col">Created</th></tr></thead>
                <tbody>
                  {h.tasks.map((t, i) => (
                    <tr key={i} data-testid="health-task">
                      <td><code>{fmt.text(t.id)}</code></td>
                      <td>{fmt.text(t.tool)}</td>
                      <td data-testid="task-state">{fmt.text(t.state)}</td>
                      <td>{fmt.time(t.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </section>
        </div>
      ) : (
        <p class="muted">Loading…</p>
      )}
    </div>
  );
}
