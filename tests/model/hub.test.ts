import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openCheckpoint, type OpenedCheckpoint } from '../../src/model/checkpoint.ts';
import { fetchRemoteConfig } from '../../src/model/hub.ts';
import { validateQwen3Tensors } from '../../src/model/qwen3-tensors.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import type { LoadProgress } from '../../src/model/types.ts';
import { startFakeHub, type FakeHub } from './hub-server.ts';

let hub: FakeHub;
let cacheDir: string;
let single: Map<string, Uint8Array>;
let sharded: Map<string, Uint8Array>;

beforeAll(async () => {
  hub = await startFakeHub();
  single = await makeTinyCheckpointFiles({ seed: 11, dtype: 'bf16', layers: 3 });
  sharded = await makeTinyCheckpointFiles({ seed: 12, shards: 3, configForm: 'v5', storeLmHead: true });
  // A Hub repo has no generation_config.json sometimes: the loader must not require it.
  const noGeneration = new Map(single);
  noGeneration.delete('generation_config.json');
  hub.repos.set('tiny/single', noGeneration);
  hub.repos.set('tiny/sharded', sharded);
});
afterAll(async () => hub.close());
beforeEach(async () => {
  cacheDir = await mkdtemp(join(tmpdir(), 'webgrpo-cache-'));
  hub.requests.length = 0;
  hub.dropNext.clear();
  hub.failNext.clear();
});
afterEach(async () => rm(cacheDir, { recursive: true, force: true }));

async function expectSameTensors(ckpt: OpenedCheckpoint, files: Map<string, Uint8Array>): Promise<void> {
  const local = await openCheckpoint(files);
  expect([...ckpt.tensors.keys()].sort()).toEqual([...local.tensors.keys()].sort());
  for (const name of local.tensors.keys()) expect(Buffer.from(await ckpt.readTensor(name)).equals(await local.readTensor(name)), name).toBe(true);
}

