import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchChromium, startBrowserHarness, type BrowserHarness } from '../../bench/browser/harness.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

/** The Dawn toggles a Chromium was started with, from its own chrome://version page. */
async function dawnFeatures(browser: Browser): Promise<string[]> {
  const page = await browser.newPage();
  try {
    await page.goto('chrome://version');
    const line = (await page.locator('#command_line').textContent()) ?? '';
    return line.split(/\s+/).filter((a) => a.startsWith('--enable-dawn-features='));
  } finally {
    await page.close();
  }
}

type Result = { maxErr: number; inWorker: boolean; adapter: { isFallbackAdapter: boolean }; maxBinding: number };

describe('WebGPU in headless Chromium', () => {
  let h: BrowserHarness;
  beforeAll(async () => { h = await startBrowserHarness(); });
  afterAll(async () => { await h?.close(); });

  it('computes on the page', async () => {
    const r = await h.runInPage<Result>('tests/browser/webgpu-compute.entry.ts', { n: 1000 });
    expect(r.inWorker).toBe(false);
    expect(r.maxErr).toBeLessThan(1e-6);
    expect(r.maxBinding).toBeGreaterThan(128 * 1024 * 1024);
  });

  it('computes in a dedicated worker', async () => {
    const r = await h.runInWorker<Result>('tests/browser/webgpu-compute.entry.ts', { n: 1000 });
    expect(r.inWorker).toBe(true);
    expect(r.maxErr).toBeLessThan(1e-6);
  });

  // The browser project's files train through a Chromium without Dawn's bounds clamping (vitest.config.ts,
  // for speed); the harness runs the engine's kernels as users do, with it on.
  it("runs with Dawn's robustness on, while the files' own Chromium runs without it", async () => {
    expect(await dawnFeatures(h.page.context().browser()!)).toEqual([]);
    const own = await launchChromium();
    try {
      expect(await dawnFeatures(own)).toEqual(['--enable-dawn-features=disable_robustness']);
    } finally {
      await own.close();
    }
  });
});
