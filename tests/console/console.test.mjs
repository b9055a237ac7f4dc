// End-to-end tests of the operator's console (docs/console.md) in a real browser: Debian's
// Chromium driven by playwright-core, against the real daemon with the echo and hostile plugins.
// Each scenario starts its own daemon and browser; scenario 10 starts a fleet (three daemons on a
// throwaway PostgreSQL behind HAProxy, fleet.mjs) and uses the page through the balancer. Run by
// tests/console/run.sh (`node --test`).
//
//   TOOLHOST_BIN=/path/to/toolhost node --test --test-concurrency=1 console.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  auditLines, callTool, endRecord, mcpClient, openBrowser, questionFor, screenshot, session, shownOrError,
  root, signIn, sleep, startDaemon, text, until,
} from './harness.mjs';
import { join } from 'node:path';
import { startFleet } from './fleet.mjs';

const ASK_ECHO = `
[permissions]
ask = ["echo"]
[server]
approval-timeout-ms = 6000
[console]
approvals = "both"
`;

/** Runs `body` with a fresh daemon (config) and browser; always stops both. */
async function scenario(config, body, plugins = []) {
  const daemon = await startDaemon(config, plugins);
  let browser;
  const clients = [];
  try {
    browser = await openBrowser();
    const client = async () => {
      const c = await mcpClient(daemon);
      clients.push(c);
      return c;
    };
    await body({ daemon, ...browser, client });
  } catch (e) {
    if (browser) await screenshot(browser.page, `FAILED-${e.scenario || 'scenario'}-${Date.now()}`).catch(() => {});
    // The reporter prints the stack, which holds the message as it was when the error was made.
    const more = `\n--- daemon stderr ---\n${daemon.stderr()}`;
    e.message += more;
    if (typeof e.stack === 'string') e.stack += more;
    throw e;
  } finally {
    for (const c of clients) await c.close().catch(() => {});
    if (browser) await browser.close();
    await daemon.stop();
  }
}

/** The question's call id as the page shows it. */
async function callIdOf(question) {
  return (await question.getByTestId('question-call-id').textContent()).trim();
}

test('1 sign-in: the link signs in once, the approvals page shows the operator', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page, context }) => {
    const operator = await signIn(page, daemon);
    assert.equal(operator, 'local operator');
    assert.match(page.url(), /\/console\/(#\/approvals)?$/);
    await page.getByTestId('approvals-empty').waitFor();
    await screenshot(page, '01-approvals-empty');

    // The same link again, in a second browser (no cookie): refused.
    const other = await openBrowser();
    try {
      const res = await other.page.goto(daemon.signinLink);
      assert.equal(res.status(), 403, 'the sign-in link works only once');
      await screenshot(other.page, '01-signin-again-403');
    } finally {
      await other.close();
    }
    // And from the signed-in browser too.
    const again = await context.request.get(daemon.signinLink, { maxRedirects: 0 });
    assert.equal(again.status(), 403);
  });
});

test('2 approve: an MCP call without elicitation waits, shows in the queue, approved from the page', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page, context, client }) => {
    await signIn(page, daemon);
    const c = await client();
    const input = { text: 'approve me please', repeat: 2 };
    let settled = false;
    const call = callTool(c, 'echo', input);
    call.finally(() => { settled = true; }).catch(() => {});

    const q = await questionFor(page, 'echo', 'approve me please');
    assert.deepEqual(JSON.parse(await q.getByTestId('question-input').textContent()), input, 'the full input');
    assert.match((await q.getByTestId('question-reason').textContent()).trim(), /\S/, 'a reason');
    assert.match(await q.getByTestId('question-reason').textContent(), /echo|ask|rule|mode/i);
    // The caller as the API names it (an untokened HTTP client: "(no token)" since main d900ec8;
    // docs/console.md says `sub="…" iss="…"` or `local operator`).
    const shown = (await q.getByTestId('question-caller').textContent()).trim();
    const { approvals } = await (await context.request.get(`${daemon.origin}/console/api/approvals`)).json();
    assert.equal(approvals.length, 1);
    assert.match(shown, /\S/, 'a caller');
    assert.equal(shown, String(approvals[0].caller), 'the caller as the API gives it');
    assert.equal((await q.getByTestId('question-origin').textContent()).trim(), 'mcp');
    assert.match(await q.getByTestId('countdown').textContent(), /\d/, 'a countdown');
    const first = await q.getByTestId('countdown').textContent();
    await until(async () => (await q.getByTestId('countdown').textContent()) !== first, 'the countdown to tick', 3000);
    assert.equal(settled, false, 'the call waits for the answer');
    await screenshot(page, '02-question-waiting');
    const callId = await callIdOf(q);

    await q.getByTestId('approve').click();
    const result = await call;
    assert.ok(!result.isError, JSON.stringify(result));
    assert.match(text(result), /approve me please/);
    await page.getByTestId('approvals-empty').waitFor();
    await page.locator(`[data-testid=answered-note][data-question-id]`).filter({ hasText: 'approved' }).first().waitFor();
    await screenshot(page, '02-approved');

    const rec = await endRecord(daemon, callId);
    assert.equal(rec.decision?.kind, 'asked', JSON.stringify(rec.decision));
    assert.equal(rec.decision?.answer, true, JSON.stringify(rec.decision));
    assert.equal(rec.decision?.operator, 'local operator', JSON.stringify(rec.decision));
  });
});

