// A run's state (src/rl/run-state.ts) in the forms runs stored before its types were renamed: a CLI
// `checkpoint-<step>/` folder with run_state.json, an older one without it (GRPO only), and the packed
// files the run store keeps (run-checkpoint.json beside the trainer's files). All three still load, and
// what the store writes today reads back the same.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeSafetensors } from '../../src/model/safetensors.ts';
import { deserializeTrainerState } from '../../src/rl/grpo/trainer-state.ts';
import { folderRunStates, readRunStateFolder } from '../../src/rl/run-state.ts';
import { packRunState, unpackRunState } from '../../workers/run-files.ts';

const enc = (text: string) => new TextEncoder().encode(text);
const tmp: string[] = [];
afterEach(() => {
  for (const d of tmp.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** The trainer's files byte for byte as webgrpo wrote them (format_version 1): counters, config, one F32 tensor. */
function storedTrainerFiles(): Map<string, Uint8Array> {
  const weights = new Float32Array([0.5, -1.25]);
  return new Map([
    ['trainer_state.json', enc(JSON.stringify({ format_version: 1, step: 3, generation: 3, numTokens: 120, totalSteps: 6, engine_step: 3, config: { learning_rate: 0.001, num_generations: 4 } }, null, 2))],
    ['engine_state.safetensors', writeSafetensors([{ name: 'layers.0.q_proj.lora_A', dtype: 'F32', shape: [1, 2], data: new Uint8Array(weights.buffer) }], { format: 'webgrpo-trainer-state' })],
  ]);
}

function folder(files: Map<string, Uint8Array>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-run-state-'));
  tmp.push(dir);
  for (const [name, bytes] of files) fs.writeFileSync(path.join(dir, name), bytes);
  return dir;
}

describe('stored run states still load', () => {
  it('a checkpoint-<step> folder with run_state.json (the CLI\'s --output)', async () => {
    const dir = folder(new Map([...storedTrainerFiles(), ['run_state.json', enc('{\n  "run_step": 5,\n  "sft_steps": 2,\n  "sft_steps_done": 2\n}')]]));
    const state = await readRunStateFolder(dir);
    expect({ runStep: state.runStep, sftSteps: state.sftSteps, sftStepsDone: state.sftStepsDone }).toEqual({ runStep: 5, sftSteps: 2, sftStepsDone: 2 });
    const trainer = deserializeTrainerState(state.files);
    expect(trainer.counters).toEqual({ step: 3, generation: 3, numTokens: 120, totalSteps: 6 });
    expect(trainer.engine.step).toBe(3);
    expect([...trainer.engine.tensors[0]!.data]).toEqual([0.5, -1.25]);
  });

  it('an older folder without run_state.json is a GRPO state with no warm-up', async () => {
    const state = await readRunStateFolder(folder(storedTrainerFiles()));
    expect({ runStep: state.runStep, sftSteps: state.sftSteps, sftStepsDone: state.sftStepsDone }).toEqual({ runStep: 3, sftSteps: 0, sftStepsDone: 0 });
  });

  it('the packed files the run store keeps (run-checkpoint.json beside the trainer\'s files)', () => {
    const packed = [{ name: 'run-checkpoint.json', bytes: enc('{"runStep":5,"sftSteps":2,"sftStepsDone":2}') }, ...[...storedTrainerFiles()].map(([name, bytes]) => ({ name, bytes }))];
    const state = unpackRunState(packed);
    expect({ runStep: state.runStep, sftSteps: state.sftSteps, sftStepsDone: state.sftStepsDone }).toEqual({ runStep: 5, sftSteps: 2, sftStepsDone: 2 });
    expect(deserializeTrainerState(state.files).counters.step).toBe(3);
    // Packed again, the same bytes as the store has.
    expect(packRunState(state).map((f) => f.name).sort()).toEqual(packed.map((f) => f.name).sort());
  });

  it('what the folder store writes today has the same names and keys, and reads back', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'webgrpo-run-state-'));
    tmp.push(dir);
    const where = await folderRunStates(dir).save({ runStep: 7, sftSteps: 2, sftStepsDone: 2, files: storedTrainerFiles() });
    expect(path.basename(where)).toBe('checkpoint-7');
    expect(fs.readdirSync(where).sort()).toEqual(['engine_state.safetensors', 'run_state.json', 'trainer_state.json']);
    expect(JSON.parse(fs.readFileSync(path.join(where, 'run_state.json'), 'utf8'))).toEqual({ run_step: 7, sft_steps: 2, sft_steps_done: 2 });
    expect((await readRunStateFolder(where)).runStep).toBe(7);
  });
});
