// A run's environment class as the run store accepts it (env.envClass: the user's module, kept so that
// resume, fork, share and export carry it): {source, text} strings, the text no longer than the app lets
// a run keep. Checked on every write of a run record (create and import), so no reader ever gets an
// oversized or malformed module from the store.

/**
 * Longest module text a run keeps, in characters: src/rl/tasks/env-class.ts's MAX_CLASS_TEXT (the
 * env-server does not import the trainer; tests/env-server/run-env-class.test.ts keeps them equal).
 */
export const MAX_STORED_CLASS_TEXT = 64 * 1024;
/** Longest source name (a file name, or "your environment"). */
const MAX_SOURCE_CHARS = 200;

/** Why `env.envClass` cannot be stored, or null (absent: a run of a built-in task). */
export function envClassProblem(env: Record<string, unknown>): string | null {
  if (env.envClass === undefined) return null;
  const c = env.envClass as Record<string, unknown> | null;
  if (!c || typeof c !== 'object' || Array.isArray(c)) return '"env.envClass" must be an object {source, text}';
  if (typeof c.text !== 'string') return '"env.envClass.text" must be the module\'s text (a string)';
  if (c.text.length > MAX_STORED_CLASS_TEXT) return `"env.envClass.text" is ${c.text.length} characters long; a run keeps at most ${MAX_STORED_CLASS_TEXT}`;
  if (typeof c.source !== 'string' || c.source.length > MAX_SOURCE_CHARS) return `"env.envClass.source" must be a string of at most ${MAX_SOURCE_CHARS} characters`;
  const extra = Object.keys(c).filter((k) => k !== 'text' && k !== 'source');
  if (extra.length > 0) return `"env.envClass" holds only source and text, not ${extra.join(', ')}`;
  return null;
}
