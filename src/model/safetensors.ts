// The safetensors format (shared/specs/qwen3.md §6):
//   [8 bytes: N, u64 LE][N bytes: UTF-8 JSON header, space-padded][byte buffer]
// Header entries: {"<name>": {"dtype", "shape", "data_offsets": [begin, end]}}, offsets relative to
// the byte buffer. This module parses and validates headers, writes files, and converts the three
// float dtypes webgrpo reads (BF16, F16, F32) to and from f32.

import type { DType, TensorInfo } from './types.ts';

/**
 * Largest header webgrpo reads, checked on the 8-byte length before the header is read or parsed.
 * The reference implementation allows 100 MB; a dense Qwen3/Qwen3.5 shard's header is a few tens of
 * KB (~100 bytes a tensor), and a 100 MB one (10^6 tensors) took 53 s and 1.1 GB to refuse.
 */
export const MAX_HEADER_BYTES = 16 * 1024 * 1024;
/** Most tensors one file may list (Qwen3-32B has 707 in all), checked before any entry is validated. */
export const MAX_TENSORS = 65_536;

const READABLE_DTYPES: readonly DType[] = ['F32', 'F16', 'BF16'];
/** Dtypes that exist in the format but that webgrpo does not read: rejected by name. */
const KNOWN_UNSUPPORTED_DTYPES = new Set([
  'BOOL', 'U8', 'I8', 'I16', 'U16', 'I32', 'U32', 'F64', 'I64', 'U64',
  'F8_E4M3', 'F8_E5M2', 'F8_E8M0', 'F4', 'F6_E2M3', 'F6_E3M2', 'C64',
]);

export function dtypeSize(dtype: DType): number {
  return dtype === 'F32' ? 4 : 2;
}

/** A tensor of a parsed header: its info plus where its bytes lie in the file. */
export interface SafetensorsEntry extends TensorInfo {
  /** Absolute byte offset in the file (8 + N + data_offsets[0]). */
  fileOffset: number;
}

export interface SafetensorsHeader {
  /** 8 + N: where the byte buffer starts. */
  dataStart: number;
  metadata: Record<string, string>;
  /** In file order (by offset). */
  tensors: SafetensorsEntry[];
}

/** Reads the 8-byte length prefix; `file` names the file in errors. */
export function readHeaderLength(prefix: Uint8Array, fileSize: number, file: string): number {
  if (prefix.byteLength < 8 || fileSize < 8) {
    throw new Error(`${file}: not a safetensors file (${fileSize} bytes, shorter than the 8-byte header length)`);
  }
  const view = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const n = view.getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    throw new Error(`${file}: header length ${n} exceeds webgrpo's ${MAX_HEADER_BYTES}-byte limit (corrupt, not a safetensors file, or far more tensors than a dense model has)`);
  }
  const headerLength = Number(n);
  if (headerLength < 2) throw new Error(`${file}: header length ${headerLength} is too small for a JSON object`);
  if (8 + headerLength > fileSize) {
    throw new Error(`${file}: header length ${headerLength} runs past the end of the file (${fileSize} bytes)`);
  }
  return headerLength;
}

/**
 * Parses and validates a header. `headerBytes` are the N bytes after the length prefix; `fileSize`
 * is the whole file's size, against which the byte buffer is checked (regions must exactly cover it).
 */
export function parseHeader(headerBytes: Uint8Array, fileSize: number, file: string): SafetensorsHeader {
  const dataStart = 8 + headerBytes.byteLength;
  const bufferSize = fileSize - dataStart;
  if (bufferSize < 0) throw new Error(`${file}: header runs past the end of the file`);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(headerBytes);
  } catch {
    throw new Error(`${file}: header is not valid UTF-8`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file}: header is not valid JSON (${(err as Error).message})`);
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new Error(`${file}: header is not a JSON object`);
  }
  const count = Object.keys(json).length - ('__metadata__' in json ? 1 : 0);
  if (count > MAX_TENSORS) throw new Error(`${file}: header lists ${count} tensors, over webgrpo's limit of ${MAX_TENSORS}`);
  assertNoDuplicateKeys(text, file);

  const metadata: Record<string, string> = {};
  const tensors: SafetensorsEntry[] = [];
  for (const [name, value] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) {
        throw new Error(`${file}: __metadata__ must be an object of strings`);
      }
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        if (typeof v !== 'string') throw new Error(`${file}: __metadata__.${k} must be a string`);
        metadata[k] = v;
      }
      continue;
    }
    tensors.push(parseEntry(name, value, dataStart, file));
  }

  // Regions must be in bounds, not overlap, and cover the buffer with no holes.
  tensors.sort((a, b) => a.fileOffset - b.fileOffset || a.byteLength - b.byteLength);
  let cursor = dataStart;
  for (const t of tensors) {
    const begin = t.fileOffset - dataStart;
    const end = begin + t.byteLength;
    if (end > bufferSize) {
      throw new Error(`${file}: tensor '${t.name}' data_offsets [${begin}, ${end}] run past the byte buffer (${bufferSize} bytes)`);
    }
    if (t.fileOffset < cursor) {
      throw new Error(`${file}: tensor '${t.name}' data_offsets [${begin}, ${end}] overlap the previous tensor`);
    }
    if (t.fileOffset > cursor) {
      throw new Error(`${file}: tensor '${t.name}' starts at ${begin} but the previous region ends at ${cursor - dataStart} (hole in the byte buffer)`);
    }
    cursor = t.fileOffset + t.byteLength;
  }
  if (cursor !== fileSize) {
    throw new Error(`${file}: tensors cover ${cursor - dataStart} bytes but the byte buffer has ${bufferSize} (trailing bytes)`);
  }
  return { dataStart, metadata, tensors };
}

