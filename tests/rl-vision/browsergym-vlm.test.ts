// The `browsergym-vlm` task, examples/browsergym.mjs (TRL's examples/scripts/openenv/browsergym.py, BrowserGymVLMEnv;
// specs/browsergym.md §6.7–§6.8): its prompt and tool schemas as transformers builds them from TRL's
// methods, tool results as content blocks (the screenshot thumbnailed as PIL does, then the text),
// the reset text without an Error part, against a stand-in for OpenEnv's Space (full-size frames
// on every observation) and against our /envs/browsergym; and the clear refusal on a text-only model.

import { createServer, type Server } from 'node:http';
import { describe, expect, it } from 'vitest';
import { useBrowserGymServer } from '../rl-rollout/browsergym-server.ts';
import { run as train } from '../../src/cli/train.ts';
import { envTools, envToolSchemas } from '../../src/rl/rollout/env.ts';
import { thumbnail } from '../../src/rl/rollout/image-resize.ts';
import { imageFromRgbRows, type ContentBlock } from '../../src/rl/rollout/images.ts';
import { browsergymTask, browsergymVlmTask } from '../../src/rl/tasks/browsergym-task.ts';
import type { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { bindTask, resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

// transformers' get_json_schema of TRL's five VLM methods (annotated `-> list`), in TRL's (alphabetical) order.
const TRL_VLM_TOOLS = [
  {"type": "function", "function": {"name": "click", "description": "Click an element on the page.", "parameters": {"type": "object", "properties": {"bid": {"type": "string", "description": "The BrowserGym ID of the element to click."}}, "required": ["bid"]}, "return": {"type": "array", "description": "The updated page observation with screenshot."}}},
  {"type": "function", "function": {"name": "fill", "description": "Fill an input field with text.", "parameters": {"type": "object", "properties": {"bid": {"type": "string", "description": "The BrowserGym ID of the input field."}, "text": {"type": "string", "description": "The text to type into the field."}}, "required": ["bid", "text"]}, "return": {"type": "array", "description": "The updated page observation with screenshot."}}},
  {"type": "function", "function": {"name": "noop", "description": "Do nothing and observe the current page state.", "parameters": {"type": "object", "properties": {}}, "return": {"type": "array", "description": "The current page observation with screenshot."}}},
  {"type": "function", "function": {"name": "scroll", "description": "Scroll the page.", "parameters": {"type": "object", "properties": {"direction": {"type": "string", "description": "Direction to scroll, either 'up' or 'down'."}}, "required": ["direction"]}, "return": {"type": "array", "description": "The updated page observation with screenshot."}}},
  {"type": "function", "function": {"name": "send_keys", "description": "Send keyboard input to the page.", "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "The keyboard input to send."}}, "required": ["text"]}, "return": {"type": "array", "description": "The updated page observation with screenshot."}}},
];

const TREE = "RootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'";

/** An H×W×3 frame as OpenEnv's Space sends it: white, a dark button-sized block. */
function frame(width: number, height: number): number[][][] {
  return Array.from({ length: height }, (_, y) => Array.from({ length: width }, (_, x) => (x > 40 && x < 140 && y > 50 && y < 150 ? [30, 60, 200] : [255, 255, 255])));
}

/**
 * A stand-in for OpenEnv's Space over its HTTP routes (no /ws, so the class's client falls back to
 * POST /reset and /step): every observation carries a full 640×360 frame; it records the reset kwargs.
 */
async function fakeSpace(resets: Record<string, unknown>[]): Promise<{ url: string; server: Server }> {
  const observation = (extra: Record<string, unknown>) => ({ goal: 'Click the button.', axtree_txt: TREE, error: '', last_action_error: false, screenshot: frame(640, 360), ...extra });
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const json = body ? JSON.parse(body) : {};
      let reply: unknown;
      if (req.method === 'POST' && req.url === '/reset') {
        resets.push(json);
        reply = { observation: observation({ error: 'stale', last_action_error: true }), reward: 0, done: false };
      } else if (req.method === 'POST' && req.url === '/step') {
        reply = json.action?.action_str === "click('13')"
          ? { observation: observation({}), reward: 1, done: true }
          : { observation: observation({ error: 'ValueError: no such bid', last_action_error: true, screenshot: null }), reward: 0, done: false };
      }
      res.writeHead(reply ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(reply ?? { detail: 'Not Found' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}

/** The episode's state on the user's instance (TRL's environments[i]). */
const game = (env: ClassEnv) => env.instance as { reward: number; done: boolean; _steps: number };

describe('TRL browsergym.py as data', () => {
  it("tool schemas are byte-equal to get_json_schema of TRL's VLM methods; the prompt announces screenshots", async () => {
    const task = await browsergymVlmTask();
    expect(task.needsVision).toBe(true);
    expect(JSON.stringify(envToolSchemas(task.envFactory({ browsergym: 'http://unused' })()))).toBe(JSON.stringify(TRL_VLM_TOOLS));
    const [row] = task.dataset(1);
    const text = (await browsergymTask()).dataset(1)[0]!.prompt[0]!.content as string;
    const system = text.replace(
      "bid='13'.\n\n",
      "bid='13'.\n\nYou will see a screenshot of the page after each action. Use the visual information\nalong with the page structure to decide your next action.\n\n",
    );
    expect(system).not.toBe(text);
    expect(row).toEqual({ prompt: [{ role: 'system', content: system }, { role: 'user', content: 'Complete the web task successfully.' }], task_name: 'click-test' });
    expect(task.config).toMatchObject({ learning_rate: 5e-6, num_generations: 4, max_completion_length: 1024, gradient_accumulation_steps: 32, log_completions: true });
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['reward_completion']);
  });

  it("against OpenEnv's Space: reset text without Error, tool results [screenshot thumbnailed to 512, text], TRL's reward", async () => {
    const resets: Record<string, unknown>[] = [];
    const space = await fakeSpace(resets);
    const task = await browsergymVlmTask();
    const env = task.envFactory({ browsergym: space.url })() as ClassEnv;
    try {
      expect(await env.reset(task.dataset(1)[0]!)).toBe(`Goal: Click the button.\n\nPage structure:\n${TREE}`);
      // The Space's reset signature drops `screenshot`; our server needs it to send one.
      expect(resets).toEqual([{ task_name: 'click-test', screenshot: true }]);
      const click = envTools(env).find((t) => t.declaration.name === 'click')!;
      const missed = (await click.call({ bid: '99' })) as ContentBlock[];
      expect(missed).toEqual([{ type: 'text', text: `Goal: Click the button.\n\nError: ValueError: no such bid\n\nPage structure:\n${TREE}` }]);
      const hit = (await click.call({ bid: '13' })) as ContentBlock[];
      expect(hit.map((b) => b.type)).toEqual(['image', 'text']);
      const shot = (hit[0] as Extract<ContentBlock, { type: 'image' }>).image;
      expect([shot.width, shot.height]).toEqual([512, 288]);
      const expected = thumbnail(imageFromRgbRows(frame(640, 360))!, 512);
      expect(Buffer.from(shot.rgba).equals(Buffer.from(expected.rgba))).toBe(true);
      expect([game(env).reward, game(env).done, game(env)._steps]).toEqual([1, true, 2]);
    } finally {
      await env.close();
      space.server.close();
    }
  });

  it('refuses malformed screenshot pixels with the reason', () => {
    expect(() => imageFromRgbRows([[[0, 0, 0]], [[0, 0]]])).toThrow('screenshot: pixel (0, 1) is not an [r, g, b] triple');
    expect(() => imageFromRgbRows([[[0, 0, 256]]])).toThrow(/channel value 256/);
    expect(imageFromRgbRows(null)).toBeNull();
  });
});

describe('against /envs/browsergym', () => {
  const gym = useBrowserGymServer();

  it('the page as a screenshot (at most 512 pixels a side) and its text after every action', async () => {
    const task = await browsergymVlmTask();
    const env = task.envFactory({ browsergym: gym.url() }, seededEpisodes(42))() as ClassEnv;
    try {
      expect(await env.reset(task.dataset(1)[0]!)).toBe(`Goal: Click the button.\n\nPage structure:\n${TREE}`);
      const content = (await envTools(env).find((t) => t.declaration.name === 'click')!.call({ bid: '13' })) as ContentBlock[];
      expect(content[1]).toEqual({ type: 'text', text: `Goal: Click the button.\n\nPage structure:\n${TREE}, focused` });
      const shot = (content[0] as Extract<ContentBlock, { type: 'image' }>).image;
      expect(Math.max(shot.width, shot.height)).toBeLessThanOrEqual(512);
      expect(Math.max(shot.width, shot.height)).toBeGreaterThan(100);
      // A rendered page: not one flat colour.
      expect(new Set(shot.rgba.filter((_, i) => i % 4 === 0)).size).toBeGreaterThan(8);
      expect([game(env).reward, game(env).done]).toEqual([1, true]);
    } finally {
      await env.close();
    }
  }, 60_000);
});

describe('a text-only model', () => {
  it('cannot train browsergym-vlm: bindTask and `webgrpo train` say it needs a vision model', async () => {
    const resolved = await resolveTask({ env: 'browsergym-vlm', url: 'http://127.0.0.1:9/envs/browsergym' });
    expect(resolved.name).toBe('browsergym-vlm');
    expect(() => bindTask(resolved, { tokenizer: qwen3Tokenizer() })).toThrow(/the browsergym-vlm task needs a vision model/);
    // A VL checkpoint whose vision_config cannot be used loads as text: the refusal says why.
    expect(() => bindTask(resolved, { tokenizer: qwen3Tokenizer(), visionError: 'vision_config: depth must be a positive integer' })).toThrow(/needs a vision model: .*its vision tower cannot be used \(vision_config: depth must be a positive integer\)/);
    expect(bindTask(resolved, { tokenizer: qwen3Tokenizer(), readsImages: true }).tools).toEqual(TRL_VLM_TOOLS);
    expect((await resolveTask({ env: 'browsergym-vlm:click-test,enter-text' })).task.dataset(2).map((r) => r.task_name)).toEqual(['click-test', 'enter-text']);
    await expect(train(['--model', 'models/demo', '--env', 'browsergym-vlm', '--env-url', 'http://127.0.0.1:9/envs/browsergym'])).rejects.toThrow(/the browsergym-vlm task needs a vision model/);
  }, 60_000);
});
