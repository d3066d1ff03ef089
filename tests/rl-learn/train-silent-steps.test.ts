// `webgrpo train` says what a newcomer could not see (issue 33): its first stderr line names the steps
// (with any warm-up) and the WebGPU adapter, and a GRPO step where no rollout called a tool warns on
// stderr — before, such a run ended with reward 0, loss 0, exit 0 and no word. A random tiny model on
// echo never writes a tool call: one small step shows both.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { runTrainCli } from './train-cli-run.ts';

// Slow by nature (the CLI on WebGPU): longer than the suite's 30 s default.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('webgrpo train on stderr', () => {
  it('first line: the steps and the adapter; a step with no tool call: a warning; stdout: JSON lines only', async () => {
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-silent-'));
    for (const [name, bytes] of await makeTinyCheckpointFiles({ seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 })) {
      await writeFile(join(dir, name), bytes);
    }
    const stderr: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => stderr.push(String(chunk)) > 0);
    let out;
    try {
      // runTrainCli parses every stdout line as JSON: a stray line fails it.
      out = await runTrainCli(['--model', dir, '--env', 'echo', '--num_generations', '2', '--per_device_train_batch_size', '2', '--max_completion_length', '8', '--train_mode', 'lora', '--max_steps', '1']);
    } finally {
      spy.mockRestore();
    }
    expect(out.code).toBe(0);
    const step = out.lines.find((l) => l.phase === 'grpo')!;
    expect(step['tools/call_frequency']).toBe(0);
    const lines = stderr.join('').split('\n');
    expect(lines[0]).toMatch(/^webgrpo train: 1 GRPO step, on WebGPU adapter \S.* \(.*(software|hardware GPU); .*\)$/);
    expect(lines).toContain('webgrpo train: warning: step 1: no rollout of this step called a tool (tools/call_frequency 0): the model never acted in the env, so the step cannot learn the task. A model that does not call tools yet needs an SFT warm-up (sft_steps; in the CLI with --sft-solver or --sft).');
  });
});
