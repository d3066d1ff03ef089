// The `browsergym-vlm` task (TRL's examples/scripts/openenv/browsergym.py, BrowserGymVLMEnv;
// specs/browsergym.md §6.7–§6.8): its prompt and tool schemas as transformers builds them from TRL's
// methods, tool results as content blocks (the screenshot thumbnailed as PIL does, then the text),
// the reset text without an Error part, against a stand-in for OpenEnv's Space (full-size frames
// on every observation) and against our /envs/browsergym; and the clear refusal on a text-only model.

import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { useBrowserGymServer } from '../rl-rollout/browsergym-server.ts';
import { run as train } from '../../src/cli/train.ts';
import type { StepResult } from '../../src/openenv/index.ts';
import { envTools, envToolSchemas, type ToolEnv } from '../../src/rl/rollout/env.ts';
import { envClassTask } from '../../src/rl/tasks/env-class.ts';
import { loadEnvClassFile } from '../../src/rl/tasks/env-class-file.ts';
import { thumbnail } from '../../src/rl/rollout/image-resize.ts';
import { imageFromRgbRows, type ContentBlock } from '../../src/rl/rollout/images.ts';
import type { EpisodeSession, OpenEpisode } from '../../src/rl/tasks/envs/episode-session.ts';
import { BROWSERGYM_VLM_SYSTEM_PROMPT, BrowserGymVlmToolEnv } from '../../src/rl/tasks/envs/browsergym-vlm.ts';
import { BROWSERGYM_SYSTEM_PROMPT } from '../../src/rl/tasks/envs/browsergym.ts';
import { bindTask, resolveTask } from '../../src/rl/tasks/resolve-task.ts';
import { EXAMPLES } from '../../src/rl/tasks/prompts.ts';
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

/** A stand-in for OpenEnv's Space: every observation carries a full 640×360 frame; it records the reset kwargs. */
function fakeSpace(resets: Record<string, unknown>[]): OpenEpisode {
  const observation = (extra: Record<string, unknown>) => ({ goal: 'Click the button.', axtree_txt: TREE, error: '', last_action_error: false, screenshot: frame(640, 360), ...extra });
  return async (_url, reset) => {
    resets.push(reset ?? {});
    const first: StepResult = { observation: observation({ error: 'stale', last_action_error: true }), reward: 0, done: false };
    const session: EpisodeSession = {
      first,
      step: async (action) => (action.action_str === "click('13')"
        ? { observation: observation({}), reward: 1, done: true }
        : { observation: observation({ error: 'ValueError: no such bid', last_action_error: true, screenshot: null }), reward: 0, done: false }),
      close: async () => undefined,
    };
    return session;
  };
}

