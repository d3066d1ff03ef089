// Files a run leaves behind, as the page downloads them and the run store keeps them: the fully
// fine-tuned model in Hugging Face layout (so `AutoModelForCausalLM.from_pretrained` loads it), and the
// trainer checkpoint of a run packed as plain files (so another browser can resume it).

import { peftAdapterFiles, readPeftAdapter } from '../src/engine/peft-adapter.ts';
import type { Engine } from '../src/engine/types.ts';
import { exportOnnx } from '../src/export/onnx/export.ts';
import { fullModelFiles } from '../src/export/full-model.ts';
import type { TrainedChat } from '../src/export/trained-chat.ts';
import type { LoadedModel } from './load-model.ts';
import type { RunState } from '../src/rl/run-state.ts';

export interface NamedFile {
  name: string;
  bytes: Uint8Array;
}

/** Where a packed checkpoint keeps where the run stood (the trainer's own files sit beside it). */
export const CHECKPOINT_META_FILE = 'run-checkpoint.json';
const META_KEYS = ['runStep', 'sftSteps', 'sftStepsDone'] as const;

/**
 * The model as trained in full mode, in Hugging Face layout (src/export/full-model.ts, the same writer
 * as `train --train_mode full --output`). Only full mode has no separate adapter: with LoRA the base is
 * unchanged and the adapter is what to download.
 */
export function exportFullModel(engine: Engine, model: LoadedModel, chat: TrainedChat | null): Promise<NamedFile[]> {
  return fullModelFiles(engine, model.checkpoint, chat);
}

/**
 * The trained model for transformers.js (src/export/onnx/export.ts): the full-mode weights in
 * place, or the LoRA adapter merged into the base — the same files `webgrpo export onnx` writes.
 */
export async function exportTransformersJs(engine: Engine, model: LoadedModel, chat: TrainedChat | null): Promise<NamedFile[]> {
  const { checkpoint } = model;
  const trained = (await engine.saveState()).tensors.filter((t) => checkpoint.tensors.has(t.name));
  if (trained.length > 0) return exportOnnx(checkpoint, { weights: new Map(trained.map((t) => [t.name, t.data])), chat });
  // Through the PEFT files, so the app's adapter is checked exactly as a downloaded one would be.
  const adapter = await readPeftAdapter(peftAdapterFiles(await engine.exportAdapter(model.name)), checkpoint.config);
  return exportOnnx(checkpoint, { adapter, chat });
}

export function packRunState(ckpt: RunState): NamedFile[] {
  const meta = Object.fromEntries(META_KEYS.map((k) => [k, ckpt[k]]));
  return [{ name: CHECKPOINT_META_FILE, bytes: new TextEncoder().encode(JSON.stringify(meta)) }, ...[...ckpt.files].map(([name, bytes]) => ({ name, bytes }))];
}

export function unpackRunState(files: readonly NamedFile[]): RunState {
  const metaFile = files.find((f) => f.name === CHECKPOINT_META_FILE);
  if (!metaFile) throw new Error(`Not a packed run checkpoint: ${CHECKPOINT_META_FILE} is missing`);
  const meta = JSON.parse(new TextDecoder().decode(metaFile.bytes)) as Record<string, unknown>;
  for (const k of META_KEYS) if (!Number.isInteger(meta[k]) || (meta[k] as number) < 0) throw new Error(`Not a packed run checkpoint: ${k} must be a non-negative integer, got ${JSON.stringify(meta[k])}`);
  return {
    runStep: meta.runStep as number,
    sftSteps: meta.sftSteps as number,
    sftStepsDone: meta.sftStepsDone as number,
    files: new Map(files.filter((f) => f.name !== CHECKPOINT_META_FILE).map((f) => [f.name, f.bytes])),
  };
}
