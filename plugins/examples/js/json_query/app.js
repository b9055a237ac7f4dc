// The `json_query` example plugin (JavaScript): a jq-like path over a JSON file in a granted directory.
//
// Built with jco's QuickJS backend (componentize-qjs) against the world `plugin-fs` in wit/world.wit: the
// contract's world plus wasi:filesystem/preopens, because the engine offers no file API of its own. WIT
// `u64` values are plain numbers.
// The plugin does no path confinement of its own: it opens the path relative to the directory the host
// preopens for it (a granted directory is mounted at "."), and the host refuses anything outside it.
//
// Errors: `throw { tag: 'invalid-input', val }` or `throw { tag: 'failed', val }` become the call's
// `tool-error`; any other exception is a bug, and the host reports it as a trap.

import { log, progress } from 'toolhost:plugin/host@0.1.0';
import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';
import { QueryError, parse, run } from './query.js';

/** Larger files are refused: the whole document is held in memory. */
const MAX_FILE_BYTES = 32 << 20;
/** Bytes asked for per read. */
const READ_CHUNK = 1 << 20;

const INPUT_SCHEMA = {
  type: 'object',
  properties: {
    path: {
      type: 'string',
      minLength: 1,
      description: 'The JSON file, relative to the granted directory.',
    },
    query: {
      type: 'string',
      default: '.',
      description:
        'A jq-like path: . (everything), .name, ."a key" or .["a key"], [0], [-1], [] (every element), ' +
        '[1:3] (a slice), and `| length`, `| keys`, `| type`. Example: .items[].name',
    },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: 1000,
      default: 100,
      description: 'Return at most this many results.',
    },
  },
  required: ['path'],
  additionalProperties: false,
};

const OUTPUT_SCHEMA = {
  type: 'object',
  properties: {
    results: { type: 'array', description: 'The values the query selected, at most `limit`.' },
    count: { type: 'integer', description: 'How many values the query selected in all.' },
    truncated: { type: 'boolean' },
  },
  required: ['results', 'count', 'truncated'],
  additionalProperties: false,
};

const invalid = (val) => ({ tag: 'invalid-input', val });
const failed = (val) => ({ tag: 'failed', val });

/** WASI error codes, as a reader would put them. */
const WHY = {
  'no-entry': 'No such file or directory',
  'not-permitted': 'outside the granted directory',
  access: 'permission denied',
  'is-directory': 'it is a directory',
  'not-directory': 'a parent is not a directory',
  loop: 'too many symbolic links',
  'name-too-long': 'the name is too long',
};

function ioFailed(verb, path, e) {
  // A WASI call's error arrives as an exception whose `payload` is the error code (`no-entry`).
  const code = e && typeof e === 'object' && 'payload' in e ? e.payload : String(e);
  return failed(`cannot ${verb} '${path}': ${WHY[code] ?? code}`);
}

function grantedDir() {
  const dirs = getDirectories();
  const dot = dirs.find(([, name]) => name === '.') ?? dirs[0];
  if (!dot) {
    throw failed(
      'this plugin has no granted directory; grant one in toolhost.toml: ' +
        '[plugins.json_query] dirs = [{ host = "./data" }]',
    );
  }
  return dot[0];
}

function readFile(path) {
  if (path.startsWith('/')) {
    throw failed(`cannot read '${path}': absolute paths are not available; paths are relative to the granted directory`);
  }
  let file;
  try {
    file = grantedDir().openAt({ symlinkFollow: true }, path, {}, { read: true });
  } catch (e) {
    throw ioFailed('open', path, e);
  }
  const chunks = [];
  let size = 0;
  try {
    if (file.getType() === 'directory') throw { payload: 'is-directory' };
    for (;;) {
      const [bytes, eof] = file.read(READ_CHUNK, size);
      size += bytes.length;
      if (size > MAX_FILE_BYTES) throw failed(`cannot read '${path}': it is larger than ${MAX_FILE_BYTES >> 20} MiB`);
      chunks.push(bytes);
      if (eof || bytes.length === 0) break;
    }
  } catch (e) {
    throw e && e.tag ? e : ioFailed('read', path, e);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  chunks.length = 0;
  try {
    return utf8(all);
  } catch (e) {
    if (e instanceof URIError) throw failed(`cannot read '${path}': it is not UTF-8 text, as JSON must be`);
    throw e;
  }
}

/** Bytes decoded at a time: the decoding's own strings stay a few times this, whatever the file. */
const DECODE_SLICE = 1 << 16;

/** UTF-8 bytes as text, without a leading byte order mark; throws a URIError on bytes that are not
 * UTF-8. QuickJS has no TextDecoder, but its own C code does the work: `escape` percent-encodes a
 * string of one character per byte, and `decodeURIComponent` reads the percent-encoded bytes as
 * UTF-8, strictly (no overlong forms, no surrogates). Each slice ends before a sequence's first byte. */
function utf8(bytes) {
  const parts = [];
  for (let at = 0; at < bytes.length; ) {
    let end = Math.min(at + DECODE_SLICE, bytes.length);
    // Back to the start of a sequence (at most three continuation bytes; more is not UTF-8 anyway).
    for (let back = 0; end < bytes.length && back < 3 && (bytes[end] & 0xc0) === 0x80; back++) end--;
    let binary = '';
    for (let from = at; from < end; from += 8192) {
      binary += String.fromCharCode.apply(null, bytes.subarray(from, Math.min(from + 8192, end)));
    }
    parts.push(decodeURIComponent(escape(binary)));
    at = end;
  }
  const text = parts.join('');
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

function jsonQuery(input) {
  const { path, query = '.', limit = 100 } = JSON.parse(input);
  let stages;
  try {
    stages = parse(query);
  } catch (e) {
    throw e instanceof QueryError ? invalid(e.message) : e;
  }
  const text = readFile(path);
  progress(1, 3, `read ${text.length} characters`);
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw failed(`cannot parse '${path}' as JSON: ${e.message}`);
  }
  progress(2, 3, 'parsed');
  let results;
  try {
    results = run(stages, doc);
  } catch (e) {
    throw e instanceof QueryError ? invalid(`query ${JSON.stringify(query)} on '${path}': ${e.message}`) : e;
  }
  progress(3, 3, `${results.length} results`);
  log('debug', `json_query: ${path} ${query}: ${results.length} results`);
  const kept = results.slice(0, limit);
  let content =
    kept.length === 1 ? JSON.stringify(kept[0], null, 2) : kept.map((v) => JSON.stringify(v)).join('\n');
  if (results.length === 0) content = `no results for ${query} in '${path}'`;
  if (results.length > kept.length) {
    content += `\n[${results.length - kept.length} more results not shown; raise 'limit' (at most 1000) or narrow the query]`;
  }
  const structured = { results: kept, count: results.length, truncated: results.length > kept.length };
  return { content, structured: JSON.stringify(structured) };
}

export const tool = {
  describe() {
    return [
      {
        name: 'json_query',
        title: 'Query a JSON file',
        description:
          'Select values from a JSON file with a jq-like path (e.g. .items[].name, .config["log level"], ' +
          '.list | length). Missing members give null; taking a member of a non-object is an error that ' +
          'names the type found.',
        inputSchema: JSON.stringify(INPUT_SCHEMA),
        outputSchema: JSON.stringify(OUTPUT_SCHEMA),
        hints: { readOnly: true, idempotent: true },
        permissionSubject: '/path',
      },
    ];
  },

  call(name, input) {
    if (name !== 'json_query') throw invalid(`unknown tool '${name}'; this plugin provides only 'json_query'`);
    return jsonQuery(input);
  },
};
