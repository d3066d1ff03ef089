// Runs in a headless Chromium worker (bench/browser/harness.ts): opens a checkpoint from the fake
// Hub with the browser's cache (OPFS) and reports what happened, for browser-hub.test.ts.
import { opfsCache } from '../../src/model/cache.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import type { LoadProgress } from '../../src/model/types.ts';

export interface BrowserOpenResult {
  inWorker: boolean;
  error: string | null;
  phases: LoadProgress['phase'][];
  resumedProgress: number[];
  /** SHA-256 (hex) of each tensor's bytes, by name. */
  digests: Record<string, string>;
}

export default async function (args: { endpoint: string; repo: string; retries: number; clear: boolean }): Promise<BrowserOpenResult> {
  const root = 'webgrpo-hub-test';
  if (args.clear) await (await navigator.storage.getDirectory()).removeEntry(root, { recursive: true }).catch(() => undefined);
  // Flush every 16 KiB so the close-and-reopen path of a long download runs on a tiny file too.
  const cache = opfsCache(root, 16 * 1024);
  const progress: LoadProgress[] = [];
  const inWorker = typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined';
  try {
    const ckpt = await openCheckpoint(args.repo, { endpoint: args.endpoint, cache, retries: args.retries, retryDelayMs: 0, onProgress: (p) => progress.push(p) });
    const digests: Record<string, string> = {};
    for (const name of ckpt.tensors.keys()) {
      const bytes = await ckpt.readTensor(name);
      const hash = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
      digests[name] = [...hash].map((b) => b.toString(16).padStart(2, '0')).join('');
    }
    return { inWorker, error: null, phases: progress.map((p) => p.phase), resumedProgress: progress.map((p) => p.loadedBytes), digests };
  } catch (err) {
    return { inWorker, error: (err as Error).message, phases: progress.map((p) => p.phase), resumedProgress: [], digests: {} };
  }
}
