// A new user's first run (tests/e2e/demo-run.ts): the catch preset, Start — the app trains its first
// steps in Chromium, the charts fill as they come, and they are the steps the README quotes: the same
// catch rates, within one game, as the whole run in Node on lavapipe, where the learning (0.23 → 0.47
// over 12 steps) is proven (tests/rl-learn/demo-learns-catch.test.ts). WEBGRPO_DEMO_FULL=1: all 12 steps
// here too (~15 min on SwiftShader), the climb checked in Chromium, docs/demo-catch.png rewritten.
import { describe, it } from 'vitest';
import { checkDemo, DEMO_TEST_TIMEOUT_MS, useDemoApp } from './demo-run.ts';

describe('a new user runs the demo', () => {
  const { demoRun } = useDemoApp();

  it('catch: built-in demo model, catch preset, Start — the app trains the steps Node trains', async () => {
    await checkDemo(demoRun, 'catch', 2);
  }, DEMO_TEST_TIMEOUT_MS);
});
