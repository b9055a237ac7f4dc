// The console's shell: session, tabs (hash routes), the live stream, and which page shows.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './style.css';
import { configure, get, post } from './api.js';
import { useLive } from './live.js';
import { enableNotifications, notificationPermission, setTitle } from './notice.js';
import { Approvals } from './approvals.jsx';
import { Calls } from './calls.jsx';
import { Audit } from './audit.jsx';
import { Health } from './health.jsx';

const TABS = [
  { route: 'approvals', label: 'Approvals' },
  { route: 'calls', label: 'Live calls' },
  { route: 'audit', label: 'Audit' },
  { route: 'health', label: 'Health' },
];

function currentRoute() {
  const name = window.location.hash.replace(/^#\/?/, '').split(/[/?]/)[0];
  return TABS.some((t) => t.route === name) ? name : 'approvals';
}

function useRoute() {
  const [route, setRoute] = useState(currentRoute());
  useEffect(() => {
    const onHash = () => setRoute(currentRoute());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  return route;
}

/** Why the console is not showing: `auth` (401/403, or signed out) or `error` (daemon unreachable). */
function SignedOut({ kind, detail }) {
  return (
    <main class="signed-out" data-testid="signed-out" data-kind={kind}>
      <h1>toolhost console</h1>
      {kind === 'error' ? (
        <p class="error" role="alert">
          Could not load the console session. Is the daemon running?
        </p>
      ) : (
        <p class="callout">
          Not signed in — open the sign-in link the daemon printed at start (or sign in with your identity
          provider at <a href="/console/login">/console/login</a>).
        </p>
      )}
      {detail ? <p class="muted" data-testid="signed-out-detail">{detail}</p> : null}
      {kind === 'error' ? (
        <button type="button" data-testid="retry" onClick={() => window.location.reload()}>
          Try again
        </button>
      ) : null}
    </main>
  );
}

function NotifyButton() {
  const [permission, setPermission] = useState(notificationPermission());
  if (permission === 'unsupported' || permission === 'granted') {
    return permission === 'granted' ? <span class="muted" data-testid="notifications-on">Notifications on</span> : null;
  }
  if (permission === 'denied') return <span class="muted" data-testid="notifications-blocked">Notifications blocked</span>;
  return (
    <button
      type="button"
      data-testid="enable-notifications"
      aria-label="Enable browser notifications for new approval questions"
      onClick={async () => setPermission(await enableNotifications())}
    >
      Enable notifications
    </button>
  );
}

const STATUS_TEXT = { connecting: 'connecting…', live: 'live', reconnecting: 'reconnecting…', closed: 'disconnected' };

function Console({ session, onSignedOut }) {
  const route = useRoute();
  const live = useLive(true);
  const [error, setError] = useState('');
  const waiting = live.approvals.length;

  useEffect(() => setTitle(waiting), [waiting]);

  const signOut = async () => {
    try {
      await post('signout');
      onSignedOut('You signed out.');
    } catch (e) {
      setError(`Sign out failed: ${e.message}`);
    }
  };

  return (
    <div class="console">
      <header class="top">
        <span class="brand">toolhost console</span>
        <nav class="tabs" aria-label="Console pages">
          {TABS.map((t) => (
            <a
              key={t.route}
              href={`#/${t.route}`}
              data-testid={`tab-${t.route}`}
              class={route === t.route ? 'tab active' : 'tab'}
              aria-current={route === t.route ? 'page' : undefined}
            >
              {t.label}
              {t.route === 'approvals' && waiting > 0 ? (
                <span class="badge" data-testid="approvals-badge" aria-label={`${waiting} waiting`}>
                  {waiting}
                </span>
              ) : null}
            </a>
          ))}
        </nav>
        <span class="spacer" />
        <span class={`live-status ${live.status}`} data-testid="live-status" title="Live updates">
          {STATUS_TEXT[live.status] || live.status}
        </span>
        {live.status === 'closed' ? (
          <button type="button" data-testid="reconnect" onClick={live.reconnect}>
            Reconnect
          </button>
        ) : null}
        <NotifyButton />
        <span class="operator" data-testid="operator" title="Signed in as">
          {String(session.operator ?? '')}
        </span>
        <button type="button" data-testid="signout" aria-label="Sign out" onClick={signOut}>
          Sign out
        </button>
      </header>
      {error || live.error ? (
        <p class="error" role="alert" data-testid="error">
          {error || live.error}
        </p>
      ) : null}
      <main>
        {route === 'approvals' ? <Approvals live={live} /> : null}
        {route === 'calls' ? <Calls live={live} /> : null}
        {route === 'audit' ? <Audit /> : null}
        {route === 'health' ? <Health /> : null}
      </main>
    </div>
  );
}

function App() {
  const [session, setSession] = useState(null);
  const [out, setOut] = useState(null);

  useEffect(() => {
    const signedOut = (detail) => {
      setSession(null);
      setOut({ kind: 'auth', detail: detail || 'Your session ended.' });
      setTitle(0);
    };
    get('session')
      .then((s) => {
        configure(s && s.csrf, signedOut);
        setSession(s || {});
      })
      .catch((e) => {
        if (e.status === 401 || e.status === 403) signedOut(e.message);
        else setOut({ kind: 'error', detail: e.message });
      });
  }, []);

  if (out !== null) return <SignedOut kind={out.kind} detail={out.detail} />;
  if (!session) return <p class="loading">Loading the console…</p>;
  return (
    <Console
      session={session}
      onSignedOut={(detail) => {
        setSession(null);
        setOut({ kind: 'auth', detail });
        setTitle(0);
      }}
    />
  );
}

render(<App />, document.getElementById('app'));
