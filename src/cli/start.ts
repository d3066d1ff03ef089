// `webgrpo start`: the whole app in one process on one port — the built-in OpenEnv environments,
// the run store (SQLite) and the built web UI. Builds the UI first when dist/ is missing or older
// than its sources, so a fresh clone needs nothing but `npm install && npm start`.
import { parseCli, str } from './args.ts';
import { firstFreePort, portInUse } from './free-port.ts';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIST = path.join(ROOT, 'dist');

function newestMtime(p: string): number {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let newest = 0;
  for (const e of fs.readdirSync(p)) newest = Math.max(newest, newestMtime(path.join(p, e)));
  return newest;
}

function distIsStale(): boolean {
  const built = path.join(DIST, 'index.html');
  if (!fs.existsSync(built)) return true;
  const sources = ['index.html', 'vite.config.ts', 'src', 'workers'].map((p) => path.join(ROOT, p)).filter((p) => fs.existsSync(p));
  return Math.max(...sources.map(newestMtime)) > fs.statSync(built).mtimeMs;
}

/**
 * Builds the app into `outDir` (dist/ or --dist DIR). Vite's warnings stay on: the build has none, so one
 * that appears is news (a Node module newly reachable from the page, say). A folder of the user's
 * (`--dist DIR --rebuild`) is written into, never emptied.
 */
async function buildApp(outDir: string): Promise<void> {
  console.error('webgrpo: building the web app (vite build)…');
  const { build } = await import('vite');
  await build({ root: ROOT, logLevel: 'warn', configFile: path.join(ROOT, 'vite.config.ts'), build: { outDir, emptyOutDir: outDir === DIST } });
}

const HELP = `usage: webgrpo start [--data DIR] [--rebuild] [env-server options]

Serves the app, the run store and the built-in environments (echo, catch, wordle) on one port
(default http://127.0.0.1:8000/, or the next free port up to 8019 when 8000 is busy).
  --data DIR             where runs are stored (default ~/.local/share/webgrpo, or $WEBGRPO_DATA)
  --rebuild              rebuild the web app even if dist/ looks current (with --dist: into DIR)
  --dist DIR             serve this already-built app folder instead of building dist/
  --verbose              one line per env session opened and closed (default: warnings only)
  --max-body-bytes N     largest run store write (create, steps, status) (default 16777216)
  --max-import-bytes N   largest run import (default 67108864)
  --max-inflight-body-bytes N
                         run store request bodies held at once, all requests together; past it
                         a request gets 503 (default 134217728)
  --max-rollouts-per-step N  rollouts one step may keep (default 4096)
  --max-rollouts-per-run N   rollouts one run may keep (default 250000)
Every \`webgrpo env-server\` option works too (--port, which must then be free, --host, --max-concurrent-envs, --queue,
--upstream NAME=URL[,URL…], --allow-host, --allow-origin, …): see \`webgrpo env-server --help\`.`;

export async function run(argv: string[]): Promise<number> {
  const { ENV_SERVER_OPTIONS, envServerOptions, browsergymEnvs } = await import('./env-server.ts');
  const p = parseCli(argv, {
    ...ENV_SERVER_OPTIONS,
    data: { type: 'string' },
    rebuild: { type: 'boolean' },
    dist: { type: 'string' },
    'max-body-bytes': { type: 'string' },
    'max-import-bytes': { type: 'string' },
    'max-inflight-body-bytes': { type: 'string' },
    'max-rollouts-per-step': { type: 'string' },
    'max-rollouts-per-run': { type: 'string' },
  });
  if (p.help) {
    console.log(HELP);
    return 0;
  }
  if (str(p, 'data') === '') throw new Error('--data needs a directory');
  if (str(p, 'dist') === '') throw new Error('--dist needs a directory');
  const dataDir = str(p, 'data') ?? process.env.WEBGRPO_DATA ?? path.join(os.homedir(), '.local', 'share', 'webgrpo');
  const dist = str(p, 'dist') === undefined ? null : path.resolve(str(p, 'dist')!);
  const byteCount = (flag: string): number | undefined => {
    const value = str(p, flag);
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === '' || !Number.isSafeInteger(n) || n < 1) throw new Error(`--${flag}: expected an integer ≥ 1, got '${value}'`);
    return n;
  };
  const runsOptions = { maxBodyBytes: byteCount('max-body-bytes'), maxImportBytes: byteCount('max-import-bytes'), maxInflightBodyBytes: byteCount('max-inflight-body-bytes') };
  const storeOptions = { maxRolloutsPerStep: byteCount('max-rollouts-per-step'), maxRolloutsPerRun: byteCount('max-rollouts-per-run') };
  const parsed = { options: envServerOptions(p) };
  if (p.values.rebuild === true || (dist === null && distIsStale())) await buildApp(dist ?? DIST);

  const { RunStore } = await import('../../env-server/runs.ts');
  const { runsHandler } = await import('../../env-server/runs-http.ts');
  const { stopImports } = await import('../../env-server/runs-import.ts');
  const { staticHandler } = await import('../../env-server/static.ts');
  const { createEnvServer } = await import('../../env-server/server.ts');
  const log = (line: string) => console.error(line);
  // Without --port, a busy default port means the next free one (as Vite does); --port P means P.
  const host = parsed.options.host ?? '127.0.0.1';
  const explicitPort = str(p, 'port') !== undefined;
  if (!explicitPort) {
    const free = await firstFreePort(host, parsed.options.port);
    if (free !== parsed.options.port) log(`webgrpo: port ${parsed.options.port} is in use, using ${free} instead`);
    parsed.options.port = free;
  }
  const store = new RunStore(path.join(dataDir, 'runs.db'), storeOptions);
  let server: Awaited<ReturnType<typeof createEnvServer>>;
  try {
    const runs = runsHandler(store, { ...runsOptions, maxJsonDepth: parsed.options.maxJsonDepth, log });
    server = await createEnvServer({
      logger: log,
      // A training run opens a session per episode: those lines only with --verbose.
      logSessions: false,
      ...parsed.options,
      envs: await browsergymEnvs(p),
      extraHandlers: [runs, staticHandler(dist ?? DIST, log)],
    });
  } catch (err) {
    store.close();
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw portInUse(host, parsed.options.port);
    throw err;
  }
  console.log(JSON.stringify({ url: `${server.url}/`, data: dataDir }));
  console.error(`webgrpo: open ${server.url}/ in a browser with WebGPU (Chrome/Edge). Ctrl-C stops.`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  // Imports first: a worker mid-import would keep the process alive after everything else closed.
  await stopImports();
  await server.close();
  store.close();
  return 0;
}
