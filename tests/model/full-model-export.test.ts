// The full-fine-tuning model writer (src/export/full-model.ts, shared by the app's download and
// `train --train_mode full --output`), on its own: a bf16 checkpoint comes back in bf16 with the
// tensors transformers' save_pretrained writes for it (tests/fixtures/transformers-full-ft/saved.json),
// the trained values rounded to bf16 and the untrained bytes untouched; a stored copy of a tied head is
// left out; a base without generation_config.json gets the one transformers derives.

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { NamedTensor } from '../../src/engine/types.ts';
import { fullModelFiles } from '../../src/export/full-model.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { decodeToFloat32, encodeFromFloat32 } from '../../src/model/safetensors.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';

const FIXTURE = fileURLToPath(new URL('../fixtures/transformers-full-ft/saved.json', import.meta.url));
const saved = JSON.parse(await readFile(FIXTURE, 'utf8')) as { bf16: { tensors: Record<string, { dtype: string; shape: number[] }> } };
const TINY = { seed: 3, hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64 };
const TRAINED = 'model.layers.0.mlp.up_proj.weight';

/** An engine whose full-mode state moved one tensor by a value bf16 cannot hold exactly, plus its AdamW moment. */
async function trainedState(files: Map<string, Uint8Array>): Promise<{ saveState(): Promise<{ tensors: NamedTensor[]; step: number }> }> {
  const ckpt = await openCheckpoint(files);
  const data = (await readTensorFloat32(ckpt, TRAINED)).map((v) => v + 1e-3 / 3);
  const shape = ckpt.tensors.get(TRAINED)!.shape;
  return { saveState: async () => ({ tensors: [{ name: TRAINED, shape, data }, { name: `${TRAINED}.exp_avg`, shape, data }], step: 1 }) };
}

describe('the full-fine-tuning model files', () => {
  it('keep a bf16 checkpoint in bf16, laid out as transformers saves it, with the trained values', async () => {
    const files = await makeTinyCheckpointFiles({ ...TINY, dtype: 'bf16', storeLmHead: true });
    const base = await openCheckpoint(files);
    expect(base.tensors.has('lm_head.weight')).toBe(true);
    const engine = await trainedState(files);
    const out = await openCheckpoint(new Map((await fullModelFiles(engine, base)).map((f) => [f.name, f.bytes])));
    expect(Object.fromEntries([...out.tensors.values()].map((t) => [t.name, { dtype: t.dtype, shape: t.shape }]))).toEqual(saved.bf16.tensors);
    const want = encodeFromFloat32('BF16', (await engine.saveState()).tensors[0]!.data);
    expect(Buffer.from(await out.readTensor(TRAINED)).equals(Buffer.from(want))).toBe(true);
    expect(decodeToFloat32({ name: TRAINED, dtype: 'BF16' }, want)).not.toEqual(await readTensorFloat32(base, TRAINED));
    for (const name of out.tensors.keys()) {
      if (name !== TRAINED) expect(Buffer.from(await out.readTensor(name)).equals(Buffer.from(await base.readTensor(name))), name).toBe(true);
    }
  });

  it('give a base without generation_config.json the one transformers derives from config.json', async () => {
    const files = await makeTinyCheckpointFiles(TINY);
    files.delete('generation_config.json');
    const base = await openCheckpoint(files);
    const out = new Map((await fullModelFiles(await trainedState(files), base)).map((f) => [f.name, new TextDecoder().decode(f.bytes)]));
    expect(JSON.parse(out.get('generation_config.json')!)).toEqual({ _from_model_config: true, bos_token_id: 472, eos_token_id: 474 });
  });

  it('refuse an engine that trained none of the weights (LoRA)', async () => {
    const base = await openCheckpoint(await makeTinyCheckpointFiles(TINY));
    await expect(fullModelFiles({ saveState: async () => ({ tensors: [], step: 0 }) }, base)).rejects.toThrow(/not trained in full mode/);
  });
});
