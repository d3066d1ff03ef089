// The built-in environments the env-server mounts under /envs/<name>.

import type { EnvDefinition } from './types.ts';
import { echoEnv } from './echo.ts';
import { catchEnv } from './catch.ts';
import { wordleEnv } from './wordle.ts';

export const BUILTIN_ENVS: Record<string, EnvDefinition> = {
  echo: echoEnv,
  catch: catchEnv,
  wordle: wordleEnv,
};
