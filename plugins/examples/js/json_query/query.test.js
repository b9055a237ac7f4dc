// Unit tests of the query language, run by node directly: `node --test` (no build needed).
import assert from 'node:assert/strict';
import test from 'node:test';
import { QueryError, parse, run } from './query.js';

const doc = { items: [{ name: 'a', n: 1 }, { name: 'b', n: 2 }], 'odd key': true, empty: null };
const q = (query) => run(parse(query), doc);

test('selects paths, elements, slices and every element', () => {
  assert.deepEqual(q('.'), [doc]);
  assert.deepEqual(q('.items[1].name'), ['b']);
  assert.deepEqual(q('.items[-1].n'), [2]);
  assert.deepEqual(q('.items[].name'), ['a', 'b']);
  assert.deepEqual(q('.items[0:1]'), [[{ name: 'a', n: 1 }]]);
  assert.deepEqual(q('."odd key"'), [true]);
  assert.deepEqual(q('.["odd key"]'), [true]);
  assert.deepEqual(q('.missing.deeper'), [null]);
});

test('pipes into builtins', () => {
  assert.deepEqual(q('.items | length'), [2]);
  assert.deepEqual(q('. | keys'), [['empty', 'items', 'odd key']]);
  assert.deepEqual(q('.items[] | type'), ['object', 'object']);
});

test('explains queries that do not parse or do not fit', () => {
  assert.throws(() => parse('items'), QueryError);
  assert.throws(() => parse('.items[x]'), /inside \[\.\.\.\]/);
  assert.throws(() => parse('."open'), /unterminated/);
  assert.throws(() => q('.items.name'), /take member "name" of a value of type array/);
  assert.throws(() => q('.items[0].n[]'), /iterate over a value of type number/);
});