test('2b a question asked while the live stream is still connecting still shows', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page, context, client }) => {
    // Hold the event stream back until a question was put after the page's first fetch of the
    // lists: the page must still show it once the stream opens (it must catch up then).
    let release;
    const released = new Promise((r) => { release = r; });
    await page.route('**/console/api/events', async (route) => {
      await released;
      await route.continue().catch(() => {});
    });
    const firstFetch = page.waitForResponse((r) => r.url().endsWith('/console/api/approvals'));
    await signIn(page, daemon, { live: false });
    await firstFetch;
    assert.equal((await page.getByTestId('live-status').textContent()).trim(), 'connecting…', 'the stream is held back');
    const c = await client();
    const call = callTool(c, 'echo', { text: 'asked while connecting' });
    await until(async () => {
      const { approvals } = await (await context.request.get(`${daemon.origin}/console/api/approvals`)).json();
      return approvals.length === 1;
    }, 'the question to be put');
    release();
    await page.getByTestId('live-status').getByText('live').waitFor();
    const q = await questionFor(page, 'echo', 'asked while connecting');
    await screenshot(page, '02b-question-asked-while-connecting');
    await q.getByTestId('approve').click();
    assert.ok(!(await call).isError);
  });
});

test('2c a list fetched before a question but answered after its event does not hide it', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page, client }) => {
    // The daemon answers the page's fetches of the list at once (so they hold the list before the
    // question), but the answers reach the page only after the question's event has shown it: a
    // page that took such a late list as the truth would drop the question (CI saw scenario 5 lose
    // its question this way once, when the fetch made on the stream's open was slow).
    let release;
    const released = new Promise((r) => { release = r; });
    let held = 0;
    await page.route('**/console/api/approvals', async (route) => {
      const response = await route.fetch();
      held += 1;
      await released;
      await route.fulfill({ response }).catch(() => {});
    });
    await signIn(page, daemon);
    await until(() => held >= 2, 'the fetches of the list at the start and on the open to be held');
    const c = await client();
    const call = callTool(c, 'echo', { text: 'asked during a fetch' });
    const q = await questionFor(page, 'echo', 'asked during a fetch');
    const delivered = [];
    page.on('requestfinished', (r) => { if (r.url().endsWith('/console/api/approvals')) delivered.push(r); });
    release();
    await until(() => delivered.length >= 2, 'the held lists to reach the page');
    // Let the page apply them (a render or two), then the question must still be there.
    await sleep(500);
    assert.ok(await q.isVisible(), 'the question is still shown after the late lists');
    await screenshot(page, '02c-question-kept-after-late-list');
    await q.getByTestId('approve').click();
    assert.ok(!(await call).isError);
  });
});

