// A new user's first run (tests/e2e/demo-run.ts): the catch preset, untouched — the catch rate of the
// last steps is clearly above that of the first. The finished run is screenshotted into docs/.
import { describe, expect, it } from 'vitest';
import { DEMO_TEST_TIMEOUT_MS, ends, useDemoApp } from './demo-run.ts';

describe('a new user runs the demo', () => {
  const { demoRun } = useDemoApp();

  // In the preset's 12 steps (8 groups of 8 games a step, lr 2e-3) the demo model's catch rate goes
  // 0.23 → 0.47 on lavapipe in Node (first/last three steps: 0.28 0.20 0.22 … 0.42 0.53 0.47; the same
  // seeds give within a game the same rates on SwiftShader in Chromium: 0.23 → 0.47 in 896 s on a busy
  // 2-core machine: 64 games a step). Recipes that only drift: BENCHMARKS.md.
  it('catch: built-in demo model, catch preset, Start — the catch rate ends clearly higher', async () => {
    const { stored } = await demoRun('catch');
    const caught = ends(stored, 'rewards/caught/mean');
    console.log(`demo catch: catch rate per step ${caught.all.map((x) => x.toFixed(2)).join(' ')}`);
    expect(caught.last, caught.all.join(' ')).toBeGreaterThan(caught.first + 0.15);
  }, DEMO_TEST_TIMEOUT_MS);
});
