// GPU storage of the parameter table: one tensor's values uploaded as f16 (packed two per u32) or
// f32, split by rows into several buffers when it exceeds one storage binding.

import type { ParamEntry } from './internals.ts';

/** Largest |value| an IEEE half holds; a bigger weight would become inf. */
export const F16_MAX = 65504;
/**
 * The engine's cap on one storage binding, whatever the adapter reports: SwiftShader fails to allocate
 * a buffer of exactly 1 GiB (specs/webgpu-without-a-gpu.md §4). The memory plans (src/rl/run-limits.ts,
 * src/app/run-plan.ts) apply the same cap, so they take it from here.
 */
export const MAX_BINDING_BYTES = 1024 * 1024 * 1024 - 4 * 1024 * 1024;

/** The largest storage binding the engine makes on an adapter with `limits` (`override`: a lower cap). */
export function bindingLimit(limits: Pick<GPUSupportedLimits, 'maxStorageBufferBindingSize' | 'maxBufferSize'>, override?: number): number {
  const hw = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize, MAX_BINDING_BYTES);
  return override ? Math.min(override, hw) : hw;
}

/** Converts f32 values to IEEE half bits (round to nearest even), two per u32 word. */
export function packHalf(values: Float32Array): Uint32Array {
  const f = new Float32Array(1);
  const bits = new Uint32Array(f.buffer);
  const halves = new Uint16Array(values.length + (values.length & 1));
  for (let i = 0; i < values.length; i++) {
    f[0] = values[i]!;
    const x = bits[0]!;
    const sign = (x >>> 16) & 0x8000;
    const exp = (x >>> 23) & 0xff;
    const mant = x & 0x7fffff;
    let h: number;
    if (exp === 0xff) h = sign | 0x7c00 | (mant ? 0x200 : 0);
    else {
      const e = exp - 112; // re-biased exponent (127 − 15)
      if (e >= 0x1f) h = sign | 0x7c00;
      else if (e <= 0) {
        if (e < -10) h = sign;
        else {
          const full = mant | 0x800000;
          const shift = 14 - e;
          const half = full >>> shift;
          const rem = full & ((1 << shift) - 1);
          const mid = 1 << (shift - 1);
          h = sign | (half + (rem > mid || (rem === mid && half & 1) ? 1 : 0));
        }
      } else {
        const half = (e << 10) | (mant >>> 13);
        const rem = mant & 0x1fff;
        h = sign | (half + (rem > 0x1000 || (rem === 0x1000 && half & 1) ? 1 : 0));
      }
    }
    halves[i] = h;
  }
  return new Uint32Array(halves.buffer);
}

/** Reads rows [r0, r0 + n) of a tensor as f32 (decoded from its stored dtype on demand). */
export type RowReader = (r0: number, n: number) => Float32Array;

/** Values decoded per slice when scanning a tensor: bounds the JS memory of one huge tensor. */
const SCAN_VALUES = 1 << 20;

/** Whether every value of the tensor fits an IEEE half (|x| ≤ 65504, not NaN), scanned in slices. */
export function fitsHalf(read: RowReader, rows: number, rowLen: number): boolean {
  const step = Math.max(1, Math.floor(SCAN_VALUES / rowLen));
  for (let r0 = 0; r0 < rows; r0 += step) {
    const v = read(r0, Math.min(step, rows - r0));
    for (let i = 0; i < v.length; i++) if (!(Math.abs(v[i]!) <= F16_MAX)) return false;
  }
  return true;
}

/**
 * Uploads one tensor as `dtype`, split by rows so that no buffer exceeds `maxBindingBytes`. Rows
 * are decoded one buffer at a time, so a huge tensor (the 0.6B embedding) is never held in f32 whole.
 */
export function uploadTensor(device: GPUDevice, name: string, shape: number[], read: RowReader, dtype: 'f16' | 'f32', maxBindingBytes: number): ParamEntry {
  const rows = shape.length === 2 ? shape[0]! : 1;
  const rowLen = shape.reduce((a, b) => a * b, 1) / rows;
  const bytesPerValue = dtype === 'f16' ? 2 : 4;
  const rowBytes = rowLen * bytesPerValue;
  if (rowBytes > maxBindingBytes) throw new Error(`tensor ${name}: one row (${rowBytes} bytes) exceeds the device's storage binding limit (${maxBindingBytes} bytes)`);
  const rowsPerChunk = Math.floor(maxBindingBytes / rowBytes);
  const entry: ParamEntry = { name, shape, dtype, chunks: [] };
  for (let r0 = 0; r0 < rows; r0 += rowsPerChunk) {
    const n = Math.min(rowsPerChunk, rows - r0);
    const values = read(r0, n);
    const data = dtype === 'f16' ? packHalf(values) : values;
    const size = Math.ceil(data.byteLength / 4) * 4;
    const buffer = device.createBuffer({
      label: entry.chunks.length || r0 + n < rows ? `${name} rows ${r0}..${r0 + n}` : name,
      size: Math.max(size, 4),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC,
      mappedAtCreation: true,
    });
    new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    buffer.unmap();
    entry.chunks.push({ buffer, rowStart: r0, rows: n });
  }
  return entry;
}
