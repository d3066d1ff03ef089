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
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/;
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

class Scanner {
  private readonly chars: string[];
  constructor(text: string) {
    this.chars = Array.from(text);
  }

  document(): void {
    let pos = this.skip(0);
    pos = this.value(pos);
    pos = this.skip(pos);
    if (pos !== this.chars.length) throw new PyJsonError('Extra data', pos);
  }

  private skip(pos: number): number {
    while (pos < this.chars.length && WHITESPACE.has(this.chars[pos])) pos++;
    return pos;
  }

  private value(pos: number): number {
    const c = this.chars[pos];
    if (c === '"') return this.string(pos);
    if (c === '{') return this.object(pos + 1);
    if (c === '[') return this.array(pos + 1);
    for (const literal of ['null', 'true', 'false', 'NaN', 'Infinity', '-Infinity']) {
      if (this.chars.slice(pos, pos + literal.length).join('') === literal) return pos + literal.length;
    }
    const number = NUMBER.exec(this.chars.slice(pos, pos + 400).join(''));
    if (number) return pos + Array.from(number[0]).length;
    throw new PyJsonError('Expecting value', pos);
  }

  private string(start: number): number {
    let pos = start + 1;
    for (;;) {
      if (pos >= this.chars.length) throw new PyJsonError('Unterminated string starting at', start);
      const c = this.chars[pos];
      if (c === '"') return pos + 1;
      if (c < ' ') throw new PyJsonError('Invalid control character at', pos);
      if (c === '\\') {
        const esc = this.chars[pos + 1];
        if (esc === undefined) throw new PyJsonError('Unterminated string starting at', start);
        if (esc === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(this.chars.slice(pos + 2, pos + 6).join(''))) {
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
    if (this.chars[pos] === '}') return pos + 1;
    for (;;) {
      if (this.chars[pos] !== '"') throw new PyJsonError('Expecting property name enclosed in double quotes', pos);
      pos = this.skip(this.string(pos));
      if (this.chars[pos] !== ':') throw new PyJsonError("Expecting ':' delimiter", pos);
      pos = this.skip(this.value(this.skip(pos + 1)));
      if (this.chars[pos] === '}') return pos + 1;
      if (this.chars[pos] !== ',') throw new PyJsonError("Expecting ',' delimiter", pos);
      pos = this.skip(pos + 1);
    }
  }

  private array(pos: number): number {
    pos = this.skip(pos);
    if (this.chars[pos] === ']') return pos + 1;
    for (;;) {
      pos = this.skip(this.value(pos));
      if (this.chars[pos] === ']') return pos + 1;
      if (this.chars[pos] !== ',') throw new PyJsonError("Expecting ',' delimiter", pos);
      pos = this.skip(pos + 1);
    }
  }
}

/** Python's error for `text`: bare message and code-point position; null when it would parse (or we cannot tell). */
export function pythonJsonErrorAt(text: string): { msg: string; pos: number } | null {
  try {
    new Scanner(text).document();
    return null;
  } catch (err) {
    // Not ours: a stack overflow on absurd nesting. The caller falls back to V8's message.
    if (!(err instanceof PyJsonError)) return null;
    return { msg: err.msg, pos: err.pos };
  }
}

/** `<msg>: line L column C (char P)`, as `str(JSONDecodeError)`; null when pythonJsonErrorAt is. */
export function pythonJsonError(text: string): string | null {
  const err = pythonJsonErrorAt(text);
  if (!err) return null;
  const before = Array.from(text).slice(0, err.pos).join('');
  const line = before.split('\n').length;
  const column = err.pos - (before.lastIndexOf('\n') === -1 ? -1 : Array.from(before.slice(0, before.lastIndexOf('\n'))).length);
  return `${err.msg}: line ${line} column ${column} (char ${err.pos})`;
}