test('3 deny: a call denied from the page is an error result, audited answer false', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page, client }) => {
    await signIn(page, daemon);
    const c = await client();
    const call = callTool(c, 'echo', { text: 'deny me' });
    const q = await questionFor(page, 'echo', 'deny me');
    const callId = await callIdOf(q);
    await q.getByTestId('deny').click();
    const result = await call;
    assert.equal(result.isError, true, JSON.stringify(result));
    assert.doesNotMatch(text(result), /^deny me$/);
    await page.getByTestId('approvals-empty').waitFor();
    await screenshot(page, '03-denied');
    const rec = await endRecord(daemon, callId);
    assert.equal(rec.decision?.kind, 'asked', JSON.stringify(rec.decision));
    assert.equal(rec.decision?.answer, false, JSON.stringify(rec.decision));
  });
});

test('4 unanswered: a question left alone times out, leaves the page, audited unanswered', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page, client }) => {
    await signIn(page, daemon);
    const c = await client();
    const started = Date.now();
    const call = callTool(c, 'echo', { text: 'nobody will answer' });
    const q = await questionFor(page, 'echo', 'nobody will answer');
    const questionId = await q.getAttribute('data-question-id');
    const callId = await callIdOf(q);
    await screenshot(page, '04-question-before-timeout');
    const result = await call;
    const waited = Date.now() - started;
    assert.ok(waited >= 5500, `the call waited the approval timeout (${waited} ms)`);
    assert.match(text(result), /nobody|no one|unanswered|not answered|no answer|timed out/i, JSON.stringify(result));
    assert.doesNotMatch(text(result), /^nobody will answer$/, 'the tool did not run');
    await page.locator(`[data-testid=question][data-question-id="${questionId}"]`).waitFor({ state: 'detached', timeout: 5000 });
    await page.getByTestId('approvals-empty').waitFor();
    await screenshot(page, '04-unanswered');
    const rec = await endRecord(daemon, callId);
    assert.equal(rec.decision?.kind, 'unanswered', JSON.stringify(rec.decision));
  });
});

test('5 batch: POST /v1/tool-calls waits for the console and is approved there', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO, async ({ daemon, page }) => {
    await signIn(page, daemon);
    const message = { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'echo', input: { text: 'hi' } }] };
    let settled = false;
    const batch = fetch(`${daemon.origin}/v1/tool-calls?format=anthropic`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(message),
    }).then(async (r) => ({ status: r.status, body: await r.text() })).finally(() => { settled = true; });
    const q = await questionFor(page, 'echo', '"hi"');
    // The input as the tool will get it (defaults filled in, e.g. repeat: 1).
    assert.equal(JSON.parse(await q.getByTestId('question-input').textContent()).text, 'hi');
    assert.equal((await q.getByTestId('question-origin').textContent()).trim(), 'batch');
    assert.equal(settled, false, 'the batch waits for the answer');
    await screenshot(page, '05-batch-question');
    const callId = await callIdOf(q);
    await q.getByTestId('approve').click();
    const res = await batch;
    assert.equal(res.status, 200, res.body);
    const answer = JSON.parse(res.body);
    const results = (Array.isArray(answer) ? answer : answer.content || []).filter((b) => b.type === 'tool_result');
    assert.equal(results.length, 1, res.body);
    assert.equal(results[0].tool_use_id, 't1', res.body);
    assert.ok(!results[0].is_error, res.body);
    assert.match(JSON.stringify(results[0].content), /hi/, res.body);
    const rec = await endRecord(daemon, callId);
    assert.equal(rec.decision?.kind, 'asked');
    assert.equal(rec.decision?.answer, true);
  });
});

const BYPASS = (extra = '') => `
[permissions]
mode = "bypass"
${extra}
`;

