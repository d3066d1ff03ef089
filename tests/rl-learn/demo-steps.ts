// The demo runs' per-step numbers (the built-in demo model, a preset untouched, seed 42), as measured on
// lavapipe in Node (`webgrpo train --model models/demo --env catch|echo`) and quoted by the README.
// Runs are seeded, so these are what every run of the preset produces: the learning tests in Node
// (tests/rl-learn/demo-learns-*.test.ts) check the whole run against them, and the browser demos
// (tests/e2e/demo-learns-*.test.ts) check that the app's first steps in Chromium (SwiftShader) are the
// same steps. A change that alters the runs (sampling, kernels' rounding, the model, the preset) must
// update these numbers and the README's together.

export interface DemoSteps {
  /** The metric the README quotes per step. */
  metric: string;
  /** Its value at each of the preset's GRPO steps. */
  perStep: number[];
  /**
   * How far one adapter's step may be from another's and still be the same step: runs sample the
   * same tokens, but float rounding differs between adapters and can flip a rare near-tie (one game).
   */
  sameStepWithin: number;
  /** The README's claim: the mean of the last three steps beats the first three's by at least this. */
  climbsBy: number;
}

/** Steps averaged at each end of a run. */
export const WINDOW = 3;

export const DEMO_STEPS: Record<'catch' | 'echo', DemoSteps> = {
  catch: {
    metric: 'rewards/caught/mean',
    // Caught games out of 64 (8 groups of 8) a step: 0.23 → 0.47, first vs last three steps.
    perStep: [18, 13, 14, 21, 15, 14, 20, 18, 23, 27, 34, 30].map((n) => n / 64),
    sameStepWithin: 1 / 64,
    climbsBy: 0.15,
  },
  echo: {
    metric: 'reward',
    // 0.1 per echoed character, mean of 16 episodes (2 groups of 8) a step: 0.50 → 0.70.
    perStep: [34, 71, 136, 88, 66, 76, 81, 128, 153, 128, 117, 93].map((n) => n / 160),
    sameStepWithin: 1 / 160, // one character in one of the step's 16 episodes
    climbsBy: 0.2,
  },
};

/** Mean of the first and of the last WINDOW values. */
export function ends(values: number[]): { first: number; last: number } {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { first: mean(values.slice(0, WINDOW)), last: mean(values.slice(-WINDOW)) };
}
