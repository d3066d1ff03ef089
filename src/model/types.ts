// Shared types of checkpoint loading (src/model) and the engine (src/engine).

/** Qwen3 hyper-parameters, normalized from either config.json form (rope_theta or rope_parameters). */
export interface ModelConfig {
  vocabSize: number;
  hiddenSize: number; // D
  intermediateSize: number; // F
  numLayers: number;
  numHeads: number; // H (query heads)
  numKvHeads: number; // K (GQA: query head h uses kv head floor(h / (H/K)))
  headDim: number; // d (not necessarily hiddenSize / numHeads)
  rmsNormEps: number;
  ropeTheta: number;
  tieWordEmbeddings: boolean;
  maxPositionEmbeddings: number;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** The config.json as read, for round-tripping and display. */
  raw: Record<string, unknown>;
}

export type DType = 'F32' | 'F16' | 'BF16';

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  byteLength: number;
}

/** Progress of a long load (download or upload to the GPU). */
export interface LoadProgress {
  phase: 'download' | 'upload' | 'cache';
  file?: string;
  loadedBytes: number;
  totalBytes: number;
  /** Bytes per second over the recent window, when known. */
  rate?: number;
}

/**
 * An opened checkpoint in Hugging Face layout (local folder, HTTP/Hub, browser files, or memory).
 * Tensors are read one at a time so the whole weights file is never in JS memory at once.
 */
export interface Checkpoint {
  config: ModelConfig;
  tensors: Map<string, TensorInfo>;
  /** Raw little-endian bytes of one tensor, exactly as stored. */
  readTensor(name: string): Promise<Uint8Array>;
  /** Any small side file (tokenizer.json, tokenizer_config.json, generation_config.json) as text, or null if absent. */
  readText(file: string): Promise<string | null>;
}
