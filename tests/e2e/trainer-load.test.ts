// Loading a model through the trainer worker's API: from a Hub-like server (download with progress),
// and the three failures the page must explain: no WebGPU, a download that fails, a model that does
// not fit the adapter's limits.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getGpu, NoWebGpuError, type Gpu } from '../../src/engine/gpu.ts';
import type { LoadProgress } from '../../src/model/types.ts';
import { makeTinyCheckpointFiles, type TinyModelOptions } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { memoryRunStates } from '../../workers/run-states.ts';
import { TrainerService } from '../../workers/trainer-service.ts';
import { startFakeHub, type FakeHub } from '../model/hub-server.ts';

// Slow by nature (WebGPU on a CPU adapter): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const QWEN35: TinyModelOptions = { ...TINY_MODEL_OPTIONS, arch: 'qwen3_5', layers: 3, layerTypes: ['linear_attention', 'full_attention', 'linear_attention'] };

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
    // Qwen/Qwen3.5-* ship as Qwen3_5ForConditionalGeneration (model_type qwen3_5, text under text_config).
    hub.repos.set('webgrpo-test/tiny-qwen3_5', await makeTinyCheckpointFiles({ ...QWEN35, composite: true }));
    const moe = await makeTinyCheckpointFiles(QWEN35);
    const config = JSON.parse(new TextDecoder().decode(moe.get('config.json')!)) as Record<string, unknown>;
    moe.set('config.json', new TextEncoder().encode(JSON.stringify({ ...config, model_type: 'qwen3_5_moe', architectures: ['Qwen3_5MoeForCausalLM'] })));
    hub.repos.set('webgrpo-test/tiny-qwen3_5-moe', moe);
    gpu = await getGpu();
  });
  afterAll(async () => {
    await hub?.close();
    if (previousCache === undefined) delete process.env.WEBGRPO_CACHE;
    else process.env.WEBGRPO_CACHE = previousCache;
    fs.rmSync(cacheDir, { recursive: true, force: true });
  });

  it('downloads a Hub model with progress, then uploads it', async () => {
    const service = new TrainerService({ checkpoints: memoryRunStates(), gpu: async () => gpu });
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

  it('loads a Qwen3.5 model by Hub id (the text model of Qwen3_5ForConditionalGeneration) and from a picked Qwen3_5ForCausalLM folder', async () => {
    const service = new TrainerService({ checkpoints: memoryRunStates(), gpu: async () => gpu });
    const hubInfo = await service.loadModel({ kind: 'hub', repo: 'webgrpo-test/tiny-qwen3_5', revision: 'main', endpoint: hub.endpoint }, { onProgress: () => undefined });
    expect(hubInfo).toMatchObject({ name: 'webgrpo-test/tiny-qwen3_5', layers: 3, fits: true });
    expect(hubInfo.config).toMatchObject({ architecture: 'qwen3_5', tensorPrefix: 'model.language_model.', layerTypes: QWEN35.layerTypes });
    // The plan counts the DeltaNet layers' per-sequence state, and the KV cache of the attention layer only.
    expect(hubInfo.memory.map((m) => m.name)).toContain('linear-attention state');
    const files = [...await makeTinyCheckpointFiles(QWEN35)].map(([name, bytes]) => Object.assign(new File([bytes.slice()], name), { webkitRelativePath: `tiny-qwen3_5/${name}` }));
    const folderInfo = await service.loadModel({ kind: 'files', files }, { onProgress: () => undefined });
    expect(folderInfo).toMatchObject({ name: 'tiny-qwen3_5', layers: 3, fits: true });
    expect(folderInfo.config).toMatchObject({ architecture: 'qwen3_5', tensorPrefix: 'model.' });
  });

  it('says what is not supported: a Qwen3.5 mixture-of-experts model, by name, not as a failed download', async () => {
    const service = new TrainerService({ checkpoints: memoryRunStates(), gpu: async () => gpu });
    const err = await service.loadModel({ kind: 'hub', repo: 'webgrpo-test/tiny-qwen3_5-moe', revision: 'main', endpoint: hub.endpoint }, { onProgress: () => undefined }).catch((e: Error) => e);
    expect((err as Error).message).toMatch(/webgrpo-test\/tiny-qwen3_5-moe cannot be loaded: .*config.json: "qwen3_5_moe" is a mixture-of-experts model; webgrpo runs the dense Qwen3 and Qwen3.5 models only/);
    expect((err as Error).message).not.toMatch(/Could not download/);
  });

  it('names the repo when the download fails', async () => {
    const service = new TrainerService({ checkpoints: memoryRunStates(), gpu: async () => gpu });
    await expect(service.loadModel({ kind: 'hub', repo: 'webgrpo-test/missing', revision: 'main', endpoint: hub.endpoint }, { onProgress: () => undefined }))
      .rejects.toThrow(/Could not download webgrpo-test\/missing/);
  });

  it('reports a missing WebGPU adapter from probe and refuses to load', async () => {
    const service = new TrainerService({ checkpoints: memoryRunStates(), gpu: () => Promise.reject(new NoWebGpuError('requestAdapter() returned null')) });
    const probe = await service.probe();
    expect(probe.webgpu).toBe(false);
    expect(probe.error).toMatch(/No WebGPU adapter available: requestAdapter\(\) returned null/);
    await expect(service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined })).rejects.toThrow(/No WebGPU adapter/);
  });

  it('describes a model that does not fit the adapter, without uploading it', async () => {
    // An adapter whose storage bindings hold 128 bytes: one embedding row of the tiny model is 256.
    const small: Gpu = { ...gpu, limits: { maxBufferSize: 4096, maxStorageBufferBindingSize: 128 } as GPUSupportedLimits };
    const service = new TrainerService({ checkpoints: memoryRunStates(), gpu: async () => small });
    const info = await service.loadModel({ kind: 'tiny' }, { onProgress: () => undefined });
    expect(info.fits).toBe(false);
    expect(info.message).toMatch(/Does not fit: .*maxStorageBufferBindingSize/);
    await expect(service.exportAdapter()).rejects.toThrow(/No model is loaded/);
  });
});
