// BrowserGym's action text → calls (specs/browsergym.md §4.2), non-strict mode: every
// `name(literal, …, key=literal)` in the text is a call, everything between them (prose, code
// fences, `#` comments) is ignored. Literals are Python's: strings with escapes, ints, floats,
// True/False/None, lists, tuples and dicts with string keys.

/** A Python value; `PyFloat` keeps `1.0` apart from `1` so errors print it as Python would. */
export type PyValue = string | number | boolean | null | PyFloat | PyValue[] | { tuple: PyValue[] } | { dict: [string, PyValue][] };
export class PyFloat {
  constructor(readonly value: number) {}
}

export interface ActionCall {
  name: string;
  args: PyValue[];
  kwargs: [string, PyValue][];
}

class NoMatch extends Error {}

const IDENT = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER = /[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/y;

class Parser {
  pos = 0;
  constructor(readonly text: string) {}

  private ws(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos]!)) this.pos++;
  }

  private eat(ch: string): boolean {
    this.ws();
    if (this.text[this.pos] === ch) {
      this.pos++;
      return true;
    }
    return false;
  }

  private ident(): string | null {
    this.ws();
    IDENT.lastIndex = this.pos;
    const m = IDENT.exec(this.text);
    if (!m) return null;
    this.pos += m[0].length;
    return m[0];
  }

  call(): ActionCall {
    const name = this.ident();
    if (name === null || !this.eat('(')) throw new NoMatch();
    const args: PyValue[] = [];
    const kwargs: [string, PyValue][] = [];
    while (!this.eat(')')) {
      const save = this.pos;
      const key = this.ident();
      if (key !== null && this.eat('=') && this.text[this.pos] !== '=') {
        kwargs.push([key, this.literal()]);
      } else {
        if (kwargs.length > 0) throw new NoMatch(); // positional after keyword
        this.pos = save;
        args.push(this.literal());
      }
      if (this.eat(')')) break;
      if (!this.eat(',')) throw new NoMatch();
    }
    return { name, args, kwargs };
  }

  private sequence(close: string): PyValue[] {
    const items: PyValue[] = [];
    while (!this.eat(close)) {
      items.push(this.literal());
      if (this.eat(close)) break;
      if (!this.eat(',')) throw new NoMatch();
    }
    return items;
  }

  literal(): PyValue {
    this.ws();
    const ch = this.text[this.pos];
    if (ch === "'" || ch === '"') return this.string();
    if (ch === '[') {
      this.pos++;
      return this.sequence(']');
    }
    if (ch === '(') {
      this.pos++;
      return { tuple: this.sequence(')') };
    }
    if (ch === '{') {
      this.pos++;
      const entries: [string, PyValue][] = [];
      while (!this.eat('}')) {
        this.ws();
        const q = this.text[this.pos];
        if (q !== "'" && q !== '"') throw new NoMatch();
        const key = this.string();
        if (!this.eat(':')) throw new NoMatch();
        entries.push([key, this.literal()]);
        if (this.eat('}')) break;
        if (!this.eat(',')) throw new NoMatch();
      }
      return { dict: entries };
    }
    NUMBER.lastIndex = this.pos;
    const num = NUMBER.exec(this.text);
    if (num) {
      this.pos += num[0].length;
      const isFloat = /[.eE]/.test(num[0]);
      return isFloat ? new PyFloat(Number(num[0])) : Number(num[0]);
    }
    const word = this.ident();
    if (word === 'True') return true;
    if (word === 'False') return false;
    if (word === 'None') return null;
    throw new NoMatch();
  }

  private string(): string {
    const quote = this.text[this.pos]!;
    const triple = this.text.startsWith(quote.repeat(3), this.pos);
    const end = triple ? quote.repeat(3) : quote;
    this.pos += end.length;
    let out = '';
    for (;;) {
      if (this.pos >= this.text.length) throw new NoMatch();
      if (this.text.startsWith(end, this.pos)) {
        this.pos += end.length;
        return out;
      }
      const ch = this.text[this.pos++]!;
      if (ch === '\n' && !triple) throw new NoMatch();
      if (ch !== '\\') {
        out += ch;
        continue;
      }
      out += this.escape();
    }
  }

  private escape(): string {
    const ch = this.text[this.pos++];
    if (ch === undefined) throw new NoMatch();
    const simple: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r', b: '\b', a: '\x07', f: '\f', v: '\v', '\n': '' };
    if (ch in simple) return simple[ch]!;
    const hex = (len: number) => {
      const digits = this.text.slice(this.pos, this.pos + len);
      if (!new RegExp(`^[0-9a-fA-F]{${len}}$`).test(digits)) throw new NoMatch();
      this.pos += len;
      return String.fromCodePoint(parseInt(digits, 16));
    };
    if (ch === 'x') return hex(2);
    if (ch === 'u') return hex(4);
    if (ch === 'U') return hex(8);
    if (/[0-7]/.test(ch)) {
      let digits = ch;
      while (digits.length < 3 && /[0-7]/.test(this.text[this.pos] ?? '')) digits += this.text[this.pos++];
      return String.fromCodePoint(parseInt(digits, 8));
    }
    return '\\' + ch; // Python keeps unknown escapes as written
  }
}

/** Every call found in `text`, in order; [] when nothing parses (BrowserGym: "Received an empty action."). */
export function parseActions(text: string): ActionCall[] {
  const calls: ActionCall[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i]!;
    if (ch === '#') {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl + 1;
      continue;
    }
    if (/[A-Za-z_]/.test(ch) && (i === 0 || !/[A-Za-z0-9_]/.test(text[i - 1]!))) {
      const parser = new Parser(text);
      parser.pos = i;
      try {
        calls.push(parser.call());
        i = parser.pos;
        continue;
      } catch (err) {
        if (!(err instanceof NoMatch)) throw err;
      }
    }
    i++;
  }
  return calls;
}

/** Python's repr of a parsed value (for error texts such as `expected a string, got 13`). */
export function pyValueRepr(value: PyValue): string {
  if (value === null) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return String(value);
  if (value instanceof PyFloat) return Number.isInteger(value.value) ? `${value.value}.0` : String(value.value);
  if (typeof value === 'string') {
    const quote = value.includes("'") && !value.includes('"') ? '"' : "'";
    return quote + value.replaceAll('\\', '\\\\').replaceAll(quote, '\\' + quote).replaceAll('\n', '\\n').replaceAll('\t', '\\t').replaceAll('\r', '\\r') + quote;
  }
  if (Array.isArray(value)) return `[${value.map(pyValueRepr).join(', ')}]`;
  if ('tuple' in value) return value.tuple.length === 1 ? `(${pyValueRepr(value.tuple[0]!)},)` : `(${value.tuple.map(pyValueRepr).join(', ')})`;
  return `{${value.dict.map(([k, v]) => `${pyValueRepr(k)}: ${pyValueRepr(v)}`).join(', ')}}`;
}

/** A parsed value as plain JS (floats unwrapped, tuples as arrays). */
export function toJs(value: PyValue): unknown {
  if (value instanceof PyFloat) return value.value;
  if (Array.isArray(value)) return value.map(toJs);
  if (value !== null && typeof value === 'object') {
    if ('tuple' in value) return value.tuple.map(toJs);
    return Object.fromEntries(value.dict.map(([k, v]) => [k, toJs(v)]));
  }
  return value;
}
