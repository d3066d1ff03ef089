// Loading a model through the trainer worker's API: from a Hub-like server (download with progress),
// and the three failures the page must explain: no WebGPU, a download that fails, a model that does
// not fit the adapter's limits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, NoWebGpuError, type Gpu } from '../../src/engine/gpu.ts';
import type { LoadProgress } from '../../src/model/types.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { memoryRunCheckpoints } from '../../workers/run-checkpoints.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { startFakeHub, type FakeHub } from '../model/hub-server.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

describe('loading models in the trainer worker (Node)', () => {
  let hub: FakeHub;
  let gpu: Gpu;
  let cacheDir: string;
  const previousCache = process.env.WEBGRPO_CACHE;

  beforeAll(async () => {
    cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-worker-cache-'));
    process.env.WEBGRPO_CACHE = cacheDir;
    hub = await startFakeHub();
    hub.repos.set('webgrpo-test/tiny', await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS));
    gpu = await getGpu();
  });
  afterAll(async () => {
    await hub?.close();
    if (previousCache === undefined) delete process.env.WEBGRPO_CACHE;
    else process.env.WEBGRPO_CACHE = previousCache;
    fs.rmSync(cacheDir, { recursive: true, force: true });
  });

  it('downloads a Hub model with progress, then uploads it', async () => {
    const service = new TrainerService({ checkpoints: memoryRunCheckpoints(), gpu: async () => gpu });
    const progress: LoadProgress[] = [];
    const info = await service.loadModel({ kind: 'hub', repo: 'webgrpo-test/tiny', revision: 'main', endpoint: hub.endpoint }, { onProgress: (p) => progress.push(p) });
    expect(info.name).toBe('webgrpo-test/tiny');
    expect(info.fits).toBe(true);
    const downloads = progress.filter((p) => p.phase === 'download');
    expect(downloads.length).toBeGreaterThan(0);
    const last = downloads[downloads.length - 1]!;
    expect(last.loadedBytes).toBe(last.totalBytes);
    expect(progress[progress.length - 1]!.phase).toBe('upload');
  });

  it('names the repo when the download fails', async () => {
    const service = new TrainerService({ checkpoints: memoryRunCheckpoints(), gpu: async () => gpu });
    await expect(service.loadModel({ kind: 'hub', repo: 'webgrpo-test/missing', revision: 'main', endpoint: hub.endpoint }, { onProgress: () => undefined }))
      .rejects.toThrow(/Could not download webgrpo-test\/missing/);
  });

  it('reports a missing WebGPU adapter from probe and refuses to load', async () => {
    const service = new TrainerService({ checkpoints: memoryRunCheckpoints(), gpu: () => Promise.reject(new NoWebGpuError('requestAdapter() returned null')) });
    const probe = await service.probe();
    expect(probe.webgpu).toBe(false);
    expect(probe.error).toMatch(/No WebGPU adapter available: requestAdapter\(\) returned null/);
    await expect(service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined })).rejects.toThrow(/No WebGPU adapter/);
  });

  it('describes a model that does not fit the adapter, without uploading it', async () => {
    // An adapter whose storage bindings hold 128 bytes: one embedding row of the tiny model is 256.
    const small: Gpu = { ...gpu, limits: { maxBufferSize: 4096, maxStorageBufferBindingSize: 128 } as GPUSupportedLimits };
    const service = new TrainerService({ checkpoints: memoryRunCheckpoints(), gpu: async () => small });
    const info = await service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined });
    expect(info.fits).toBe(false);
    expect(info.message).toMatch(/Does not fit: .*maxStorageBufferBindingSize/);
    await expect(service.exportAdapter()).rejects.toThrow(/No model is loaded/);
  });
});
