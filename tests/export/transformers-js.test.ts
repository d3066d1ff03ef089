// The ONNX export in transformers.js, in headless Chromium, with nothing from the network: it loads
// the exported folder from a loopback URL, and greedy `generate` yields the tokens `webgrpo generate
// --temperature 0` yields (wasm and WebGPU on SwiftShader) for the demo model and a generated untied
// GQA Qwen3; a tool-calling conversation renders through transformers.js's apply_chat_template to
// the text our chat template renders.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startTjsServer, type TjsServer } from '../../bench/peer/tjs-server.ts';
import { run as runExport } from '../../src/cli/export.ts';
import { run as runGenerate } from '../../src/cli/generate.ts';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { templateSpecialTokens } from '../../src/rl/rollout/templates/select.ts';
import { launchChromium } from '../../bench/browser/harness.ts';
import { captureCliJson } from '../cli-capture.ts';

vi.setConfig({ testTimeout: 300_000, hookTimeout: 120_000 });

const PROMPT = 'The agent said: hello';
const NEW_TOKENS = 12;

let root: string;
let server: TjsServer;
let browser: Browser;
let page: Page;
const offSite: string[] = [];

async function cli(fn: (argv: string[]) => Promise<number>, argv: string[]): Promise<any> {
  const { code, json } = await captureCliJson(() => fn(argv));
  expect(code).toBe(0);
  return json;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'tjs-export-'));
  const generated = join(root, 'generated-src');
  for (const [name, bytes] of (await makeTinyModel({ seed: 5, hidden: 48, heads: 4, kvHeads: 1, headDim: 16, intermediate: 80, tie: false })).files) {
    mkdirSync(dirname(join(generated, name)), { recursive: true });
    writeFileSync(join(generated, name), bytes);
  }
  await cli(runExport, ['onnx', '--model', 'models/demo', '--out', join(root, 'demo')]);
  await cli(runExport, ['onnx', '--model', generated, '--out', join(root, 'generated')]);
  server = await startTjsServer({ demo: join(root, 'demo'), generated: join(root, 'generated') });
  browser = await launchChromium();
  page = await browser.newPage();
  // Anything not on the loopback server is a test failure, not a download.
  await page.route('**/*', (route) => {
    const url = route.request().url();
    if (url.startsWith(server.url)) return route.continue();
    offSite.push(url);
    return route.abort();
  });
  await page.goto(server.url);
});

afterAll(async () => {
  await browser?.close();
  await server?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

async function tjsGreedy(model: string, device: 'wasm' | 'webgpu'): Promise<number[]> {
  return page.evaluate(`(async () => {
    ${server.setupScript}
    const tok = await tjs.AutoTokenizer.from_pretrained(${JSON.stringify(model)});
    const lm = await tjs.AutoModelForCausalLM.from_pretrained(${JSON.stringify(model)}, { device: ${JSON.stringify(device)} });
    const inputs = tok(${JSON.stringify(PROMPT)});
    const out = await lm.generate({ ...inputs, max_new_tokens: ${NEW_TOKENS}, do_sample: false });
    const ids = out.tolist()[0].map(Number);
    await lm.dispose();
    return ids.slice(inputs.input_ids.dims[1]);
  })()`);
}

describe('the ONNX export in transformers.js (headless Chromium)', () => {
  for (const [model, dir] of [['demo', 'models/demo'], ['generated', 'generated-src']] as const) {
    it(`${model}: greedy generate equals webgrpo generate --temperature 0, on wasm and on WebGPU`, async () => {
      const ours = await cli(runGenerate, ['--model', dir === 'models/demo' ? dir : join(root, dir), '--prompt', PROMPT, '--temperature', '0', '--max-new-tokens', String(NEW_TOKENS)]);
      const want: number[] = ours.completions[0].ids;
      expect(want.length).toBeGreaterThan(0);
      expect(await tjsGreedy(model, 'wasm')).toEqual(want);
      expect(await tjsGreedy(model, 'webgpu')).toEqual(want);
      expect(offSite).toEqual([]);
    });
  }

  it('a tool-calling turn renders through transformers.js apply_chat_template exactly as ours', async () => {
    const tools = [{ type: 'function', function: { name: 'echo_message', description: 'Echo a message back.', parameters: { type: 'object', properties: { message: { type: 'string', description: 'what to echo' } }, required: ['message'] } } }];
    const messages: ChatMessage[] = [
      { role: 'system', content: 'You are a helpful agent.' },
      { role: 'user', content: 'Say hi through the tool.' },
      { role: 'assistant', content: '', tool_calls: [{ type: 'function', function: { name: 'echo_message', arguments: { message: 'hi' } } }] },
      { role: 'tool', name: 'echo_message', content: 'hi' },
    ];
    // Our tokenizer and template read from the exported folder: the files transformers.js gets.
    const exported = nodeFolderFiles(join(root, 'demo'));
    const tokenizer = await loadCheckpointTokenizer(exported, exported.location);
    const ours = renderChat(tokenizer.chatTemplate!, messages, { tools, addGenerationPrompt: true, specialTokens: templateSpecialTokens(tokenizer) });
    const theirs = await page.evaluate(`(async () => {
      ${server.setupScript}
      const tok = await tjs.AutoTokenizer.from_pretrained('demo');
      return tok.apply_chat_template(${JSON.stringify(messages)}, { tools: ${JSON.stringify(tools)}, add_generation_prompt: true, tokenize: false });
    })()`);
    expect(ours).toContain('<tool_call>');
    expect(ours).toContain('<tool_response>');
    expect(theirs).toBe(ours);
  });
});
