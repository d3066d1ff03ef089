// `webgrpo train` stopped by SIGTERM or Ctrl-C, as a process: it stops the step it is in, saves the
// trainer checkpoint and the PEFT adapter (or, fully fine-tuned, the model folder), says where on stderr,
// and exits 143 / 130 (not 0). Progress goes to stderr while stdout keeps one JSON line per step.

import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';

const BIN = fileURLToPath(new URL('../../bin/webgrpo.js', import.meta.url));
let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-signal-'));
  await mkdir(join(dir, 'model'));
  for (const [name, bytes] of await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 })) {
    await writeFile(join(dir, 'model', name), bytes);
  }
});
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Runs `train` as a process and sends it `signal` once its first GRPO step line is out. */
async function stopAfterFirstStep(signal: NodeJS.Signals, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'train', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      stdout += b.toString();
      if (stdout.includes('"phase":"grpo"')) resolve();
    });
    void exited.then((code) => reject(new Error(`train exited (${code}) before its first step:\n${stderr}`)));
  });
  child.kill(signal);
  return { code: await exited, stdout, stderr };
}

describe('webgrpo train and signals', () => {
  it('SIGTERM after the first step: checkpoint + adapter saved, paths on stderr, exit 143', { timeout: 180_000 }, async () => {
    const model = join(dir, 'model');
    const output = join(dir, 'out');
    const { code, stdout, stderr } = await stopAfterFirstStep('SIGTERM', [
      '--model', model, '--env', 'catch-compact', '--output', output, '--num_generations', '2',
      '--per_device_train_batch_size', '2', '--max_completion_length', '40', '--train_mode', 'lora', '--lora_r', '4', '--max_steps', '500', '--save_steps', '1000',
    ]);

    expect(code, stderr).toBe(143);
    // The first line reports the load (adapter, weight dtype, memory plan); then the step lines.
    const [load, ...lines] = stdout.trim().split('\n').map((l) => JSON.parse(l) as { phase: string; step?: number });
    expect(load).toMatchObject({ phase: 'load' });
    expect(lines[0]).toMatchObject({ phase: 'grpo', step: 1 });
    expect(lines.every((l) => l.phase === 'grpo'), 'stdout holds only step lines').toBe(true);
    const step = lines.at(-1)!.step!;
    // The checkpoint of the last finished step (save_steps never came), and the adapter.
    const names = await readdir(output);
    expect(names).toContain(`checkpoint-${step}`);
    expect(names).toContain('adapter');
    expect(existsSync(join(output, `checkpoint-${step}`, 'trainer_state.json'))).toBe(true);
    expect((await readdir(join(output, 'adapter'))).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors']);
    expect(stderr).toContain(`stopped by SIGTERM; saved checkpoint ${join(output, `checkpoint-${step}`)}`);
    expect(stderr).toContain(`adapter ${join(output, 'adapter')}`);
    // Progress with an ETA went to stderr.
    expect(stderr).toMatch(/loading the model onto the GPU: done in/);
    expect(stderr).toMatch(/GRPO step 1\/500 done in \d+:\d\d, run ETA \d+:\d\d/);
    // The stop came in the middle of step 2's rollouts, which were abandoned, not finished.
    expect(stderr).toMatch(/SIGTERM: stopping the current step and saving/);
  });

  it('Ctrl-C (SIGINT) during full fine-tuning: the model folder is saved beside the checkpoint, exit 130', { timeout: 180_000 }, async () => {
    const output = join(dir, 'out-full');
    const { code, stdout, stderr } = await stopAfterFirstStep('SIGINT', [
      '--model', join(dir, 'model'), '--env', 'catch-compact', '--output', output, '--num_generations', '2',
      '--per_device_train_batch_size', '2', '--max_completion_length', '40', '--train_mode', 'full', '--max_steps', '500', '--save_steps', '1000',
    ]);
    expect(code, stderr).toBe(130);
    const step = (stdout.trim().split('\n').map((l) => JSON.parse(l) as { step?: number }).at(-1)!).step!;
    expect((await readdir(join(output, 'model'))).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    expect(stderr).toContain(`stopped by SIGINT; saved checkpoint ${join(output, `checkpoint-${step}`)}`);
    expect(stderr).toContain(`model ${join(output, 'model')}`);
  });
});
