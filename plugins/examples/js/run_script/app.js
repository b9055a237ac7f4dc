// The `run_script` example plugin (JavaScript): a model's script that calls the host's tools and
// returns only what matters, inside the sandbox.
//
// Built with jco + componentize-js (StarlingMonkey) against the world `runner` in wit/world.wit:
// the contract plus `toolhost:plugin/tools`. The plugin has no file or network grant of its own;
// every tool the script calls runs through the host's whole pipeline as the script's caller (its
// profile, validation, the gate, a fresh sandbox, an audit record under this call), within this
// call's deadline and the host's budget of nested calls. The runner's own fuel, memory and output
// limits bound the script itself.

import { list, call as callTool } from 'toolhost:plugin/tools@0.1.0';
import { declarations } from './signatures.js';
import { ScriptError, ToolError, bind, run, safeJson } from './script.js';

/** Longest script accepted, in characters. */
const MAX_CODE = 100_000;

const INPUT_SCHEMA = {
  type: 'object',
  properties: {
    code: {
      type: 'string',
      maxLength: MAX_CODE,
      description:
        'JavaScript: the body of an async function. `tools.NAME(input)` calls the tool NAME and ' +
        "resolves to its structured output (or its text); it rejects with a ToolError (`.kind`, " +
        '`.message`) when the call fails or is denied. `console.log` output is returned too. ' +
        '`return` the value you want back. Example: ' +
        "const r = await tools.echo({ text: 'hi' }); return r;",
    },
    declarations: {
      type: 'boolean',
      default: false,
      description:
        'Return the TypeScript declarations of every `tools` function available (instead of running code).',
    },
  },
  additionalProperties: false,
};

const SPEC = {
  name: 'run_script',
  title: 'Run a script that calls tools',
  description:
    "Run a short JavaScript program that calls this host's tools and returns only the result you " +
    'need: fewer round trips, and intermediate results stay out of the conversation. Every tool ' +
    'call inside it is checked and recorded like a direct call. Ask for `declarations: true` first ' +
    'to see the functions and their input types.',
  inputSchema: JSON.stringify(INPUT_SCHEMA),
  outputSchema: undefined,
  hints: { readOnly: false, destructive: false, idempotent: false, openWorld: false },
  permissionSubject: undefined,
};

const invalid = (val) => ({ tag: 'invalid-input', val });
const failed = (val) => ({ tag: 'failed', val });

export const tool = {
  describe() {
    return [SPEC];
  },

  async call(name, inputJson) {
    if (name !== SPEC.name) throw invalid(`unknown tool '${name}'`);
    const input = JSON.parse(inputJson);
    const specs = list();
    if (input.declarations) {
      const text = declarations(specs);
      return { content: text || 'No tools are available to scripts.', structured: undefined };
    }
    if (typeof input.code !== 'string' || input.code.trim() === '') {
      throw invalid('give `code` (a script to run) or `declarations: true`');
    }
    const counter = { calls: 0 };
    const tools = bind(specs, callTool, counter);
    let done;
    try {
      done = await run(input.code, tools);
    } catch (e) {
      if (e instanceof ScriptError) throw invalid(e.message);
      const where = e instanceof ToolError ? ` (from tools.${e.tool}, ${e.kind})` : '';
      const console = e.console?.length ? `\nconsole:\n${e.console.join('\n')}` : '';
      throw failed(`the script threw${where}: ${e.message ?? e}${console}`);
    }
    const value = done.value === undefined ? null : done.value;
    const text = typeof value === 'string' ? value : safeJson(value);
    const console = done.console.length ? `\n\nconsole:\n${done.console.join('\n')}` : '';
    return {
      content: text + console,
      structured: safeJson({ result: value, console: done.console, calls: counter.calls }),
    };
  },
};
