// What every scenario of console.test.mjs needs: its own daemon (a temp dir with plugins/ and
// toolhost.toml, `serve --http 127.0.0.1:0`, port and sign-in link read from stderr, SIGTERM at the
// end), a fresh Chromium (Debian's, driven by playwright-core), an MCP client without elicitation,
// the audit log, and screenshots in target/console-screenshots/.

import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const bin = process.env.TOOLHOST_BIN || join(root, 'target/release/toolhost');
export const chromiumPath = process.env.TOOLHOST_CHROMIUM || '/usr/bin/chromium';
export const shots = join(root, 'target/console-screenshots');
const PLUGINS = [join(root, 'plugins/echo.wasm'), join(root, 'target/fixtures/hostile.wasm')];
const CHROMIUM_FLAGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a truthy value (returned) or `ms` pass (throws with `what`). */
export async function until(fn, what, ms = 10000, every = 100) {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(every);
  }
}

/** The binary may be rebuilt under us: wait up to a minute for it to be there. */
async function waitForBinary() {
  await until(() => existsSync(bin), `the daemon binary ${bin}`, 60000, 1000);
}

/**
 * Starts a daemon on 127.0.0.1:0 with `config` (toolhost.toml text), and the plugins `extra`
 * (component paths) beside echo and hostile. Returns
 * { dir, port, origin, mcpUrl, signinLink, auditPath, stderr(), stop() }.
 */