function parseEntry(name: string, value: unknown, dataStart: number, file: string): SafetensorsEntry {
  const where = `${file}: tensor '${name}'`;
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`${where}: entry is not an object`);
  const { dtype, shape, data_offsets: offsets } = value as Record<string, unknown>;
  if (typeof dtype !== 'string') throw new Error(`${where}: missing dtype`);
  if (!(READABLE_DTYPES as readonly string[]).includes(dtype)) {
    if (KNOWN_UNSUPPORTED_DTYPES.has(dtype)) {
      throw new Error(`${where}: dtype ${dtype} is not supported (webgrpo reads BF16, F16 and F32)`);
    }
    throw new Error(`${where}: unknown dtype '${dtype}'`);
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
    throw new Error(`${where}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0)) {
    throw new Error(`${where}: data_offsets must be [begin, end] non-negative integers, got ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  if (end < begin) throw new Error(`${where}: data_offsets [${begin}, ${end}] end before they begin`);
  const byteLength = (shape as number[]).reduce((p, d) => p * d, 1) * dtypeSize(dtype as DType);
  if (end - begin !== byteLength) {
    throw new Error(`${where}: data_offsets span ${end - begin} bytes but shape ${JSON.stringify(shape)} × ${dtype} needs ${byteLength}`);
  }
  return { name, dtype: dtype as DType, shape: shape as number[], byteLength, fileOffset: dataStart + begin };
}

/** JSON.parse keeps the last of duplicate keys silently; the format forbids them, so scan top-level keys. */
function assertNoDuplicateKeys(text: string, file: string): void {
  const seen = new Set<string>();
  let depth = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (depth === 1) {
        let k = j + 1;
        while (text[k] === ' ' || text[k] === '\n' || text[k] === '\r' || text[k] === '\t') k++;
        if (text[k] === ':') {
          const key = JSON.parse(text.slice(i, j + 1)) as string;
          if (seen.has(key)) throw new Error(`${file}: duplicate key '${key}' in header`);
          seen.add(key);
        }
      }
      i = j + 1;
      continue;
    }
    if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') depth--;
    i++;
  }
}

/** Parses a whole safetensors file held in memory. */
export function parseSafetensors(bytes: Uint8Array, file = 'model.safetensors'): SafetensorsHeader {
  const n = readHeaderLength(bytes.subarray(0, 8), bytes.byteLength, file);
  return parseHeader(bytes.subarray(8, 8 + n), bytes.byteLength, file);
}

export interface TensorToWrite {
  name: string;
  dtype: DType;
  shape: number[];
  /** Little-endian bytes, row-major; length must be prod(shape) × dtype size. */
  data: Uint8Array;
}

