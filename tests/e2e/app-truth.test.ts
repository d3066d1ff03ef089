// The setup page and the run page tell the truth, in headless Chromium (WebGPU on SwiftShader) against
// the app as `webgrpo start` serves it: the memory plan follows the config as typed; a config the
// adapter (or the model) cannot hold is an error beside its field and Start stays disabled; a run with
// beta 0 has no KL chart waiting for values; the run page shows the run's config; every step's
// rollouts are browsable, not only the last ones; the owner renames and deletes a run; a stored or
// imported run with malformed rollouts renders, each bad one named. The runs are written straight to
// the run store (as a client without an Origin), so no training is needed.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { fillConfig } from './run-config.ts';
import { browserLogs } from './browser-logs.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const STEPS = 12;

const rollout = (step: number, index: number) => ({
  group: 0,
  index,
  turns: [
    { role: 'prompt', text: `<|im_start|>user\nCatch the ball (game ${step + 1}).<|im_end|>\n<|im_start|>assistant\n` },
    { role: 'assistant', text: `step ${step + 1} rollout ${index + 1}: <tool_call>{"name": "move", "arguments": {"direction": "left"}}</tool_call>` },
    { role: 'tool', name: 'move', text: 'caught' },
  ],
  reward: 1,
  advantage: index === 0 ? 0.5 : -0.5,
  rewards: { catch: 1 },
});