test('6 live calls: a long sleep shows as running, Cancel ends it cancelled and moves it to recent', { timeout: 90000 }, async () => {
  await scenario(BYPASS('[plugins.hostile.limits]\ntimeout-ms = 60000\n'), async ({ daemon, page, client }) => {
    await signIn(page, daemon);
    await page.getByTestId('tab-calls').click();
    await page.getByTestId('running-empty').waitFor();
    const c = await client();
    const started = Date.now();
    let settled = false;
    const call = callTool(c, 'sleep', { ms: 20000 }).then(
      (r) => ({ result: r }),
      (e) => ({ error: e }),
    ).finally(() => { settled = true; });
    const row = page.getByTestId('running-row').filter({ has: page.getByTestId('call-tool').getByText('sleep', { exact: true }) });
    await row.waitFor();
    assert.equal((await row.getByTestId('call-state').textContent()).trim(), 'running');
    assert.equal((await row.getByTestId('call-origin').textContent()).trim(), 'mcp');
    const callId = await row.getAttribute('data-call-id');
    assert.ok(callId, 'the row names its call');
    await screenshot(page, '06-running');
    assert.equal(settled, false);

    await row.getByTestId('cancel').click();
    const out = await call;
    const took = Date.now() - started;
    assert.ok(took < 15000, `the call ended at once when cancelled (${took} ms)`);
    if (out.error) {
      assert.match(String(out.error), /cancel/i, String(out.error));
    } else {
      assert.equal(out.result.isError, true, JSON.stringify(out.result));
      assert.equal(out.result._meta?.['toolhost/errorKind'], 'cancelled', JSON.stringify(out.result));
      assert.match(text(out.result), /stopped|cancel/i, JSON.stringify(out.result));
    }
    await page.locator(`[data-testid=running-row][data-call-id="${callId}"]`).waitFor({ state: 'detached' });
    const recent = page.locator(`[data-testid=recent-row][data-call-id="${callId}"]`);
    await recent.waitFor();
    assert.match(await recent.getByTestId('call-outcome').textContent(), /cancel/i);
    await screenshot(page, '06-cancelled-recent');
    const rec = await endRecord(daemon, callId);
    assert.equal(rec.error_kind, 'cancelled', JSON.stringify(rec));
  });
});

test('6b tree: a tool call made from inside a plugin shows under the call that made it', { timeout: 90000 }, async () => {
  const config = BYPASS('[plugins.hostile.limits]\ntimeout-ms = 60000\n[plugins.tool_caller]\ncall-tools = ["sleep"]\n');
  await scenario(config, async ({ daemon, page, client }) => {
    await signIn(page, daemon);
    await page.getByTestId('tab-calls').click();
    await page.getByTestId('running-empty').waitFor();
    const c = await client();
    const call = callTool(c, 'call_tool', { name: 'sleep', input: JSON.stringify({ ms: 1500 }) });
    const parent = page.getByTestId('running-row').filter({ has: page.getByTestId('call-tool').getByText('call_tool') });
    const child = page.getByTestId('running-row').filter({ has: page.getByTestId('call-tool').getByText('sleep') });
    await child.waitFor();
    const parentId = await parent.getAttribute('data-call-id');
    // The nested call is listed right after its parent, one level in.
    const rows = page.getByTestId('running-row');
    assert.equal(await rows.nth(0).getAttribute('data-call-id'), parentId);
    assert.equal(await rows.nth(1).getByTestId('call-tool').getAttribute('data-depth'), '1');
    assert.equal(await parent.getByTestId('call-tool').getAttribute('data-depth'), '0');
    await screenshot(page, '06b-running-tree');
    const result = await call;
    assert.match(text(result), /^ok: slept \d+ ms$/, text(result));
    // Once ended, the tree stays in the recent table: the parent first (it ended last).
    const recentParent = page.locator(`[data-testid=recent-row][data-call-id="${parentId}"]`);
    await recentParent.waitFor();
    const recent = page.getByTestId('recent-row');
    assert.equal(await recent.nth(0).getAttribute('data-call-id'), parentId);
    assert.equal(await recent.nth(1).getByTestId('call-tool').getAttribute('data-depth'), '1');
    assert.match(await recent.nth(1).getByTestId('call-tool').textContent(), /sleep/);
    const nested = (await endRecord(daemon, await recent.nth(1).getAttribute('data-call-id')));
    assert.equal(nested.parent_id, parentId, JSON.stringify(nested));
    await screenshot(page, '06b-recent-tree');
  }, [join(root, 'target/fixtures/tool_caller.wasm')]);
});

