// A /envs/browsergym server for the tests of one describe block: started before them, closed after,
// with no browser context left behind (every episode a test opens must have closed its own).
import { afterAll, beforeAll, expect } from 'vitest';
import { createBrowserGymEnv, type BrowserGymEnvDefinition } from '../../env-server/envs/browsergym/index.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';

/** Registers the server's hooks; `url()` is its /envs/browsergym base once the tests run. */
export function useBrowserGymServer(): { url: () => string } {
  let def: BrowserGymEnvDefinition | undefined;
  let server: EnvServer | undefined;
  beforeAll(async () => {
    def = createBrowserGymEnv({ actionTimeoutMs: 10_000, axtree: 'classic' }, {});
    server = await createEnvServer({ port: 0, envs: { browsergym: def } });
  });
  afterAll(async () => {
    await server?.close();
    expect(def?.browser.contexts).toBe(0);
  });
  return { url: () => `${server!.url}/envs/browsergym` };
}
