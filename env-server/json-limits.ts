// Client JSON goes through one gate before anything recursive touches it. V8's JSON.parse copes with
// any nesting, but everything after it (validation, Python-style repr, JSON.stringify of an error's
// `input`) recurses, and 10,000 levels of `[[[…]]]` overflow the stack. The depth check here is a
// single loop over the text, so it cannot overflow itself; it runs before JSON.parse.

/** Default deepest nesting accepted in client JSON (Python's own json module fails near 1,000). */
export const DEFAULT_MAX_JSON_DEPTH = 256;

/**
 * The deepest `[`/`{` nesting in `text`, counting brackets outside strings only. Stops counting as
 * soon as `limit` is passed (the answer is then `limit + 1`). Works on invalid JSON too.
 */
export function jsonNestingDepth(text: string, limit: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      if (depth > 0) depth--;
    }
  }
  return deepest;
}

export function tooDeepMessage(limit: number): string {
  return `JSON nested deeper than ${limit} levels (--max-json-depth)`;
}

export type BoundedParse = { ok: true; value: unknown } | { ok: false; tooDeep: true; message: string } | { ok: false; tooDeep: false; error: Error };

/** JSON.parse behind the depth gate: too deep → `tooDeep`, syntax error → `error` (V8's). */
export function parseBoundedJson(text: string, maxDepth: number): BoundedParse {
  if (jsonNestingDepth(text, maxDepth) > maxDepth) return { ok: false, tooDeep: true, message: tooDeepMessage(maxDepth) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, tooDeep: false, error: err instanceof Error ? err : new Error(String(err)) };
  }
}