test('7 audit: filters by tool and by outcome find the right records; the export has the same', { timeout: 90000 }, async () => {
  await scenario(BYPASS('[plugins.hostile.limits]\ntimeout-ms = 10000\n'), async ({ daemon, page, context, client }) => {
    const c = await client();
    for (const t of ['audit one', 'audit two']) assert.ok(!(await callTool(c, 'echo', { text: t })).isError);
    assert.equal((await callTool(c, 'fail', { message: 'audit fail' })).isError, true);
    assert.ok(!(await callTool(c, 'echo_input', { x: 1 })).isError);
    const ends = await until(() => {
      const e = auditLines(daemon).filter((r) => r.event === 'end');
      return e.length >= 4 && e;
    }, 'four end records');
    const echoIds = ends.filter((r) => r.tool === 'echo').map((r) => r.call_id).sort();
    const failIds = ends.filter((r) => r.tool === 'fail').map((r) => r.call_id).sort();
    assert.equal(echoIds.length, 2);
    assert.equal(failIds.length, 1);

    await signIn(page, daemon);
    await page.getByTestId('tab-audit').click();
    await shownOrError(page, page.getByTestId('audit-row'), 'audit-error', 'the newest records on opening the Audit tab');
    await until(async () => (await page.getByTestId('audit-row').count()) >= 4, 'the newest records on opening the Audit tab');
    await screenshot(page, '07-audit-all');

    // One row per call: its end record (docs/console.md: a Record is the audit line as written; the
    // page's outcomes include `unfinished`, a begin line without its end, so calls are paired).
    const rowIds = async () => (await page.getByTestId('audit-row').evaluateAll((rows) => rows.map((r) => r.dataset.callId))).sort();
    const search = async (filters) => {
      await page.getByTestId('audit-reset').click();
      for (const [k, v] of Object.entries(filters)) await page.getByTestId(`filter-${k}`).fill(v);
      const res = page.waitForResponse((r) => r.url().includes('/console/api/audit?'));
      await page.getByTestId('audit-search').click();
      assert.equal((await res).status(), 200);
      await page.getByTestId('audit-search').and(page.locator(':enabled')).waitFor();
    };

    await search({ tool: 'echo' });
    assert.deepEqual(await rowIds(), echoIds, 'tool=echo');
    for (const t of await page.getByTestId('audit-tool').allTextContents()) assert.equal(t.trim(), 'echo');
    await screenshot(page, '07-audit-tool-echo');

    // The export link of the same filters: JSONL with the same records as the log.
    const href = await page.getByTestId('audit-export').getAttribute('href');
    assert.match(href, /^\/console\/api\/audit\/export\?/);
    const exp = await context.request.get(daemon.origin + href);
    assert.equal(exp.status(), 200, await exp.text());
    assert.match(exp.headers()['content-type'] || '', /application\/x-ndjson/);
    const exported = (await exp.text()).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
    assert.deepEqual(exported.map((r) => r.call_id).sort(), echoIds, 'the export has the page\'s records');
    for (const r of exported) {
      assert.deepEqual(r, ends.find((e) => e.call_id === r.call_id), 'an exported record is the log\'s line');
    }

    await search({ outcome: 'error' });
    assert.deepEqual(await rowIds(), failIds, 'outcome=error');
    assert.match(await page.getByTestId('audit-outcome').first().textContent(), /error|fail/i);
    await screenshot(page, '07-audit-outcome-error');

    await search({ tool: 'echo', outcome: 'error' });
    await page.getByTestId('audit-empty').waitFor();
    assert.equal(await page.getByTestId('audit-row').count(), 0);
  });
});

test('8 health: a tool whose breaker opened shows open with its reason', { timeout: 90000 }, async () => {
  const config = BYPASS('[breaker]\nfailures = 1\nkinds = ["timeout"]\ncool-down-s = 600\n[plugins.hostile.limits]\ntimeout-ms = 300\n');
  await scenario(config, async ({ daemon, page, context, client }) => {
    const c = await client();
    const r = await callTool(c, 'spin', {});
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.equal(r._meta?.['toolhost/errorKind'], 'timeout', JSON.stringify(r));
    // The back end's side first: the breaker is open, so the next call is refused as suspended.
    const again = await callTool(c, 'spin', {});
    assert.equal(again._meta?.['toolhost/errorKind'], 'suspended', JSON.stringify(again));
    await signIn(page, daemon);
    await page.getByTestId('tab-health').click();
    const spin = page.locator('[data-testid=health-tool][data-tool="spin"]');
    await shownOrError(page, spin, 'health-error', 'the spin tool on Health');
    const api = await (await context.request.get(`${daemon.origin}/console/api/health`)).json();
    const said = JSON.stringify((api.tools || []).find((t) => t.name === 'spin')?.breaker);
    assert.equal((await spin.getByTestId('breaker-state').textContent()).trim(), 'open', `the page's breaker state; the API's breaker: ${said}`);
    assert.match(await spin.getByTestId('breaker-reason').textContent(), /\w/, 'a reason');
    const echo = page.locator('[data-testid=health-tool][data-tool="echo"]');
    assert.equal((await echo.getByTestId('breaker-state').textContent()).trim(), 'closed');
    await screenshot(page, '08-health-breaker-open');
  });
});

