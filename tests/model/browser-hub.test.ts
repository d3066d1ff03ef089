// The Hub loader in a headless Chromium worker: download into OPFS through a cross-origin CDN
// redirect, a dropped connection, a "reload" that resumes from the stored bytes, then a second load
// from the cache alone.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { startBrowserHarness, type BrowserHarness } from '../../bench/browser/harness.ts';
import type { BrowserOpenResult } from './browser-hub.entry.ts';
import { startFakeHub, type FakeHub } from './hub-server.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const ENTRY = 'tests/model/browser-hub.entry.ts';

describe('Hub loading in a browser worker (OPFS cache)', () => {
  let h: BrowserHarness;
  let hub: FakeHub;
  let files: Map<string, Uint8Array>;
  beforeAll(async () => {
    // A browser hands over received data asynchronously: give it time before the connection drops.
    hub = await startFakeHub({ dropDelayMs: 1000 });
    files = await makeTinyCheckpointFiles({ seed: 21, dtype: 'bf16' });
    hub.repos.set('tiny/browser', files);
    h = await startBrowserHarness();
  });
  afterAll(async () => {
    await h?.close();
    await hub?.close();
  });

  it('downloads, resumes after a failure from the stored bytes, then loads from the cache alone', async () => {
    const weights = 'model.safetensors';
    const size = files.get(weights)!.byteLength;
    const local = await openCheckpoint(files);
    const expected: Record<string, string> = {};
    for (const name of local.tensors.keys()) expected[name] = createHash('sha256').update(await local.readTensor(name)).digest('hex');

    hub.dropNext.set(weights, 1);
    const failed = await h.runInWorker<BrowserOpenResult>(ENTRY, { endpoint: hub.endpoint, repo: 'tiny/browser', retries: 0, clear: true });
    expect(failed.inWorker).toBe(true);
    expect(failed.error).toMatch(/download of .*\/tiny\/browser\/resolve\/main\/model.safetensors interrupted at \d+/);

    hub.requests.length = 0;
    const resumed = await h.runInWorker<BrowserOpenResult>(ENTRY, { endpoint: hub.endpoint, repo: 'tiny/browser', retries: 0, clear: false });
    expect(resumed.error).toBeNull();
    expect(resumed.digests).toEqual(expected);
    const weightRequests = hub.requests.filter((r) => r.method === 'GET' && r.path.endsWith(weights));
    expect(weightRequests.map((r) => r.status)).toEqual([302, 206]);
    const from = Number(weightRequests[1]!.range!.match(/^bytes=(\d+)-$/)![1]);
    expect(from).toBeGreaterThan(0);
    expect(from).toBeLessThan(size);

    hub.requests.length = 0;
    const cached = await h.runInWorker<BrowserOpenResult>(ENTRY, { endpoint: hub.endpoint, repo: 'tiny/browser', retries: 0, clear: false });
    expect(cached.error).toBeNull();
    expect(cached.digests).toEqual(expected);
    expect(cached.phases).toEqual(['cache']);
    expect(hub.requests).toEqual([]);
  });
});
