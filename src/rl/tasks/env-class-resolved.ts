// An environment class as the resolved task the launcher binds (resolve-task.ts's shape): apart from
// env-class.ts, which resolve-task.ts reaches through the built-in classes, so no import circles back.

import { envClassTask, type EnvClassModule, type EnvClassTaskOptions } from './env-class.ts';
import type { ResolvedTask } from './resolve-task.ts';

/** The class name (or the module's file name) a run of this module is called. */
function taskName(mod: EnvClassModule): string {
  const single = mod.classes.get(null);
  return single?.name || mod.source.replace(/^.*[\\/]/, '').replace(/\.[cm]?[jt]s$/, '');
}

/** The module as a resolved task (resolve-task.ts), ready for bindTask. */
export function envClassResolved(mod: EnvClassModule, o: EnvClassTaskOptions = {}): ResolvedTask {
  return { name: taskName(mod), task: envClassTask(mod, o), url: o.envUrl ?? null, env: null, preset: null, solver: null };
}