const PAYLOAD = '<script>window.__pwned=1</script> <img src=x onerror="window.__pwned=2"> javascript:alert(1)';
const DESCRIPTION = '<img src=x onerror="window.__pwned=3"><script>window.__pwned=4</script><a href="javascript:alert(2)">click</a>';

/** Nothing from the payloads became markup: no handler attributes, no foreign scripts, no images, no javascript: links. */
async function assertInert(page) {
  const dom = await page.evaluate(() => ({
    pwned: typeof window.__pwned,
    handlers: [...document.querySelectorAll('*')].flatMap((el) => [...el.attributes].filter((a) => /^on/i.test(a.name)).map((a) => `${el.tagName} ${a.name}`)),
    scripts: [...document.scripts].filter((s) => !s.src || !s.src.startsWith(`${location.origin}/console/`)).map((s) => s.outerHTML),
    images: [...document.querySelectorAll('img')].map((i) => i.outerHTML),
    jsLinks: [...document.querySelectorAll('[href]')].filter((a) => /^\s*javascript:/i.test(a.getAttribute('href'))).map((a) => a.outerHTML),
  }));
  assert.deepEqual(dom, { pwned: 'undefined', handlers: [], scripts: [], images: [], jsLinks: [] });
}

test('9a attacks: markup in an input and in a tool description is shown as text, never run', { timeout: 90000 }, async () => {
  const config = `${ASK_ECHO}\n[plugins.echo.tools.echo]\ndescription = '${DESCRIPTION}'\npermission-subject = "/text"\n`;
  await scenario(config, async ({ daemon, page, problems, client }) => {
    await signIn(page, daemon);
    const c = await client();
    const { tools } = await c.listTools();
    assert.equal(tools.find((t) => t.name === 'echo')?.description, DESCRIPTION, 'the override applies');

    const call = callTool(c, 'echo', { text: PAYLOAD });
    const q = await questionFor(page, 'echo', 'window.__pwned=1');
    assert.equal(JSON.parse(await q.getByTestId('question-input').textContent()).text, PAYLOAD, 'the input as literal text');
    assert.equal(await q.getByTestId('question-subject-pointer').textContent(), '/text');
    assert.match(await q.getByTestId('question-subject-value').textContent(), /<script>window\.__pwned=1<\/script> <img src=x onerror=/, 'the permission subject as literal text');
    await assertInert(page);
    await screenshot(page, '09a-question-with-markup');
    const callId = await callIdOf(q);
    await q.getByTestId('approve').click();
    assert.equal((await call).content[0].text, PAYLOAD);

    // The record of the call (its output is the payload) on Live calls.
    await page.getByTestId('tab-calls').click();
    const recent = page.locator(`[data-testid=recent-row][data-call-id="${callId}"]`);
    await recent.click();
    await page.getByTestId('record-json').waitFor();
    await screenshot(page, '09a-record-panel');
    await assertInert(page);

    await page.getByTestId('tab-audit').click();
    await page.getByTestId('audit-form').waitFor();
    await page.waitForTimeout(500);
    await assertInert(page);

    // The description on Health (as the tool name's title).
    await page.getByTestId('tab-health').click();
    const echo = page.locator('[data-testid=health-tool][data-tool="echo"]');
    await shownOrError(page, echo, 'health-error', 'the echo tool on Health');
    assert.equal(await echo.getByTestId('health-tool-name').getAttribute('title'), DESCRIPTION);
    await screenshot(page, '09a-health-description');
    await assertInert(page);
    assert.deepEqual(problems.dialogs, [], 'no dialog');
  });
});

const ASK_ECHO_LONG = `
[permissions]
ask = ["echo"]
[server]
approval-timeout-ms = 60000
`;

