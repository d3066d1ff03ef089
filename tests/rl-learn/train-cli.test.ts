// `webgrpo train` end to end on the real engine (tiny model, tiny run): JSON lines per step,
// checkpoints, resume from the latest checkpoint, and the PEFT adapter files.

import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/train.ts';
import { runTrainCli } from './train-cli-run.ts';
import { captureCliLines } from '../cli-capture.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { parseSafetensors } from '../../src/model/safetensors.ts';

// Slow by nature (the CLI on WebGPU): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const runCli = runTrainCli;

describe('webgrpo train', () => {
  it('rejects bad arguments with a clear message', async () => {
    await expect(run(['--env', 'catch'])).rejects.toThrow(/--model DIR is required/);
    await expect(run(['--model', 'x', '--env', 'pong'])).rejects.toThrow(/unknown env 'pong'/);
    await expect(run(['--model', 'x', '--env', 'catch', '--loss_type', 'ppo'])).rejects.toThrow(/loss_type: must be one of/);
    await expect(run(['--model', 'x', '--env', 'catch', '--bogus', '1'])).rejects.toThrow(/unknown option '--bogus'/);
  });

  it('--help with --model and --env shows the values that would apply, and where each came from; a config.json is all it reads', async () => {
    const help = await mkdtemp(join(tmpdir(), 'webgrpo-train-help-'));
    try {
      // Only config.json: resolving the model's tier reads no weights.
      const files = await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 });
      await writeFile(join(help, 'config.json'), files.get('config.json')!);
      await writeFile(join(help, 'run.json'), JSON.stringify({ max_steps: 7 }));
      const text = async (argv: string[]) => (await captureCliLines(() => run(argv))).lines.join('\n');
      const applied = await text(['--help', '--model', help, '--env', 'catch', '--config', join(help, 'run.json'), '--learning_rate', '0.5']);
      expect(applied).toMatch(/--model \S+ \([\d,]+ parameters: tiny tier\) --env catch/);
      expect(applied).toContain('--per_device_train_batch_size int = 64 (preset; TRL default 8)');
      expect(applied).toContain('--max_steps int = 7 (--config; TRL default -1)');
      expect(applied).toContain('--learning_rate number = 0.5 (flag; TRL default 0.000001)');
      expect(applied).toContain('--top_p number = 1 (TRL default)');
      // The app's presets log completions for its viewer; the CLI keeps TRL's default.
      expect(applied).toContain('--log_completions bool = false (TRL default)');
      const plain = await text(['--help']);
      expect(plain).toContain("GRPOConfig flags (TRL names), with TRL's defaults. Give --model and --env with --help");
      expect(plain).toContain('--per_device_train_batch_size int (default 8)');
    } finally {
      await rm(help, { recursive: true, force: true });
    }
  });

  it('SFT warm-up + GRPO with LoRA: one JSON line per step, checkpoint, resume, PEFT adapter', async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-cli-'));
    const modelDir = join(dir, 'model');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(modelDir);
    for (const [name, bytes] of await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 })) {
      await writeFile(join(modelDir, name), bytes);
    }
    // Given as a relative path: the adapter must still name the model absolutely.
    const model = relative(process.cwd(), modelDir);
    const output = join(dir, 'out');
    const common = [
      '--model', model, '--env', 'catch-compact', '--output', output, '--num_generations', '2', '--per_device_train_batch_size', '2',
      '--max_completion_length', '60', '--learning_rate', '1e-3', '--train_mode', 'lora', '--lora_r', '4', '--lora_alpha', '8', '--save_steps', '1',
    ];
    const first = await runCli([...common, '--sft-solver', 'catch-compact', '--sft-episodes', '2', '--sft_steps', '2', '--sft_batch_size', '1', '--max_steps', '1']);
    expect(first.code).toBe(0);
    // One numbering for the whole run: the warm-up's steps 1–2, then GRPO's step 3 (of 3).
    expect(first.lines.map((l) => [l.phase, l.step, l.total_steps])).toEqual([['load', undefined, undefined], ['sft', 1, 3], ['sft', 2, 3], ['grpo', 3, 3], ['done', undefined, undefined]]);
    const step = first.lines[3]!;
    expect(first.lines[0]).toMatchObject({ weight_dtype: expect.stringMatching(/^f(16|32)$/), adapter: expect.any(String) });
    for (const key of ['reward', 'rewards/caught/mean', 'rewards/progress/mean', 'completions/mean_length', 'tools/call_frequency', 'entropy', 'grad_norm', 'learning_rate', 'num_tokens']) {
      expect(step, key).toHaveProperty([key]);
    }
    expect(step.checkpoint).toBe(join(output, 'checkpoint-3'));
    // A line of metrics: the completions only with --log_completions (below).
    expect(step).not.toHaveProperty('completions');
    expect(JSON.stringify(step).length).toBeLessThan(4000);
    // checkpoint-2: GRPO's start (the warmed-up policy), checkpoint-3: its first step.
    expect((await readdir(output)).sort()).toEqual(['adapter', 'checkpoint-2', 'checkpoint-3', 'transcripts.jsonl']);

    const adapterDir = join(output, 'adapter');
    const adapterConfig = JSON.parse(await readFile(join(adapterDir, 'adapter_config.json'), 'utf8'));
    expect(adapterConfig).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, base_model_name_or_path: modelDir });
    const header = parseSafetensors(new Uint8Array(await readFile(join(adapterDir, 'adapter_model.safetensors'))));
    expect(header.tensors.some((t) => /^base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight$/.test(t.name))).toBe(true);

    const resumed = await runCli([...common, '--resume', 'latest', '--max_steps', '2', '--log_completions']);
    // The checkpoint keeps the run's numbering: the warm-up's 2 steps, then GRPO's 2.
    expect(resumed.lines.map((l) => [l.phase, l.step, l.total_steps])).toEqual([['load', undefined, undefined], ['grpo', 4, 4], ['done', undefined, undefined]]);
    // --log_completions (TRL's key): every completion of the step, with its rewards and advantage.
    expect(resumed.lines[1]!.completions).toHaveLength(2);
    expect((resumed.lines[1]!.completions as Record<string, unknown>[])[0]).toMatchObject({ step: 4, completion: expect.any(String), advantage: expect.any(Number) });
    expect(resumed.lines[1]!.num_tokens).toBeGreaterThan(step.num_tokens as number);
  });
});