describe('Hub download', () => {
  it('follows the CDN redirect, resumes a dropped download from the cached bytes, and reports progress', async () => {
    const size = single.get('model.safetensors')!.byteLength;
    hub.dropNext.set('model.safetensors', 1);
    const progress: LoadProgress[] = [];
    const ckpt = await openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir, retryDelayMs: 0, onProgress: (p) => progress.push(p) });
    await expectSameTensors(ckpt, single);
    expect(validateQwen3Tensors(ckpt).hasStoredLmHead).toBe(false);
    expect(await ckpt.readText('generation_config.json')).toBeNull();
    expect(await ckpt.readText('tokenizer.json')).toBe(new TextDecoder().decode(single.get('tokenizer.json')!));

    const weights = hub.requests.filter((r) => r.path.endsWith('model.safetensors'));
    expect(weights.map((r) => r.status)).toEqual([302, 200, 302, 206]);
    expect(weights[2]!.range).toBe(weights[3]!.range);
    const resumedFrom = Number(weights[3]!.range!.match(/^bytes=(\d+)-$/)![1]);
    expect(resumedFrom).toBeGreaterThan(0);
    expect(resumedFrom).toBeLessThan(size);

    const download = progress.filter((p) => p.phase === 'download' && p.file === 'model.safetensors');
    expect(download.length).toBeGreaterThan(1);
    const last = download[download.length - 1]!;
    expect(last.loadedBytes).toBe(last.totalBytes);
    for (let i = 1; i < download.length; i++) expect(download[i]!.loadedBytes).toBeGreaterThanOrEqual(download[i - 1]!.loadedBytes);
    // After the resume, progress continues from the cached bytes, not from zero.
    expect(download.some((p) => p.loadedBytes - (last.totalBytes - size) === resumedFrom)).toBe(true);

    // Cache layout: keyed by repo/revision/file; no partial files left.
    const cached = await readdir(join(cacheDir, '127.0.0.1%3A' + new URL(hub.endpoint).port, 'models', 'tiny', 'single', 'main'));
    expect(cached.sort()).toEqual(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json', 'webgrpo-download.json']);
  });

  it('opens a second time from the cache alone, with no request', async () => {
    await openCheckpoint('tiny/sharded', { endpoint: hub.endpoint, cacheDir });
    expect(hub.requests.filter((r) => r.path.includes('model-0000')).length).toBe(6); // 3 shards × (302 + 200)
    hub.requests.length = 0;
    const progress: LoadProgress[] = [];
    const again = await openCheckpoint('tiny/sharded', { endpoint: hub.endpoint, cacheDir, onProgress: (p) => progress.push(p) });
    await expectSameTensors(again, sharded);
    expect(hub.requests).toEqual([]);
    expect(progress.map((p) => p.phase)).toEqual(['cache']);
    expect(again.weightFiles.length).toBe(3);
  });

  it('resumes after a failed load (a "reload") from the partial file left in the cache', async () => {
    hub.dropNext.set('model.safetensors', 5);
    await expect(openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir, retries: 0 })).rejects.toThrow(
      new RegExp(`download of ${hub.endpoint}/tiny/single/resolve/main/model.safetensors interrupted at \\d+ of \\d+ bytes \\(1 attempt\\(s\\) in a row failed.*next load resumes`),
    );
    hub.dropNext.clear();
    hub.requests.length = 0;
    const ckpt = await openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir, retries: 0 });
    await expectSameTensors(ckpt, single);
    // Only the weights were fetched again, and only their missing tail.
    const fetched = hub.requests.filter((r) => r.status !== 404);
    expect(fetched.map((r) => [r.status, r.path.split('/').pop()])).toEqual([[302, 'model.safetensors'], [206, 'model.safetensors']]);
    expect(Number(fetched[1]!.range!.match(/^bytes=(\d+)-$/)![1])).toBeGreaterThan(0);
  });

  it('keeps resuming while each attempt makes progress, however many drops', async () => {
    hub.dropNext.set('model.safetensors', 4);
    const ckpt = await openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir, retries: 1, retryDelayMs: 0 });
    await expectSameTensors(ckpt, single);
    const ranges = hub.requests.filter((r) => r.path.startsWith('/cdn/')).map((r) => r.range);
    expect(ranges.length).toBe(5);
    const starts = ranges.slice(1).map((r) => Number(r!.match(/^bytes=(\d+)-$/)![1]));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    expect(new Set(starts).size).toBe(4);
  });

  it('restarts from zero when the file changed since the partial download (If-Range)', async () => {
    hub.dropNext.set('model.safetensors', 1);
    await expect(openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir, retries: 0 })).rejects.toThrow(/interrupted/);
    const changed = await makeTinyCheckpointFiles({ seed: 99, dtype: 'bf16', layers: 3 });
    const original = hub.repos.get('tiny/single')!;
    hub.repos.set('tiny/single', changed);
    try {
      const ckpt = await openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir });
      await expectSameTensors(ckpt, changed);
      expect(hub.requests.filter((r) => r.path.startsWith('/cdn/')).map((r) => r.status)).toEqual([200, 200]);
    } finally {
      hub.repos.set('tiny/single', original);
    }
  });

  it('retries a transient 503, and refuses a non-Qwen3 config before downloading any weights', async () => {
    hub.failNext.set('tokenizer.json', 503);
    const ckpt = await openCheckpoint('tiny/single', { endpoint: hub.endpoint, cacheDir, retryDelayMs: 0 });
    expect(await ckpt.readText('tokenizer.json')).not.toBeNull();
    expect(hub.requests.filter((r) => r.path.endsWith('tokenizer.json')).map((r) => r.status)).toEqual([503, 200]);

    const llama = new Map(single);
    llama.set('config.json', new TextEncoder().encode(JSON.stringify({ architectures: ['LlamaForCausalLM'], model_type: 'llama' })));
    hub.repos.set('tiny/llama', llama);
    hub.requests.length = 0;
    await expect(openCheckpoint('tiny/llama', { endpoint: hub.endpoint, cacheDir })).rejects.toThrow(/tiny\/llama \(revision main\)\/config.json: unsupported architecture \["LlamaForCausalLM"\]/);
    await expect(fetchRemoteConfig({ repo: 'tiny/llama' }, { endpoint: hub.endpoint, cacheDir })).rejects.toThrow(/unsupported architecture/);
    expect(hub.requests.filter((r) => r.path.includes('safetensors'))).toEqual([]);
    const config = await fetchRemoteConfig({ repo: 'tiny/sharded' }, { endpoint: hub.endpoint, cacheDir });
    expect(config.raw).toEqual(JSON.parse(new TextDecoder().decode(sharded.get('config.json')!)));
  });

  it('uses WEBGRPO_CACHE and HF_ENDPOINT when no options are given', async () => {
    const saved = { cache: process.env.WEBGRPO_CACHE, endpoint: process.env.HF_ENDPOINT };
    process.env.WEBGRPO_CACHE = cacheDir;
    process.env.HF_ENDPOINT = hub.endpoint;
    try {
      const ckpt = await openCheckpoint('tiny/sharded');
      expect(ckpt.location).toBe(join(cacheDir, '127.0.0.1%3A' + new URL(hub.endpoint).port, 'models', 'tiny', 'sharded', 'main'));
      expect(ckpt.weightFiles.length).toBe(3);
    } finally {
      for (const [key, value] of [['WEBGRPO_CACHE', saved.cache], ['HF_ENDPOINT', saved.endpoint]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it('names the URL for a missing repo (404), a private repo (401) and a refused connection', async () => {
    await expect(openCheckpoint('tiny/missing', { endpoint: hub.endpoint, cacheDir })).rejects.toThrow(
      `HTTP 404 for ${hub.endpoint}/tiny/missing/resolve/main/config.json: not found`,
    );
    hub.privateRepos.set('tiny/private', 'secret');
    hub.repos.set('tiny/private', single);
    await expect(openCheckpoint('tiny/private', { endpoint: hub.endpoint, cacheDir })).rejects.toThrow(
      new RegExp(`HTTP 401 for ${hub.endpoint}/tiny/private/resolve/main/config.json: access denied .*HF_TOKEN`),
    );
    const ok = await openCheckpoint('tiny/private', { endpoint: hub.endpoint, cacheDir, token: 'secret' });
    expect(ok.tensors.size).toBe(1 + 3 * 11 + 1);
    const port = await closedPort();
    await expect(openCheckpoint('tiny/single', { endpoint: `http://127.0.0.1:${port}`, cacheDir, retries: 0 })).rejects.toThrow(
      `network error fetching http://127.0.0.1:${port}/tiny/single/resolve/main/config.json`,
    );
    // The bare "fetch failed" comes with what to check.
    await expect(openCheckpoint('tiny/single', { endpoint: `http://127.0.0.1:${port}`, cacheDir, retries: 0 })).rejects.toThrow(/Are you offline.*cache/);
  });
});

describe('HTTP Range reads (no download)', () => {
  it('reads the headers and then each tensor with one Range request of exactly its bytes', async () => {
    const base = `${hub.endpoint}/tiny/sharded/resolve/main`;
    const ckpt = await openCheckpoint(base, { download: false });
    expect(validateQwen3Tensors(ckpt)).toMatchObject({ hasStoredLmHead: true, usesSeparateLmHead: false });
    hub.requests.length = 0;
    const name = 'model.layers.1.mlp.down_proj.weight';
    const t = ckpt.stored.get(name)!;
    expect(await ckpt.readTensor(name)).toEqual(await (await openCheckpoint(sharded)).readTensor(name));
    const served = hub.requests.filter((r) => r.status === 206);
    expect(served.map((r) => r.range)).toEqual([`bytes=${t.fileOffset}-${t.fileOffset + t.byteLength - 1}`]);
    await expectSameTensors(ckpt, sharded);
    expect(await readdir(cacheDir)).toEqual([]); // nothing cached in this mode
  });
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
