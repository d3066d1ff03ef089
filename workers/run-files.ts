// Files a run leaves behind, as the page downloads them and the run store keeps them: the fully
// fine-tuned model in Hugging Face layout (so `AutoModelForCausalLM.from_pretrained` loads it), and the
// trainer checkpoint of a run packed as plain files (so another browser can resume it).

import { peftAdapterFiles, readPeftAdapter } from '../src/engine/peft-adapter.ts';
import type { Engine } from '../src/engine/types.ts';
import { exportOnnx } from '../src/export/onnx/export.ts';
import { writeSafetensors } from '../src/model/safetensors.ts';
import type { LoadedModel } from './load-model.ts';
import type { StoredCheckpoint } from './run-checkpoints.ts';

export interface NamedFile {
  name: string;
  bytes: Uint8Array;
}

/** Where a packed checkpoint keeps where the run stood (the trainer's own files sit beside it). */
export const CHECKPOINT_META_FILE = 'run-checkpoint.json';
const META_KEYS = ['runStep', 'sftSteps', 'sftStepsDone'] as const;

/**
 * The model as trained in full mode: every tensor of the base checkpoint, the trained ones replaced
 * by their current (f32) values, plus the base's config and tokenizer files. Only full mode has no
 * separate adapter: with LoRA the base is unchanged and the adapter is what to download.
 */
export async function exportFullModel(engine: Engine, model: LoadedModel): Promise<NamedFile[]> {
  const { checkpoint } = model;
  const trained = new Map((await engine.saveState()).tensors.filter((t) => checkpoint.tensors.has(t.name)).map((t) => [t.name, t]));
  if (trained.size === 0) throw new Error('No trained weights to export: the model was not trained in full mode (train_mode = full)');
  const tensors = [];
  for (const [name, info] of [...checkpoint.tensors].sort(([a], [b]) => a.localeCompare(b))) {
    const t = trained.get(name);
    if (t) tensors.push({ name, dtype: 'F32' as const, shape: t.shape, data: new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength) });
    else tensors.push({ name, dtype: info.dtype, shape: info.shape, data: await checkpoint.readTensor(name) });
  }
  const files: NamedFile[] = [{ name: 'model.safetensors', bytes: writeSafetensors(tensors, { format: 'pt' }) }];
  for (const side of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']) {
    const text = await checkpoint.readText(side);
    if (text !== null) files.push({ name: side, bytes: new TextEncoder().encode(text) });
  }
  return files;
}

/**
 * The trained model for transformers.js (src/export/onnx/export.ts): the full-mode weights in
 * place, or the LoRA adapter merged into the base — the same files `webgrpo export onnx` writes.
 */
export async function exportTransformersJs(engine: Engine, model: LoadedModel): Promise<NamedFile[]> {
  const { checkpoint } = model;
  const trained = (await engine.saveState()).tensors.filter((t) => checkpoint.tensors.has(t.name));
  if (trained.length > 0) return exportOnnx(checkpoint, { weights: new Map(trained.map((t) => [t.name, t.data])) });
  // Through the PEFT files, so the app's adapter is checked exactly as a downloaded one would be.
  const adapter = await readPeftAdapter(peftAdapterFiles(await engine.exportAdapter(model.name)), checkpoint.config);
  return exportOnnx(checkpoint, { adapter });
}

export function packCheckpoint(ckpt: StoredCheckpoint): NamedFile[] {
  const meta = Object.fromEntries(META_KEYS.map((k) => [k, ckpt[k]]));
  return [{ name: CHECKPOINT_META_FILE, bytes: new TextEncoder().encode(JSON.stringify(meta)) }, ...[...ckpt.files].map(([name, bytes]) => ({ name, bytes }))];
}

export function unpackCheckpoint(files: readonly NamedFile[]): StoredCheckpoint {
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
