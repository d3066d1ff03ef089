import { describe, expect, it, vi } from 'vitest';
import computeCheck from '../browser/webgpu-compute.entry.ts';
import { getGpu } from '../../src/engine/gpu.ts';
import { ADAPTER, onAdapter } from '../engine/helpers.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

// The same check the browser tests run in a Chromium page and worker, here in Node through Dawn.
describe(onAdapter('WebGPU in Node (Dawn)'), () => {
  it('runs a compute dispatch through getGpu() that matches a JS result, with raised limits', async () => {
    const r = await computeCheck({ n: 1000 });
    expect(r.inWorker).toBe(false);
    expect(r.maxErr).toBeLessThan(1e-6);
    // Above WebGPU's 128 MiB default where the adapter allows it (lavapipe's own limit is 128 MiB).
    expect(r.maxBinding).toBeGreaterThanOrEqual(128 * 1024 * 1024);
  });

  // The per-adapter projects must really run where they say: a wrong or missing driver fails here
  // (and in getGpu), it never silently falls back to another adapter.
  it.runIf(ADAPTER !== 'default adapter')('is the adapter WEBGPU_ADAPTER names, with its traits', async () => {
    const gpu = await getGpu();
    try {
      const text = `${gpu.adapterInfo.architecture} ${gpu.adapterInfo.description}`;
      if (ADAPTER === 'swiftshader') {
        expect(text).toMatch(/swiftshader/i);
        expect(gpu.f16).toBe(false);
        expect(gpu.limits.maxStorageBufferBindingSize).toBeGreaterThan(128 * 1024 * 1024);
        expect(gpu.subgroupSizes).toEqual({ min: 4, max: 4 });
      } else {
        expect(text).toMatch(/llvmpipe/i);
        expect(gpu.f16).toBe(true);
        expect(gpu.limits.maxStorageBufferBindingSize).toBe(128 * 1024 * 1024);
        expect(gpu.subgroupSizes).toEqual({ min: 8, max: 8 });
      }
    } finally {
      gpu.device.destroy();
    }
  });
});
