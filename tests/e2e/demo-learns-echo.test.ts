// A new user's first run (tests/e2e/demo-run.ts): the echo preset, untouched — the echo reward (it grows
// with the echoed length) of the last steps is clearly above that of the first. Screenshotted into docs/.
import { describe, expect, it } from 'vitest';
import { DEMO_TEST_TIMEOUT_MS, ends, useDemoApp } from './demo-run.ts';

describe('a new user runs the demo', () => {
  const { demoRun } = useDemoApp();

  it('echo: built-in demo model, echo preset, Start — the echo reward ends clearly higher', async () => {
    const { stored } = await demoRun('echo');
    const reward = ends(stored, 'reward');
    console.log(`demo echo: reward per step ${reward.all.map((x) => x.toFixed(2)).join(' ')}`);
    // 0.1 per echoed character (the full quoted texts are 12–19 characters); the demo model starts near 0.3.
    expect(reward.last, reward.all.join(' ')).toBeGreaterThan(reward.first + 0.2);
  }, DEMO_TEST_TIMEOUT_MS);
});