describe('TRL browsergym.py as data', () => {
  it("tool schemas are byte-equal to get_json_schema of TRL's VLM methods; the prompt announces screenshots", () => {
    const env = new BrowserGymVlmToolEnv('http://unused', seededEpisodes(1));
    expect(JSON.stringify(envToolSchemas(env))).toBe(JSON.stringify(TRL_VLM_TOOLS));
    const [row] = EXAMPLES['browsergym-vlm'].dataset(1);
    expect(row).toEqual({ prompt: [{ role: 'system', content: BROWSERGYM_VLM_SYSTEM_PROMPT }, { role: 'user', content: 'Complete the web task successfully.' }], task_name: 'click-test' });
    expect(BROWSERGYM_VLM_SYSTEM_PROMPT).toBe(BROWSERGYM_SYSTEM_PROMPT.replace(
      "bid='13'.\n\n",
      "bid='13'.\n\nYou will see a screenshot of the page after each action. Use the visual information\nalong with the page structure to decide your next action.\n\n",
    ));
    expect(EXAMPLES['browsergym-vlm'].config).toMatchObject({ learning_rate: 5e-6, num_generations: 4, max_completion_length: 1024, gradient_accumulation_steps: 32, log_completions: true });
    expect(EXAMPLES['browsergym-vlm'].rewardFuncs.map((f) => f.name)).toEqual(['reward_completion']);
  });

  it("against OpenEnv's Space: reset text without Error, tool results [screenshot thumbnailed to 512, text], TRL's reward", async () => {
    const resets: Record<string, unknown>[] = [];
    const env = new BrowserGymVlmToolEnv('https://openenv-browsergym-env.hf.space', fakeSpace(resets));
    expect(await env.reset(EXAMPLES['browsergym-vlm'].dataset(1)[0]!)).toBe(`Goal: Click the button.\n\nPage structure:\n${TREE}`);
    // The Space's reset signature drops `screenshot`; our server needs it to send one.
    expect(resets).toEqual([{ task_name: 'click-test', screenshot: true }]);
    const click = env.tools.find((t) => t.declaration.name === 'click')!;
    const missed = (await click.call({ bid: '99' })) as ContentBlock[];
    expect(missed).toEqual([{ type: 'text', text: `Goal: Click the button.\n\nError: ValueError: no such bid\n\nPage structure:\n${TREE}` }]);
    const hit = (await click.call({ bid: '13' })) as ContentBlock[];
    expect(hit.map((b) => b.type)).toEqual(['image', 'text']);
    const shot = (hit[0] as Extract<ContentBlock, { type: 'image' }>).image;
    expect([shot.width, shot.height]).toEqual([512, 288]);
    const expected = thumbnail(imageFromRgbRows(frame(640, 360))!, 512);
    expect(Buffer.from(shot.rgba).equals(Buffer.from(expected.rgba))).toBe(true);
    expect([env.reward, env.done, env.steps]).toEqual([1, true, 2]);
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
    const env = new BrowserGymVlmToolEnv(gym.url(), seededEpisodes(42));
    try {
      expect(await env.reset(EXAMPLES['browsergym-vlm'].dataset(1)[0]!)).toBe(`Goal: Click the button.\n\nPage structure:\n${TREE}`);
      const content = (await env.tools.find((t) => t.declaration.name === 'click')!.call({ bid: '13' })) as ContentBlock[];
      expect(content[1]).toEqual({ type: 'text', text: `Goal: Click the button.\n\nPage structure:\n${TREE}, focused` });
      const shot = (content[0] as Extract<ContentBlock, { type: 'image' }>).image;
      expect(Math.max(shot.width, shot.height)).toBeLessThanOrEqual(512);
      expect(Math.max(shot.width, shot.height)).toBeGreaterThan(100);
      // A rendered page: not one flat colour.
      expect(new Set(shot.rgba.filter((_, i) => i % 4 === 0)).size).toBeGreaterThan(8);
      expect([env.reward, env.done]).toEqual([1, true]);
    } finally {
      await env.close();
    }
  }, 60_000);
});

describe('examples/browsergym.mjs (TRL browsergym.py as an environment class)', () => {
  const gym = useBrowserGymServer();
  const load = async () => envClassTask(await loadEnvClassFile(fileURLToPath(new URL('../../examples/browsergym.mjs', import.meta.url))));

  it("renders as the browsergym-vlm task: TRL's VLM tool schemas (transformers-checked) and its prompt row", async () => {
    const task = await load();
    const env = task.envFactory({ browsergym: 'http://127.0.0.1:9/envs/browsergym' })();
    expect(JSON.stringify(envToolSchemas(env))).toBe(JSON.stringify(TRL_VLM_TOOLS));
    const { task_name: _, ...row } = EXAMPLES['browsergym-vlm'].dataset(1)[0]!;
    expect(task.dataset(1)[0]).toEqual(row);
    expect(task.config).toEqual({ ...EXAMPLES['browsergym-vlm'].config, env_call_timeout_s: 60 });
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['reward_completion']);
  });

  it('against /envs/browsergym: the same reset text and the same [screenshot, text] blocks, pixel for pixel, as the task', async () => {
    const play = async (env: ToolEnv) => {
      try {
        const first = await env.reset({ ...EXAMPLES['browsergym-vlm'].dataset(1)[0]!, task_name: 'click-test' });
        const click = envTools(env).find((t) => t.declaration.name === 'click')!;
        const missed = await click.call({ bid: '99' });
        const hit = await click.call({ bid: '13' });
        return { first, missed, hit };
      } finally {
        await env.close?.();
      }
    };
    const task = await load();
    const byClass = await play(task.envFactory({ browsergym: gym.url() }, seededEpisodes(42))());
    const byTask = await play(new BrowserGymVlmToolEnv(gym.url(), seededEpisodes(42)));
    expect(byClass.first).toBe(`Goal: Click the button.\n\nPage structure:\n${TREE}`);
    expect(byClass).toEqual(byTask);
    expect((byClass.hit as ContentBlock[]).map((b) => b.type)).toEqual(['image', 'text']);
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
