// "Your environment" (issue 36), in headless Chromium against the app as `webgrpo start` serves it: a
// user pastes TRL's echo script as a class (examples/echo.mjs) into the editor, sees its tools as the
// model will (the exact JSON the chat template writes), starts, and one GRPO step trains with the
// model's tool calls answered by the env-server's echo env through the class. A fork of that run
// arrives with the class text shown but not loaded; once loaded, the new run keeps the same text.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { E2E_RUN_CONFIG, fillConfig } from './run-config.ts';
import { browserLogs } from './browser-logs.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const ECHO = fs.readFileSync(new URL('../../examples/echo.mjs', import.meta.url), 'utf8');
/** One GRPO step of one group; room for the demo model's one echo call. */
const CONFIG = { ...E2E_RUN_CONFIG, sft_steps: 0, max_steps: 1, num_generations: 4, per_device_train_batch_size: 4, max_completion_length: 64 };
const TRAIN_TIMEOUT_MS = 180_000;

interface StoredRun {
  run: { status: string; parent?: string | null; env: { name?: string; task?: string; envClass?: { source: string; text: string } } };
  steps: { step: number; metrics: Record<string, number | null> }[];
}

describe('an environment class pasted into the app trains, and its fork keeps it', { timeout: 300_000 }, () => {
  let app: AppServer;
  let browser: Browser;
  let page: Page;
  const { watch, withLogs, tail } = browserLogs();
  const stored = async (id: string) => (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as StoredRun;
  /** Pastes `text` into the editor as a clipboard paste does (CodeMirror reads the event's data). */
  const paste = (text: string) => page.evaluate((t) => {
    const data = new DataTransfer();
    data.setData('text/plain', t);
    document.querySelector('.cm-content')!.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  }, text);

  beforeAll(async () => {
    app = await startAppServer();
    browser = await launchChromium();
    page = await (await browser.newContext({ viewport: { width: 1280, height: 1100 } })).newPage();
    watch(page);
  }, 300_000); // builds the app with Vite, then starts Chromium

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  let runId = '';

  it('shows the tools of a pasted class, or its error, before Start', async () => {
    await page.goto(`${app.url}/`);
    await page.getByTestId('load-model').click();
    await withLogs(expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 120_000 }).toContain('built-in demo'));
    await page.getByTestId('env-class-mode').check();
    await page.locator('.cm-content').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('start-blocker').textContent()).toBe('Paste or open your environment module.');
    expect(await page.getByTestId('env-class-error').count()).toBe(0);

    // A class with an undocumented tool: the trainer's own error, under the editor, and no Start.
    await paste('export default class Bad {\n  reset() { return null; }\n  act(x) { return x; }\n  getReward() { return 0; }\n}\n');
    await withLogs(page.getByTestId('env-class-error').waitFor({ timeout: 30_000 }));
    expect(await page.getByTestId('env-class-error').textContent()).toMatch(/your environment: class Bad, tool 'act' has no JSDoc/);
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);

    await page.locator('.cm-content').press('Control+a');
    await paste(ECHO);
    await withLogs(page.getByTestId('env-class-preview').waitFor({ timeout: 30_000 }));
    expect(await page.getByTestId('env-class-tools').textContent()).toMatch(/^echo\(message\) — Echo the message back from the environment\.message string, required — The message to echo$/);
    expect(await page.getByTestId('env-class-tool-json').textContent()).toBe('{"type": "function", "function": {"name": "echo", "description": "Echo the message back from the environment.", "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "The message to echo"}}, "required": ["message"]}, "return": {"type": "string", "description": "The echoed message."}}}');
    expect(await page.getByTestId('env-class-data').textContent()).toContain("5 rows; the first prompt: Try to echo 'Hello World!' in the environment.");
    await fillConfig(page, CONFIG);
    expect(await page.getByTestId('start-blocker').count()).toBe(0);
    // The class's head (its JSDoc-documented tool) in view, not the end the paste left the cursor at.
    await page.locator('.env-class .cm-scroller').evaluate((el) => { el.scrollTop = 0; });
    await page.locator('.env-class .code-editor').evaluate((el) => { el.scrollTop = 0; });
    await page.getByTestId('env-class').screenshot({ path: `${SCREENSHOTS}app-env-class.png` });
    await page.getByRole('radiogroup', { name: 'what to train on' }).scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SCREENSHOTS}app-env-class-setup.png` });
  });

  it('trains a step whose tool calls reach the env through the class', async () => {
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    runId = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 500 }).toMatch(/finished|failed|stopped/));
    const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await page.getByTestId('run-status').textContent(), `${messages.join('\n')}\n${tail()}`).toBe('finished');

    const run = await stored(runId);
    expect(run.run.env).toEqual({ name: 'EchoToolEnv', task: 'env-class', envClass: { source: 'your environment', text: ECHO } });
    expect(run.steps).toHaveLength(1);
    const metrics = run.steps[0]!.metrics;
    const { rollouts } = (await (await fetch(`${app.url}/api/runs/${runId}/rollouts?step=0`)).json()) as { rollouts: { data: { turns: { role: string; text: string }[] } }[] };
    const turns = JSON.stringify(rollouts.map((r) => r.data.turns.filter((t) => t.role !== 'prompt')), null, 1);
    expect(metrics['tools/call_frequency'], turns).toBeGreaterThan(0);
    // Every answered call got back what it sent, from the env-server's echo env through the class (the
    // demo model's calls with a wrong argument name fail in the tool's argument check, as they should).
    const answered = rollouts.flatMap((r) => r.data.turns.flatMap((t, i, all) => {
      if (t.role !== 'tool') return [];
      const call = /<tool_call>\n(.*)\n<\/tool_call>/s.exec(all[i - 1]!.text)![1]!;
      return [{ sent: (JSON.parse(call) as { arguments: { message: string } }).arguments.message, back: t.text }];
    }));
    expect(answered.length, turns).toBeGreaterThan(0);
    for (const { sent, back } of answered) expect(back).toBe(sent);
    // Its reward is the class's: 0.1 a character of what the env echoed.
    expect(metrics['rewards/reward_func/mean']).toBeGreaterThan(0);

    await page.getByTestId('run-env-class').locator('summary').click();
    await page.screenshot({ path: `${SCREENSHOTS}app-env-class-run.png` });
  });

  it('shows the class read-only through a share link, without loading it', async () => {
    const { runs } = (await (await fetch(`${app.url}/api/runs`)).json()) as { runs: { id: string; shareToken: string }[] };
    const viewer = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    try {
      await viewer.goto(`${app.url}/#/runs/${runId}?share=${runs.find((r) => r.id === runId)!.shareToken}`);
      await viewer.getByTestId('run-env-class').waitFor({ timeout: 30_000 });
      expect(await viewer.getByText('Read-only view of a shared run.').count()).toBe(1);
      expect(await viewer.getByTestId('run-env-class').locator('pre').textContent()).toBe(ECHO);
      // Shown, never imported: no preview worker started, and the page has no editor to run it from.
      expect(viewer.workers().map((w) => w.url()).filter((u) => u.includes('env-class-preview'))).toEqual([]);
      expect(await viewer.locator('.cm-content').count()).toBe(0);
    } finally {
      await viewer.context().close();
    }
  });

  it('forks with the class shown, runs it only once loaded, and the fork keeps its text', async () => {
    await page.getByTestId('fork').click();
    await page.getByTestId('env-class-fork').waitFor({ timeout: 30_000 });
    await page.locator('.cm-content').waitFor({ timeout: 30_000 });
    expect(await page.locator('.cm-content').innerText()).toContain('export default class EchoToolEnv');
    // Shown, not loaded: no preview until the user says so.
    expect(await page.getByTestId('env-class-preview').count()).toBe(0);
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    await page.getByTestId('env-class-load').click();
    await withLogs(page.getByTestId('env-class-preview').waitFor({ timeout: 30_000 }));
    await page.getByTestId('start-run').click();
    await page.waitForURL((url) => /#\/runs\/[A-Za-z0-9_-]+$/.test(url.hash) && !url.hash.endsWith(runId));
    const forkId = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    const fork = await stored(forkId);
    expect(fork.run.env.envClass).toEqual({ source: 'your environment', text: ECHO });
    expect(await page.getByTestId('parent-link').getAttribute('href')).toBe(`#/runs/${runId}`);
    // Let it finish before the page goes (its steps are not what this test checks).
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 500 }).toMatch(/finished|failed|stopped/));
    expect(await page.getByTestId('run-status').textContent()).toBe('finished');
  });
});
