// Python's `str()` / `repr()` of tool results (grpo-semantics.md §6). TRL builds each tool message as
// `str(result)`, so a dict result reaches the model as `{'error': 'Game over.'}`, not as JSON. JS numbers
// carry no int/float tag: integral values print as Python ints (`1`), others as Python floats.
// A leaf module like src/random.ts: the rollout's tool messages (src/rl) and BrowserGym's
// accessibility-tree text (env-server) both print Python values, and neither may import the other.

// Python's str.isprintable() is false for these categories (plus everything below 0x20 and 0x7f).
const NON_PRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]/u;

function escapeNonPrintable(ch: string): string {
  const c = ch.codePointAt(0)!;
  if (c < 0x100) return '\\x' + c.toString(16).padStart(2, '0');
  if (c < 0x10000) return '\\u' + c.toString(16).padStart(4, '0');
  return '\\U' + c.toString(16).padStart(8, '0');
}

/** repr(str): single quotes unless the text has `'` and no `"`. */
export function pyReprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of s) {
    if (ch === quote || ch === '\\') out += '\\' + ch;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (ch !== ' ' && NON_PRINTABLE.test(ch)) out += escapeNonPrintable(ch);
    else out += ch;
  }
  return out + quote;
}

/** repr(float): shortest round-trip digits, exponent form below 1e-4 and from 1e16 on. */
function pyReprFloat(n: number): string {
  if (Number.isNaN(n)) return 'nan';
  if (!Number.isFinite(n)) return n > 0 ? 'inf' : '-inf';
  const [mantissa, expText] = n.toExponential().split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= 16) {
    const sign = exp < 0 ? '-' : '+';
    return `${mantissa}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  const fixed = String(n);
  return fixed.includes('.') ? fixed : fixed + '.0';
}

function pyReprNumber(n: number): string {
  if (Number.isInteger(n)) return BigInt(n).toString();
  return pyReprFloat(n);
}

export function pyRepr(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return pyReprNumber(value);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return pyReprString(value);
  if (Array.isArray(value)) return '[' + value.map(pyRepr).join(', ') + ']';
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).map(([k, v]) => `${pyReprString(k)}: ${pyRepr(v)}`);
    return '{' + entries.join(', ') + '}';
  }
  throw new Error(`pyRepr: a ${typeof value} has no Python equivalent`);
}

/** str(x): strings as they are, everything else as its repr. */
export function pyStr(value: unknown): string {
  return typeof value === 'string' ? value : pyRepr(value);
}
