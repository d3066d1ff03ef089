// The end-of-run check of `webgrpo train`: what a run's tool calls came to, said last and plainly, with
// its exit status. A model that never made a valid call (it called a tool the env does not offer, e.g.
// the demo model's `echo` on connect4) is told apart from an env that refused every call: the env was
// reached (reset, reward) and the run's numbers stand (exit 0), but nothing was learned from its tools.

import { describeInvalidTools, type ToolFailureTally } from '../rl/grpo/metrics.ts';

export interface RunVerdict {
  line: string;
  exitCode: 0 | 1;
}

/** null: nothing to say (some call reached the env and got a result back into the model's context). */
export function runVerdict(tally: ToolFailureTally, env: string, maxCompletionLength: number): RunVerdict | null {
  if (tally.noCallReachedEnv) {
    return {
      line: `webgrpo train: the model never made a valid tool call (tools/invalid_frequency 1 on all ${tally.stepsWithCalls} steps with calls): ${describeInvalidTools(tally.invalidTools)}. No call reached the env at ${env}; warm the model up on transcripts that call its tools (--sft FILE.jsonl).`,
      exitCode: 0,
    };
  }
  if (tally.everyCallFailed) {
    return {
      line: `webgrpo train: every tool call of the run failed (tools/failure_frequency 1 on all ${tally.stepsWithCalls} steps with calls): the env at ${env} never gave the model a result.`,
      exitCode: 1,
    };
  }
  if (tally.everyResultOverBudget) {
    return {
      line: `webgrpo train: no tool result of the run reached the model (tools/over_budget_frequency 1 on all ${tally.stepsWithCalls} steps with calls): each one would have taken its completion past max_completion_length ${maxCompletionLength} (or the context), and was rolled back.`,
      exitCode: 1,
    };
  }
  return null;
}
