// The echo demo learns (the README's numbers), proven in Node on lavapipe: the built-in demo model, the
// echo preset untouched, 12 steps of 2 groups of 8 episodes. Every step's echo reward (0.1 per echoed
// character) is the one the README quotes (tests/rl-learn/demo-steps.ts), and the last three steps' is
// clearly above the first three's. The browser demo (tests/e2e/demo-learns-echo.test.ts) shows the
// same steps in the app.
import { describe, expect, it } from 'vitest';
import { DEMO_STEPS, ends } from './demo-steps.ts';
import { DEMO_TRAIN_TIMEOUT_MS, trainDemo } from './demo-train.ts';

describe('the echo demo learns', () => {
  it('echo preset on the demo model: the echo reward goes 0.50 → 0.70, step for step as the README says', async () => {
    const { metric, perStep, sameStepWithin, climbsBy } = DEMO_STEPS.echo;
    const reward = await trainDemo('echo', metric);
    expect(reward).toHaveLength(perStep.length);
    reward.forEach((v, i) => expect(Math.abs(v - perStep[i]!), `step ${i + 1}: ${v}, README ${perStep[i]}`).toBeLessThanOrEqual(sameStepWithin + 1e-9));
    const { first, last } = ends(reward);
    expect([first.toFixed(2), last.toFixed(2)]).toEqual(['0.50', '0.70']);
    expect(last).toBeGreaterThan(first + climbsBy);
  }, DEMO_TRAIN_TIMEOUT_MS);
});
