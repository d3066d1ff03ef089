// Runs code inside headless Chromium with WebGPU (SwiftShader), in the page or in a dedicated
// module worker — the place the trainer runs in the app. A Vite dev server serves the repo so entry
// modules are plain TypeScript; each entry module's default export receives `args` (structured-clone
// data) and its resolved value comes back to Node. It lives in bench/ because the peer benchmark
// drives the browser with it too, and the tests import bench/, never the other way round.
import { chromium, type Browser, type Page } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export const CHROMIUM_ARGS = [
  '--headless=new', '--no-sandbox', '--disable-gpu-sandbox', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-quic', '--enable-unsafe-webgpu',
];

/**
 * `dawnFeatures` (comma-separated Dawn toggles) adds `--enable-dawn-features=…`; by default it is
 * CHROMIUM_DAWN_FEATURES, which only the test config sets: the app's end-to-end files train through
 * the page with `disable_robustness` (Dawn's bounds clamping on every buffer access: ~1.6× their
 * training time on SwiftShader). The kernels' correctness with it on is what the engine tests prove,
 * in Node on both adapters and in this harness, which keeps it on; benchmarks never set it.
 */
export function launchChromium(dawnFeatures = process.env.CHROMIUM_DAWN_FEATURES ?? ''): Promise<Browser> {
  const args = dawnFeatures ? [...CHROMIUM_ARGS, `--enable-dawn-features=${dawnFeatures}`] : CHROMIUM_ARGS;
  return chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args });
}

export interface BrowserHarness {
  page: Page;
  url: string;
  /** Runs `export default async function (args)` of `entry` (repo-relative path) in a fresh dedicated worker. */
  runInWorker<T = unknown>(entry: string, args?: unknown): Promise<T>;
  /** Same, on the page's main thread. */
  runInPage<T = unknown>(entry: string, args?: unknown): Promise<T>;
  /** Console lines the page and its workers printed (for failure messages). */
  logs: string[];
  close(): Promise<void>;
}

export async function startBrowserHarness(): Promise<BrowserHarness> {
  const server: ViteDevServer = await createServer({
    root: ROOT,
    configFile: false,
    logLevel: 'error',
    // Pre-bundling discovered mid-test would reload the page under the test: bundle nothing.
    optimizeDeps: { noDiscovery: true, include: [] },
    server: {
      host: '127.0.0.1',
      port: 0,
      strictPort: false,
      hmr: false,
      watch: null,
      headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
    },
  });
  await server.listen();
  const address = server.httpServer?.address();
  if (!address || typeof address === 'string') throw new Error('vite dev server did not bind a TCP port');
  const url = `http://127.0.0.1:${address.port}`;
  let browser: Browser;
  try {
    // Robustness on: the engine's kernels in Chromium as users run them (see launchChromium).
    browser = await launchChromium('');
  } catch (err) {
    await server.close();
    throw err;
  }
  const page = await browser.newPage();
  const logs: string[] = [];
  page.on('console', (m) => logs.push(`[${m.type()}] ${m.text()}`));
  page.on('pageerror', (e) => logs.push(`[pageerror] ${e.message}`));
  await page.goto(`${url}/bench/browser/blank.html`);

  const withLogs = (err: unknown): never => {
    const tail = logs.slice(-20).join('\n');
    throw new Error(`${err instanceof Error ? err.message : String(err)}${tail ? `\n--- browser console ---\n${tail}` : ''}`);
  };

  return {
    page,
    url,
    logs,
    runInWorker: <T>(entry: string, args?: unknown) =>
      page.evaluate(
        ({ entry, args }) =>
          new Promise<T>((resolve, reject) => {
            const worker = new Worker('/bench/browser/worker-runner.ts', { type: 'module' });
            worker.onmessage = (e: MessageEvent<{ ok: boolean; result?: T; error?: string }>) => {
              worker.terminate();
              if (e.data.ok) resolve(e.data.result as T);
              else reject(new Error(e.data.error));
            };
            worker.onerror = (e) => {
              worker.terminate();
              reject(new Error(`worker error: ${e.message}`));
            };
            worker.postMessage({ entry: `/${entry.replace(/^\//, '')}`, args });
          }),
        { entry, args },
      ).catch(withLogs),
    runInPage: <T>(entry: string, args?: unknown) =>
      // A string expression: vitest rewrites `import()` inside functions it compiles, which would break
      // the dynamic import once it runs in the page.
      page.evaluate<T>(
        `(async () => (await import(${JSON.stringify(`/${entry.replace(/^\//, '')}`)})).default(${JSON.stringify(args ?? null)}))()`,
      ).catch(withLogs),
    async close() {
      await browser.close();
      await server.close();
    },
  };
}
