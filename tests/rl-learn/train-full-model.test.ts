// `webgrpo train --train_mode full --output OUT` leaves OUT/model/, a Hugging Face model folder that
// transformers loads: the files, tensor names, dtypes and shapes that transformers' own save_pretrained
// writes for the same architecture (tests/fixtures/transformers-full-ft: saved.json and the make.py that
// made it), and the trained weights themselves — `webgrpo score --model OUT/model` scores what the run's
// trainer checkpoint (the engine's own trained state) scores. transformers' own scores of such a folder:
// tests/fixtures/transformers-full-ft/check_full_ft.py.

import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { run as runScore } from '../../src/cli/score.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import { loadCheckpointTokenizer } from '../../src/model/tokenizer.ts';
import { captureCliJson } from '../cli-capture.ts';
import { runTrainCli } from './train-cli-run.ts';

vi.setConfig({ testTimeout: 300_000 });

const FIXTURE = fileURLToPath(new URL('../fixtures/transformers-full-ft/saved.json', import.meta.url));
interface Saved { model_files: string[]; tokenizer_files: string[]; tensors: Record<string, { dtype: string; shape: number[] }> }
const saved = JSON.parse(await readFile(FIXTURE, 'utf8')) as { writer: Record<string, string>; make_tiny_model: string[]; f32: Saved };
// The architecture make.py gave transformers (its make_tiny_model flags).
const TINY = { seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 };
const IDS = [472, 5, 70, 33, 9, 120, 64, 2, 17, 300, 41];

let dir = '';
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function score(argv: string[]): Promise<number[]> {
  const { code, json } = await captureCliJson(() => runScore([...argv, '--ids', IDS.join(',')]));
  expect(code).toBe(0);
  return json.logprobs as number[];
}

const maxDiff = (a: number[], b: number[]) => Math.max(...a.map((x, i) => Math.abs(x - b[i]!)));

describe('train --train_mode full --output OUT', () => {
  it('writes OUT/model as transformers writes the model, holding the trained weights; the done line names it', async () => {
    expect(saved.make_tiny_model).toEqual(['--seed', '3', '--hidden', '32', '--layers', '1', '--heads', '2', '--kv-heads', '1', '--head-dim', '16', '--intermediate', '64']);
    dir = await mkdtemp(join(tmpdir(), 'webgrpo-train-full-'));
    const base = join(dir, 'base');
    await mkdir(base);
    for (const [name, bytes] of await makeTinyCheckpointFiles(TINY)) await writeFile(join(base, name), bytes);
    const output = join(dir, 'out');
    // One SFT step moves the weights (a GRPO step of equal rewards has no gradient), then one GRPO step.
    const { code, lines } = await runTrainCli([
      '--model', base, '--env', 'catch-compact', '--output', output, '--train_mode', 'full', '--num_generations', '2',
      '--per_device_train_batch_size', '2', '--max_completion_length', '24', '--max_steps', '1', '--save_steps', '1',
      '--sft-solver', 'catch-compact', '--sft-episodes', '2', '--sft_steps', '1', '--sft_batch_size', '1', '--sft_learning_rate', '1e-2',
    ]);
    expect(code).toBe(0);
    const model = join(output, 'model');
    expect(lines.at(-1)).toEqual({ phase: 'done', model });

    // The files of save_pretrained (model and tokenizer); the chat template stays where the base has it
    // (tokenizer_config.json here; transformers 5 would move it to chat_template.jinja, and reads both).
    const files = (await readdir(model)).sort();
    const tokenizerFiles = saved.f32.tokenizer_files.filter((f) => f !== 'chat_template.jinja');
    expect(files).toEqual([...saved.f32.model_files, ...tokenizerFiles].sort());
    const exported = await openCheckpoint(model);
    const layout = Object.fromEntries([...exported.tensors.values()].map((t) => [t.name, { dtype: t.dtype, shape: t.shape }]));
    expect(layout).toEqual(saved.f32.tensors);
    expect(await readFile(join(model, 'config.json'), 'utf8')).toBe(await readFile(join(base, 'config.json'), 'utf8'));
    const baseCkpt = await openCheckpoint(base);
    expect((await loadCheckpointTokenizer(exported, model)).chatTemplates).toEqual((await loadCheckpointTokenizer(baseCkpt, base)).chatTemplates);

    // The folder scores as the engine's own trained state does (the step's checkpoint), and not as the base.
    const fromFolder = await score(['--model', model]);
    const fromState = await score(['--model', base, '--checkpoint', join(output, 'checkpoint-1')]);
    const before = await score(['--model', base]);
    expect(maxDiff(fromFolder, fromState)).toBeLessThan(1e-6);
    expect(maxDiff(fromFolder, before)).toBeGreaterThan(1e-3);
  });
});
