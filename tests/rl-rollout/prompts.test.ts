// The exact first prompts of the echo, catch and wordle examples: what transformers'
// apply_chat_template(messages, tools=…, add_generation_prompt=True, enable_thinking=False) produces
// with the real Qwen3 tokenizer, the expected texts written out from grpo-semantics.md §3.1 and §14.

import { describe, expect, it } from 'vitest';
import { renderChat } from '../../src/model/chat-template.ts';
import { envTools, type DatasetRow, type ToolEnv } from '../../src/rl/rollout/env.ts';
import { builtinClassTask } from '../../src/rl/tasks/env-class-builtin.ts';
import { CATCH_PROMPT, ECHO_PROMPTS, WORDLE_PROMPT } from './trl-prompts.ts';
import { renderPrompt } from '../../src/rl/rollout/rollout.ts';
import { rolloutChatTemplate } from '../../src/rl/rollout/templates/select.ts';
import { catchObservation, scriptedServer, WORDLE_RESET_LOG, wordleObservation } from './fake-episodes.ts';
import { qwen3Tokenizer } from './qwen3-tokenizer.ts';

const ECHO_SCHEMA =
  '{"type": "function", "function": {"name": "echo", "description": "Echo the message back from the environment.", "parameters": {"type": "object", "properties": {"message": {"type": "string", "description": "The message to echo"}}, "required": ["message"]}, "return": {"type": "string", "description": "The echoed message."}}}';
const MOVE_SCHEMA =
  '{"type": "function", "function": {"name": "move", "description": "Move the paddle left or right.", "parameters": {"type": "object", "properties": {"direction": {"type": "string", "description": "Direction to move, either \\"left\\" or \\"right\\"."}}, "required": ["direction"]}, "return": {"type": "string", "description": "The observation after moving."}}}';
const STAY_SCHEMA =
  '{"type": "function", "function": {"name": "stay", "description": "Do nothing and let the ball fall one step.", "parameters": {"type": "object", "properties": {}}, "return": {"type": "string", "description": "The observation after staying."}}}';
const GUESS_SCHEMA =
  '{"type": "function", "function": {"name": "guess", "description": "Make a guess in the Wordle environment.", "parameters": {"type": "object", "properties": {"guess": {"type": "string", "description": "The guessed word, formatted as \'[abcde]\'"}}, "required": ["guess"]}, "return": {"type": "string", "description": "The feedback message from the environment."}}}';

/** §3.1: system block with tools (no system message), one user turn, generation prompt without thinking. */
function expectedPrompt(schemas: string[], user: string): string {
  return (
    '<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
    'You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
    schemas.join('\n') +
    '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
    `<|im_start|>user\n${user}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n`
  );
}

const KWARGS = { enable_thinking: false };
const PROMPT_END = [151645, 198, 151644, 77091, 198, 151667, 271, 151668, 271];

async function firstPrompt(env: ToolEnv, row: DatasetRow) {
  const tok = qwen3Tokenizer();
  const observation = await env.reset(row);
  const prompt = structuredClone(row.prompt);
  const last = prompt[prompt.length - 1];
  if (typeof observation === 'string' && typeof last.content === 'string') last.content += observation;
  const tools = envTools(env);
  const template = rolloutChatTemplate(tok, { hasTools: tools.length > 0 });
  const rendered = renderPrompt({ tokenizer: tok, template, prompt, tools, chatTemplateKwargs: KWARGS });
  // Prompts have no assistant turn, so the checkpoint's own template renders the same bytes.
  const own = renderPrompt({ tokenizer: tok, template: tok.chatTemplate!, prompt, tools, chatTemplateKwargs: KWARGS });
  expect(own.text).toBe(rendered.text);
  return rendered;
}

describe('first prompts of the examples', () => {
  const tok = qwen3Tokenizer();

  it('every echo prompt renders with its own user text', async () => {
    for (const prompt of ECHO_PROMPTS) {
      const text = renderChat(tok.chatTemplate!, [{ role: 'user', content: prompt }], {
        tools: [JSON.parse(ECHO_SCHEMA)],
        addGenerationPrompt: true,
        chatTemplateKwargs: KWARGS,
      });
      expect(text).toBe(expectedPrompt([ECHO_SCHEMA], prompt));
    }
  });

  it('catch: tools move, stay; the grid text appended to the prompt', async () => {
    const served = await scriptedServer([{ first: catchObservation(0, 0, 2), steps: [] }]);
    const task = (await builtinClassTask('catch'))!;
    const row = task.dataset(1)[0]!;
    expect(row.prompt).toEqual([{ role: 'user', content: CATCH_PROMPT }]);
    const { text, ids } = await firstPrompt(task.envFactory({ catch: served.url })(), row).finally(served.close);
    const observation = 'Ball: row 1/10, column 1/5\nPaddle: column 3/5\nThe ball is 2 column(s) to the LEFT of the paddle.';
    expect(text).toBe(expectedPrompt([MOVE_SCHEMA, STAY_SCHEMA], CATCH_PROMPT + observation));
    expect(text).toContain('then move accordingly.\nBall: row 1/10');
    expect(ids.slice(0, 3)).toEqual([151644, 8948, 198]);
    expect(ids.slice(-9)).toEqual(PROMPT_END);
    expect(ids.filter((id) => id >= 151643)).toEqual([151644, 151657, 151658, 151657, 151658, 151645, 151644, 151645, 151644, 151667, 151668]);
    expect(tok.decode(ids)).toBe(text);
  });

  it('wordle: tool guess; the reset log appended to the prompt', async () => {
    const served = await scriptedServer([{ first: wordleObservation(WORDLE_RESET_LOG), steps: [] }]);
    const task = (await builtinClassTask('wordle'))!;
    const row = task.dataset(1)[0]!;
    expect(row.prompt).toEqual([{ role: 'user', content: WORDLE_PROMPT }]);
    const { text, ids } = await firstPrompt(task.envFactory({ wordle: served.url })(), row).finally(served.close);
    expect(text).toBe(expectedPrompt([GUESS_SCHEMA], WORDLE_PROMPT + WORDLE_RESET_LOG));
    expect(text).toContain('to make a guess.\n\n[GAME] You are Playing Wordle.');
    expect(ids.slice(-9)).toEqual(PROMPT_END);
    expect(tok.decode(ids)).toBe(text);
  });
});
