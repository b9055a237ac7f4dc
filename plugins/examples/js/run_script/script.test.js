// Unit tests of the script runner and the declarations, run by node directly: `node --test`.
import assert from 'node:assert/strict';
import test from 'node:test';
import { MAX_CONSOLE_BYTES, ScriptError, ToolError, bind, run } from './script.js';
import { declarations, typeOf } from './signatures.js';

const specs = [{ name: 'double' }, { name: 'words' }, { name: 'refused' }];
const host = (name, input) => {
  const v = JSON.parse(input);
  if (name === 'double') return { content: String(v.n * 2), structured: JSON.stringify({ n: v.n * 2 }) };
  if (name === 'words') return { content: v.text.split(' ').length.toString(), structured: undefined };
  // As jco hands an import's `err` to JavaScript: thrown, with the value as `payload`.
  throw Object.assign(new Error('refused'), { payload: { kind: 'denied', message: 'Permission denied: no' } });
};

test('a script calls tools, awaits them and returns a value with its console', async () => {
  const counter = { calls: 0 };
  const tools = bind(specs, host, counter);
  const done = await run(
    "const a = await tools.double({ n: 4 }); console.log('a is', a); return [a.n, await tools.words({ text: 'x y z' })];",
    tools,
  );
  assert.deepEqual(done.value, [8, '3']);
  assert.deepEqual(done.console, ['a is {"n":8}']);
  assert.equal(counter.calls, 2);
});

test('a refused call rejects with its kind, and a script may catch it', async () => {
  const tools = bind(specs, host);
  await assert.rejects(run('await tools.refused({})', tools), (e) => e instanceof ToolError && e.kind === 'denied');
  const done = await run("try { await tools.refused({}) } catch (e) { return e.kind }", tools);
  assert.equal(done.value, 'denied');
});

test('only the bound tools exist, and the table cannot be changed', async () => {
  const tools = bind(specs, host);
  await assert.rejects(run('return await tools.secret({})', tools), /not a function/);
  await assert.rejects(run("tools.double = () => 1", tools), TypeError);
});

test('code that does not parse is a ScriptError; a throw keeps the console', async () => {
  await assert.rejects(run('return (', bind([], host)), ScriptError);
  await assert.rejects(run("console.log('before'); throw new Error('boom')", bind([], host)), (e) => {
    assert.deepEqual(e.console, ['before']);
    return e.message === 'boom';
  });
});

test('console output is bounded', async () => {
  const done = await run(`for (let i = 0; i < 100000; i++) console.log('line ' + i)`, bind([], host));
  const kept = done.console.slice(0, -1).join('\n').length;
  assert.ok(kept <= MAX_CONSOLE_BYTES, `${kept}`);
  assert.match(done.console.at(-1), /more line\(s\) dropped/);
});

test('schemas become TypeScript declarations', () => {
  const schema = {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'A file.' },
      limit: { type: 'integer' },
      mode: { enum: ['a', 'b'] },
      'odd-key': { type: 'array', items: { type: 'boolean' } },
    },
    required: ['path'],
  };
  assert.equal(
    typeOf(schema),
    '{\n  path: string; // A file.\n  limit?: number;\n  mode?: "a" | "b";\n  "odd-key"?: Array<boolean>;\n}',
  );
  const text = declarations([{ name: 'read-file', description: 'Reads.', inputSchema: JSON.stringify(schema) }]);
  assert.match(text, /^\/\*\* Reads\. \*\/\ntools\["read-file"\]\(input: \{/);
  assert.match(text, /Promise<string>;$/);
});
