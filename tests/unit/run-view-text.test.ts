// The run page's words (issue 33): what "success" means for each task, what the first step is doing
// and how long it has left before any step could time the run, an env's metadata without OpenEnv's
// default description repeating its name, and the worker's step-progress reports thinned out.
import { describe, expect, it } from 'vitest';
import { envSummary } from '../../src/app/components/EnvPicker.tsx';
import { nextStepProgress, stepProgressText } from '../../src/app/step-progress.ts';
import { successDefinition } from '../../src/app/success-definition.ts';
import type { RunProgress } from '../../src/rl/run.ts';
import { stepProgressReporter } from '../../workers/step-progress.ts';

const rollouts = (episodesDone: number, tokens: number): RunProgress => ({ phase: 'rollouts', episodes: 16, episodesDone, decoding: 16 - episodesDone, tokens, envCallsInFlight: 0, envCallsDone: episodesDone });

describe('success, defined where it is shown', () => {
  it('says what a success is for each built-in task, from its reward code', () => {
    expect(successDefinition('echo')).toMatch(/^echo success = the model called the echo tool and the env echoed a non-empty message back \(reward_func = 0\.1 per character echoed\); the rate is the share of the step's rollouts whose first reward function scored above 0/);
    expect(successDefinition('catch')).toMatch(/^catch success = the ball was caught/);
    expect(successDefinition('browsergym:click-test,enter-text')).toMatch(/the web task was solved/);
    // A task with no words of its own still gets the rule.
    expect(successDefinition('my-task')).toBe("my-task success = the share of the step's rollouts whose first reward function scored above 0 (unscorable ones count as failures).");
  });
});

describe('the first step, before any step times the run', () => {
  it('shows the elapsed time and the phase with its counts, and no estimate before any of the phase is done', () => {
    expect(stepProgressText(null, 3000, 1000)).toBe('running 2s…');
    const s = nextStepProgress(null, rollouts(0, 120), 1000);
    expect(stepProgressText(s, 6000, 0)).toBe('running 5s · rollouts: 0/16 episodes done, 120 tokens sampled');
  });

  it("estimates the phase's time left from the share of it done", () => {
    let s = nextStepProgress(null, rollouts(0, 100), 0);
    s = nextStepProgress(s, rollouts(4, 800), 10_000);
    // A quarter of the episodes in 20 s: about 60 s more.
    expect(stepProgressText(s, 20_000, 0)).toBe('running 20s · rollouts: 4/16 episodes done, 800 tokens sampled · ~1m 00s left in the rollouts');
    // A new phase starts its own clock; the step's keeps running.
    s = nextStepProgress(s, { phase: 'optimize', microBatch: 2, microBatches: 4, stage: 'forward' }, 30_000);
    expect(stepProgressText(s, 40_000, 0)).toBe('running 40s · training: micro-batch 2/4, forward · ~30s left in the training');
  });
});

describe('env metadata', () => {
  it("leaves out OpenEnv's default description (the name again) and keeps a real one", () => {
    expect(envSummary({ name: 'EchoEnvironment', version: '1.0.0', description: 'EchoEnvironment environment' })).toBe('EchoEnvironment 1.0.0');
    expect(envSummary({ name: 'Wordle', version: '0.2', description: 'Guess the word in six tries' })).toBe('Wordle 0.2 — Guess the word in six tries');
    expect(envSummary({ name: 'x' })).toBe('x');
  });
});

describe("the worker's step-progress reports", () => {
  it('sends each phase change at once and, within a phase, at most one report per interval', () => {
    let t = 0;
    const sent: RunProgress[] = [];
    const report = stepProgressReporter((p) => sent.push(p), () => t);
    for (let i = 0; i < 100; i++) { t = i * 10; report(rollouts(0, i)); } // 1 s of decode steps
    expect(sent.length).toBe(2);
    report({ phase: 'logprobs', of: 'old', done: 0, total: 16 });
    report({ phase: 'logprobs', of: 'reference', done: 0, total: 16 });
    expect(sent.map((p) => p.phase)).toEqual(['rollouts', 'rollouts', 'logprobs', 'logprobs']);
  });
});