/** Builds the padded header for `tensors` laid out in the given order; returns it with the buffer size. */
export function encodeHeader(tensors: readonly Omit<TensorToWrite, 'data'>[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  const names = new Set<string>();
  for (const t of tensors) {
    if (names.has(t.name)) throw new Error(`writeSafetensors: duplicate tensor name '${t.name}'`);
    names.add(t.name);
    const byteLength = t.shape.reduce((p, d) => p * d, 1) * dtypeSize(t.dtype);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + byteLength] };
    offset += byteLength;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  // Pad with spaces so the byte buffer starts 8-aligned (8 + N ≡ 0 mod 8).
  const padded = Math.ceil(json.byteLength / 8) * 8;
  const out = new Uint8Array(8 + padded).fill(0x20, 8 + json.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  return out;
}

/** Serializes tensors (in the given order) to one safetensors file. */
export function writeSafetensors(tensors: readonly TensorToWrite[], metadata: Record<string, string> = { format: 'pt' }): Uint8Array {
  for (const t of tensors) {
    const expected = t.shape.reduce((p, d) => p * d, 1) * dtypeSize(t.dtype);
    if (t.data.byteLength !== expected) {
      throw new Error(`writeSafetensors: tensor '${t.name}' has ${t.data.byteLength} bytes but shape ${JSON.stringify(t.shape)} × ${t.dtype} needs ${expected}`);
    }
  }
  const header = encodeHeader(tensors, metadata);
  const total = header.byteLength + tensors.reduce((s, t) => s + t.data.byteLength, 0);
  const out = new Uint8Array(total);
  out.set(header, 0);
  let offset = header.byteLength;
  for (const t of tensors) {
    out.set(t.data, offset);
    offset += t.data.byteLength;
  }
  return out;
}

// ---- dtype conversion -------------------------------------------------------------------------

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE half → float (exact: every f16 is representable in f32), including subnormals, ±inf and NaN. */
export function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24; // subnormal (or zero)
  if (exponent === 0x1f) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

/** float → IEEE half bits with round-to-nearest-even; overflow → ±inf, NaN stays NaN. */
export function floatToHalf(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15; // re-biased exponent
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    // Subnormal half (or zero): shift the full 24-bit significand into place, rounding to even.
    if (e < -10) return sign;
    const full = mant | 0x800000;
    const shift = 14 - e; // 24-bit significand → 10-bit subnormal mantissa
    const half = full >>> shift;
    const rem = full & ((1 << shift) - 1);
    const midpoint = 1 << (shift - 1);
    const round = rem > midpoint || (rem === midpoint && (half & 1)) ? 1 : 0;
    return sign | (half + round);
  }
  const half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa correctly bumps the exponent (and reaches inf at the top).
  const round = rem > 0x1000 || (rem === 0x1000 && (half & 1)) ? 1 : 0;
  return sign | (half + round);
}

/** float → bf16 bits with round-to-nearest-even (the top 16 bits of the f32, rounded); NaN stays NaN. */
export function floatToBf16(value: number): number {
  f32Scratch[0] = value;
  const x = u32Scratch[0]!;
  if ((x & 0x7f800000) === 0x7f800000 && x & 0x7fffff) return ((x >>> 16) | 0x40) & 0xffff;
  const rounded = x + 0x7fff + ((x >>> 16) & 1);
  return (rounded >>> 16) & 0xffff;
}

/** Decodes a tensor's raw little-endian bytes to f32 values (bf16 is exact: bits << 16). */
export function decodeToFloat32(info: Pick<TensorInfo, 'dtype' | 'name'>, bytes: Uint8Array): Float32Array {
  const size = dtypeSize(info.dtype);
  if (bytes.byteLength % size !== 0) {
    throw new Error(`tensor '${info.name}': ${bytes.byteLength} bytes is not a whole number of ${info.dtype} values`);
  }
  const count = bytes.byteLength / size;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Float32Array(count);
  if (info.dtype === 'F32') {
    for (let i = 0; i < count; i++) out[i] = view.getFloat32(i * 4, true);
  } else if (info.dtype === 'BF16') {
    const bits = new Uint32Array(out.buffer);
    for (let i = 0; i < count; i++) bits[i] = view.getUint16(i * 2, true) << 16;
  } else {
    for (let i = 0; i < count; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
  }
  return out;
}

/** Encodes f32 values as little-endian bytes of `dtype` (round-to-nearest-even for BF16/F16). */
export function encodeFromFloat32(dtype: DType, values: Float32Array): Uint8Array {
  const out = new Uint8Array(values.length * dtypeSize(dtype));
  const view = new DataView(out.buffer);
  if (dtype === 'F32') {
    for (let i = 0; i < values.length; i++) view.setFloat32(i * 4, values[i]!, true);
  } else if (dtype === 'BF16') {
    for (let i = 0; i < values.length; i++) view.setUint16(i * 2, floatToBf16(values[i]!), true);
  } else {
    for (let i = 0; i < values.length; i++) view.setUint16(i * 2, floatToHalf(values[i]!), true);
  }
  return out;
}

/** Largest finite f16 value. */
export const F16_MAX = 65504;

/**
 * Whether values lose more than rounding when stored as f16: any finite value beyond ±65504
 * (would become ±inf). Such tensors (possible in bf16 checkpoints) must stay in f32 on the GPU.
 */
export function exceedsF16Range(values: Float32Array): boolean {
  for (let i = 0; i < values.length; i++) {
    const a = Math.abs(values[i]!);
    if (a > F16_MAX && a !== Infinity) return true;
  }
  return false;
}
