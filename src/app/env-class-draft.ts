// The user's environment class as a run keeps it: the module's text in the run's env record
// (env.envClass, bounded by MAX_CLASS_TEXT and checked again by the run store), so resume, fork, share
// and export carry it, and the trainer worker loads it from there (RunOptions.envClass).
import { MAX_CLASS_TEXT } from '../rl/tasks/env-class.ts';
import type { EnvClassText } from '../../workers/api.ts';

/** The run record's task name for a run of the user's class (its env.name is the class's name). */
export const ENV_CLASS_TASK = 'env-class';

/** How pasted text is named in its errors (a file keeps its name). */
export const PASTED_SOURCE = 'your environment';

/** Why `text` cannot be a run's environment class, or null. */
export function draftProblem(text: string): string | null {
  if (text.length > MAX_CLASS_TEXT) return `The module is ${text.length} characters long; a run keeps at most ${MAX_CLASS_TEXT} (put its data in a dataset, or train it with the CLI's --env-class).`;
  return null;
}

/** The environment class a stored run trains, or null when it trains a built-in task. */
export function runEnvClass(env: Record<string, unknown>): EnvClassText | null {
  const stored = env.envClass;
  if (stored === undefined) return null;
  const c = stored as Partial<EnvClassText> | null;
  if (!c || typeof c.text !== 'string' || typeof c.source !== 'string') throw new Error('This run trains an environment class, but its record holds no module text');
  return { source: c.source, text: c.text };
}

/** The run's env record for a run of `envClass` named `name` (its class). */
export function envClassRecord(name: string, envClass: EnvClassText): Record<string, unknown> {
  return { name, task: ENV_CLASS_TASK, envClass };
}
