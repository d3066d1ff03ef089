// The whole app as `webgrpo start` serves it, in-process for the end-to-end tests: the web UI built
// once with Vite into a temporary folder (so a `dist/` someone is serving is left alone), the run store
// in a temporary data folder, and the env-server with the built-in envs, on 127.0.0.1 and a free port.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';
import { inject } from 'vitest';
import { RunStore } from '../../env-server/runs.ts';
import { runsHandler } from '../../env-server/runs-http.ts';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { staticHandler } from '../../env-server/static.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface AppServer {
  /** e.g. http://127.0.0.1:41234 (no trailing slash) */
  url: string;
  server: EnvServer;
  /** Stops serving (as a killed `webgrpo start`), keeping the run store's file for restart(). */
  stop(): Promise<void>;
  /** Serves again on the same port from the same run store file (a restarted `webgrpo start`). */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Builds the app with the project's vite.config.ts into `outDir`. */
export async function buildAppInto(outDir: string): Promise<void> {
  await build({ root: ROOT, configFile: path.join(ROOT, 'vite.config.ts'), logLevel: 'error', build: { outDir, emptyOutDir: true } });
}

/** `upstreams`: remote OpenEnv servers the app's env-server proxies (name → replica base URLs). */
export async function startAppServer(opts: { upstreams?: Record<string, string[]> } = {}): Promise<AppServer> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-e2e-'));
  // The browser project builds the UI once for all its files (app-build.global.ts); elsewhere, here.
  let dist = inject('appDist') ?? '';
  if (dist === '') {
    dist = path.join(work, 'dist');
    await buildAppInto(dist);
  }
  const serve = async (port: number) => {
    const store = new RunStore(path.join(work, 'runs.db'));
    try {
      return { store, server: await createEnvServer({ host: '127.0.0.1', port, upstreams: opts.upstreams, extraHandlers: [runsHandler(store), staticHandler(dist)] }) };
    } catch (err) {
      store.close();
      throw err;
    }
  };
  let serving: { store: RunStore; server: EnvServer } | null = await serve(0);
  const port = serving.server.port;
  const stop = async () => {
    if (!serving) return;
    const { server, store } = serving;
    serving = null;
    await server.close();
    store.close();
  };
  const app: AppServer = {
    url: serving.server.url,
    server: serving.server,
    stop,
    async restart() {
      await stop();
      serving = await serve(port);
      app.server = serving.server;
    },
    async close() {
      await stop();
      fs.rmSync(work, { recursive: true, force: true });
    },
  };
  return app;
}
