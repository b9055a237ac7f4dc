// Running one script: the model's code as the body of an async function that gets `tools` (one
// async function per tool the call may reach) and a `console` whose output is kept, bounded.
// Nothing here touches the host: `specs` and `call` are handed in (the contract's `tools`
// interface in app.js, plain functions in the tests).

/** Console output kept per script; the rest is counted. */
export const MAX_CONSOLE_BYTES = 16 << 10;

/** A tool call the host answered with a failure: its kind (`denied`, `timeout`, ...) and message. */
export class ToolError extends Error {
  constructor(tool, kind, message) {
    super(message);
    this.name = 'ToolError';
    this.tool = tool;
    this.kind = kind;
  }
}

/** The script is wrong before it ran: it does not parse. */
export class ScriptError extends Error {}

/**
 * `tools` for a script: one async function per spec, named after the tool. Each call goes to
 * `call(name, inputJson)`, which returns `{ content, structured }` or throws `{ kind, message }`
 * (as the host's `result` arrives in JavaScript). A tool's result is its structured output when it
 * has one, else its text.
 */
export function bind(specs, call, counter = { calls: 0 }) {
  const tools = Object.create(null);
  for (const { name } of specs) {
    tools[name] = async (input = {}) => {
      counter.calls += 1;
      let out;
      try {
        out = call(name, JSON.stringify(input ?? {}));
      } catch (e) {
        const f = e?.payload ?? e;
        throw new ToolError(name, f?.kind ?? 'internal', f?.message ?? String(f));
      }
      if (out.structured != null) return JSON.parse(out.structured);
      return out.content;
    };
  }
  return Object.freeze(tools);
}

/** A console whose lines are kept, at most `MAX_CONSOLE_BYTES` of them. */
export function capture() {
  const lines = [];
  let bytes = 0;
  let dropped = 0;
  const show = (v) => (typeof v === 'string' ? v : safeJson(v));
  const write = (level) => (...args) => {
    const line = (level === 'log' ? '' : `[${level}] `) + args.map(show).join(' ');
    if (bytes + line.length > MAX_CONSOLE_BYTES) {
      dropped += 1;
      return;
    }
    bytes += line.length + 1;
    lines.push(line);
  };
  const api = Object.freeze({
    log: write('log'),
    info: write('info'),
    warn: write('warn'),
    error: write('error'),
    debug: write('debug'),
  });
  return {
    api,
    lines: () => (dropped ? [...lines, `... ${dropped} more line(s) dropped`] : lines),
  };
}

const AsyncFunction = (async () => {}).constructor;

/**
 * Run `code` with `tools`: resolves to `{ value, console }`; rejects with a `ScriptError` when
 * the code does not parse, or with what the script threw (its console attached as `.console`).
 */
export async function run(code, tools) {
  let fn;
  try {
    fn = new AsyncFunction('tools', 'console', `"use strict";\n${code}`);
  } catch (e) {
    throw new ScriptError(`the script does not parse: ${e?.message ?? e}`);
  }
  const out = capture();
  globalThis.console = out.api;
  try {
    const value = await fn(tools, out.api);
    return { value, console: out.lines() };
  } catch (e) {
    e = e instanceof Error ? e : new Error(safeJson(e));
    e.console = out.lines();
    throw e;
  }
}

/** `value` as JSON text, or its string form when it is not JSON (a cycle, a BigInt). */
export function safeJson(value) {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
