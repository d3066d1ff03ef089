// Moves large initializers out of the protobuf into `<model>.onnx_data` chunk files (ONNX's
// external-data form), because a protobuf message cannot exceed 2 GiB: past that size the graph
// keeps only each tensor's location, offset and length. Chunks are named as transformers.js asks
// for them (`model.onnx_data`, `model.onnx_data_1`, …).

import type { GraphMsg } from './onnx-proto.ts';

/** Stay well under protobuf's 2 GiB message limit (the graph itself needs a little room too). */
export const EXTERNAL_DATA_THRESHOLD = 1.5 * 2 ** 30;
/** Largest chunk file: under 2 GiB so a browser can hold each one in a single ArrayBuffer. */
export const EXTERNAL_CHUNK_BYTES = 1.5 * 2 ** 30;
/** Tensors smaller than this stay inline (constants, norms). */
const INLINE_BYTES = 1024;

export interface ExternalChunk {
  name: string;
  bytes: Uint8Array;
}

export function chunkName(modelFile: string, i: number): string {
  return `${modelFile}_data${i === 0 ? '' : `_${i}`}`;
}

/**
 * Rewrites `graph` in place so every initializer of at least INLINE_BYTES lives in external chunks;
 * returns the chunks (empty when the weights fit inline under `threshold`).
 */
export function externalizeInitializers(graph: GraphMsg, modelFile: string, threshold = EXTERNAL_DATA_THRESHOLD, chunkBytes = EXTERNAL_CHUNK_BYTES): ExternalChunk[] {
  const total = graph.initializer.reduce((s, t) => s + (t.rawData?.byteLength ?? 0), 0);
  if (total <= threshold) return [];
  const groups: { parts: Uint8Array[]; size: number }[] = [];
  for (const t of graph.initializer) {
    const raw = t.rawData;
    if (!raw || raw.byteLength < INLINE_BYTES) continue;
    if (raw.byteLength > chunkBytes) throw new Error(`tensor ${t.name} (${raw.byteLength} bytes) is larger than one external-data chunk (${chunkBytes} bytes)`);
    let group = groups[groups.length - 1];
    if (!group || group.size + raw.byteLength > chunkBytes) groups.push((group = { parts: [], size: 0 }));
    const location = chunkName(modelFile.split('/').pop()!, groups.length - 1);
    t.externalData = [
      { key: 'location', value: location },
      { key: 'offset', value: String(group.size) },
      { key: 'length', value: String(raw.byteLength) },
    ];
    t.dataLocation = 1;
    delete t.rawData;
    group.parts.push(raw);
    group.size += raw.byteLength;
  }
  return groups.map((group, i) => {
    const bytes = new Uint8Array(group.size);
    let at = 0;
    for (const part of group.parts) {
      bytes.set(part, at);
      at += part.byteLength;
    }
    return { name: chunkName(modelFile, i), bytes };
  });
}
