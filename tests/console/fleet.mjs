// A fleet for the browser: a throwaway PostgreSQL on loopback (Debian's server programs, run as
// `postgres` when we are root), three daemons sharing it, and HAProxy in front of them, balancing
// every request on its own (round robin over the daemons whose /ready answers 200). `null` when
// PostgreSQL or HAProxy is not installed (the scenario then skips, or fails when
// TOOLHOST_REQUIRE_SERVICES=1).

import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { sleep, startDaemon, until } from './harness.mjs';

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy'].find((p) => existsSync(p));
const KEY = 'console-fleet-state-key-0123456789abcdef0123456789';

function pgBin() {
  if (!existsSync('/usr/lib/postgresql')) return null;
  const versions = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(a) - Number(b));
  const bin = versions.length ? `/usr/lib/postgresql/${versions.pop()}/bin` : null;
  return bin && existsSync(join(bin, 'initdb')) ? bin : null;
}

async function freePort() {
  const server = createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

async function startPostgres() {
  const bin = pgBin();
  const dir = mkdtempSync('/tmp/toolhost-console-pg-');
  const root = process.getuid && process.getuid() === 0;
  if (root) execFileSync('chown', ['postgres', dir]);
  const as = (program, args) => execFileSync(root ? 'runuser' : join(bin, program),
    root ? ['-u', 'postgres', '--', join(bin, program), ...args] : args, { stdio: 'ignore' });
  const port = await freePort();
  as('initdb', ['-D', join(dir, 'data'), '-U', 'toolhost', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  as('pg_ctl', ['-D', join(dir, 'data'), '-l', join(dir, 'log'), '-w', '-o',
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off`, 'start']);
  as('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'toolhost', 'toolhost']);
  const stop = () => {
    try {
      as('pg_ctl', ['-D', join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
    } catch (_) { /* already gone */ }
    rmSync(dir, { recursive: true, force: true });
  };
  return { url: `postgres://toolhost@127.0.0.1:${port}/toolhost`, stop };
}

async function startHaproxy(backends) {
  const dir = mkdtempSync('/tmp/toolhost-console-haproxy-');
  const [front, stats] = [await freePort(), await freePort()];
  const servers = backends.map((port, i) => `    server d${i} 127.0.0.1:${port} check inter 500 fall 2 rise 1`).join('\n');
  writeFileSync(join(dir, 'haproxy.cfg'), `global
    maxconn 1000

defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s

frontend console
    bind 127.0.0.1:${front}
    default_backend daemons

frontend stats
    bind 127.0.0.1:${stats}
    stats enable
    stats uri /stats

backend daemons
    balance roundrobin
    option httpchk
    http-check send meth GET uri /ready ver HTTP/1.1 hdr Host 127.0.0.1
    http-check expect status 200
${servers}
`);
  if (process.getuid && process.getuid() === 0) chownSync(dir, 0, 0);
  const child = spawn(HAPROXY, ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: 'ignore' });
  // Every daemon checked up.
  await until(async () => {
    const res = await fetch(`http://127.0.0.1:${stats}/stats;csv`);
    const rows = (await res.text()).split('\n').filter((l) => l.startsWith('daemons,d'));
    return rows.length === backends.length && rows.every((l) => l.split(',')[17] === 'UP');
  }, 'HAProxy to check every daemon up', 20000, 200);
  const stop = async () => {
    child.kill('SIGTERM');
    await sleep(100);
    rmSync(dir, { recursive: true, force: true });
  };
  return { origin: `http://127.0.0.1:${front}`, stop };
}

/** Three daemons under `config` (plus the fleet's [state]) behind HAProxy, or `null`. */
export async function startFleet(config) {
  if (!pgBin() || !HAPROXY) {
    if (process.env.TOOLHOST_REQUIRE_SERVICES === '1') throw new Error('the fleet needs PostgreSQL and HAProxy (scripts/services.sh)');
    return null;
  }
  const pg = await startPostgres();
  const daemons = [];
  let lb = null;
  const stop = async () => {
    if (lb) await lb.stop();
    for (const d of daemons) await d.stop();
    pg.stop();
  };
  try {
    const full = `${config}\n[state]\nurl-env = "TOOLHOST_STATE_URL"\n[tasks]\nlease-ms = 2000\n`;
    const env = { TOOLHOST_STATE_URL: pg.url, TOOLHOST_STATE_KEY: KEY };
    for (let i = 0; i < 3; i += 1) daemons.push(await startDaemon(full, [], { env }));
    for (const d of daemons) {
      await until(async () => (await fetch(`${d.origin}/ready`)).status === 200, `daemon ${d.port} ready`, 60000, 100);
    }
    lb = await startHaproxy(daemons.map((d) => d.port));
    return { daemons, origin: lb.origin, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
