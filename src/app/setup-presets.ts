// The setup page's presets: one per built-in environment, with the values of src/rl/tasks/presets.ts (the
// same defaults the `train` CLI starts from). A preset is a value: the tier comes from the model the
// page will train (the loaded one, or — before loading — the built-in demo model the page loads by
// default), so picking a preset before or after "Load model" gives the same numbers for that model.
import { modelTier, presetConfig, type ModelTier, type PresetEnv } from '../rl/tasks/presets.ts';
import type { BuiltinEnvName } from '../../workers/api.ts';

export interface Preset {
  label: string;
  env: BuiltinEnvName;
  /** The task the run trains when it is not the env's own example (browsergym-vlm on the browsergym env). */
  task?: string;
  description: string;
}

/** A preset's name: a built-in env's, or a task's where one env serves two tasks. */
export type PresetName = BuiltinEnvName | 'browsergym-vlm';

export const PRESETS: Record<PresetName, Preset> = {
  echo: {
    label: 'echo',
    env: 'echo',
    description: 'Call echo(message); reward = 0.1 × length of the echoed message (TRL examples/openenv/echo.py).',
  },
  catch: {
    label: 'catch',
    env: 'catch',
    description: 'Move the paddle under the falling ball with move(direction)/stay(); +1 for a catch (TRL catch.py).',
  },
  wordle: {
    label: 'wordle',
    env: 'wordle',
    description: 'Guess a 5-letter word in 6 tries with guess("[abcde]"); reward on a win (TRL wordle.py).',
  },
  browsergym: {
    label: 'web: click-test',
    env: 'browsergym',
    description: "Click the button on a web page, read through its accessibility tree, with click/fill/send_keys/scroll/noop; 1.0 when the page says solved (TRL browsergym_llm.py, headless Chromium on the env-server).",
  },
  'browsergym-vlm': {
    label: 'BrowserGym (screenshots)',
    env: 'browsergym',
    task: 'browsergym-vlm',
    description: "The same web task for a vision-language model: every action returns the page's screenshot (up to 512 pixels a side) and its text, the last two screenshots kept in context (TRL browsergym.py, BrowserGymVLMEnv). Needs a model that reads images.",
  },
};

/** The env the page selects when it opens: the demo runs catch. */
export const DEFAULT_PRESET: PresetName = 'catch';

/** The tier of the model the run will use: `params` of the loaded model, or null before loading (the built-in demo). */
export function tierFor(params: number | null): ModelTier {
  return params === null ? 'tiny' : modelTier(params);
}

/** The config keys a preset sets (over DEFAULT_CONFIG). */
export function presetValues(name: PresetName, params: number | null): Record<string, unknown> {
  return presetConfig(name as PresetEnv, tierFor(params));
}
