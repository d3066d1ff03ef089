// The OpenEnv client in headless Chromium, on the browser's WebSocket: page and dedicated worker
// (where the trainer runs) against env-servers on loopback.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBrowserHarness, type BrowserHarness } from '../../bench/browser/harness.ts';
import type { EnvServer } from '../../env-server/server.ts';
import { expectNoLeaks, RawClient, Servers, wsBase } from '../server/helpers.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

describe('OpenEnv client in the browser', () => {
  const servers = new Servers();
  let harness: BrowserHarness;
  let open: EnvServer;
  let full: EnvServer;
  let holder: RawClient;

  beforeAll(async () => {
    harness = await startBrowserHarness();
    // The harness page is another origin than the env-servers: trusted as `--allow-origin` trusts it.
    const allowOrigins = [harness.url];
    open = await servers.start({ allowOrigins });
    full = await servers.start({ maxConcurrentEnvs: 1, allowOrigins });
    holder = await RawClient.open(wsBase(full, 'echo'));
    holder.send('{"type":"reset"}');
    await holder.next();
  });
  afterAll(async () => {
    await harness?.close();
    holder?.ws.close();
    await servers.closeAll();
  });

  for (const where of ['page', 'worker'] as const) {
    it(`plays an episode and reads a refusal (${where})`, async () => {
      const args = { base: open.url, fullBase: full.url };
      const result = where === 'page'
        ? await harness.runInPage<any>('tests/openenv/browser-client.entry.ts', args)
        : await harness.runInWorker<any>('tests/openenv/browser-client.entry.ts', args);
      expect(result.usesGlobalWebSocket).toBe(true);
      expect(result.inWorker).toBe(where === 'worker');
      expect(result.episode.steps).toBe(9);
      expect(result.episode.phase).toBe('terminal');
      expect([1, -1]).toContain(result.episode.reward);
      expect(result.refusal).toEqual({ code: 'CAPACITY_REACHED', active: 1 });
      await expectNoLeaks(open);
    });
  }
});
