// End-to-end tests of the operator's console (docs/console.md) in a real browser: Debian's
// Chromium driven by playwright-core, against the real daemon with the echo and hostile plugins.
// Each scenario starts its own daemon and browser. Run by tests/console/run.sh (`node --test`).
//
//   TOOLHOST_BIN=/path/to/toolhost node --test --test-concurrency=1 console.test.mjs

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  auditLines, callTool, endRecord, mcpClient, openBrowser, questionFor, screenshot, session, signIn,
  startDaemon, text, until,
} from './harness.mjs';

const ASK_ECHO = `
[permissions]
ask = ["echo"]
[server]
approval-timeout-ms = 6000
[console]
approvals = "both"
`;

/** Runs `body` with a fresh daemon (config) and browser; always stops both. */
async function scenario(config, body) {
  const daemon = await startDaemon(config);
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
    e.message += `\n--- daemon stderr ---\n${daemon.stderr()}`;
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
  await scenario(ASK_ECHO, async ({ daemon, page, client }) => {
    await signIn(page, daemon);
    const c = await client();
    const input = { text: 'approve me please', repeat: 2 };
    let settled = false;
    const call = callTool(c, 'echo', input).finally(() => { settled = true; });

    const q = await questionFor(page, 'echo', 'approve me please');
    assert.deepEqual(JSON.parse(await q.getByTestId('question-input').textContent()), input, 'the full input');
    assert.match((await q.getByTestId('question-reason').textContent()).trim(), /\S/, 'a reason');
    assert.match(await q.getByTestId('question-reason').textContent(), /echo|ask|rule|mode/i);
    assert.equal((await q.getByTestId('question-caller').textContent()).trim(), 'local operator');
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
