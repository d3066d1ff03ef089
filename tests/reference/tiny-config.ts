// Tiny Qwen3 configs for the reference tests: small enough that a float64 forward takes
// well under a millisecond, shaped to catch the classic mistakes (GQA head mapping, head_dim ≠
// hidden/heads, untied head).

import type { ModelConfig } from '../../src/model/types.ts';
import { qwen3ArchitectureFields } from '../../src/model/config.ts';

export function tinyConfig(overrides: Partial<ModelConfig> = {}): ModelConfig {
  const base = {
    vocabSize: 37,
    hiddenSize: 24,
    intermediateSize: 40,
    numLayers: 2,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 8, // 4·8 = 32 ≠ hidden 24
    rmsNormEps: 1e-6,
    ropeTheta: 10_000,
    tieWordEmbeddings: true,
    maxPositionEmbeddings: 128,
    bosTokenId: null,
    eosTokenIds: [1],
    raw: {},
    ...overrides,
  };
  // Qwen3 unless the test says otherwise; the per-layer fields follow numLayers/headDim.
  return { ...qwen3ArchitectureFields(base.numLayers, base.headDim), ...base };
}
