// Evaluate after full fine-tuning, in headless Chromium (issue 37): a run of the built-in demo model
// fully fine-tuned for two GRPO steps with TRL's eval loop every step (eval_* points on its charts),
// then Evaluate: the base (the starting weights uploaded again) and the trained model on the same
// held-out episodes, success with its interval for both, the paired difference, the episodes' turns;
// the result kept with the run (a reload shows its point, the runs list its held-out success).
// Screenshots: docs/screenshots/evaluate-full-ft.png, eval-points.png, runs-list.png.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { E2E_RUN_CONFIG, fillConfig } from './run-config.ts';
import { browserLogs } from './browser-logs.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const RUN = { ...E2E_RUN_CONFIG, train_mode: 'full', sft_steps: 0, max_steps: 2, eval_strategy: 'steps', eval_steps: 1, num_generations_eval: 1, per_device_eval_batch_size: 8, max_completion_length: 160, max_tool_calling_iterations: 8 };
const INTERVAL = /^\d+% \(\d+%–\d+%\)$/;

describe('Evaluate after full fine-tuning', { timeout: 600_000 }, () => {
  let app: AppServer;
  let browser: Browser;
  let page: Page;
  const { watch, withLogs } = browserLogs();
  beforeAll(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    app = await startAppServer();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    watch(page);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  it('evaluates the trained model against the reloaded base, and draws eval points on the charts', async () => {
    await page.goto(`${app.url}/`);
    // The demo model (the page's default): trained on catch, so its episodes are games worth reading.
    await page.getByTestId('load-model').click();
    await withLogs(page.getByTestId('model-info').waitFor({ timeout: 120_000 }));
    await page.getByRole('button', { name: 'catch', exact: true }).click();
    await fillConfig(page, RUN);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    const id = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: 300_000, interval: 1000 }).toMatch(/finished|failed/));
    expect(await page.getByTestId('run-status').textContent()).toBe('finished');

    // The eval loop's points: one per step on the success chart, beside training's line.
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`, { headers: { 'x-webgrpo-write-token': (await page.evaluate((i) => localStorage.getItem(`webgrpo.run.${i}`), id))! } })).json()) as { steps: { metrics: Record<string, number | null> }[] };
    expect(stored.steps?.map((s) => typeof s.metrics.eval_success_rate), JSON.stringify(stored).slice(0, 300)).toEqual(['number', 'number']);

    // Evaluate: a few episodes, progress while it runs, then base and trained with their intervals.
    await page.getByTestId('eval-episodes').fill('8');
    await page.getByTestId('evaluate').click();
    await withLogs(page.getByTestId('eval-table').waitFor({ timeout: 240_000 }));
    for (const policy of ['base', 'trained']) {
      expect(await page.getByTestId(`eval-row-${policy}`).locator('td').first().textContent()).toBe(policy);
      expect(await page.getByTestId(`eval-row-${policy}`).getByTestId('eval-success').textContent()).toMatch(INTERVAL);
    }
    expect(await page.getByTestId('eval-difference').textContent()).toMatch(/paired over the same 8 episodes: success [+−]\d+ pp/);
    await page.getByTestId('eval-trajectories').locator('summary').click();
    expect(await page.getByTestId('eval-episode-trained').count()).toBe(1);
    expect(await page.getByTestId('eval-episode-base').count()).toBe(1);
    await page.getByTestId('trained-model').scrollIntoViewIfNeeded();
    await page.mouse.move(0, 0);
    await page.getByTestId('trained-model').screenshot({ path: `${SCREENSHOTS}evaluate-full-ft.png` });

    // Kept with the run: after a reload the success chart has the Evaluate's points too.
    await page.reload();
    const success = page.getByTestId('chart-success rate');
    await withLogs(expect.poll(() => success.locator('.u-legend').textContent(), { timeout: 60_000 }).toContain('held-out, trained (Evaluate)'));
    expect(await success.locator('.u-legend').textContent()).toContain('held-out (eval loop)');
    await page.locator('.charts.headline').screenshot({ path: `${SCREENSHOTS}eval-points.png` });

    // The runs list: the recent steps' mean reward and the latest held-out success with its interval.
    await page.goto(`${app.url}/#/`);
    const row = page.locator(`[data-testid=run-row][data-run-id="${id}"]`);
    await row.waitFor({ timeout: 30_000 });
    expect(await row.getByTestId('run-row-held-out').textContent()).toMatch(INTERVAL);
    await page.locator('.runs-table').screenshot({ path: `${SCREENSHOTS}runs-list.png` });
  });
});
