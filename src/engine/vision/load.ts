// Uploads a Qwen3.5 checkpoint's vision tower (model.visual.*) to the GPU. openCheckpoint keeps the
// decoder's tensors only, so the tower's are found by re-reading the weights files' headers
// (readVisionTensors) and read one tensor at a time.

import { readVisionTensors, type OpenedCheckpoint } from '../../model/checkpoint.ts';
import { decodeToFloat32, dtypeSize } from '../../model/safetensors.ts';
import type { EngineInternals, ParamEntry } from '../internals.ts';
import { fitsHalf, uploadTensor, type RowReader } from '../params.ts';
import { visionTensorLayout } from './config.ts';
import { VisionTower } from './tower.ts';

/**
 * The checkpoint's vision tower on `fwd`'s device, its matrices stored as `matrixDtype` (f16 where
 * every value fits a half, as the decoder's). Throws when the checkpoint has no vision_config or a
 * tensor is missing or misshapen.
 */
export async function loadVisionTower(fwd: EngineInternals, ckpt: OpenedCheckpoint, matrixDtype: 'f16' | 'f32'): Promise<VisionTower> {
  const config = ckpt.config.vision;
  if (!config) throw new Error(`${ckpt.location}: config.json has no vision_config (not a vision-language checkpoint)`);
  const stored = await readVisionTensors(ckpt);
  const params = new Map<string, ParamEntry>();
  try {
    for (const { name, shape } of visionTensorLayout(config)) {
      const t = stored.get(name);
      if (!t) throw new Error(`${ckpt.location}: the vision tower's tensor '${name}' is missing`);
      if (t.shape.join('×') !== shape.join('×')) throw new Error(`${ckpt.location}: tensor '${name}' has shape [${t.shape}], expected [${shape}] from vision_config`);
      const raw = await ckpt.files.read(t.file, t.fileOffset, t.fileOffset + t.byteLength);
      // Matrices as (rows, values per row): the Conv3d patch embedding is a matmul over flattened patches.
      const rows = shape.length >= 2 ? shape[0]! : 1;
      const rowLen = shape.reduce((a, b) => a * b, 1) / rows;
      const rowBytes = rowLen * dtypeSize(t.dtype);
      const read: RowReader = (r0, n) => decodeToFloat32(t, raw.subarray(r0 * rowBytes, (r0 + n) * rowBytes));
      // The position table is gathered row by row by pos_embed.wgsl, which reads f32.
      const matrix = shape.length >= 2 && !name.endsWith('pos_embed.weight');
      const dtype = matrixDtype === 'f16' && matrix && rowLen % 2 === 0 && fitsHalf(read, rows, rowLen) ? 'f16' : 'f32';
      params.set(name, uploadTensor(fwd.gpu.device, name, shape.length >= 2 ? [rows, rowLen] : shape, read, dtype, fwd.maxBindingBytes));
    }
  } catch (err) {
    for (const p of params.values()) for (const c of p.chunks) c.buffer.destroy();
    throw err;
  }
  return new VisionTower(fwd, config, params);
}
