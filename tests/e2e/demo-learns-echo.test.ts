// A new user's first run (tests/e2e/demo-run.ts): the echo preset, untouched — the echo reward (it grows
// with the echoed length) of the last steps is clearly above that of the first. Screenshotted into docs/.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { ends, useDemoApp } from './demo-run.ts';

// Slow by nature (training in Chromium on a CPU-emulated adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 2_300_000, hookTimeout: 600_000 });

const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));

describe('a new user runs the demo', () => {
  const { demoRun } = useDemoApp();

  it('echo: built-in demo model, echo preset, Start — the echo reward ends clearly higher', async () => {
    const { page, stored } = await demoRun('echo');
    const reward = ends(stored, 'reward');
    console.log(`demo echo: reward per step ${reward.all.map((x) => x.toFixed(2)).join(' ')}`);
    await page.screenshot({ path: path.join(DOCS, 'demo-echo.png'), fullPage: true });
    // 0.1 per echoed character (the full quoted texts are 12–19 characters); the demo model starts near 0.3.
    expect(reward.last, reward.all.join(' ')).toBeGreaterThan(reward.first + 0.2);
  });
});