/** A page on another 127.0.0.1 port that posts an approval with the operator's cookie, twice over. */
async function attackerServer(target, sha) {
  const body = JSON.stringify({ answer: 'approve', input_sha256: sha });
  const html = `<!doctype html><html><body>
<form id="f" method="POST" action="${target}" enctype="text/plain">
<input type="hidden" name='{"answer":"approve","input_sha256":"${sha}","x":"' value='"}'>
</form>
<form id="g" method="POST" action="${target}" target="sink">
<input type="hidden" name="answer" value="approve"><input type="hidden" name="input_sha256" value="${sha}">
</form>
<iframe name="sink"></iframe>
<script>
window.__fetch = fetch(${JSON.stringify(target)}, { method: 'POST', credentials: 'include', mode: 'no-cors',
  headers: { 'Content-Type': 'text/plain' }, body: ${JSON.stringify(body)} })
  .then(() => 'sent', (e) => 'failed: ' + e.message)
  .then((r) => { document.title = r; document.getElementById('g').submit(); setTimeout(() => document.getElementById('f').submit(), 300); });
</script></body></html>`;
  const server = createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html' });
    res.end(html);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => { server.close(r); server.closeAllConnections(); }) };
}

test('9b-c attacks: a cross-site form post and fetch leave the question waiting; a replayed answer is 409', { timeout: 90000 }, async () => {
  await scenario(ASK_ECHO_LONG, async ({ daemon, page, context, client }) => {
    await signIn(page, daemon);
    const c = await client();
    let settled = false;
    const call = callTool(c, 'echo', { text: 'csrf target' });
    call.finally(() => { settled = true; }).catch(() => {});
    const q = await questionFor(page, 'echo', 'csrf target');
    const id = await q.getAttribute('data-question-id');
    const sha = (await q.getByTestId('question-input-sha256').textContent()).trim();
    const target = `${daemon.origin}/console/api/approvals/${encodeURIComponent(id)}`;

    const evil = await attackerServer(target, sha);
    const attack = await context.newPage();
    try {
      const posts = [];
      const cookies = [];
      attack.on('request', async (r) => {
        if (r.url() === target) cookies.push(/toolhost_console=/.test((await r.allHeaders()).cookie || ''));
      });
      attack.on('response', (r) => { if (r.url() === target) posts.push(r.status()); });
      await attack.goto(evil.url);
      await until(() => posts.length >= 2, 'the attacker\'s form posts to reach the daemon', 10000);
      await attack.waitForTimeout(1000);
      await screenshot(attack, '09b-attacker-page');
      // Same site (127.0.0.1, another port): the browser sends the SameSite=Strict cookie, so only
      // the CSRF token and Origin checks stand in the way.
      assert.ok(cookies.some(Boolean), `the operator's cookie went with a cross-site post (${cookies})`);
      for (const s of posts) assert.ok(s >= 400, `a cross-site post was refused (statuses ${posts})`);
    } finally {
      await attack.close();
      await evil.close();
    }
    const waiting = await (await context.request.get(`${daemon.origin}/console/api/approvals`)).json();
    assert.ok(waiting.approvals.some((x) => String(x.id) === id), 'the question still waits after the cross-site posts');
    assert.equal(settled, false, 'the call still waits');
    await q.waitFor();
    await screenshot(page, '09b-still-waiting');

    // (c) the page's own request, with the session's CSRF token, then replayed.
    const { csrf } = await session(context, daemon);
    const answer = () => context.request.post(target, {
      headers: { 'X-CSRF-Token': csrf, Origin: daemon.origin, 'Content-Type': 'application/json' },
      data: { answer: 'approve', input_sha256: sha },
    });
    const first = await answer();
    assert.equal(first.status(), 200, await first.text());
    assert.deepEqual(await first.json(), { answered: true });
    const replay = await answer();
    assert.equal(replay.status(), 409, await replay.text());
    const r = await call;
    assert.ok(!r.isError && r.content[0].text === 'csrf target', JSON.stringify(r));
  });
});

