// What a new user does first, in headless Chromium (WebGPU on SwiftShader): open the app, "Load model"
// (the built-in demo model is the default), pick a preset, Start. Shared by the demo files (one per
// preset, so the runs can go to different vitest workers). The learning itself — the whole 12-step
// run — is proven in Node on lavapipe (tests/rl-learn/demo-learns-*.test.ts); here the app trains the
// preset's first few steps (max_steps lowered, nothing else touched), the charts fill as steps come,
// and the steps are the ones Node computes (the rates come from the run store, which the charts draw).
// WEBGRPO_DEMO_FULL=1 runs the preset untouched, checks the climb in Chromium too, and screenshots
// the finished run into docs/demo-<preset>.png (the README shows them).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { DEMO_STEPS, ends } from '../rl-learn/demo-steps.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { browserLogs } from './browser-logs.ts';

export const FULL = process.env.WEBGRPO_DEMO_FULL === '1';
/** The run on SwiftShader: the whole catch preset ~15 min on 2 busy cores (up to 35 min allowed, for a slower CI machine), its first steps a few minutes. */
const RUN_TIMEOUT_MS = FULL ? 2_100_000 : 1_200_000;
/** The demo test's own limit: slow by nature (training in Chromium on a CPU-emulated adapter), far past the suite's 30 s default. */
export const DEMO_TEST_TIMEOUT_MS = RUN_TIMEOUT_MS + 200_000;
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));

export interface StoredRun {
  run: { status: string; config: Record<string, unknown> };
  steps: { step: number; metrics: Record<string, number | null> }[];
}

/** Starts the app and a browser for this file (beforeAll/afterAll) and returns how to run one demo. */
export function useDemoApp(): { demoRun(preset: 'catch' | 'echo', steps: number | 'preset'): Promise<{ stored: StoredRun; chartFilledWhileRunning: boolean }> } {
  let app: AppServer;
  let browser: Browser;
  const { watch, withLogs, tail } = browserLogs();

  beforeAll(async () => {
    app = await startAppServer();
    browser = await launchChromium();
  }, 600_000); // builds the app with Vite, then starts Chromium

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  async function demoRun(preset: 'catch' | 'echo', steps: number | 'preset') {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    watch(page);
    await page.goto(`${app.url}/`);
    await page.getByTestId('load-model').click();
    await withLogs(expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 120_000 }).toContain('built-in demo'));
    await page.getByRole('button', { name: preset, exact: true }).click();
    if (steps !== 'preset') await page.getByLabel('max_steps', { exact: true }).fill(String(steps));
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    const id = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    // The reward chart gains its first point while the run still trains: the UI follows the steps.
    let chartFilledWhileRunning = false;
    await withLogs(
      expect
        .poll(
          async () => {
            const status = await page.getByTestId('run-status').textContent();
            const chart = page.getByTestId('chart-reward');
            const points = (await chart.count()) === 1 ? Number(await chart.getAttribute('data-points')) : 0;
            if (status === 'running' && points >= 1) chartFilledWhileRunning = true;
            return status;
          },
          { timeout: RUN_TIMEOUT_MS, interval: 1000 },
        )
        .toMatch(/finished|failed|stopped/),
    );
    const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await page.getByTestId('run-status').textContent(), `${messages.join('\n')}\n${tail()}`).toBe('finished');
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as StoredRun;
    const grpoSteps = stored.steps.filter((s) => typeof s.metrics.reward === 'number').length;
    expect(Number(await page.getByTestId('chart-reward').getAttribute('data-points'))).toBe(grpoSteps);
    if (FULL) await page.screenshot({ path: path.join(DOCS, `demo-${preset}.png`), fullPage: true });
    return { stored, chartFilledWhileRunning };
  }

  return { demoRun };
}

/** Runs the demo of `preset` in the app and checks its steps against the ones Node computes. */
export async function checkDemo(demoRun: ReturnType<typeof useDemoApp>['demoRun'], preset: 'catch' | 'echo', fewSteps: number): Promise<void> {
  const { metric, perStep, sameStepWithin, climbsBy } = DEMO_STEPS[preset];
  const { stored, chartFilledWhileRunning } = await demoRun(preset, FULL ? 'preset' : fewSteps);
  const values = stored.steps.map((s) => s.metrics[metric]).filter((v): v is number => typeof v === 'number');
  console.log(`demo ${preset}: ${metric} per step ${values.map((x) => x.toFixed(2)).join(' ')}`);
  expect(chartFilledWhileRunning).toBe(true);
  expect(values).toHaveLength(FULL ? perStep.length : fewSteps);
  // Seeded runs: Chromium's steps (SwiftShader) are Node's (lavapipe), within a near-tie.
  values.forEach((v, i) => expect(Math.abs(v - perStep[i]!), `step ${i + 1}: ${v} in Chromium, ${perStep[i]} in Node`).toBeLessThanOrEqual(sameStepWithin + 1e-9));
  if (FULL) {
    const { first, last } = ends(values);
    expect(last, values.join(' ')).toBeGreaterThan(first + climbsBy);
  }
}
