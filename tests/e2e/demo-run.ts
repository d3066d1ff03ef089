// What a new user does first, in headless Chromium (WebGPU on SwiftShader): open the app, "Load model"
// (the built-in demo model is the default), pick a preset, Start, change nothing. Shared by the demo
// files (one per preset, so the two long runs can go to different vitest workers). The rates come from
// the run store, which is what the charts draw.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';

/** A whole demo run (the preset's steps) on SwiftShader: catch ~15 min on 2 busy cores; up to 35 min allowed, for a slower CI machine. */
const RUN_TIMEOUT_MS = 2_100_000;
/** The demo test's own limit: slow by nature (training in Chromium on a CPU-emulated adapter), far past the suite's 30 s default. */
export const DEMO_TEST_TIMEOUT_MS = 2_300_000;
/** Each finished run is screenshotted into docs/demo-<preset>.png (the README shows them). */
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));
/** Steps averaged at each end of the run. */
const WINDOW = 3;

export interface StoredRun {
  run: { status: string; config: Record<string, unknown> };
  steps: { step: number; metrics: Record<string, number | null> }[];
}

/** Starts the app and a browser for this file (beforeAll/afterAll) and returns how to run one demo. */
export function useDemoApp(): { demoRun(preset: 'catch' | 'echo'): Promise<{ stored: StoredRun }> } {
  let app: AppServer;
  let browser: Browser;
  const logs: string[] = [];

  beforeAll(async () => {
    app = await startAppServer();
    browser = await launchChromium();
  }, 600_000); // builds the app with Vite, then starts Chromium

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  async function demoRun(preset: 'catch' | 'echo'): Promise<{ stored: StoredRun }> {
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('console', (m) => logs.push(`[${m.type()}] ${m.text()}`));
    page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
    const withLogs = async <T>(what: Promise<T>): Promise<T> => {
      try {
        return await what;
      } catch (err) {
        throw new Error(`${(err as Error).message}\n--- browser console ---\n${logs.slice(-30).join('\n')}`);
      }
    };
    await page.goto(`${app.url}/`);
    await page.getByTestId('load-model').click();
    await withLogs(expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 120_000 }).toContain('built-in demo'));
    await page.getByRole('button', { name: preset, exact: true }).click();
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    const id = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: RUN_TIMEOUT_MS, interval: 2000 }).toMatch(/finished|failed|stopped/));
    const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await page.getByTestId('run-status').textContent(), `${messages.join('\n')}\n${logs.slice(-30).join('\n')}`).toBe('finished');
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as StoredRun;
    await page.screenshot({ path: path.join(DOCS, `demo-${preset}.png`), fullPage: true });
    return { stored };
  }

  return { demoRun };
}

/** Mean of `key` over the first and the last WINDOW steps that report it. */
export function ends(stored: StoredRun, key: string): { first: number; last: number; all: number[] } {
  const all = stored.steps.map((s) => s.metrics[key]).filter((v): v is number => typeof v === 'number');
  expect(all.length, `steps reporting ${key}`).toBeGreaterThanOrEqual(2 * WINDOW);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  return { first: mean(all.slice(0, WINDOW)), last: mean(all.slice(-WINDOW)), all };
}
