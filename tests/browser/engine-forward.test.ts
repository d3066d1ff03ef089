import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBrowserHarness, type BrowserHarness } from '../../bench/browser/harness.ts';
import type { EngineForwardResult } from './engine-forward.entry.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

describe('engine forward in headless Chromium', () => {
  let h: BrowserHarness;
  beforeAll(async () => { h = await startBrowserHarness(); });
  afterAll(async () => { await h?.close(); });

  it('matches the float64 reference in a dedicated worker (scoring, greedy decode, reproducible sampling)', async () => {
    const r = await h.runInWorker<EngineForwardResult>('tests/browser/engine-forward.entry.ts');
    expect(r.inWorker).toBe(true);
    expect(r.logprobErr).toBeLessThan(1e-4);
    expect(r.entropyErr).toBeLessThan(1e-4);
    expect(r.greedy).toEqual(r.refGreedy);
    expect(r.sampledTwice[0]).toEqual(r.sampledTwice[1]);
  });
});
