// The built-in environments the env-server mounts under /envs/<name>.

import type { AnyEnvInstance, EnvDefinition } from './types.ts';
import { echoEnv } from './echo.ts';
import { catchEnv } from './catch.ts';
import { wordleEnv } from './wordle.ts';
import { sudokuEnv } from './sudoku.ts';
import { browsergymEnv } from './browsergym/index.ts';

export const BUILTIN_ENVS: Record<string, EnvDefinition<AnyEnvInstance>> = {
  echo: echoEnv,
  catch: catchEnv,
  wordle: wordleEnv,
  sudoku: sudokuEnv,
  browsergym: browsergymEnv,
};
