import { describe, expect, it, vi } from 'vitest';
import computeCheck from '../browser/webgpu-compute.entry.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

// The same check the browser tests run in a Chromium page and worker, here in Node through Dawn.
describe('WebGPU in Node (Dawn)', () => {
  it('runs a compute dispatch through getGpu() that matches a JS result, with raised limits', async () => {
    const r = await computeCheck({ n: 1000 });
    expect(r.inWorker).toBe(false);
    expect(r.maxErr).toBeLessThan(1e-6);
    expect(r.maxBinding).toBeGreaterThan(128 * 1024 * 1024);
  });
});
