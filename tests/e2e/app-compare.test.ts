// Runs compared and shared beyond this server (issue 24), in headless Chromium against the app as
// `webgrpo start` serves it: two runs (imported, so no training is needed) ticked in the runs list open
// in the compare view, their curves overlaid on one step axis and their config differences listed; a
// run exported as a page opens from file:// with its charts, config and adapter, no server needed; a
// full fine-tuning run's model is offered whole (one zip) by the share view and by the exported page.
// Screenshots to docs/screenshots/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { unzipSync } from 'fflate';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

/** An exported run of `n` GRPO steps whose success climbs at `rate` a step. */
function runExport(name: string, n: number, rate: number, config: Record<string, unknown>) {
  const steps = Array.from({ length: n }, (_, step) => ({
    step,
    metrics: { reward: 0.3 + rate * step, 'rewards/reward_func/mean': 0.3 + rate * step, reward_std: 0.2, success_rate: Math.min(1, 0.2 + rate * step), loss: -0.01 * step, kl: 0.001 * step, entropy: 0.5 - 0.02 * step, 'completions/mean_length': 20 + step, phase_sft: 0 },
  }));
  return { format: 'webgrpo-run', version: 1, run: { name, status: 'finished', createdAt: '', updatedAt: '', config, model: { name: 'built-in demo' }, env: { name: 'echo', task: 'echo' }, error: null }, steps, rollouts: [] };
}

