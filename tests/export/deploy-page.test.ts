// The README's deploy page is the page this test runs (issue 33): docs/deploy/agent.html, included in
// the README verbatim, runs a freshly trained echo agent — one GRPO step of `webgrpo train --output`
// on the demo model, exported with `webgrpo export onnx --adapter` — in headless Chromium with
// transformers.js on wasm, nothing from the network, and the agent calls its run's tool: the export
// carries the chat template kwargs and tool schemas the run trained with.

import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTjsServer, type TjsServer } from '../../bench/peer/tjs-server.ts';
import { run as runExport } from '../../src/cli/export.ts';
import { launchChromium } from '../../bench/browser/harness.ts';
import { captureCliJson } from '../cli-capture.ts';
import { runTrainCli } from '../rl-learn/train-cli-run.ts';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 600_000 });

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const PAGE = join(ROOT, 'docs/deploy/agent.html');

let root: string;
let site: string;
let exported: { chat_template_kwargs: unknown; tools: string[] | null };
let server: TjsServer;
let browser: Browser;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'deploy-page-'));
  // The README's echo LoRA run, cut to one small GRPO step.
  const train = await runTrainCli([
    '--model', 'models/demo', '--env', 'echo', '--train_mode', 'lora', '--max_steps', '1',
    '--num_generations', '2', '--per_device_train_batch_size', '2', '--output', join(root, 'run'),
  ]);
  expect(train.code).toBe(0);
  // The page's folder, as the README lays it out.
  site = join(root, 'site');
  mkdirSync(site);
  cpSync(PAGE, join(site, 'agent.html'));
  symlinkSync(join(ROOT, 'node_modules/@huggingface/transformers/dist'), join(site, 'transformers'));
  symlinkSync(join(ROOT, 'node_modules/onnxruntime-web/dist'), join(site, 'ort'));
  const { code, json } = await captureCliJson(() => runExport(['onnx', '--model', 'models/demo', '--adapter', join(root, 'run', 'adapter'), '--out', join(site, 'my-agent')]));
  expect(code).toBe(0);
  exported = json;
  server = await startTjsServer({ site });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('the README deploy page on a freshly trained echo agent', () => {
  it('the README shows docs/deploy/agent.html verbatim', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const section = readme.slice(readme.indexOf('A web page that runs the exported agent'));
    const block = /```html\n([\s\S]*?)```/.exec(section);
    expect(block?.[1]).toBe(readFileSync(PAGE, 'utf8'));
  });

  it('the export carries the run\'s chat template kwargs and tools in tokenizer_config.json', () => {
    expect(exported.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(exported.tools).toEqual(['echo']);
    const config = JSON.parse(readFileSync(join(site, 'my-agent', 'tokenizer_config.json'), 'utf8'));
    expect(config.chat_template_kwargs).toEqual({ enable_thinking: false });
    expect(config.tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(['echo']);
    expect(config.tools[0].function.parameters.required).toEqual(['message']);
  });

  it('runs offline in Chromium (wasm) and the agent calls echo', async () => {
    const page = await browser.newPage();
    const offSite: string[] = [];
    // A page error (a module that failed to load, a throw) fails the test at once, with its message.
    const failed = new Promise<never>((_, reject) => page.on('pageerror', reject));
    await page.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith(server.url)) return route.continue();
      offSite.push(url);
      return route.abort();
    });
    await page.goto(`${server.url}/models/site/agent.html`);
    const done = page.waitForFunction(() => {
      const text = document.getElementById('out')?.textContent ?? '';
      return text !== 'loading…' ? text : null;
    }, undefined, { timeout: 0, polling: 200 });
    const reply = (await (await Promise.race([done, failed])).jsonValue()) as string;
    expect(offSite).toEqual([]);
    expect(reply).toContain('<tool_call>');
    expect(/<tool_call>\s*\{"name":\s*"echo"/.test(reply), reply).toBe(true);
    await page.close();
  });
});
