// A remote OpenEnv server in the app: a second env-server stands in for a Hugging Face Space, the
// app's env-server proxies it as `arena` (any name), and the app trains the task its /metadata names
// (OpenSpielEnvironment → catch) with every episode going through the proxy and its cap. A second
// upstream on a refused port is listed as unreachable, with the reason, rather than guessed at.
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { E2E_RUN_CONFIG } from './run-config.ts';
import { browserLogs } from './browser-logs.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

/** A loopback port nothing listens on (bound, then freed). */
async function refusedPort(): Promise<number> {
  const tcp = createServer();
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve()));
  const { port } = tcp.address() as { port: number };
  await new Promise<void>((resolve) => tcp.close(() => resolve()));
  return port;
}

describe('the app with a proxied OpenEnv server', () => {
  let upstream: EnvServer;
  let app: AppServer;
  let browser: Browser;
  let page: Page;
  const upstreamLog: string[] = [];
  const { watch, tail } = browserLogs();

  beforeAll(async () => {
    upstream = await createEnvServer({ port: 0, logger: (line) => upstreamLog.push(line) });
    app = await startAppServer({ upstreams: { arena: [`${upstream.url}/envs/catch`], gone: [`http://127.0.0.1:${await refusedPort()}`] } });
    browser = await launchChromium();
    page = await browser.newPage();
    watch(page);
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await upstream?.close();
  });

  it('lists the upstream, shows its health and metadata, and trains against it', async () => {
    await page.goto(`${app.url}/`);
    await page.getByTestId('load-model').click();
    await page.getByTestId('model-info').waitFor({ timeout: 120_000 });
    await page.getByLabel('environment', { exact: true }).selectOption('arena');
    await expect.poll(() => page.getByTestId('env-meta').textContent(), { timeout: 30_000 }).toContain('OpenSpielEnvironment');
    expect(await page.getByTestId('env-meta').textContent()).toContain('healthy');
    for (const [key, value] of Object.entries({ ...E2E_RUN_CONFIG, sft_steps: 0, max_steps: 1 })) {
      const input = page.getByLabel(key, { exact: true });
      if ((await input.count()) === 1) await input.fill(typeof value === 'object' ? JSON.stringify(value) : String(value));
    }
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    await expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: 240_000, interval: 1000 }).toMatch(/finished|failed/);
    const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await page.getByTestId('run-status').textContent(), `${messages.join('\n')}\n${tail(20)}`).toBe('finished');
    // Every rollout's episode ran on the upstream, through the proxy; none is left open.
    const opened = upstreamLog.filter((l) => l.startsWith('session open catch#')).length;
    expect(opened).toBeGreaterThanOrEqual(Number(E2E_RUN_CONFIG.num_generations));
    expect(upstream.stats().activeSessions).toBe(0);
    expect(app.server.stats().activeSessions).toBe(0);
  });

  it('an unreachable upstream says so, with the reason, instead of guessing what kind of env it is', async () => {
    await page.goto(`${app.url}/`);
    const picker = page.getByLabel('environment', { exact: true });
    await expect.poll(() => picker.locator('option', { hasText: 'gone' }).textContent(), { timeout: 30_000 }).toBe('gone (proxy, unreachable)');
    await picker.selectOption('gone');
    await expect.poll(() => page.getByTestId('env-unreachable').textContent(), { timeout: 30_000 }).toBe('● unreachable — connection refused (GET /health)');
    await expect.poll(() => page.getByTestId('task-unreachable').textContent(), { timeout: 30_000 }).toContain('The environment is unreachable — connection refused (GET /health).');
    expect(await page.getByTestId('task-panel').textContent()).not.toContain('not an MCP environment');
    await page.getByTestId('task-panel').scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SCREENSHOTS}env-unreachable.png` });
  });
});
