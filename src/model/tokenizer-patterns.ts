// Refuses tokenizer.json regexes whose matching time can explode. A Split pre-tokenizer (or a
// Replace normalizer/decoder) runs its pattern on every prompt with JavaScript's backtracking RegExp,
// synchronously: `(\s*\S*)*$x` takes exponential time in the input's length, so `render` and `train`
// hang at 100% CPU with no signal handler able to run. Such patterns repeat a sub-pattern that is
// itself repeated (star height above 1), which gives the engine exponentially many ways to split the
// same input; the pre-tokenizer patterns of real tokenizers (GPT-2's, Qwen's, Llama 3's) have star
// height 1. The check reads the pattern as written in tokenizer.json, before the tokenizer is built.

/** Longest pattern accepted (Qwen's pre-tokenizer pattern has 120 characters). */
export const MAX_PATTERN_CHARS = 4096;

// A group opener with its header: (?: (?= (?! (?<= (?<! (?<name> (?P<name> (?flags: — or inline
// flags (?i) that open nothing.
const GROUP_HEADER = /\(\?(?:[:=!]|<[=!]|P?<[^>]*>|[a-zA-Z-]*:)|\(/y;
const INLINE_FLAGS = /\(\?[a-zA-Z-]*\)/y;
// A counted repetition {n}, {n,}, {n,m}; anything else starting with '{' is a literal.
const COUNTED = /\{(\d+)(,(\d*))?\}/y;

function matchAt(re: RegExp, text: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(text);
}

/**
 * Star height of a regex source: how deeply repetitions nest (`a*` is 1, `(a*b)*` is 2). A
 * repetition is `*`, `+` or a count above one; `?` does not repeat. Escapes (`\p{L}`) and character
 * classes are single atoms.
 */
export function starHeight(source: string): number {
  const groups: number[] = [0]; // the deepest repetition inside each open group
  let atom: number | null = null; // height of the atom a following quantifier would repeat
  let i = 0;
  const close = (height: number) => {
    groups[groups.length - 1] = Math.max(groups[groups.length - 1]!, height);
  };
  while (i < source.length) {
    const c = source[i]!;
    if (c === '\\') {
      // \p{…}, \P{…}, \u{…}, \k<…>: the braces belong to the escape.
      const braced = matchAt(/\\[pPu]\{[^}]*\}|\\k<[^>]*>/y, source, i);
      i += braced ? braced[0].length : 2;
      atom = 0;
    } else if (c === '[') {
      let depth = 0;
      do {
        if (source[i] === '\\') i++;
        else if (source[i] === '[') depth++;
        else if (source[i] === ']') depth--;
        i++;
      } while (depth > 0 && i < source.length);
      atom = 0;
    } else if (c === '(') {
      const flags = matchAt(INLINE_FLAGS, source, i);
      if (flags) {
        i += flags[0].length;
        continue;
      }
      i += matchAt(GROUP_HEADER, source, i)![0].length;
      groups.push(0);
      atom = null;
    } else if (c === ')') {
      const inner = groups.length > 1 ? groups.pop()! : 0;
      close(inner);
      atom = inner;
      i++;
    } else if (c === '*' || c === '+' || c === '?' || (c === '{' && matchAt(COUNTED, source, i))) {
      let repeats = c !== '?';
      if (c === '{') {
        const [whole, min, comma, max] = matchAt(COUNTED, source, i)!;
        repeats = comma === undefined ? Number(min) > 1 : max === '' || Number(max) > 1;
        i += whole.length;
      } else i++;
      if (source[i] === '?' || source[i] === '+') i++; // lazy or possessive: the same repetition
      if (atom !== null && repeats) close(atom + 1);
      atom = null;
    } else {
      atom = c === '|' ? null : 0;
      i++;
    }
  }
  return groups[0]!;
}

/** Every `pattern: {"Regex": …}` under a tokenizer.json section, with its path. */
function regexPatterns(value: unknown, path: string, out: [string, string][]): [string, string][] {
  if (Array.isArray(value)) value.forEach((v, i) => regexPatterns(v, `${path}[${i}]`, out));
  else if (value !== null && typeof value === 'object') {
    for (const [key, v] of Object.entries(value)) {
      if (key === 'pattern' && v !== null && typeof v === 'object' && typeof (v as { Regex?: unknown }).Regex === 'string') out.push([`${path}.pattern.Regex`, (v as { Regex: string }).Regex]);
      else regexPatterns(v, `${path}.${key}`, out);
    }
  }
  return out;
}

/** Throws naming `file`, the pattern's place and the pattern when one could backtrack catastrophically. */
export function assertSafeTokenizerPatterns(tokenizerJson: Record<string, unknown>, file = 'tokenizer.json'): void {
  for (const section of ['normalizer', 'pre_tokenizer', 'decoder', 'post_processor']) {
    for (const [path, pattern] of regexPatterns(tokenizerJson[section], section, [])) {
      const shown = pattern.length > 200 ? `${JSON.stringify(pattern.slice(0, 200))}…` : JSON.stringify(pattern);
      if (pattern.length > MAX_PATTERN_CHARS) throw new Error(`${file}: ${path} is ${pattern.length} characters long, over webgrpo's limit of ${MAX_PATTERN_CHARS}`);
      const height = starHeight(pattern);
      if (height > 1) {
        throw new Error(
          `${file}: ${path} ${shown} repeats a repeated sub-pattern (star height ${height}, limit 1): ` +
            'JavaScript regexes can take exponential time to match it (catastrophic backtracking), so webgrpo refuses it',
        );
      }
    }
  }
}
