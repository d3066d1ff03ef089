// The message Python's `json.loads` gives for text it cannot parse, e.g.
// `Expecting value: line 1 column 1 (char 0)`. OpenEnv puts that text in INVALID_JSON frames
// (specs/openenv-protocol.md §3.3, §4c), so webgrpo reproduces it instead of V8's wording.
// Only called after JSON.parse has failed; positions count code points, as Python's str does.

class PyJsonError extends Error {
  constructor(
    readonly msg: string,
    readonly pos: number,
  ) {
    super(msg);
  }
}

const WHITESPACE = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

// Scans UTF-16 units in place (no copy of a 16 MiB frame into an array of characters, which cost
// seconds and hundreds of MiB) and converts the error position to code points at the end.
class Scanner {
  constructor(private readonly text: string) {}

  document(): void {
    let pos = this.skip(0);
    pos = this.value(pos);
    pos = this.skip(pos);
    if (pos !== this.text.length) throw new PyJsonError('Extra data', pos);
  }

  private skip(pos: number): number {
    while (pos < this.text.length && WHITESPACE.has(this.text[pos])) pos++;
    return pos;
  }

  private value(pos: number): number {
    const c = this.text[pos];
    if (c === '"') return this.string(pos);
    if (c === '{') return this.object(pos + 1);
    if (c === '[') return this.array(pos + 1);
    for (const literal of ['null', 'true', 'false', 'NaN', 'Infinity', '-Infinity']) {
      if (this.text.startsWith(literal, pos)) return pos + literal.length;
    }
    NUMBER.lastIndex = pos;
    const number = NUMBER.exec(this.text);
    if (number) return pos + number[0].length;
    throw new PyJsonError('Expecting value', pos);
  }

  private string(start: number): number {
    let pos = start + 1;
    for (;;) {
      if (pos >= this.text.length) throw new PyJsonError('Unterminated string starting at', start);
      const c = this.text[pos];
      if (c === '"') return pos + 1;
      if (c < ' ') throw new PyJsonError('Invalid control character at', pos);
      if (c === '\\') {
        const esc = this.text[pos + 1];
        if (esc === undefined) throw new PyJsonError('Unterminated string starting at', start);
        if (esc === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(pos + 2, pos + 6))) {
            throw new PyJsonError('Invalid \\uXXXX escape', pos + 1);
          }
          pos += 6;
          continue;
        }
        if (!ESCAPES.has(esc)) throw new PyJsonError('Invalid \\escape', pos);
        pos += 2;
        continue;
      }
      pos++;
    }
  }

  private object(pos: number): number {
    pos = this.skip(pos);
    if (this.text[pos] === '}') return pos + 1;
    for (;;) {
      if (this.text[pos] !== '"') throw new PyJsonError('Expecting property name enclosed in double quotes', pos);
      pos = this.skip(this.string(pos));
      if (this.text[pos] !== ':') throw new PyJsonError("Expecting ':' delimiter", pos);
      pos = this.skip(this.value(this.skip(pos + 1)));
      if (this.text[pos] === '}') return pos + 1;
      if (this.text[pos] !== ',') throw new PyJsonError("Expecting ',' delimiter", pos);
      pos = this.skip(pos + 1);
    }
  }

  private array(pos: number): number {
    pos = this.skip(pos);
    if (this.text[pos] === ']') return pos + 1;
    for (;;) {
      pos = this.skip(this.value(pos));
      if (this.text[pos] === ']') return pos + 1;
      if (this.text[pos] !== ',') throw new PyJsonError("Expecting ',' delimiter", pos);
      pos = this.skip(pos + 1);
    }
  }
}

/** Code points in `text[from, to)` (UTF-16 indices): a surrogate pair counts once, as in Python. */
function codePoints(text: string, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff && i > from && text.charCodeAt(i - 1) >= 0xd800 && text.charCodeAt(i - 1) <= 0xdbff) continue;
    n++;
  }
  return n;
}

/** The UTF-16 position of the error, before conversion to code points. */
function scanError(text: string): { msg: string; unit: number } | null {
  try {
    new Scanner(text).document();
    return null;
  } catch (err) {
    // Not ours: a stack overflow on absurd nesting. The caller falls back to V8's message.
    if (!(err instanceof PyJsonError)) return null;
    return { msg: err.msg, unit: err.pos };
  }
}

/** Python's error for `text`: bare message and code-point position; null when it would parse (or we cannot tell). */
export function pythonJsonErrorAt(text: string): { msg: string; pos: number } | null {
  const err = scanError(text);
  return err ? { msg: err.msg, pos: codePoints(text, 0, err.unit) } : null;
}

/** `<msg>: line L column C (char P)`, as `str(JSONDecodeError)`; null when pythonJsonErrorAt is. */
export function pythonJsonError(text: string): string | null {
  const err = scanError(text);
  if (!err) return null;
  const lineStart = text.lastIndexOf('\n', err.unit - 1) + 1;
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < err.unit; i = text.indexOf('\n', i + 1)) line++;
  const column = codePoints(text, lineStart, err.unit) + 1;
  return `${err.msg}: line ${line} column ${column} (char ${codePoints(text, 0, err.unit)})`;
}