export async function startDaemon(config, extra = [], { env = {}, audit = null } = {}) {
  await waitForBinary();
  const dir = mkdtempSync(join(tmpdir(), 'toolhost-console-'));
  mkdirSync(join(dir, 'plugins'));
  for (const p of [...PLUGINS, ...extra]) copyFileSync(p, join(dir, 'plugins', p.split('/').pop()));
  writeFileSync(join(dir, 'toolhost.toml'), config);
  const child = spawn(
    bin,
    ['serve', '--http', '127.0.0.1:0', '--no-watch', '--config', join(dir, 'toolhost.toml'), '--plugins', join(dir, 'plugins'),
      ...(audit ? ['--audit', audit] : [])],
    { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
  );
  let err = '';
  let exited = null;
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => { err += d; });
  child.on('exit', (code, signal) => { exited = { code, signal }; });
  const stop = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      const t = Date.now();
      while (exited === null && Date.now() - t < 10000) await sleep(50);
      if (exited === null) child.kill('SIGKILL');
    }
    if (!process.env.TOOLHOST_KEEP_TMP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const m = await until(() => {
      if (exited) throw new Error(`the daemon exited (${JSON.stringify(exited)}): ${err}`);
      const serving = err.match(/toolhost: serving \d+ tools over MCP at http:\/\/127\.0\.0\.1:(\d+)\/mcp/);
      const link = err.match(/console sign-in link \(once\): (http:\/\/127\.0\.0\.1:\d+\/console\/signin\?token=\S+)/);
      return serving && link ? { port: Number(serving[1]), link: link[1] } : null;
    }, 'the daemon to print its port and sign-in link', 30000, 50);
    const origin = `http://127.0.0.1:${m.port}`;
    return {
      dir, port: m.port, origin, mcpUrl: `${origin}/mcp`, signinLink: m.link,
      auditPath: join(dir, '.toolhost', 'audit.jsonl'),
      stderr: () => err, stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Every line of the daemon's audit log, parsed. */
export function auditLines(daemon) {
  if (!existsSync(daemon.auditPath)) return [];
  return readFileSync(daemon.auditPath, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

/** The end record of `callId`, waiting for it to be written. */
export async function endRecord(daemon, callId, ms = 10000) {
  return until(
    () => auditLines(daemon).find((r) => r.call_id === callId && (r.event === 'end' || r.event === undefined)),
    `the audit end record of call ${callId}`, ms,
  );
}

/**
 * A fresh Chromium (own user-data-dir) and one page. Collects page errors, dialogs and CSP violations
 * (console messages and `securitypolicyviolation` events) in `problems`.
 */
export async function openBrowser() {
  const userData = mkdtempSync(join(tmpdir(), 'toolhost-console-chromium-'));
  const context = await chromium.launchPersistentContext(userData, {
    executablePath: chromiumPath,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  // TOOLHOST_CONSOLE_DIST=host/console/dist: the page's assets from that folder instead of the
  // ones built into the daemon, to try a change to the page without rebuilding the daemon.
  if (process.env.TOOLHOST_CONSOLE_DIST) {
    const dist = resolve(process.env.TOOLHOST_CONSOLE_DIST);
    const types = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };
    await context.route(/\/console\/assets\/app\.(js|css)$/, (route) => {
      const ext = route.request().url().split('.').pop();
      route.fulfill({ status: 200, contentType: types[ext], body: readFileSync(join(dist, `app.${ext}`)) });
    });
  }
  const problems = { dialogs: [], csp: [], pageErrors: [] };
  await context.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  const watch = (page) => {
    page.on('dialog', async (d) => {
      problems.dialogs.push(`${d.type()}: ${d.message()}`);
      await d.dismiss().catch(() => {});
    });
    page.on('console', (msg) => {
      const text = msg.text();
      if (/Content Security Policy|Refused to (load|execute|apply|connect|frame)/i.test(text)) problems.csp.push(`${page.url()}: ${text}`);
    });
    page.on('pageerror', (e) => problems.pageErrors.push(`${page.url()}: ${e.message}`));
  };
  context.on('page', watch);
  const page = context.pages()[0] || (await context.newPage());
  watch(page);
  page.setDefaultTimeout(15000);
  const close = async () => {
    await context.close().catch(() => {});
    rmSync(userData, { recursive: true, force: true });
  };
  return { context, page, problems, close };
}

/**
 * Signs in with the one-time link; the console then shows the operator. Waits for the live stream
 * too unless `live: false`: a call made before it opens is scenario 2b's subject, not every one's.
 */
export async function signIn(page, daemon, { live = true } = {}) {
  const res = await page.goto(daemon.signinLink);
  if (!res || res.status() !== 200) throw new Error(`sign-in answered ${res && res.status()}`);
  await page.getByTestId('operator').waitFor();
  if (live) await page.getByTestId('live-status').getByText('live', { exact: true }).waitFor();
  return (await page.getByTestId('operator').textContent()).trim();
}

export async function screenshot(page, name) {
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

/** An MCP client (the TypeScript SDK) over Streamable HTTP that declares no elicitation. */
export async function mcpClient(daemon) {
  const client = new Client({ name: 'toolhost-console-test', version: '1.0.0' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl)));
  return client;
}

/** tools/call with a long request timeout (questions and sleeps take a while). */
export function callTool(client, name, args, options = {}) {
  const call = client.callTool({ name, arguments: args }, undefined, { timeout: 120000, ...options });
  // Handled here too, so that a call left pending by a failed scenario (its client closed in the
  // clean-up) does not hide the scenario's own error as an unhandled rejection.
  call.catch(() => {});
  return call;
}

export const text = (result) => (result.content || []).filter((b) => b.type === 'text').map((b) => b.text).join('\n');

/** The question on the page for a call of `tool` whose input contains `marker`. */
export async function questionFor(page, tool, marker) {
  const q = page.getByTestId('question').filter({ has: page.getByTestId('question-tool').getByText(tool, { exact: true }) })
    .filter({ has: page.getByTestId('question-input').getByText(marker) });
  await q.first().waitFor();
  return q.first();
}

/** GET/POST on the console's API with the browser context's session cookie. */
export async function session(context, daemon) {
  const res = await context.request.get(`${daemon.origin}/console/api/session`);
  if (res.status() !== 200) throw new Error(`GET session: ${res.status()} ${await res.text()}`);
  return res.json();
}

/**
 * Waits for `locator` unless the page shows its error (`errorTestId`) first: then fails at once
 * with the page's message (e.g. a route the daemon does not serve) instead of a timeout.
 */
export async function shownOrError(page, locator, errorTestId, what) {
  const error = page.getByTestId(errorTestId);
  const which = await Promise.race([
    locator.first().waitFor().then(() => 'shown'),
    error.waitFor().then(() => 'error'),
  ]);
  if (which === 'error') throw new Error(`${what}: the page shows an error instead: ${(await error.textContent()).trim()}`);
}