describe('the setup page and the run page tell the truth', { timeout: 600_000 }, () => {
  let app: AppServer;
  let browser: Browser;
  let page: Page;
  const logs = browserLogs();
  const store = async (method: string, path: string, body?: unknown, token?: string) => {
    const res = await fetch(`${app.url}${path}`, { method, headers: { 'content-type': 'application/json', ...(token ? { 'x-webgrpo-write-token': token } : {}) }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  beforeAll(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    app = await startAppServer();
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // SwiftShader's memory is the machine's RAM, which Chrome reports as navigator.deviceMemory: pinned
    // to 8 GiB so the refused batch below is refused on any machine.
    await context.addInitScript(() => Object.defineProperty(Navigator.prototype, 'deviceMemory', { get: () => 8 }));
    page = await context.newPage();
    logs.watch(page);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  it('plans memory for the config as typed and refuses what the adapter or the model cannot hold, beside the field', async () => {
    await page.goto(`${app.url}/`);
    await page.getByTestId('load-model').click();
    await page.getByTestId('memory-plan').waitFor({ timeout: 120_000 });
    const total = () => page.getByTestId('memory-total').textContent();
    const before = await total();
    // The generation batch (per_device_train_batch_size × steps_per_generation) is what decodes at once.
    await fillConfig(page, { per_device_train_batch_size: 128 });
    await expect.poll(total).not.toBe(before);
    const doubled = await total();
    await fillConfig(page, { max_completion_length: 200 });
    await expect.poll(total).not.toBe(doubled);
    // Beyond the model's positions: the error names the field and the value that fits; Start is off.
    await fillConfig(page, { max_completion_length: 100000 });
    const error = page.getByTestId('field-error-max_completion_length');
    expect(await error.textContent()).toMatch(/beyond the model's max_position_embeddings \(40960\): lower max_completion_length to ≤ 39936/);
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    expect(await page.getByTestId('start-blocker').textContent()).toMatch(/max_completion_length/);
    await error.scrollIntoViewIfNeeded();
    // Two frames after the scroll, or the capture can catch the form half repainted.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    await page.screenshot({ path: `${SCREENSHOTS}setup-limits.png` });
    // The batch: 1024 completions of 1424 tokens need 12.8 GiB, over the 8 GiB of a software adapter here.
    await fillConfig(page, { max_completion_length: 400, num_generations: 512, per_device_train_batch_size: 1024 });
    expect(await page.getByTestId('field-error-per_device_train_batch_size').textContent()).toMatch(/memory plan \(1024 sequences × 1424 tokens\) needs 12\.\d GiB, over the 8\.00 GiB of memory available: lower per_device_train_batch_size to ≤ \d+/);
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    await page.getByTestId('model-info').screenshot({ path: `${SCREENSHOTS}setup-memory-plan.png` });
    // Back to the preset: no error, Start enabled.
    await page.getByRole('button', { name: 'catch', exact: true }).click();
    await expect.poll(() => page.getByTestId('start-run').isDisabled()).toBe(false);
    expect(await page.locator('[data-testid^=field-error-]').count()).toBe(0);
  });

  it('shows a beta-0 run without a KL chart, with its config, and every step of its rollouts; the owner renames and deletes it', async () => {
    const created = (await store('POST', '/api/runs', { name: 'catch · built-in demo', config: { beta: 0, max_steps: STEPS, num_generations: 2, learning_rate: 2e-3 }, model: { name: 'built-in demo' }, env: { name: 'catch', task: 'catch' } })).body as { id: string; writeToken: string };
    for (let step = 0; step < STEPS; step++) {
      const rollouts = [rollout(step, 0), rollout(step, 1)];
      // Step 4 also kept two malformed rollouts: they are named, the good ones still show.
      if (step === 3) rollouts.push({} as never, { ...rollout(step, 3), turns: 'none' } as never);
      const ok = await store('POST', `/api/runs/${created.id}/steps`, { step, metrics: { reward: step / STEPS, loss: 0.1, entropy: 1, step_time: 2 }, rollouts }, created.writeToken);
      expect(ok.status).toBe(200);
    }
    await store('POST', `/api/runs/${created.id}/status`, { status: 'finished' }, created.writeToken);
    // This browser started it: it holds the write token.
    await page.evaluate(([id, token]) => localStorage.setItem(`webgrpo.run.${id}`, token), [created.id, created.writeToken]);
    await page.goto(`${app.url}/#/runs/${created.id}`);
    await page.getByTestId('kl-off').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('kl-off').textContent()).toMatch(/off: beta = 0/);
    expect(await page.getByTestId('chart-kl').count()).toBe(0);
    expect(await page.getByTestId('summary-kl').textContent()).toMatch(/off \(beta = 0\)/);
    // The config view: the run's keys, TRL's defaults for the rest, the model and the env.
    await page.getByTestId('config-view').locator('summary').click();
    expect(await page.getByTestId('config-beta').textContent()).toBe('beta0');
    expect(await page.getByTestId('config-loss_type').textContent()).toMatch(/\(default\)$/);
    expect(await page.getByTestId('config-model').textContent()).toMatch(/"name": "built-in demo"/);
    // Rollouts: the latest step first, then any earlier one.
    await expect.poll(() => page.locator('.rollout-viewer .step-tabs button.active').textContent(), { timeout: 30_000 }).toBe(`step ${STEPS}`);
    await page.getByRole('button', { name: 'first', exact: true }).click();
    await expect.poll(() => page.locator('.rollout-viewer .step-tabs button.active').textContent()).toBe('step 1');
    await page.getByTestId('rollout').first().click();
    await expect.poll(() => page.locator('.rollout-viewer').textContent()).toMatch(/step 1 rollout 1: /);
    await page.getByRole('button', { name: 'step 4', exact: true }).click();
    await page.getByTestId('malformed-rollouts').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('malformed-rollouts').locator('li').allTextContents()).toEqual([
      'rollout #3 of step 4 is malformed: "group" must be a non-negative integer, got nothing',
      'rollout #4 of step 4 is malformed: "turns" must be an array, got "none"',
    ]);
    expect(await page.getByTestId('rollout').count()).toBe(2);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: `${SCREENSHOTS}run-view-truth.png`, fullPage: true });
    // Rename: the page and the store say the new name.
    await page.getByTestId('rename').click();
    await page.getByLabel('run name').fill('my first catch run');
    await page.getByTestId('rename-save').click();
    await expect.poll(() => page.getByTestId('run-name').textContent()).toBe('my first catch run');
    expect((await store('GET', `/api/runs/${created.id}`)).body.run.name).toBe('my first catch run');
    // Delete asks first; cancelling keeps the run.
    page.once('dialog', (d) => void d.dismiss());
    await page.getByTestId('delete-run').click();
    expect((await store('GET', `/api/runs/${created.id}`)).status).toBe(200);
    page.once('dialog', (d) => void d.accept());
    await page.getByTestId('delete-run').click();
    await page.waitForURL(/#\/$/);
    expect((await store('GET', `/api/runs/${created.id}`)).status).toBe(404);
    expect(await page.evaluate((id) => localStorage.getItem(`webgrpo.run.${id}`), created.id)).toBeNull();
  });

  it('renders an imported run whose rollouts are malformed, naming each, and never blanks the page', async () => {
    const file = {
      format: 'webgrpo-run',
      version: 1,
      run: { name: 'hostile import', status: 'finished', config: { beta: 0.04 }, model: { name: 'built-in demo' }, env: { name: 'catch' }, error: null },
      steps: [{ step: 0, metrics: { reward: 0.5, kl: 0.01 } }],
      rollouts: [
        { step: 0, index: 0, data: {} },
        { step: 0, index: 1, data: { group: 0, index: 1, turns: [{ role: 'assistant', text: 7 }], reward: 1, advantage: 0, rewards: {} } },
        { step: 0, index: 2, data: { group: 0, index: 2, turns: [], reward: 'high', advantage: 0, rewards: {} } },
      ],
    };
    const imported = (await store('POST', '/api/runs/import', file)).body as { id: string; writeToken: string; shareToken: string };
    logs.lines.length = 0;
    await page.goto(`${app.url}/#/runs/${imported.id}?share=${imported.shareToken}`);
    await page.getByTestId('malformed-rollouts').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('malformed-rollouts').locator('li').allTextContents()).toEqual([
      'rollout #1 of step 1 is malformed: "group" must be a non-negative integer, got nothing',
      'rollout #2 of step 1 is malformed: turns[0].text must be a string',
      'rollout #3 of step 1 is malformed: "reward" must be a number or null, got "high"',
    ]);
    // The rest renders: the name, the charts (with KL: beta is not 0), the config view.
    expect(await page.getByTestId('run-name').textContent()).toBe('hostile import');
    expect(await page.getByTestId('chart-kl').count()).toBe(1);
    expect(await page.getByTestId('config-view').count()).toBe(1);
    expect(await page.getByTestId('render-error').count()).toBe(0);
    expect(logs.lines.filter((l) => l.startsWith('[pageerror]'))).toEqual([]);
    // The runs list deletes a run this browser owns, after a confirmation.
    await page.evaluate(([id, token]) => localStorage.setItem(`webgrpo.run.${id}`, token), [imported.id, imported.writeToken]);
    await page.goto(`${app.url}/#/runs`);
    const row = page.locator(`[data-testid=run-row][data-run-id="${imported.id}"]`);
    page.once('dialog', (d) => void d.accept());
    await row.getByTestId('delete-run-row').click();
    await row.waitFor({ state: 'detached', timeout: 30_000 });
    expect((await store('GET', `/api/runs/${imported.id}`)).status).toBe(404);
  });
});
