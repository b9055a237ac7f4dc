// A small jq-like path language, pure JavaScript with no imports, so that node can test it directly.
//
//   .                 the whole document
//   .name  ."a key"   an object member (null when absent)       .["a key"] works too
//   [2]  [-1]         an array element (null when out of range)
//   []                every element of an array, or every value of an object
//   [1:3]  [:2]       a slice of an array or a string
//   a | b             run b on every result of a
//   length  keys  type   builtins, usable after a pipe
//
// A wrong query throws QueryError (the caller turns it into `invalid-input`).

/** A query that cannot be parsed, or that does not fit the document. */
export class QueryError extends Error {}

const BUILTINS = ['length', 'keys', 'type'];

/** Parse a query into stages (separated by `|`), each a list of steps. */
export function parse(query) {
  const stages = [];
  for (const part of splitPipes(query)) {
    const text = part.trim();
    if (BUILTINS.includes(text)) {
      stages.push([{ op: 'builtin', name: text }]);
    } else {
      stages.push(parsePath(text, query));
    }
  }
  return stages;
}

function splitPipes(query) {
  const parts = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < query.length; i++) {
    const c = query[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (c === '|' && !quoted) {
      parts.push(query.slice(start, i));
      start = i + 1;
    }
  }
  if (quoted) throw new QueryError(`unterminated string in query ${JSON.stringify(query)}`);
  parts.push(query.slice(start));
  return parts;
}

function parsePath(text, query) {
  const fail = (i, what) => {
    throw new QueryError(
      `cannot parse query ${JSON.stringify(query)}: ${what} at ${JSON.stringify(text.slice(i) || 'the end')}; ` +
        'write paths like .items[0].name, .items[].id, .["a key"], .list[1:3], or . | length',
    );
  };
  if (!text.startsWith('.')) fail(0, text ? 'expected "." or one of length, keys, type' : 'empty stage');
  const steps = [];
  let i = 1;
  if (text.length > 1 && /[A-Za-z_"]/.test(text[1])) i = parseMember(text, 1, steps, fail);
  while (i < text.length) {
    const c = text[i];
    if (c === '.' && i + 1 < text.length && /[A-Za-z_"]/.test(text[i + 1])) {
      i = parseMember(text, i + 1, steps, fail);
    } else if (c === '[') {
      const end = text.indexOf(']', i);
      if (end < 0) fail(i, 'missing "]"');
      const inner = text.slice(i + 1, end).trim();
      if (inner === '') steps.push({ op: 'each' });
      else if (/^-?\d+$/.test(inner)) steps.push({ op: 'index', index: Number(inner) });
      else if (/^(-?\d+)?\s*:\s*(-?\d+)?$/.test(inner)) {
        const [from, to] = inner.split(':').map((s) => (s.trim() === '' ? undefined : Number(s)));
        steps.push({ op: 'slice', from, to });
      } else if (inner.startsWith('"')) {
        steps.push({ op: 'member', key: parseString(inner, 0, fail).value });
      } else fail(i, 'expected an index, a slice or a quoted key inside [...]');
      i = end + 1;
    } else {
      fail(i, 'unexpected character');
    }
  }
  return steps;
}

function parseMember(text, i, steps, fail) {
  if (text[i] === '"') {
    const { value, next } = parseString(text, i, fail);
    steps.push({ op: 'member', key: value });
    return next;
  }
  const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
  steps.push({ op: 'member', key: m[0] });
  return i + m[0].length;
}

function parseString(text, i, fail) {
  let j = i + 1;
  while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
  if (j >= text.length) fail(i, 'unterminated string');
  try {
    return { value: JSON.parse(text.slice(i, j + 1)), next: j + 1 };
  } catch {
    return fail(i, 'bad string escape');
  }
}

/** The JSON type name of a value, as jq says it. */
export function typeOf(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v === 'object' ? 'object' : typeof v;
}

/** Run parsed stages over a document; returns the list of results. */
export function run(stages, doc) {
  let values = [doc];
  for (const stage of stages) {
    for (const step of stage) values = values.flatMap((v) => apply(step, v));
  }
  return values;
}

function apply(step, v) {
  const t = typeOf(v);
  const wrong = (what) => {
    throw new QueryError(`cannot ${what} a value of type ${t} (${preview(v)})`);
  };
  switch (step.op) {
    case 'member':
      if (v === null) return [null];
      if (t !== 'object') wrong(`take member ${JSON.stringify(step.key)} of`);
      return [Object.hasOwn(v, step.key) ? v[step.key] : null];
    case 'index': {
      if (v === null) return [null];
      if (t !== 'array') wrong(`take element [${step.index}] of`);
      const k = step.index < 0 ? v.length + step.index : step.index;
      return [k >= 0 && k < v.length ? v[k] : null];
    }
    case 'slice':
      if (v === null) return [null];
      if (t !== 'array' && t !== 'string') wrong('slice');
      return [v.slice(step.from ?? 0, step.to ?? v.length)];
    case 'each':
      if (t === 'array') return v;
      if (t === 'object') return Object.values(v);
      return wrong('iterate over');
    case 'builtin':
      return [builtin(step.name, v, t, wrong)];
    default:
      throw new Error(`unknown step ${step.op}`);
  }
}

function builtin(name, v, t, wrong) {
  if (name === 'type') return t;
  if (name === 'keys') {
    if (t === 'object') return Object.keys(v).sort();
    if (t === 'array') return v.map((_, i) => i);
    return wrong('list the keys of');
  }
  // length
  if (t === 'array' || t === 'string') return v.length;
  if (t === 'object') return Object.keys(v).length;
  if (t === 'null') return 0;
  if (t === 'number') return Math.abs(v);
  return wrong('take the length of');
}

function preview(v) {
  const s = JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}
