// The fully fine-tuned model as a Hugging Face model folder (`AutoModelForCausalLM.from_pretrained`
// loads it; a Qwen3.5 VL one with Qwen3_5ForConditionalGeneration): every weight of the base checkpoint
// (the vision tower's model.visual.* among them, trained or not) under its stored names, the trained ones replaced by their current values,
// stored in the checkpoint's own dtype (as save_pretrained keeps a model's dtype), beside the base's
// config, generation config, tokenizer files and chat template. One writer for every front end: the
// app's download (workers/run-files.ts) and `train --train_mode full --output` (src/cli/full-model-folder.ts).
// No Node-only imports, so the worker runs it too.

import type { Engine } from '../engine/types.ts';
import { readVisionTensors, SINGLE_WEIGHTS_FILE, type OpenedCheckpoint } from '../model/checkpoint.ts';
import { encodeFromFloat32, writeSafetensors, type TensorToWrite } from '../model/safetensors.ts';
import { CHAT_TEMPLATE_FILES } from '../model/tokenizer.ts';
import { storedTensorName } from '../model/qwen3-tensors.ts';
import type { DType } from '../model/types.ts';
import { withTrainedChat, type TrainedChat } from './trained-chat.ts';

export interface ModelFile {
  name: string;
  bytes: Uint8Array;
}

/**
 * Side files copied as the base has them: the tokenizer in every form transformers reads (fast
 * tokenizer.json, and the slow vocab/merges a picked folder may carry) and every place it looks for
 * the chat template.
 */
const SIDE_FILES = [
  'tokenizer.json', 'tokenizer_config.json', ...CHAT_TEMPLATE_FILES,
  'special_tokens_map.json', 'added_tokens.json', 'vocab.json', 'merges.txt',
] as const;

/**
 * generation_config.json for a base without one: what transformers derives from config.json
 * (GenerationConfig.from_model_config), so a loaded model stops at the same tokens.
 */
function derivedGenerationConfig(raw: Record<string, unknown>): string {
  const derived: Record<string, unknown> = { _from_model_config: true };
  for (const key of ['bos_token_id', 'eos_token_id', 'pad_token_id']) if (raw[key] !== undefined && raw[key] !== null) derived[key] = raw[key];
  return JSON.stringify(derived, null, 2) + '\n';
}

/** `chat`: what the run rendered its chats with, written into tokenizer_config.json (src/export/trained-chat.ts). */
export async function fullModelFiles(engine: Pick<Engine, 'saveState'>, checkpoint: OpenedCheckpoint, chat: TrainedChat | null = null): Promise<ModelFile[]> {
  // Every stored tensor: the decoder's as opened, and the tower's, which openCheckpoint leaves out
  // unless asked (the engine reads them itself) but the model folder must keep.
  const base = new Map<string, { dtype: DType; shape: number[]; read: () => Promise<Uint8Array> }>();
  for (const [name, info] of checkpoint.tensors) base.set(name, { dtype: info.dtype, shape: info.shape, read: () => checkpoint.readTensor(name) });
  for (const [name, t] of await readVisionTensors(checkpoint)) {
    if (!base.has(name)) base.set(name, { dtype: t.dtype, shape: t.shape, read: () => checkpoint.files.read(t.file, t.fileOffset, t.fileOffset + t.byteLength) });
  }
  const trained = new Map((await engine.saveState()).tensors.filter((t) => base.has(t.name)).map((t) => [t.name, t]));
  if (trained.size === 0) throw new Error('No trained weights to export: the model was not trained in full mode (train_mode = full)');
  const tensors: TensorToWrite[] = [];
  // Under the checkpoint's own names: a composite Qwen3.5 keeps its model.language_model.* prefix.
  const stored = [...base].map(([name, info]) => ({ name, storedName: storedTensorName(checkpoint.config, name), info }));
  for (const { name, storedName, info } of stored.sort((a, b) => (a.storedName < b.storedName ? -1 : a.storedName > b.storedName ? 1 : 0))) {
    // A tied head is the embedding: save_pretrained leaves it out, and a stored copy (Qwen3-0.6B ships
    // one) would hold the untrained values while the embedding moved.
    if (name === 'lm_head.weight' && checkpoint.config.tieWordEmbeddings) continue;
    const t = trained.get(name);
    tensors.push({ name: storedName, dtype: info.dtype, shape: info.shape, data: t ? encodeFromFloat32(info.dtype, t.data) : await info.read() });
  }
  const text = new TextEncoder();
  const files: ModelFile[] = [{ name: SINGLE_WEIGHTS_FILE, bytes: writeSafetensors(tensors, { format: 'pt' }) }];
  const config = await checkpoint.readText('config.json');
  files.push({ name: 'config.json', bytes: text.encode(config ?? JSON.stringify(checkpoint.config.raw, null, 2) + '\n') });
  const generation = await checkpoint.readText('generation_config.json');
  files.push({ name: 'generation_config.json', bytes: text.encode(generation ?? derivedGenerationConfig(checkpoint.config.raw)) });
  for (const side of SIDE_FILES) {
    const base = await checkpoint.readText(side);
    const content = side === 'tokenizer_config.json' && chat ? withTrainedChat(base, chat) : base;
    if (content !== null) files.push({ name: side, bytes: text.encode(content) });
  }
  return files;
}
