// The training side's gradient parity, run in a dedicated worker of headless Chromium (the place the
// trainer runs in the app).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBrowserHarness, type BrowserHarness } from '../../bench/browser/harness.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

type Result = { inWorker: boolean; full: { tensors: number; maxRelError: number }; lora: { tensors: number; maxRelError: number } };

describe('engine training in a Chromium worker', () => {
  let h: BrowserHarness;
  beforeAll(async () => { h = await startBrowserHarness(); });
  afterAll(async () => { await h?.close(); });

  it('backward matches the float64 reference (full and LoRA on all 7 targets)', async () => {
    const r = await h.runInWorker<Result>('tests/browser/engine-train.entry.ts');
    expect(r.inWorker).toBe(true);
    // tinyConfig: embedding + final norm + 2 layers × 11 tensors; LoRA: 2 layers × 7 targets × (A, B).
    expect(r.full.tensors).toBe(2 + 2 * 11);
    expect(r.full.maxRelError).toBeLessThan(1e-3);
    expect(r.lora.tensors).toBe(2 * 7 * 2);
    expect(r.lora.maxRelError).toBeLessThan(1e-3);
  });
});
