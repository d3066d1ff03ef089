// A run of the user's environment class in the trainer worker: the module text stored with the run
// (RunOptions.envClass) loaded the way the CLI's --env-class loads a file (env-class.ts), its data the
// module's own dataset (or the environment's, reset supplying the prompt).

import { loadEnvClassModule, MAX_CLASS_TEXT } from '../src/rl/tasks/env-class.ts';
import { envClassResolved } from '../src/rl/tasks/env-class-resolved.ts';
import type { ResolvedTask } from '../src/rl/tasks/resolve-task.ts';
import type { EnvClassText } from './api.ts';

/** The run's task from its environment class; `envUrl()` in the class names the page's own env-server. */
export async function envClassRunTask(envClass: EnvClassText): Promise<ResolvedTask> {
  if (typeof envClass.text !== 'string' || typeof envClass.source !== 'string') throw new Error("the run's environment class must be {source, text} strings");
  if (envClass.text.length > MAX_CLASS_TEXT) throw new Error(`${envClass.source} is ${envClass.text.length} characters long; an environment module in the app must be at most ${MAX_CLASS_TEXT}`);
  return envClassResolved(await loadEnvClassModule(envClass.text, { source: envClass.source }));
}
