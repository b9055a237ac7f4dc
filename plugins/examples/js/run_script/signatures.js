// TypeScript declarations of the script's `tools` functions, from each tool's JSON Schema: what a
// model reads to write a script that type-checks in its head. Deterministic; depth and size bounded.

const MAX_DEPTH = 4;

const ident = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const key = (k) => (ident.test(k) ? k : JSON.stringify(k));
const indent = (depth) => '  '.repeat(depth);

/** The TypeScript type a JSON Schema describes (a subset: what tool schemas use). */
export function typeOf(schema, depth = 0) {
  if (schema === true || schema == null || typeof schema !== 'object') return 'unknown';
  if (depth > MAX_DEPTH) return 'unknown';
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.enum)) return schema.enum.map((v) => JSON.stringify(v)).join(' | ') || 'never';
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union)) return union.map((s) => typeOf(s, depth + 1)).join(' | ') || 'never';
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) return types.map((t) => typeOf({ ...schema, type: t }, depth)).join(' | ');
  switch (types[0]) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `Array<${typeOf(schema.items, depth + 1)}>`;
    case 'object':
    case undefined: {
      const props = schema.properties;
      if (!props || typeof props !== 'object') return types[0] ? 'Record<string, unknown>' : 'unknown';
      const required = new Set(Array.isArray(schema.required) ? schema.required : []);
      const lines = Object.keys(props).map((k) => {
        const p = props[k];
        const doc = p && typeof p.description === 'string' ? ` // ${oneLine(p.description)}` : '';
        return `${indent(depth + 1)}${key(k)}${required.has(k) ? '' : '?'}: ${typeOf(p, depth + 1)};${doc}`;
      });
      return lines.length ? `{\n${lines.join('\n')}\n${indent(depth)}}` : 'Record<string, never>';
    }
    default:
      return 'unknown';
  }
}

const oneLine = (s) => s.replace(/\s+/g, ' ').trim().slice(0, 200);

/** One declaration per tool: `tools.NAME(input): Promise<OUTPUT>`. */
export function declarations(specs) {
  return specs
    .map((s) => {
      const input = parse(s.inputSchema);
      const output = s.outputSchema ? typeOf(parse(s.outputSchema)) : 'string';
      const name = ident.test(s.name) ? `tools.${s.name}` : `tools[${JSON.stringify(s.name)}]`;
      return `/** ${oneLine(s.description)} */\n${name}(input: ${typeOf(input)}): Promise<${output}>;`;
    })
    .join('\n\n');
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
