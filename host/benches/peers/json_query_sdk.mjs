// json_query as a server on the official TypeScript MCP SDK over stdio: what a user would write instead
// of the JavaScript plugin. The benchmark's `peers` part runs it against toolhost serving
// plugins/json_query.wasm. It runs the plugin's own query language (plugins/examples/js/json_query/
// query.js) and shapes the result as the plugin's app.js does; files are read with node's fs, relative
// to the working directory (the plugin reads them relative to its granted directory).
//
//   node json_query_sdk.mjs PLUGIN_DIR

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const { QueryError, parse, run } = await import(pathToFileURL(join(process.argv[2], 'query.js')).href);

const MAX_FILE_BYTES = 32 << 20;

const failed = (text) => ({ content: [{ type: 'text', text }], isError: true });

function jsonQuery({ path, query = '.', limit = 100 }) {
  let stages;
  try {
    stages = parse(query);
  } catch (e) {
    if (e instanceof QueryError) return failed(e.message);
    throw e;
  }
  if (path.startsWith('/')) return failed(`cannot read '${path}': absolute paths are not available`);
  let text;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > MAX_FILE_BYTES) return failed(`cannot read '${path}': it is larger than 32 MiB`);
    text = new TextDecoder().decode(bytes);
  } catch (e) {
    return failed(`cannot read '${path}': ${e.code ?? e.message}`);
  }
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    return failed(`cannot parse '${path}' as JSON: ${e.message}`);
  }
  let results;
  try {
    results = run(stages, doc);
  } catch (e) {
    if (e instanceof QueryError) return failed(`query ${JSON.stringify(query)} on '${path}': ${e.message}`);
    throw e;
  }
  const kept = results.slice(0, limit);
  let content =
    kept.length === 1 ? JSON.stringify(kept[0], null, 2) : kept.map((v) => JSON.stringify(v)).join('\n');
  if (results.length === 0) content = `no results for ${query} in '${path}'`;
  if (results.length > kept.length) {
    content += `\n[${results.length - kept.length} more results not shown; raise 'limit' (at most 1000) or narrow the query]`;
  }
  const structured = { results: kept, count: results.length, truncated: results.length > kept.length };
  return { content: [{ type: 'text', text: content }], structuredContent: structured };
}

const server = new McpServer({ name: 'json_query', version: '0.1.0' });
server.registerTool(
  'json_query',
  {
    title: 'Query a JSON file',
    description: 'Select values from a JSON file with a jq-like path (e.g. .items[].name).',
    inputSchema: {
      path: z.string().min(1).describe('The JSON file, relative to the working directory.'),
      query: z.string().default('.').describe('A jq-like path.'),
      limit: z.number().int().min(1).max(1000).default(100).describe('Return at most this many results.'),
    },
    outputSchema: { results: z.array(z.unknown()), count: z.number().int(), truncated: z.boolean() },
    annotations: { readOnlyHint: true, idempotentHint: true },
  },
  async (args) => jsonQuery(args),
);
await server.connect(new StdioServerTransport());
