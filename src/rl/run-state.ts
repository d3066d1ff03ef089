// A run's state, the one thing a resume continues from: the trainer's files (grpo/trainer-state.ts)
// plus where the run stood in its SFT warm-up, so a resume continues the warm-up or GRPO with the run's
// own step numbering. A saved RunState is a checkpoint, as HF's Trainer calls its `checkpoint-<step>`
// folders. The run saves through the one RunStateStore interface: checkpoint-<step>/ folders in Node
// (the CLI's --output, below), IndexedDB per run id in the worker (workers/run-states.ts). The files'
// names and JSON keys are the ones stored runs already have: renaming the types changed no format.

import { deserializeTrainerState } from './grpo/trainer-state.ts';

/** The run's position, stored beside the trainer's files. */
export const RUN_STATE_FILE = 'run_state.json';

export interface RunState {
  /** Steps of the run done when it was taken (SFT steps included). */
  runStep: number;
  /** SFT warm-up steps the run planned (fixed when it started: resuming keeps the step numbering). */
  sftSteps: number;
  /** SFT warm-up steps done (all of them once GRPO started). */
  sftStepsDone: number;
  /** The trainer's state files (trainer_state.json, engine_state.safetensors, …). */
  files: Map<string, Uint8Array>;
}

/** Where a run's states go (each one saved is a checkpoint). */
export interface RunStateStore {
  /** Keeps the state; returns where it went (for logs). */
  save(state: RunState): Promise<string>;
}

/** Node: `<dir>/checkpoint-<runStep>/` with the trainer's files and run_state.json. */
export function folderRunStates(dir: string): RunStateStore {
  return {
    async save(c) {
      const { mkdir, writeFile, rename, rm } = await import('node:fs/promises');
      const { join } = await import('node:path');
      const position = { run_step: c.runStep, sft_steps: c.sftSteps, sft_steps_done: c.sftStepsDone };
      const files = new Map([...c.files, [RUN_STATE_FILE, new TextEncoder().encode(JSON.stringify(position, null, 2))]]);
      const target = join(dir, `checkpoint-${c.runStep}`);
      const partial = `${target}.partial`;
      await mkdir(partial, { recursive: true });
      for (const [name, bytes] of files) await writeFile(join(partial, name), bytes);
      // A crash mid-write must never leave a half checkpoint where resume would find it. The same
      // step saved again (save_steps, then a stop right after) replaces the earlier copy.
      await rm(target, { recursive: true, force: true });
      await rename(partial, target);
      return target;
    },
  };
}

function count(state: Record<string, unknown>, key: string, file: string): number {
  const v = state[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Error(`checkpoint: ${file} has no valid '${key}'`);
  return v;
}

/**
 * Node: a checkpoint folder written by folderRunStates. One without run_state.json (written
 * before runs numbered their steps across SFT and GRPO) is a GRPO checkpoint with no warm-up before it.
 */
export async function readRunStateFolder(dir: string): Promise<RunState> {
  const { readdir, readFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    throw new Error(`checkpoint: cannot read the folder ${dir} (${(err as Error).message})`);
  }
  const files = new Map<string, Uint8Array>();
  for (const name of names) if (name !== RUN_STATE_FILE) files.set(name, new Uint8Array(await readFile(join(dir, name))));
  if (!names.includes(RUN_STATE_FILE)) {
    const step = deserializeTrainerState(files).counters.step;
    return { runStep: step, sftSteps: 0, sftStepsDone: 0, files };
  }
  const file = join(dir, RUN_STATE_FILE);
  let state: Record<string, unknown>;
  try {
    state = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`checkpoint: ${file} is not valid JSON (${(err as Error).message})`);
  }
  const sftSteps = count(state, 'sft_steps', file);
  const sftStepsDone = count(state, 'sft_steps_done', file);
  if (sftStepsDone > sftSteps) throw new Error(`checkpoint: ${file} has sft_steps_done ${sftStepsDone} > sft_steps ${sftSteps}`);
  return { runStep: count(state, 'run_step', file), sftSteps, sftStepsDone, files };
}