describe('the compare view and the exported page', { timeout: 300_000 }, () => {
  let app: AppServer;
  let browser: Browser;
  const post = async (body: unknown) => (await (await fetch(`${app.url}/api/runs/import`, { method: 'POST', headers: { 'content-type': 'application/json', origin: app.url }, body: JSON.stringify(body) })).json()) as { id: string; writeToken: string; shareToken: string };
  /** The page's browser imported them: it keeps their tokens, as the app's import does. */
  const own = (page: Page, runs: { id: string; writeToken: string; shareToken: string }[]) =>
    page.evaluate((list) => list.forEach((r) => { localStorage.setItem(`webgrpo.run.${r.id}`, r.writeToken); localStorage.setItem(`webgrpo.share.${r.id}`, r.shareToken); }), runs);

  beforeAll(async () => {
    app = await startAppServer();
    browser = await launchChromium();
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  }, 60_000);

  it('overlays two ticked runs on one step axis and lists their config differences', async () => {
    const a = await post(runExport('lr 5e-4', 12, 0.06, { learning_rate: 5e-4, num_generations: 8, max_steps: 12 }));
    const b = await post(runExport('lr 1e-3', 8, 0.09, { learning_rate: 1e-3, num_generations: 8, max_steps: 8 }));
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 1000 } })).newPage();
    await page.goto(`${app.url}/#/`);
    await own(page, [a, b]);
    await page.goto(`${app.url}/#/runs`);
    for (const id of [a.id, b.id]) await page.locator(`[data-testid=run-row][data-run-id="${id}"]`).getByTestId('compare-pick').check();
    await page.getByTestId('compare-runs').click();
    await page.getByTestId('compare-view').waitFor({ timeout: 30_000 });
    // One step axis: the union of both runs' steps (12), each run a series of its own.
    const reward = page.getByTestId('chart-reward');
    await reward.waitFor();
    expect(Number(await reward.getAttribute('data-points'))).toBe(12);
    for (const metric of ['success rate', 'loss', 'kl', 'entropy', 'completion length']) await page.getByTestId(`chart-${metric}`).waitFor();
    expect(await reward.locator('.u-legend .u-series').count()).toBeGreaterThanOrEqual(3); // x + one per run
    // Each run's latest value beside the title, not one run's.
    expect(await reward.getByTestId('chart-current-series').allTextContents()).toEqual([String(Math.round((0.3 + 0.06 * 11) * 1000) / 1000), String(Math.round((0.3 + 0.09 * 7) * 1000) / 1000)]);
    const rows = await page.getByTestId('config-diff-row').allTextContents();
    expect(rows).toEqual(['learning_rate0.00050.001', 'max_steps128']);
    await page.screenshot({ path: `${SCREENSHOTS}compare-runs.png`, fullPage: true });
  });

  it('offers the model of a full fine-tuning run in the share view and in the exported page opened from disk', async () => {
    const run = await post(runExport('echo demo (full)', 4, 0.1, { train_mode: 'full', learning_rate: 5e-4, num_generations: 8, max_steps: 12 }));
    // The demo model's files as a full run keeps them (~420 KiB of weights), and the trainer checkpoint.
    const weights = Buffer.from(Array.from({ length: 420 * 1024 }, (_, i) => (i * 131) & 0xff));
    const config = Buffer.from(JSON.stringify({ model_type: 'qwen3', hidden_size: 64 }));
    const keep = (bundle: string, files: { name: string; bytes: Buffer }[]) => fetch(`${app.url}/api/runs/${run.id}/artifacts/${bundle}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: app.url, 'x-webgrpo-write-token': run.writeToken },
      body: JSON.stringify({ files: files.map((f) => ({ name: f.name, base64: f.bytes.toString('base64') })) }),
    });
    expect((await keep('model', [{ name: 'config.json', bytes: config }, { name: 'model.safetensors', bytes: weights }])).status).toBe(200);
    expect((await keep('checkpoint', [{ name: 'trainer_state.json', bytes: Buffer.from('{}') }])).status).toBe(200);
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    // The share view: a reader's browser, the model offered whole (one zip) and file by file.
    await page.goto(`${app.url}/#/runs/${run.id}?share=${run.shareToken}`);
    const kept = page.getByTestId('download-kept-model');
    await kept.waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('file-model-model.safetensors').count()).toBe(1);
    const unzipped = async (file: string) => unzipSync(new Uint8Array(fs.readFileSync(file)));
    const [zip] = await Promise.all([page.waitForEvent('download'), kept.click()]);
    expect(zip.suggestedFilename()).toBe('echo-demo-full-model.zip');
    const shared = await unzipped((await zip.path())!);
    expect(Object.keys(shared).sort()).toEqual(['config.json', 'model.safetensors']);
    expect(Buffer.from(shared['model.safetensors']!).equals(weights)).toBe(true);
    // What "success" means is said where the rate is shown; a chart with nothing logged says so, with no axes.
    expect(await page.getByTestId('chart-success rate').getByTestId('chart-note').textContent()).toMatch(/^echo success = the model called the echo tool/);
    expect(await page.getByTestId('chart-clip ratio').getByTestId('chart-empty').textContent()).toBe('not logged yet');
    expect(await page.getByTestId('chart-clip ratio').locator('.u-axis').first().isVisible()).toBe(false);
    // echo's one reward function is the reward itself: one line, one legend (and the ± std bounds).
    expect(await page.getByTestId('chart-reward').locator('.u-legend .u-label').allTextContents()).toEqual(['step', 'reward', '+std', '−std']);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: `${SCREENSHOTS}run-view-shared-full.png`, fullPage: true });

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-page').click()]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-page-'));
    try {
      const file = path.join(dir, download.suggestedFilename());
      await download.saveAs(file);
      await app.stop();
      const opened = await context.newPage();
      await opened.goto(pathToFileURL(file).href);
      expect(await opened.getByText('No weights were kept').count()).toBe(0);
      const link = opened.getByTestId('page-model');
      expect(await link.getAttribute('download')).toBe('echo-demo-full-model.zip');
      const href = (await link.getAttribute('href'))!;
      expect(href.startsWith('data:application/zip;base64,')).toBe(true);
      const files = unzipSync(new Uint8Array(Buffer.from(href.slice(href.indexOf(',') + 1), 'base64')));
      expect(Object.keys(files).sort()).toEqual(['config.json', 'model.safetensors']);
      expect(Buffer.from(files['model.safetensors']!).equals(weights)).toBe(true);
      expect(Buffer.from(files['config.json']!).equals(config)).toBe(true);
      // The link downloads from the page opened from disk, with no server.
      const [fromDisk] = await Promise.all([opened.waitForEvent('download'), link.click()]);
      expect(Object.keys(await unzipped((await fromDisk.path())!)).sort()).toEqual(['config.json', 'model.safetensors']);
      await opened.screenshot({ path: `${SCREENSHOTS}exported-page-model.png`, fullPage: true });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await app.restart();
    }
  });

  it('exports a run as one HTML page that opens from disk with its charts, config and adapter', async () => {
    const run = await post(runExport('shared run', 6, 0.1, { learning_rate: 5e-4, num_generations: 8, max_steps: 6 }));
    const adapter = Buffer.from('not really safetensors, but bytes all the same');
    const kept = await fetch(`${app.url}/api/runs/${run.id}/artifacts/adapter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: app.url, 'x-webgrpo-write-token': run.writeToken },
      body: JSON.stringify({ files: [{ name: 'adapter_model.safetensors', base64: adapter.toString('base64') }] }),
    });
    expect(kept.status).toBe(200);
    const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 1000 } });
    const page = await context.newPage();
    // Another browser: the run's id alone opens nothing, its share link does.
    await page.goto(`${app.url}/#/runs/${run.id}`);
    await page.getByTestId('not-found').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('not-found').textContent()).toMatch(/share link needed/);
    await page.screenshot({ path: `${SCREENSHOTS}share-link-needed.png` });
    await page.goto(`${app.url}/#/runs/${run.id}?share=${run.shareToken}`);
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-page').click()]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-page-'));
    try {
      const file = path.join(dir, download.suggestedFilename());
      await download.saveAs(file);
      expect(path.basename(file)).toBe(`webgrpo-run-${run.id}.html`);
      // A page to hand around: it carries no token (the owner's write token least of all).
      const html = fs.readFileSync(file, 'utf8');
      for (const secret of [run.writeToken, run.shareToken]) expect(html).not.toContain(secret);
      // The server is no part of it: stopped, the page still opens from disk with everything in it.
      await app.stop();
      const opened = await context.newPage();
      const requests: string[] = [];
      opened.on('request', (r) => requests.push(r.url()));
      await opened.goto(pathToFileURL(file).href);
      expect(await opened.getByTestId('page-status').textContent()).toBe('finished');
      const charts = opened.getByTestId('page-chart');
      expect(await charts.count()).toBe(6);
      expect(await charts.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-points'))))).toEqual([6, 6, 6, 6, 6, 6]);
      expect(await opened.getByTestId('page-config').textContent()).toContain('learning_rate0.0005');
      const link = opened.getByTestId('page-adapter');
      expect(await link.getAttribute('download')).toBe('adapter_model.safetensors');
      const href = (await link.getAttribute('href'))!;
      expect(Buffer.from(href.slice(href.indexOf(',') + 1), 'base64').equals(adapter)).toBe(true);
      expect(requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'))).toEqual([]);
      await opened.screenshot({ path: `${SCREENSHOTS}exported-page.png`, fullPage: true });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
      await app.restart();
    }
  });
});
