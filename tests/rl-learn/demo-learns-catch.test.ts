// The catch demo learns (the README's numbers), proven in Node on lavapipe: the built-in demo model,
// the catch preset untouched, 12 steps of 8 groups of 8 games. Every step's catch rate is the one
// the README quotes (tests/rl-learn/demo-steps.ts), and the last three steps' rate is clearly above the
// first three's. The browser demo (tests/e2e/demo-learns-catch.test.ts) shows the same steps in the app.
import { describe, expect, it } from 'vitest';
import { DEMO_STEPS, ends } from './demo-steps.ts';
import { DEMO_TRAIN_TIMEOUT_MS, trainDemo } from './demo-train.ts';

describe('the catch demo learns', () => {
  it('catch preset on the demo model: the catch rate goes 0.23 → 0.47, step for step as the README says', async () => {
    const { metric, perStep, climbsBy } = DEMO_STEPS.catch;
    const caught = await trainDemo('catch', metric);
    expect(caught.map((x) => Math.round(x * 64))).toEqual(perStep.map((x) => Math.round(x * 64)));
    const { first, last } = ends(caught);
    expect([first.toFixed(2), last.toFixed(2)]).toEqual(['0.23', '0.47']);
    expect(last).toBeGreaterThan(first + climbsBy);
  }, DEMO_TRAIN_TIMEOUT_MS);
});
