// A new user's first run (tests/e2e/demo-run.ts): the echo preset, Start — the app trains its first
// steps in Chromium, the charts fill as they come, and they are the steps the README quotes: the same
// echo rewards as the whole run in Node on lavapipe, where the learning (the reward of the last three
// of 12 steps clearly above the first three's) is proven (tests/rl-learn/demo-learns-echo.test.ts).
// WEBGRPO_DEMO_FULL=1: all 12 steps here too, the climb checked in Chromium, docs/demo-echo.png rewritten.
import { describe, it } from 'vitest';
import { checkDemo, DEMO_TEST_TIMEOUT_MS, useDemoApp } from './demo-run.ts';

describe('a new user runs the demo', () => {
  const { demoRun } = useDemoApp();

  it('echo: built-in demo model, echo preset, Start — the app trains the steps Node trains', async () => {
    await checkDemo(demoRun, 'echo', 3);
  }, DEMO_TEST_TIMEOUT_MS);
});
