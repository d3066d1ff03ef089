// What "success" means for each task, in the words the run page shows beside its success rate. The
// rate itself is run-metrics.ts's successRate: the share of a step's rollouts whose first reward
// function scored above 0 (an unscorable rollout counts as a failure). Each line says what that first
// reward function rewards, from the task's env and reward code (src/rl/tasks/).

const RULE = 'the share of the step\'s rollouts whose first reward function scored above 0 (unscorable ones count as failures)';

/** Why one task's rollout counts as a success. */
const MEANING: Readonly<Record<string, string>> = {
  // EchoToolEnv (examples/echo.mjs): reward_func is the echo env's reward, 0.1 per character of the echoed message.
  echo: 'the model called the echo tool and the env echoed a non-empty message back (reward_func = 0.1 per character echoed)',
  // catchReward / compact catch's `caught`: the env's reward once the episode is over, floored at 0.
  catch: 'the ball was caught: the episode ended with the paddle under the ball (the env\'s final reward, 1)',
  'catch-compact': 'the ball was caught: the episode ended with the paddle under the ball (the env\'s final reward, 1)',
  // WordleEnv (examples/wordle.mjs): reward_func is the env's reward for the last move (0 for an invalid one).
  wordle: 'the wordle env\'s reward for the last move was above 0 (1 for the solved word; an ended game may score partial credit)',
  // MultiEnv: the first reward function is wordle_reward, so only the wordle episodes can count.
  multi: 'a wordle episode\'s last move scored above 0 (wordle_reward, the first reward function, so catch episodes count as failures)',
  // browsergym: reward_completion, 1.0 once the page says the task is solved.
  browsergym: 'the web task was solved: the page reported success (reward_completion = 1)',
  'browsergym-vlm': 'the web task was solved: the page reported success (reward_completion = 1)',
  // The user's own prompts against an MCP env: reward_from_env, the env's reward for the episode.
  mcp: 'the environment\'s reward for the episode was above 0 (reward_from_env)',
};

/** "<task> success = …": what the success rate of a run on `task` counts. */
export function successDefinition(task: string): string {
  const name = task.startsWith('browsergym:') ? 'browsergym' : task;
  const meaning = MEANING[name];
  return meaning ? `${task} success = ${meaning}; the rate is ${RULE}.` : `${task || 'task'} success = ${RULE}.`;
}
