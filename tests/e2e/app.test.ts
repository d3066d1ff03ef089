// The app end to end in headless Chromium (WebGPU on SwiftShader), served the way `webgrpo start`
// serves it: load the built-in tiny model, pick built-in catch, train a few steps, watch the reward
// chart and the rollout viewer fill, open the share link in another browser context and see the same
// numbers, download the PEFT adapter and parse its files, and get the 404 page for an unknown run.
// Screenshots of each screen go to test-results/screenshots/.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import type { Browser, BrowserContext, Download, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import * as ort from 'onnxruntime-node';
import { readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { refLoraFromTensors, refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { TINY_MODEL_OPTIONS } from '../../workers/load-model.ts';
import { launchChromium } from '../../bench/browser/harness.ts';
import { startAppServer, type AppServer } from './app-server.ts';
import { E2E_RUN_CONFIG, fillConfig } from './run-config.ts';
import { browserLogs } from './browser-logs.ts';

// Slow by nature (Chromium): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const SCREENSHOTS = fileURLToPath(new URL('../../test-results/screenshots/', import.meta.url));
const SFT_STEPS = Number(E2E_RUN_CONFIG.sft_steps);
const GRPO_STEPS = Number(E2E_RUN_CONFIG.max_steps);
/** Training a few tiny steps on SwiftShader takes seconds alone, minutes on a loaded machine. */
const TRAIN_TIMEOUT_MS = 240_000;

/** The safetensors layout, read independently of the project's reader: u64 header size, JSON header, data. */
function checkSafetensors(bytes: Buffer): Record<string, { dtype: string; shape: number[] }> {
  const headerLength = Number(bytes.readBigUInt64LE(0));
  expect(8 + headerLength).toBeLessThanOrEqual(bytes.length);
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }>;
  const dataLength = bytes.length - 8 - headerLength;
  const tensors: Record<string, { dtype: string; shape: number[] }> = {};
  for (const [name, t] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    expect(t.dtype, name).toBe('F32');
    const [start, end] = t.data_offsets;
    expect(end - start, name).toBe(t.shape.reduce((a, b) => a * b, 1) * 4);
    expect(end, name).toBeLessThanOrEqual(dataLength);
    tensors[name] = { dtype: t.dtype, shape: t.shape };
  }
  return tensors;
}

describe('the app in Chromium', () => {
  let app: AppServer;
  let browser: Browser;
  let owner: BrowserContext;
  let page: Page;
  const { watch, withLogs, tail } = browserLogs();
  let runId = '';
  /** The PEFT files the adapter download held (the ONNX download must carry their effect). */
  let adapterFiles = new Map<string, Uint8Array>();

  const shot = async (p: Page, name: string) => {
    await p.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
  };
  beforeAll(async () => {
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    app = await startAppServer();
    browser = await launchChromium();
    // The share button copies the run's link: the test reads it back from the clipboard.
    owner = await browser.newContext({ acceptDownloads: true, viewport: { width: 1280, height: 900 }, permissions: ['clipboard-read', 'clipboard-write'] });
    page = await owner.newPage();
    watch(page, 'owner');
  });

  afterAll(async () => {
    await browser?.close();
    await app?.close();
  });

  it('loads the tiny model and sets up a catch run', async () => {
    await page.goto(`${app.url}/`);
    await expect.poll(() => page.getByTestId('adapter').textContent(), { timeout: 60_000 }).toMatch(/swiftshader/i);
    await page.getByTestId('load-model').click();
    await withLogs(page.getByTestId('model-info').waitFor({ timeout: 120_000 }));
    expect(await page.getByTestId('model-info').textContent()).toContain('built-in demo');
    await page.getByRole('button', { name: 'catch', exact: true }).click();
    await page.getByTestId('env-meta').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('env-meta').textContent()).toContain('healthy');
    await fillConfig(page, E2E_RUN_CONFIG);
    await shot(page, '1-setup');
  });

  it('trains a few steps and shows the reward chart and the rollouts', async () => {
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    runId = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 1000 }).toMatch(/finished|failed/));
    const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await page.getByTestId('run-status').textContent(), `${messages.join('\n')}\n${tail()}`).toBe('finished');
    expect(Number(await page.getByTestId('chart-reward').getAttribute('data-points'))).toBe(GRPO_STEPS);
    expect(Number(await page.getByTestId('chart-loss').getAttribute('data-points'))).toBe(SFT_STEPS + GRPO_STEPS);
    const rollouts = page.getByTestId('rollout');
    expect(await rollouts.count()).toBe(Number(E2E_RUN_CONFIG.num_generations));
    await shot(page, '2-run-finished');
    await rollouts.first().getByRole('button').first().click();
    const conversation = await rollouts.first().textContent();
    expect(conversation).toContain('assistant');
    // The prompt as the model saw it, with its special tokens drawn apart from the text.
    expect(await page.locator('.group .prompt .special').first().textContent()).toBe('<|im_start|>');
    await shot(page, '3-rollout-open');
  });

  it('shows the same run, read-only, through its share link in another browser', async () => {
    const other = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const viewer = await other.newPage();
      watch(viewer, 'viewer');
      // The run's id alone opens nothing: a team server would show every run to anyone otherwise.
      await viewer.goto(`${app.url}/#/runs/${runId}`);
      await viewer.getByTestId('not-found').waitFor({ timeout: 30_000 });
      expect(await viewer.getByTestId('not-found').textContent()).toMatch(/share link needed.*only through its share link \(no share token was given\)/);
      await page.getByTestId('share').click();
      const link = await page.evaluate(() => navigator.clipboard.readText());
      expect(link).toMatch(new RegExp(`^${app.url}/#/runs/${runId}\\?share=[A-Za-z0-9_-]{22}$`));
      await viewer.goto(link);
      await expect.poll(() => viewer.getByTestId('chart-reward').getAttribute('data-points'), { timeout: 30_000 }).toBe(String(GRPO_STEPS));
      expect(await viewer.getByText('Read-only view of a shared run.').count()).toBe(1);
      expect(await viewer.getByTestId('run-status').textContent()).toBe('finished');
      for (const chart of ['chart-reward', 'chart-loss', 'chart-entropy', 'chart-tokens/s']) {
        expect(await viewer.getByTestId(chart).getAttribute('data-points'), chart).toBe(await page.getByTestId(chart).getAttribute('data-points'));
      }
      expect(await viewer.locator('.summary').textContent()).toBe(await page.locator('.summary').textContent());
      await expect.poll(() => viewer.getByTestId('rollout').count(), { timeout: 30_000 }).toBe(Number(E2E_RUN_CONFIG.num_generations));
      await shot(viewer, '4-shared-view');
    } finally {
      await other.close();
    }
  });

  it('downloads the LoRA adapter as PEFT files that parse', async () => {
    const downloads: Download[] = [];
    page.on('download', (d) => downloads.push(d));
    await page.getByTestId('download-adapter').click();
    // One download: a zip of the PEFT folder.
    await withLogs(expect.poll(() => downloads.length, { timeout: 60_000 }).toBe(1));
    expect(downloads[0]!.suggestedFilename()).toMatch(/-adapter\.zip$/);
    const files = new Map(Object.entries(unzipSync(fs.readFileSync((await downloads[0]!.path())!))).map(([k, v]) => [k, Buffer.from(v)]));
    expect([...files.keys()].sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    adapterFiles = new Map([...files].map(([k, v]) => [k, new Uint8Array(v)]));

    const config = JSON.parse(files.get('adapter_config.json')!.toString('utf8'));
    expect(config.peft_type).toBe('LORA');
    expect(config.task_type).toBe('CAUSAL_LM');
    expect(config.r).toBe(E2E_RUN_CONFIG.lora_r);
    expect(config.lora_alpha).toBe(E2E_RUN_CONFIG.lora_alpha);
    expect(config.base_model_name_or_path).toBe('built-in demo');

    const tensors = checkSafetensors(files.get('adapter_model.safetensors')!);
    const names = Object.keys(tensors);
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) expect(name).toMatch(/^base_model\.model\.model\.layers\.\d+\.(self_attn|mlp)\.[a-z]+_proj\.lora_[AB]\.weight$/);
    const qA = tensors['base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight'];
    expect(qA?.shape[0]).toBe(E2E_RUN_CONFIG.lora_r);
  });

  it('downloads the model for transformers.js: ONNX that onnxruntime scores as base + the downloaded adapter', async () => {
    const downloads: Download[] = [];
    page.on('download', (d) => downloads.push(d));
    await page.getByTestId('download-onnx').scrollIntoViewIfNeeded();
    await shot(page, 'download-transformers-js');
    await page.getByTestId('download-onnx').click();
    await withLogs(expect.poll(() => downloads.length, { timeout: 120_000 }).toBe(1));
    expect(downloads[0]!.suggestedFilename()).toMatch(/-transformers-js\.zip$/);
    const files = unzipSync(fs.readFileSync((await downloads[0]!.path())!));
    expect(Object.keys(files).sort()).toEqual(['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
    // What the run rendered its chats with, for the page that deploys it (README, docs/deploy/agent.html).
    const tokenizerConfig = JSON.parse(new TextDecoder().decode(files['tokenizer_config.json']!));
    expect(tokenizerConfig.chat_template_kwargs).toEqual(E2E_RUN_CONFIG.chat_template_kwargs);
    expect(tokenizerConfig.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['move', 'stay']);

    const base = await openCheckpoint('models/demo'); // the app's built-in demo model
    const cfg = base.config;
    const adapter = await readPeftAdapter(adapterFiles, cfg);
    const lora = refLoraFromTensors(cfg, { r: adapter.settings.r, alpha: adapter.settings.alpha, targets: adapter.settings.targetModules }, adapter.tensors);
    const ids = [5, 70, 33, 9, 120, 64, 2, 17];
    const i64 = (v: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), [1, v.length]);
    const feeds: Record<string, ort.Tensor> = { input_ids: i64(ids), attention_mask: i64(ids.map(() => 1)), position_ids: i64(ids.map((_, i) => i)) };
    for (let l = 0; l < cfg.numLayers; l++) for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, cfg.numKvHeads, 0, cfg.headDim]);
    const logits = (await (await ort.InferenceSession.create(files['onnx/model.onnx']!)).run(feeds)).logits!.data as Float32Array;
    const V = cfg.vocabSize;
    const got = ids.slice(1).map((id, t) => {
      const row = logits.subarray(t * V, (t + 1) * V);
      const max = row.reduce((m, x) => Math.max(m, x), -Infinity);
      return row[id]! - max - Math.log(row.reduce((sum, x) => sum + Math.exp(x - max), 0));
    });
    const want = refScore(cfg, await refWeightsFromCheckpoint(base), { ids, scoreFrom: 1 }, 1, lora).logprobs;
    expect(Math.max(...got.map((x, i) => Math.abs(x - want[i]!)))).toBeLessThan(1e-4);
  });

  it('evaluates the trained adapter greedily beside the base model', async () => {
    await page.getByTestId('eval-episodes').fill('8');
    await page.getByTestId('evaluate').click();
    await withLogs(page.getByTestId('eval-table').waitFor({ timeout: 120_000 }));
    const rows = await page.getByTestId('eval-table').locator('tbody tr').allTextContents();
    expect(rows).toHaveLength(2);
    expect(rows[0]).toMatch(/^base8/);
    expect(rows[1]).toMatch(/^trained8/);
    await shot(page, '5-evaluation');
  });

  it('resumes a run from its checkpoint after the tab was reloaded mid-run', async () => {
    const steps = 4;
    await page.goto(`${app.url}/#/`);
    await page.getByRole('button', { name: 'catch', exact: true }).click();
    await fillConfig(page, { ...E2E_RUN_CONFIG, sft_steps: 0, max_steps: steps, save_steps: 1 });
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
    const id = /#\/runs\/([A-Za-z0-9_-]+)$/.exec(page.url())![1]!;
    await withLogs(expect.poll(async () => Number(await page.getByTestId('chart-reward').getAttribute('data-points')), { timeout: TRAIN_TIMEOUT_MS, interval: 250 }).toBeGreaterThanOrEqual(1));
    await page.reload();

    // The reloaded tab has no model: load it again, then come back to the interrupted run.
    const banner = page.getByText('This run was interrupted');
    await banner.waitFor({ timeout: 30_000 });
    await shot(page, '6-interrupted');
    await page.goto(`${app.url}/#/`);
    await page.getByTestId('load-model').click();
    await withLogs(page.getByTestId('model-info').waitFor({ timeout: 120_000 }));
    await page.goto(`${app.url}/#/runs/${id}`);
    // Count the steps this tab posts after the resume: only those after the checkpoint.
    const postedAfterResume: number[] = [];
    page.on('request', (req) => {
      if (req.method() === 'POST' && req.url().endsWith(`/api/runs/${id}/steps`)) postedAfterResume.push((req.postDataJSON() as { step: number }).step);
    });
    await page.getByRole('button', { name: 'resume from the last checkpoint' }).click();
    await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 1000 }).toMatch(/finished|failed/));
    const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
    expect(await page.getByTestId('run-status').textContent(), messages.join('\n')).toBe('finished');

    // This tab trained only the steps after the checkpoint, not the run again from its start,
    // and its charts show the whole run (the stored steps before the reload included).
    expect(postedAfterResume.length).toBeGreaterThanOrEqual(1);
    expect(postedAfterResume.length).toBeLessThan(steps);
    expect(postedAfterResume[0]).toBeGreaterThan(0);
    expect(Number(await page.getByTestId('chart-reward').getAttribute('data-points'))).toBe(steps);
    // The run store holds every step exactly once, numbered as in one uninterrupted run.
    const stored = (await (await fetch(`${app.url}/api/runs/${id}`)).json()) as { run: { status: string }; steps: { step: number }[] };
    expect(stored.run.status).toBe('finished');
    expect(stored.steps.map((x) => x.step)).toEqual([...Array(steps).keys()]);
  });

  it('loads a model from a folder picked on disk', async () => {
    const folder = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-e2e-pick-')), 'my-tiny-qwen3');
    fs.mkdirSync(folder);
    for (const [name, bytes] of await makeTinyCheckpointFiles(TINY_MODEL_OPTIONS)) fs.writeFileSync(path.join(folder, name), bytes);
    try {
      await page.goto(`${app.url}/#/`);
      await page.getByLabel('local folder').check();
      await page.locator('input[type=file][webkitdirectory]').setInputFiles(folder);
      await page.getByTestId('load-model').click();
      await withLogs(expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 120_000 }).toContain('my-tiny-qwen3'));
      expect(await page.getByTestId('model-info').textContent()).toContain('2 layers, hidden 64');
    } finally {
      fs.rmSync(path.dirname(folder), { recursive: true, force: true });
    }
  });

  it('loads a Qwen3.5 folder picked on disk and trains a few GRPO steps of echo on it', async () => {
    const folder = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-e2e-pick-')), 'my-tiny-qwen3_5');
    fs.mkdirSync(folder);
    const qwen35 = { ...TINY_MODEL_OPTIONS, arch: 'qwen3_5' as const, layers: 3, layerTypes: ['linear_attention' as const, 'full_attention' as const, 'linear_attention' as const] };
    for (const [name, bytes] of await makeTinyCheckpointFiles(qwen35)) fs.writeFileSync(path.join(folder, name), bytes);
    try {
      await page.goto(`${app.url}/#/`);
      await page.getByLabel('local folder').check();
      await page.locator('input[type=file][webkitdirectory]').setInputFiles(folder);
      await page.getByTestId('load-model').click();
      await withLogs(expect.poll(() => page.getByTestId('model-info').textContent(), { timeout: 120_000 }).toContain('my-tiny-qwen3_5'));
      const info = await page.getByTestId('model-info').textContent();
      expect(info).toContain('Qwen3.5, 3 layers (2 Gated DeltaNet, 1 gated attention)');
      // The memory plan counts the DeltaNet layers' per-sequence state.
      expect(info).toContain('linear-attention state');
      await page.getByRole('button', { name: 'echo', exact: true }).click();
      await fillConfig(page, E2E_RUN_CONFIG);
      await shot(page, '8-qwen3_5-setup');
      await page.getByTestId('start-run').click();
      await page.waitForURL(/#\/runs\/[A-Za-z0-9_-]+$/);
      await withLogs(expect.poll(() => page.getByTestId('run-status').textContent(), { timeout: TRAIN_TIMEOUT_MS, interval: 1000 }).toMatch(/finished|failed/));
      const messages = await page.locator('[role=status], [role=alert], .error').allTextContents();
      expect(await page.getByTestId('run-status').textContent(), `${messages.join('\n')}\n${tail()}`).toBe('finished');
      expect(Number(await page.getByTestId('chart-reward').getAttribute('data-points'))).toBe(GRPO_STEPS);
      expect(Number(await page.getByTestId('chart-loss').getAttribute('data-points'))).toBe(SFT_STEPS + GRPO_STEPS);
      expect(await page.getByTestId('rollout').count()).toBe(Number(E2E_RUN_CONFIG.num_generations));
      await shot(page, '9-qwen3_5-echo-finished');
    } finally {
      fs.rmSync(path.dirname(folder), { recursive: true, force: true });
    }
  });

  it('shows the 404 page for an unknown run id', async () => {
    await page.goto(`${app.url}/#/runs/no-such-run-0000`);
    await page.getByTestId('not-found').waitFor({ timeout: 30_000 });
    expect(await page.getByTestId('not-found').textContent()).toContain('404');
    await shot(page, '7-not-found');
  });
});
