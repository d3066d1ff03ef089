// The trainer's state: everything GRPO needs to continue exactly where it stopped — the engine's
// trainable weights and AdamW moments, the optimizer step, the trainer counters (from which the data
// order and sampling seeds are recomputed, see random.ts) and the config. The format is a set of
// named files (`trainer_state.json` + `engine_state.safetensors`, as HF's Trainer names its state) so
// the browser can keep it in IndexedDB and Node in a `checkpoint-<step>` folder; a run's state
// (src/rl/run-state.ts) is these files plus where the run stood.

import type { NamedTensor } from '../../engine/types.ts';
import { parseSafetensors, writeSafetensors } from '../../model/safetensors.ts';
import type { GRPOConfig } from '../config.ts';

export const TRAINER_STATE_FILE = 'trainer_state.json';
export const ENGINE_STATE_FILE = 'engine_state.safetensors';
const FORMAT_VERSION = 1;

export interface TrainerCounters {
  /** Optimizer steps done. */
  step: number;
  /** Generation batches done (data order and sampling seeds derive from it). */
  generation: number;
  /** Cumulative prompt + completion tokens (TRL's num_input_tokens_seen). */
  numTokens: number;
  /** Optimizer steps of the whole run (fixes the lr schedule). */
  totalSteps: number;
}

export interface TrainerState {
  counters: TrainerCounters;
  config: GRPOConfig;
  engine: { tensors: NamedTensor[]; step: number };
  /** The KL reference state when it is not the base model (beta ≠ 0 after an SFT warm-up). */
  reference?: { tensors: NamedTensor[]; step: number };
}

export const REFERENCE_STATE_FILE = 'reference_state.safetensors';

export function serializeTrainerState(ckpt: TrainerState): Map<string, Uint8Array> {
  const state = { format_version: FORMAT_VERSION, ...ckpt.counters, engine_step: ckpt.engine.step, config: ckpt.config };
  const files = new Map([
    [TRAINER_STATE_FILE, new TextEncoder().encode(JSON.stringify(state, null, 2))],
    [ENGINE_STATE_FILE, stateFile(ckpt.engine.tensors)],
  ]);
  if (ckpt.reference) files.set(REFERENCE_STATE_FILE, stateFile(ckpt.reference.tensors, ckpt.reference.step));
  return files;
}

function stateFile(ts: readonly NamedTensor[], step?: number): Uint8Array {
  const tensors = ts.map((t) => ({
    name: t.name,
    dtype: 'F32' as const,
    shape: t.shape,
    data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength),
  }));
  return writeSafetensors(tensors, step === undefined ? { format: 'webgrpo-trainer-state' } : { format: 'webgrpo-trainer-state', step: String(step) });
}

function readStateFile(bytes: Uint8Array, file: string): NamedTensor[] {
  const header = parseSafetensors(bytes, file);
  return header.tensors.map((t) => {
    if (t.dtype !== 'F32') throw new Error(`checkpoint: tensor '${t.name}' is ${t.dtype}; trainer state is stored as F32`);
    const start = t.fileOffset;
    // copy: the file buffer may be unaligned for a Float32Array view
    const data = new Float32Array(bytes.slice(start, start + t.byteLength).buffer);
    return { name: t.name, shape: t.shape, data };
  });
}

function need(files: ReadonlyMap<string, Uint8Array>, name: string): Uint8Array {
  const bytes = files.get(name);
  if (!bytes) throw new Error(`checkpoint: ${name} is missing`);
  return bytes;
}

function counter(state: Record<string, unknown>, key: string): number {
  const v = state[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) throw new Error(`checkpoint: ${TRAINER_STATE_FILE} has no valid '${key}'`);
  return v;
}

export function deserializeTrainerState(files: ReadonlyMap<string, Uint8Array>): TrainerState {
  let state: Record<string, unknown>;
  try {
    state = JSON.parse(new TextDecoder().decode(need(files, TRAINER_STATE_FILE)));
  } catch (err) {
    throw new Error(`checkpoint: ${TRAINER_STATE_FILE} is not valid JSON (${(err as Error).message})`);
  }
  if (state.format_version !== FORMAT_VERSION) {
    throw new Error(`checkpoint: format_version ${String(state.format_version)} is not supported (expected ${FORMAT_VERSION})`);
  }
  const tensors = readStateFile(need(files, ENGINE_STATE_FILE), ENGINE_STATE_FILE);
  const refBytes = files.get(REFERENCE_STATE_FILE);
  let reference: TrainerState['reference'];
  if (refBytes) {
    const step = Number(parseSafetensors(refBytes, REFERENCE_STATE_FILE).metadata?.step ?? 0);
    reference = { tensors: readStateFile(refBytes, REFERENCE_STATE_FILE), step: Number.isInteger(step) ? step : 0 };
  }
  return {
    ...(reference ? { reference } : {}),
    counters: {
      step: counter(state, 'step'),
      generation: counter(state, 'generation'),
      numTokens: counter(state, 'numTokens'),
      totalSteps: counter(state, 'totalSteps'),
    },
    config: state.config as GRPOConfig,
    engine: { tensors, step: counter(state, 'engine_step') },
  };
}

/** Node: reads the trainer's files of a `checkpoint-<step>` folder (src/rl/run-state.ts writes them). */
export async function readTrainerStateFolder(dir: string): Promise<TrainerState> {
  const { readFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const files = new Map<string, Uint8Array>();
  for (const name of [TRAINER_STATE_FILE, ENGINE_STATE_FILE, REFERENCE_STATE_FILE]) {
    try {
      files.set(name, new Uint8Array(await readFile(join(dir, name))));
    } catch {
      if (name === REFERENCE_STATE_FILE) continue; // only runs with a warmed-up KL reference have it
      throw new Error(`checkpoint: cannot read ${join(dir, name)}`);
    }
  }
  return deserializeTrainerState(files);
}

/** Node: the newest `checkpoint-<step>` folder under dir, or null. */
export async function latestCheckpointFolder(dir: string): Promise<string | null> {
  const { readdir } = await import('node:fs/promises');
  const { join } = await import('node:path');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return null;
  }
  const steps = names.map((n) => /^checkpoint-(\d+)$/.exec(n)).filter((m): m is RegExpExecArray => m !== null).map((m) => Number(m[1]));
  if (steps.length === 0) return null;
  return join(dir, `checkpoint-${Math.max(...steps)}`);
}
