// Fails (exit 1) when src/ contains a way to turn text into markup or code, or a link/source built
// from data. Tool names, inputs, outputs and audit fields are attacker-controlled: the console
// renders them as text children only. Run by build.sh before bundling.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const SRC = new URL('./src/', import.meta.url).pathname;

const SINKS = [
  [/\binnerHTML\b/, 'innerHTML'],
  [/\bouterHTML\b/, 'outerHTML'],
  [/dangerouslySetInnerHTML/, 'dangerouslySetInnerHTML'],
  [/\binsertAdjacentHTML\b/, 'insertAdjacentHTML'],
  [/\bdocument\s*\.\s*write(ln)?\b/, 'document.write'],
  [/\beval\s*\(/, 'eval('],
  [/\bnew\s+Function\b/, 'new Function'],
  [/(^|[^.\w])Function\s*\(/, 'Function('],
  [/\bcreateContextualFragment\b/, 'createContextualFragment'],
  [/\bDOMParser\b/, 'DOMParser'],
  [/\bsrcdoc\b/i, 'srcdoc'],
  [/javascript:/i, 'javascript: URL'],
  [/\bset(Timeout|Interval)\s*\(\s*['"`]/, 'string timer'],
  [/\.setAttribute\s*\(\s*['"`](on|href|src|style)/i, 'setAttribute of an event, link or style'],
  [/\bwindow\s*\.\s*open\s*\(/, 'window.open'],
  [/\.\s*(href|src|action|srcset)\s*=(?!=)/, 'assignment of a link or source'],
  [/<(iframe|object|embed|frame|base)\b/i, 'embedding element'],
  [/\blocation\s*(\.\s*href\s*)?=(?!=)(?!\s*['"`]#)/, 'navigation to a computed URL'],
];

// href/src/action/formaction in JSX may only be a string literal, or one of these expressions,
// each built from constants and URLSearchParams (see the file named).
const ALLOWED_URL_EXPRESSIONS = new Set([
  '`#/${t.route}`', // main.jsx: the tab routes, from the constant TABS
  'exportHref(apiFilters(form))', // audit.jsx: /console/api/audit/export?<URLSearchParams>
]);
const URL_ATTR = /\b(href|src|action|formAction|formaction|xlinkHref|poster)\s*=\s*\{/g;

function expressionAt(text, open) {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    else if (text[i] === '}' && --depth === 0) return text.slice(open + 1, i).trim();
  }
  return text.slice(open + 1);
}

function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : /\.(jsx?|mjs|html)$/.test(e.name) ? [join(dir, e.name)] : [],
  );
}

const problems = [];
for (const file of files(SRC)) {
  const text = readFileSync(file, 'utf8');
  const rel = file.slice(SRC.length);
  text.split('\n').forEach((line, i) => {
    for (const [pattern, name] of SINKS) {
      if (pattern.test(line)) problems.push(`${rel}:${i + 1}: ${name}: ${line.trim()}`);
    }
  });
  if (rel.endsWith('.html')) {
    if (/<script(?![^>]*\bsrc=)[^>]*>/i.test(text)) problems.push(`${rel}: inline <script> (CSP forbids it)`);
    if (/<style\b|\sstyle\s*=|\son\w+\s*=/i.test(text)) problems.push(`${rel}: inline style or handler (CSP forbids it)`);
    continue;
  }
  for (const m of text.matchAll(URL_ATTR)) {
    const expr = expressionAt(text, m.index + m[0].length - 1);
    if (!ALLOWED_URL_EXPRESSIONS.has(expr)) {
      const line = text.slice(0, m.index).split('\n').length;
      problems.push(`${rel}:${line}: ${m[1]}={${expr}} is not an allowed URL expression`);
    }
  }
}

if (problems.length) {
  console.error('check.mjs: unsafe sinks in src/:\n  ' + problems.join('\n  '));
  process.exit(1);
}
console.log(`check.mjs: ${files(SRC).length} files in src/, no unsafe sinks`);
