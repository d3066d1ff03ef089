// Finding runs again, in headless Chromium (WebGPU on SwiftShader) against the app as `webgrpo start`
// serves it: a field's error shows beside it as the user types; a finished run is listed on the home
// page (status, task, model, steps, recent mean reward) and its adapter, kept with the run, downloads from a
// saved view in another browser; a run whose tab was reloaded mid-run shows as interrupted on the home
// page and resumes there with one click (the model loads again by itself), and so does a stopped run
// whose checkpoint is kept; the first step says what it is doing before any step has timed the run. Each run is one tiny group,
// one or three GRPO steps. Screenshots of the home list, the setup form with an error and a run view go
// to docs/screenshots/ (the README shows them).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import type { Browser, BrowserContext, Download, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { E2E_RUN_CONFIG, fillConfig } from './run-config.ts';
import { browserLogs } from './browser-logs.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
/** Building the app, loading the model and a few tiny steps on SwiftShader: a minute alone, more on a loaded machine. */
const TRAIN_TIMEOUT_MS = 240_000;
const RUN = { ...E2E_RUN_CONFIG, sft_steps: 0, max_steps: 1 };


describe('runs you can find again', { timeout: 600_000 }, () => {
  let app: AppServer;
  let browser: Browser;
  let owner: BrowserContext;
  let page: Page;
  const { watch, withLogs } = browserLogs();
  let finishedId = '';

  // Text fields and choices (train_mode is a select: these runs train a LoRA adapter).
  const fill = fillConfig;
  const startRun = async (config: Record<string, unknown>): Promise<string> => {
    await page.getByRole('button', { name: 'catch', exact: true }).click();
    await fill(page, config);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    return /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
  };
  const waitDone = async (p: Page) => {
    await withLogs(expect.poll(() => p.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 1000 }).toMatch(/finished|failed/));
    const messages = await p.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await p.getByTestId('run-status').textContent(), messages.join('\n')).toBe('finished');
  };

  beforeAll(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    app = await startAppServer();
    browser = await launchChromium();
    owner = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    page = await owner.newPage();
    watch(page);
  }, 300_000); // builds the app with Vite, then starts Chromium

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  it('shows a field error beside its field as the user types, and keeps Start disabled until it is fixed', async () => {
    await page.goto(`${app.url}/`);
    // The runs this file checks were made with the built-in random tiny model (the page defaults to the demo model).
    await page.getByLabel(/built-in random tiny model/).check();
    await page.getByTestId('load-model').click();
    await withLogs(page.getByTestId('model-info').waitFor({ timeout: 120_000 }));
    const lr = page.getByLabel('learning_rate', { exact: true });
    await lr.fill('abc');
    const error = page.getByTestId('field-error-learning_rate');
    expect(await error.textContent()).toBe('expected a number, got "abc"');
    expect(await lr.getAttribute('aria-invalid')).toBe('true');
    // Beside its field: in the same row, level with the input, not at the bottom of the form.
    const row = page.locator('.config-row', { has: lr });
    expect(await row.getByTestId('field-error-learning_rate').count()).toBe(1);
    const [inputBox, errorBox] = [await lr.boundingBox(), await error.boundingBox()];
    expect(Math.abs(inputBox!.y + inputBox!.height / 2 - (errorBox!.y + errorBox!.height / 2))).toBeLessThan(inputBox!.height);
    expect(errorBox!.x).toBeGreaterThan(inputBox!.x + inputBox!.width);
    await page.getByLabel('mask_truncated_completions', { exact: true }).fill('yes');
    expect(await page.getByTestId('field-error-mask_truncated_completions').textContent()).toBe('expected true or false, got "yes"');
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    expect(await page.getByTestId('start-blocker').textContent()).toMatch(/learning_rate, mask_truncated_completions/);
    // Start stays in view with the form scrolled to the field.
    expect(await page.getByTestId('start-run').isVisible()).toBe(true);
    const start = await page.getByTestId('start-run').boundingBox();
    expect(start!.y + start!.height).toBeLessThanOrEqual(900);
    await lr.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SCREENSHOTS}setup-field-error.png` });
    await lr.fill('5e-3');
    await page.getByLabel('mask_truncated_completions', { exact: true }).fill('false');
    expect(await page.getByTestId('field-error-learning_rate').count()).toBe(0);
  });

  it('lists a finished run on the home page with its task, model, steps and recent mean reward', async () => {
    // An SFT step, then GRPO: the run view's charts mark both phases on one step axis.
    finishedId = await startRun({ ...RUN, sft_steps: 1, max_steps: 2 });
    await waitDone(page);
    // The adapter and the checkpoint are kept with the run once it ends.
    await withLogs(expect.poll(() => page.getByTestId('file-adapter-adapter_model.safetensors').count(), { timeout: 60_000 }).toBe(1));
    await page.mouse.move(0, 0);
    await page.screenshot({ path: `${SCREENSHOTS}run-view.png`, fullPage: true });
    await page.goto(`${app.url}/#/`);
    const row = page.locator(`[data-testid=run-row][data-run-id="${finishedId}"]`);
    await row.waitFor({ timeout: 30_000 });
    // The first cell ticks the run for the compare view.
    const cells = (await row.locator('td').allTextContents()).slice(1);
    expect(cells[1]).toBe('finished');
    expect(cells[2]).toBe('catch');
    expect(cells[3]).toBe('built-in tiny');
    expect(cells[4]).toBe('3 / 3');
    const stored = (await (await fetch(`${app.url}/api/runs/${finishedId}`)).json()) as { steps: { metrics: Record<string, number | null> }[] };
    const grpoRewards = stored.steps.filter((s) => !s.metrics.phase_sft).map((s) => s.metrics.reward!);
    expect(grpoRewards).toHaveLength(2);
    // The level of the run's last steps (up to 5), not its luckiest one; never evaluated on held-out episodes.
    expect(Number(cells[5])).toBeCloseTo(grpoRewards.reduce((a, b) => a + b, 0) / grpoRewards.length, 3);
    expect(cells[6]).toBe('—');
    await page.getByTestId('nav-runs').click();
    await page.locator(`[data-testid=run-row][data-run-id="${finishedId}"]`).waitFor({ timeout: 30_000 });
  });

  it('shows legend values only under the pointer, and the latest value beside the title', async () => {
    await page.goto(`${app.url}/#/runs/${finishedId}`);
    const chart = page.getByTestId('chart-reward');
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 30_000 }).toBe('2');
    await page.mouse.move(0, 0);
    const value = chart.locator('.u-legend .u-value').first();
    expect(await value.isVisible()).toBe(false);
    expect(await chart.getByTestId('chart-current').textContent()).toMatch(/^-?\d/);
    const box = (await chart.locator('.u-over').boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.75, box.y + box.height / 2);
    await expect.poll(() => value.isVisible()).toBe(true);
  });

  it('answers pause and stop at once, drops the time left once paused, and resumes the stopped run from its checkpoint', async () => {
    await page.goto(`${app.url}/#/`);
    const id = await startRun({ ...RUN, max_steps: 3 });
    await expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: 60_000 }).toBe('running');
    await page.getByTestId('pause').click();
    expect(await page.getByTestId('pause').textContent()).toBe('pausing…');
    expect(await page.getByRole('progressbar').textContent()).toMatch(/pausing after this step/);
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS }).toBe('paused'));
    const label = await page.getByRole('progressbar').textContent();
    expect(label).toMatch(/paused$/);
    expect(label).not.toMatch(/left/);
    await page.getByTestId('stop').click();
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS }).toBe('stopped'));
    expect(await page.getByRole('progressbar').textContent()).not.toMatch(/left|stopping/);
    // Stopped, its checkpoint kept with the run: the run goes on from there, in this tab or from the list.
    await withLogs(expect.poll(() => page.locator('[data-testid^=file-checkpoint-]').count(), { timeout: 60_000 }).toBeGreaterThan(0));
    const stoppedAt = ((await (await fetch(`${app.url}/api/runs/${id}`)).json()) as { steps: unknown[] }).steps.length;
    expect(stoppedAt).toBeLessThan(3);
    await page.goto(`${app.url}/#/`);
    const row = page.locator(`[data-testid=run-row][data-run-id="${id}"]`);
    await withLogs(row.getByTestId('resume-run').waitFor({ timeout: 60_000 }));
    expect(await row.getByTestId('run-row-status').textContent()).toBe('stopped');
    await page.goto(`${app.url}/#/runs/${id}`);
    await page.getByTestId('stopped-banner').waitFor({ timeout: 30_000 });
    await page.getByTestId('resume-stopped').click();
    await waitDone(page);
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as { run: { status: string }; steps: { step: number }[] };
    expect(stored.run.status).toBe('finished');
    expect(stored.steps.map((x) => x.step)).toEqual([0, 1, 2]);
  });

  it('forks a run with its model, environment and config, and records the parent', async () => {
    await page.goto(`${app.url}/#/runs/${finishedId}`);
    // The env-server's list arrives late, as on a loaded machine: the select shows the fork's env once it has.
    const slowList = async (route: Route) => { await new Promise((r) => setTimeout(r, 1500)); await route.continue(); };
    await page.route(`${app.url}/envs`, slowList);
    await page.getByTestId('fork').click();
    await page.getByTestId('fork-banner').waitFor({ timeout: 30_000 });
    await expect.poll(() => page.getByLabel('environment', { exact: true }).inputValue(), { timeout: 30_000 }).toBe('catch');
    // A delayed answer still in flight once the fork has its env must not fail the run (it is not what is checked).
    await page.unrouteAll({ behavior: 'ignoreErrors' });
    expect(await page.getByLabel('max_steps', { exact: true }).inputValue()).toBe('2');
    expect(await page.getByLabel('sft_steps', { exact: true }).inputValue()).toBe('1');
    await page.getByTestId('model-info').waitFor({ timeout: 60_000 });
    await fill(page, { sft_steps: 0, max_steps: 1 });
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    const id = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    expect(id).not.toBe(finishedId);
    await waitDone(page);
    expect(await page.getByTestId('parent-link').getAttribute('href')).toBe(`#/runs/${finishedId}`);
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as { run: { parent: string; model: { name: string; source: unknown }; env: { name: string } } };
    expect(stored.run.parent).toBe(finishedId);
    expect(stored.run.model).toMatchObject({ name: 'built-in tiny', source: { kind: 'tiny' } });
    expect(stored.run.env.name).toBe('catch');
  });

  it("trains on the user's own prompts with an MCP env's tools and rewards (a task no TRL example covers)", async () => {
    await page.goto(`${app.url}/#/`);
    await page.getByTestId('model-info').waitFor({ timeout: 60_000 });
    // Back on a new setup page, the model choice names the model still loaded, not the default.
    expect(await page.getByLabel(/built-in random tiny model/).isChecked()).toBe(true);
    await page.getByLabel('environment', { exact: true }).selectOption('echo');
    // The fields held the catch preset unedited: picking echo in the list picks echo's preset too.
    expect(await page.getByTestId('preset-state').textContent()).toBe('echo preset');
    expect(await page.getByRole('button', { name: 'echo', exact: true }).getAttribute('aria-pressed')).toBe('true');
    const panel = page.getByTestId('task-panel');
    await panel.waitFor({ timeout: 30_000 });
    // echo is both TRL's example and an MCP env: the example stays the default, own prompts are offered.
    expect(await page.getByRole('radio', { name: /TRL's echo example/ }).isChecked()).toBe(true);
    await page.getByTestId('task-prompts').check();
    expect(await panel.textContent()).toMatch(/echo_message, echo_with_length/);
    expect(await page.getByTestId('start-blocker').textContent()).toBe('Write the prompts for your task.');
    await page.getByTestId('prompts').fill('{"prompt": 3}');
    expect(await panel.getByRole('alert').textContent()).toBe('prompts:1: needs a "prompt" field: a non-empty string or a list of {role, content} messages');
    await page.getByTestId('prompts').fill('Echo the word "hello" with your tool.\nEcho "bye".');
    await fill(page, RUN);
    await panel.scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SCREENSHOTS}setup-own-prompts.png` });
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    const id = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    await waitDone(page);
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as { run: { env: Record<string, unknown> }; steps: { metrics: Record<string, number | null> }[] };
    expect(stored.run.env).toEqual({ name: 'echo', task: 'mcp', prompts: [{ prompt: [{ role: 'user', content: 'Echo the word "hello" with your tool.' }] }, { prompt: [{ role: 'user', content: 'Echo "bye".' }] }] });
    expect(stored.steps).toHaveLength(1);
    expect(typeof stored.steps[0]!.metrics['tools/call_frequency']).toBe('number');
    expect(await page.getByText(/task mcp/).count()).toBeGreaterThan(0);
  });

  it('offers the full model, not a LoRA adapter, after full fine-tuning, and an evaluation against its base (reloaded)', async () => {
    await page.goto(`${app.url}/#/`);
    await page.getByRole('button', { name: 'catch', exact: true }).click();
    await fill(page, RUN);
    await page.locator('.config-row', { hasText: 'train_mode' }).locator('select').selectOption('full');
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    await waitDone(page);
    expect(await page.getByTestId('download-model').count()).toBe(1);
    expect(await page.getByTestId('download-adapter').count()).toBe(0);
    expect(await page.getByTestId('evaluate').count()).toBe(1);
    await withLogs(expect.poll(() => page.getByTestId('file-model-model.safetensors').count(), { timeout: 60_000 }).toBe(1));
    expect(await page.getByTestId('file-model-config.json').count()).toBe(1);
    expect(await page.locator('[data-testid^=file-adapter-]').count()).toBe(0);
    const got: Download[] = [];
    page.on('download', (d) => got.push(d));
    await page.getByTestId('download-model').click();
    // One download: a zip of the Hugging Face folder.
    await withLogs(expect.poll(() => got.length, { timeout: 60_000 }).toBe(1));
    expect(got[0]!.suggestedFilename()).toMatch(/-model\.zip$/);
    expect(Object.keys(unzipSync(fs.readFileSync((await got[0]!.path())!)))).toEqual(expect.arrayContaining(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']));
  });

  it('downloads the adapter from the saved run in another browser (no training tab, no model loaded)', async () => {
    const other = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 } });
    try {
      const viewer = await other.newPage();
      // Its share link (the owner's browser keeps the run's share token).
      const share = await page.evaluate((id) => localStorage.getItem(`webgrpo.share.${id}`), finishedId);
      await viewer.goto(`${app.url}/#/runs/${finishedId}?share=${share}`);
      const link = viewer.getByTestId('file-adapter-adapter_model.safetensors');
      await link.waitFor({ timeout: 30_000 });
      const got: Download[] = [];
      viewer.on('download', (d) => got.push(d));
      await link.click();
      await viewer.getByTestId('file-adapter-adapter_config.json').click();
      await expect.poll(() => got.length, { timeout: 30_000 }).toBe(2);
      const files = new Map<string, Buffer>();
      for (const d of got) files.set(d.suggestedFilename(), fs.readFileSync((await d.path())!));
      const config = JSON.parse(files.get('adapter_config.json')!.toString('utf8'));
      expect(config.peft_type).toBe('LORA');
      expect(config.r).toBe(E2E_RUN_CONFIG.lora_r);
      const weights = files.get('adapter_model.safetensors')!;
      const header = JSON.parse(weights.subarray(8, 8 + Number(weights.readBigUInt64LE(0))).toString('utf8')) as Record<string, unknown>;
      expect(Object.keys(header).filter((k) => k !== '__metadata__').every((k) => /\.lora_[AB]\.weight$/.test(k))).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('resumes a run interrupted by a reload from the home page, with one click', async () => {
    const steps = 3;
    await page.goto(`${app.url}/#/`);
    const id = await startRun({ ...RUN, max_steps: steps, save_steps: 1 });
    await withLogs(expect.poll(async () => Number(await page.getByTestId('chart-reward').getAttribute('data-points')), { timeout: TRAIN_TIMEOUT_MS, interval: 250 }).toBeGreaterThanOrEqual(1));
    await page.goto(`${app.url}/#/`);
    await page.reload();
    // The reloaded tab has no model loaded; the home page marks the run and offers resume itself.
    const row = page.locator(`[data-testid=run-row][data-run-id="${id}"]`);
    await row.waitFor({ timeout: 30_000 });
    // The old page's run lock may outlive the reload by a moment; the list follows the lock.
    await expect.poll(() => row.getByTestId('run-row-status').textContent(), { timeout: 15_000 }).toBe('interrupted');
    await page.screenshot({ path: `${SCREENSHOTS}home-runs.png` });
    const posted: number[] = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().endsWith(`/api/runs/${id}/steps`)) posted.push((req.postDataJSON() as { step: number }).step);
    });
    await row.getByTestId('resume-run').click();
    await page.waitForURL(new RegExp(`#/runs/${id}$`), { timeout: 120_000 });
    await waitDone(page);
    expect(posted.length).toBeGreaterThanOrEqual(1);
    expect(posted.length).toBeLessThan(steps);
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as { run: { status: string }; steps: { step: number }[] };
    expect(stored.run.status).toBe('finished');
    expect(stored.steps.map((x) => x.step)).toEqual([...Array(steps).keys()]);
  });

  it('says what the first step is doing, and for how long, before any step has timed the run', async () => {
    await page.goto(`${app.url}/#/`);
    await startRun({ ...RUN, max_steps: 1 });
    // The worker's step progress: the phase with its counts, not a bare "first step running…".
    await withLogs(expect.poll(() => page.getByRole('progressbar').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 50 }).toMatch(/^step 1 of 1 running \d+s · (rollouts|scoring|training)/));
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${SCREENSHOTS}run-first-step.png`, clip: { x: 0, y: 0, width: 1280, height: 560 } });
    await waitDone(page);
  });
});
