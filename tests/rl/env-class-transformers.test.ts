// examples/sudoku.mjs and examples/multi_env.mjs render token-identical to transformers on TRL's own
// classes (tests/fixtures/transformers-qwen3-env-classes: get_json_schema of TRL's methods, then
// apply_chat_template of the real Qwen3 tokenizer, with the checkpoint's template and the training
// template; make.py shows how). The JS classes' tools come from their JSDoc, as a run derives them.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderChat, type ChatMessage } from '../../src/model/chat-template.ts';
import { envToolSchemas } from '../../src/rl/rollout/env.ts';
import { QWEN3_TRAINING_TEMPLATE } from '../../src/rl/rollout/templates/qwen3-training.ts';
import { envClassTask } from '../../src/rl/tasks/env-class.ts';
import { loadEnvClassFile } from '../../src/rl/tasks/env-class-file.ts';
import { qwen3Tokenizer } from '../rl-rollout/qwen3-tokenizer.ts';

interface Case {
  name: string;
  file: string;
  row: number;
  template: 'checkpoint' | 'training';
  tools: Record<string, unknown>[];
  text: string;
  ids: number[];
}
const read = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/transformers-qwen3-env-classes/${name}`, import.meta.url), 'utf8'));
const fixture = read('chat.json') as { writer: { transformers: string }; cases: Case[] };
const prompts = read('prompts.json') as { cases: { name: string; messages: ChatMessage[] }[] };
const tok = qwen3Tokenizer();

/** The example's tools as a run gives them to the template (the class constructed, not reset). */
async function classTools(file: string) {
  const task = envClassTask(await loadEnvClassFile(fileURLToPath(new URL(`../../examples/${file}`, import.meta.url))));
  return envToolSchemas(task.envFactory({ echo: 'http://127.0.0.1:9/envs/echo' })());
}

describe(`examples/ classes render as transformers ${fixture.writer.transformers} renders TRL's`, () => {
  it('has sudoku and both multi_env rows, each with both templates', () => {
    expect(fixture.cases.map((c) => `${c.template}: ${c.name}`).sort()).toEqual(
      ['sudoku', 'multi_env: wordle row', 'multi_env: catch row'].flatMap((n) => [`checkpoint: ${n}`, `training: ${n}`]).sort(),
    );
  });

  it.each(fixture.cases.map((c) => [`${c.template}: ${c.name}`, c] as const))('%s: same tools, same text, same ids', async (_, c) => {
    const tools = await classTools(c.file);
    expect(tools).toEqual(c.tools);
    const messages = prompts.cases.find((p) => p.name === c.name)!.messages;
    const template = c.template === 'checkpoint' ? tok.chatTemplate! : QWEN3_TRAINING_TEMPLATE;
    const text = renderChat(template, messages, { tools, addGenerationPrompt: true, chatTemplateKwargs: { enable_thinking: false } });
    expect(text).toBe(c.text);
    expect(tok.encode(text)).toEqual(c.ids);
  });
});
