// TRL's OpenEnv examples (examples/scripts/openenv/{echo,catch,wordle,multi_env}.py, grpo-semantics.md
// §14) as data: their prompts and datasets, env factories over an OpenEnv base URL, reward functions
// (named as in the scripts, so metrics read `rewards/<name>/mean`) and GRPOConfig overrides.

import type { DatasetRow } from '../rollout/env.ts';
import { EchoToolEnv } from './envs/echo.ts';
import { openEnvEpisodes } from './envs/episode-session.ts';
import type { RewardFunction } from '../grpo/rewards.ts';
import type { ExampleTask } from './task.ts';

export type { ChatTemplateTask, EnvUrlName, ExampleName, ExampleTask } from './task.ts';

export const ECHO_PROMPTS = [
  "Try to echo 'Hello World!' in the environment.",
  "Make the environment echo 'Goodbye World!'",
  "Can you ask the environment to echo 'TRL is great!'?",
  "What happens if you ask the environment to echo 'I love RLHF!'?",
  "Try to make the environment echo 'OpenEnv is awesome!'",
];

export const CATCH_PROMPT = `You are an AI agent playing the game **Catch**.

### Game Description
- The game is played on a **10×5 grid**.
- There is one **falling ball** and one **paddle** that you control at the bottom.
- The objective is to **move the paddle left or right to catch the ball** as it falls.
- The episode ends when the ball reaches the bottom row:
  - You get **+1 reward** if you catch it.
  - You get **–1 reward** if you miss it.

### Observation Format
Each observation is a flattened 10x5 grid (list of 50 floats).
- 1.0 → occupied (ball or paddle)
- 0.0 → empty cell

You have the following tools available:
- \`move(direction)\`: Move the paddle left or right. Direction must be "left" or "right".
- \`stay\`: Do nothing and let the ball fall one step.

Observe the grid, determine where the ball is relative to the paddle, then move accordingly.
`;

export const WORDLE_PROMPT = `You are an expert Wordle solver with deep knowledge of English vocabulary, letter frequency patterns, and optimal guessing strategies.

Follow these rules to play Wordle:

1. The target is a 5-letter English word
2. You have 6 attempts to guess the correct word
3. After each guess, you receive color-coded feedback:
   - GREEN (G): Letter is correct and in the correct position
   - YELLOW (Y): Letter is in the word but in the wrong position
   - GRAY (X): Letter is not in the word at all
4. All guesses must be valid 5-letter English words
5. You cannot reuse a word you've already guessed
6. Use the tool \`guess\` to make a guess.
`;

function userRow(content: string, extra: Record<string, unknown> = {}): DatasetRow {
  return { prompt: [{ role: 'user', content }], ...extra };
}

/** TRL names reward metrics after the Python function; here the name is set explicitly. */
function named(name: string, fn: RewardFunction): RewardFunction {
  Object.defineProperty(fn, 'name', { value: name });
  return fn;
}

function need(urls: Partial<Record<string, string>>, name: string): string {
  const url = urls[name];
  if (!url) throw new Error(`the ${name} env needs a base URL`);
  return url;
}

function envsOf<T>(environments: readonly unknown[], Class: new (...args: never[]) => T): T[] {
  return environments.map((env, i) => {
    if (!(env instanceof Class)) throw new Error(`reward function: environment ${i} is not a ${Class.name}`);
    return env;
  });
}

/** The examples still written as tasks here (the others are example classes: env-class-builtin.ts). */
export const EXAMPLES: Record<'echo', ExampleTask> = {
  echo: {
    name: 'echo',
    dataset: () => ECHO_PROMPTS.map((p) => userRow(p)),
    envFactory: (urls, open = openEnvEpisodes()) => {
      const url = need(urls, 'echo');
      return () => new EchoToolEnv(url, open);
    },
    rewardFuncs: [named('reward_func', ({ environments }) => envsOf(environments, EchoToolEnv).map((env) => env.reward))],
    config: { chat_template_kwargs: { enable_thinking: false }, log_completions: true, logging_steps: 2 },
  },
};
