// The whole export: a checkpoint (with a LoRA adapter merged, or trained full weights in place)
// → the folder transformers.js loads for Qwen3 text generation:
//   onnx/model.onnx | onnx/model_fp16.onnx (+ _data chunks past the protobuf limit),
//   config.json (with `transformers.js_config`), generation_config.json, tokenizer.json,
//   tokenizer_config.json (its chat_template is what apply_chat_template renders; with the run's
//   chat_template_kwargs and tools, src/export/trained-chat.ts).
// Browser-safe: no Node imports, so the app's worker runs the same code as the CLI.

import type { PeftLoraAdapter } from '../../engine/peft-adapter.ts';
import { readTensorFloat32 } from '../../model/checkpoint.ts';
import { qwen3TensorLayout } from '../../model/qwen3-tensors.ts';
import type { Checkpoint } from '../../model/types.ts';
import { withTrainedChat, type TrainedChat } from '../trained-chat.ts';
import { externalizeInitializers, EXTERNAL_DATA_THRESHOLD } from './external-data.ts';
import { mergeLora } from './merge-lora.ts';
import { encodeModel } from './onnx-proto.ts';
import { buildQwen3Graph, type OnnxDtype } from './qwen3-graph.ts';

export type { OnnxDtype } from './qwen3-graph.ts';
export const ONNX_DTYPES: readonly OnnxDtype[] = ['fp32', 'fp16'];

export interface ExportedFile {
  name: string;
  bytes: Uint8Array;
}

export interface OnnxExportOptions {
  dtype?: OnnxDtype;
  /** A LoRA adapter, merged into the base linears. */
  adapter?: PeftLoraAdapter;
  /** Trained full weights replacing the base's (full fine-tuning), by Hugging Face name. */
  weights?: ReadonlyMap<string, Float32Array>;
  /** What the run rendered its chats with, written into tokenizer_config.json. */
  chat?: TrainedChat | null;
  /** Initializer bytes past which weights go to external data (tests lower it). */
  externalDataThreshold?: number;
}

const PRODUCER_VERSION = '0.1.0';
/** transformers.js's file for each dtype (suffix table of its DEFAULT_DTYPE_SUFFIX_MAPPING). */
export const ONNX_FILE: Record<OnnxDtype, string> = { fp32: 'onnx/model.onnx', fp16: 'onnx/model_fp16.onnx' };
const SIDE_FILES = ['generation_config.json', 'tokenizer.json', 'tokenizer_config.json'] as const;

export async function exportOnnx(ckpt: Checkpoint, opts: OnnxExportOptions = {}): Promise<ExportedFile[]> {
  const dtype = opts.dtype ?? 'fp32';
  if (!ONNX_DTYPES.includes(dtype)) throw new Error(`--dtype must be one of ${ONNX_DTYPES.join(', ')}, got '${dtype}'`);
  if (opts.adapter && opts.weights) throw new Error('give an adapter or full weights, not both');
  const cfg = ckpt.config;
  if (cfg.architecture !== 'qwen3') throw new Error(`ONNX export covers Qwen3 only, not ${cfg.architecture} (its graph has no Gated DeltaNet or gated attention)`);
  const base = new Map<string, Float32Array>();
  for (const t of qwen3TensorLayout(cfg, !cfg.tieWordEmbeddings)) {
    const trained = opts.weights?.get(t.name);
    base.set(t.name, trained ?? (await readTensorFloat32(ckpt, t.name)));
  }
  const merged = opts.adapter ? mergeLora(opts.adapter, (name) => need(base, name)) : new Map<string, Float32Array>();
  const graph = buildQwen3Graph(cfg, (name) => merged.get(name) ?? need(base, name), dtype);
  const modelFile = ONNX_FILE[dtype];
  const chunks = externalizeInitializers(graph, modelFile, opts.externalDataThreshold ?? EXTERNAL_DATA_THRESHOLD);

  const jsConfig: Record<string, unknown> = { dtype };
  // transformers.js fetches external data only when told how many chunks there are.
  if (chunks.length > 0) jsConfig.use_external_data_format = { [modelFile.split('/').pop()!]: chunks.length };
  const config = { ...cfg.raw, 'transformers.js_config': jsConfig };
  const enc = new TextEncoder();
  const files: ExportedFile[] = [
    { name: modelFile, bytes: encodeModel(graph, PRODUCER_VERSION) },
    ...chunks,
    { name: 'config.json', bytes: enc.encode(JSON.stringify(config, null, 2) + '\n') },
  ];
  for (const side of SIDE_FILES) {
    const base = await ckpt.readText(side);
    const text = side === 'tokenizer_config.json' && base !== null && opts.chat ? withTrainedChat(base, opts.chat) : base;
    if (text !== null) files.push({ name: side, bytes: enc.encode(text) });
    else if (side !== 'generation_config.json') throw new Error(`the checkpoint has no ${side}: transformers.js needs it to tokenize`);
  }
  return files;
}

function need(m: Map<string, Float32Array>, name: string): Float32Array {
  const v = m.get(name);
  if (!v) throw new Error(`the checkpoint has no tensor '${name}'`);
  return v;
}