test('9d CSP: the header is on /console/ and the console runs without a violation', { timeout: 90000 }, async () => {
  await scenario(BYPASS(), async ({ daemon, page, context, problems, client }) => {
    const c = await client();
    await callTool(c, 'echo', { text: 'for the charts' });
    const res = await context.request.get(`${daemon.origin}/console/`);
    const csp = res.headers()['content-security-policy'] || '';
    assert.match(csp, /default-src 'none'/, csp);
    assert.match(csp, /script-src 'self'/, csp);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/, csp);
    assert.equal(res.headers()['x-frame-options'], 'DENY');

    await signIn(page, daemon);
    for (const tab of ['approvals', 'calls', 'audit', 'health']) {
      await page.getByTestId(`tab-${tab}`).click();
      // On Health, the charts (uPlot) when the stats route answers.
      if (tab === 'health') await page.getByTestId('tool-charts').or(page.getByTestId('charts-error')).or(page.getByTestId('health-error')).first().waitFor();
      await page.waitForTimeout(1000);
      await screenshot(page, `09d-${tab}`);
    }
    const violations = await page.evaluate(() => window.__cspViolations);
    assert.deepEqual(violations, [], 'securitypolicyviolation events');
    assert.deepEqual(problems.csp.filter((m) => m.startsWith(daemon.origin)), [], 'CSP console messages');
    assert.deepEqual(problems.pageErrors, [], 'page errors');
  });
});

const FLEET_ASK = `
[permissions]
ask = ["echo"]
[server]
state-key-env = "TOOLHOST_STATE_KEY"
approval-timeout-ms = 30000
[console]
approvals = "both"
`;

/** A batch call of echo with `text`, straight to one daemon. */
function batchTo(origin, text) {
  const message = { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'echo', input: { text } }] };
  return fetch(`${origin}/v1/tool-calls?format=anthropic`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(message),
  }).then(async (r) => {
    const answer = JSON.parse(await r.text());
    const blocks = Array.isArray(answer) ? answer : answer.content || [];
    return blocks.find((b) => b.type === 'tool_result');
  });
}

test('10 fleet: behind a balancer the page answers every daemon\'s questions, and signing out ends the session on all', { timeout: 180000 }, async (t) => {
  const fleet = await startFleet(FLEET_ASK);
  if (!fleet) {
    t.skip('no PostgreSQL or HAProxy (scripts/services.sh)');
    return;
  }
  let browser;
  try {
    browser = await openBrowser();
    const { page, context } = browser;
    // The link daemon 0 printed, opened through the balancer: any daemon may spend it.
    const link = new URL(fleet.daemons[0].signinLink);
    const res = await page.goto(`${fleet.origin}${link.pathname}${link.search}`);
    assert.equal(res && res.status(), 200);
    await page.getByTestId('operator').waitFor();
    await page.getByTestId('live-status').getByText('live', { exact: true }).waitFor();
    // A question asked on each daemon shows on the page, whichever daemon serves it, and its
    // approval reaches the call where it waits.
    for (const [i, d] of fleet.daemons.entries()) {
      const call = batchTo(d.origin, `from daemon ${i}`);
      const q = await questionFor(page, 'echo', `from daemon ${i}`);
      await q.getByTestId('approve').click();
      const result = await call;
      assert.ok(result && !result.is_error, JSON.stringify(result));
      assert.match(JSON.stringify(result.content), new RegExp(`from daemon ${i}`));
    }
    const denied = batchTo(fleet.daemons[1].origin, 'to be denied');
    await (await questionFor(page, 'echo', 'to be denied')).getByTestId('deny').click();
    const result = await denied;
    assert.equal(result.is_error, true, JSON.stringify(result));
    await screenshot(page, '10-fleet');
    // Signing out through the balancer ends the session on every daemon.
    const cookie = (await context.cookies()).find((c) => c.name === 'toolhost_console');
    assert.ok(cookie, 'a session cookie');
    await page.getByTestId('signout').click();
    for (const d of fleet.daemons) {
      await until(async () => {
        const r = await fetch(`${d.origin}/console/api/session`, { headers: { Cookie: `toolhost_console=${cookie.value}` } });
        return r.status === 401;
      }, `the session to end on daemon ${d.port}`, 10000);
    }
  } catch (e) {
    if (browser) await screenshot(browser.page, `FAILED-10-fleet-${Date.now()}`).catch(() => {});
    e.message += fleet.daemons.map((d, i) => `\n--- daemon ${i} stderr ---\n${d.stderr()}`).join('');
    throw e;
  } finally {
    if (browser) await browser.close();
    await fleet.stop();
  }
});
