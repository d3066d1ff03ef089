import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBrowserHarness, type BrowserHarness } from '../../bench/browser/harness.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

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
});
