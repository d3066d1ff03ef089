// The one rule for a run's name, whichever way it arrives (create, rename, import): names are shown in
// the runs list, page titles and exported pages, so they must read as what they are.

/** Longest run name accepted. */
export const MAX_NAME_LENGTH = 200;

/**
 * What a name may not hold: C0 and C1 control characters (NUL included) and DEL; the line and
 * paragraph separators; and the bidi embeddings, overrides and isolates (U+202A–202E, U+2066–2069),
 * with which `evil‮txt.exe` displays as another name.
 */
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** The name, trimmed, or what is wrong with it (to follow the field's name: `"name" must be …`). */
export function checkRunName(name: unknown): { ok: true; name: string } | { ok: false; problem: string } {
  const text = typeof name === 'string' ? name.trim() : '';
  if (text.length > 0 && text.length <= MAX_NAME_LENGTH && !FORBIDDEN.test(text)) return { ok: true, name: text };
  let shown: string = typeof name;
  if (typeof name === 'string') {
    // Escaped: an override in the message would reorder the message itself.
    shown = JSON.stringify(name.slice(0, 80)).replace(/[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    if (name.length > 80) shown += ` (${name.length} characters)`;
  }
  return { ok: false, problem: `must be a string of 1 to ${MAX_NAME_LENGTH} characters without control characters or bidi overrides, got ${shown}` };
}
