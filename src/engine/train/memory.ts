// GPU memory of training, for the engine's memory plan: what setTrainable allocates (trainable
// weights, gradients, AdamW moments) and what one backward call over T packed tokens allocates
// (layer-input checkpoints, one layer's recomputed activations, backward scratch, the LM head's
// working set). Mirrors the allocations of trainable.ts and backward.ts.

import type { ModelConfig } from '../../model/types.ts';
import type { TrainableMode } from '../types.ts';
import { LOGITS_CHUNK_BYTES } from './backward.ts';
import { LORA_TARGETS } from './trainable.ts';

const F32 = 4;

export interface TrainMemory {
  /** Trainable parameters (LoRA A/B, or every weight in full mode). */
  trainableParams: number;
  /** Trainable weights owned by the train side (LoRA only; full mode updates the engine's own f32 weights). */
  adapterBytes: number;
  gradBytes: number;
  /** AdamW exp_avg + exp_avg_sq. */
  momentBytes: number;
  /** Per backward call: x_l of every layer. */
  checkpointBytes: number;
  /** Per backward call: one layer's recomputed forward (the LayerActs of internals.ts). */
  layerActsBytes: number;
  /** Per backward call: gradient scratch of one layer plus the LM head's working set. */
  scratchBytes: number;
  /** setTrainable's share, held while training. */
  persistentBytes: number;
  /** A backward call's share, freed when it returns. */
  perBackwardBytes: number;
}

function linearShapes(cfg: ModelConfig): Record<string, [number, number]> {
  const D = cfg.hiddenSize;
  const q = cfg.numHeads * cfg.headDim;
  const kv = cfg.numKvHeads * cfg.headDim;
  const F = cfg.intermediateSize;
  return { q_proj: [q, D], k_proj: [kv, D], v_proj: [kv, D], o_proj: [D, q], gate_proj: [F, D], up_proj: [F, D], down_proj: [D, F] };
}

/** Parameters of the model (unique; a tied head counts once). */
export function modelParams(cfg: ModelConfig): number {
  const D = cfg.hiddenSize;
  const perLayer = Object.values(linearShapes(cfg)).reduce((a, [o, i]) => a + o * i, 0) + 2 * D + 2 * cfg.headDim;
  return cfg.numLayers * perLayer + D + cfg.vocabSize * D * (cfg.tieWordEmbeddings ? 1 : 2);
}

/** Bytes of training `mode` with backward calls of `tokens` packed tokens, `scoredTokens` of them scored. */
export function trainMemory(cfg: ModelConfig, mode: TrainableMode, tokens: number, scoredTokens: number): TrainMemory {
  const T = tokens;
  const Ts = scoredTokens;
  const { hiddenSize: D, intermediateSize: F, numHeads: H, numKvHeads: K, headDim: d, numLayers: L } = cfg;
  let trainableParams = 0;
  let r = 0;
  if (mode.kind === 'lora') {
    r = mode.lora.r;
    const shapes = linearShapes(cfg);
    for (const t of LORA_TARGETS) {
      if (!mode.lora.targetModules.includes(t)) continue;
      const [out, inp] = shapes[t]!;
      trainableParams += L * r * (inp + out);
    }
  } else if (mode.kind === 'full') {
    trainableParams = modelParams(cfg);
  }
  const adapterBytes = mode.kind === 'lora' ? trainableParams * F32 : 0;
  const gradBytes = trainableParams * F32;
  const momentBytes = 2 * trainableParams * F32;
  const checkpointBytes = L * T * D * F32;
  const layerActsBytes = F32 * T * (5 * D + 2 + 3 * H * d + 3 * K * d + 2 * H + K + 3 * F);
  const layerScratch = F32 * T * (2 * D + 3 * F + 3 * H * d + 3 * K * d + 2 * H + Math.max(H, K) + 2 + 2 * r);
  const headScratch = F32 * Ts * (4 * D + 6) + Math.min(LOGITS_CHUNK_BYTES, F32 * Ts * cfg.vocabSize);
  const scratchBytes = layerScratch + headScratch;
  const persistentBytes = adapterBytes + gradBytes + momentBytes;
  return {
    trainableParams, adapterBytes, gradBytes, momentBytes, checkpointBytes, layerActsBytes, scratchBytes,
    persistentBytes, perBackwardBytes: checkpointBytes + layerActsBytes + scratchBytes,
  };
}
