// Qwen3.5 checkpoints: the tiny generator's two forms (Qwen3_5ForCausalLM, and the text model of
// Qwen3_5ForConditionalGeneration), the opener's canonical names, and the tensor check.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as makeTinyModelCli } from '../../src/cli/make-tiny-model.ts';
import { openCheckpoint, readSafetensorsHeader, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { memoryFiles } from '../../src/model/files.ts';
import { layerLinears, linearShape, validateQwen3Tensors } from '../../src/model/qwen3-tensors.ts';
import { parseHeader, readHeaderLength, writeSafetensors, encodeFromFloat32 } from '../../src/model/safetensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';

const SHAPE = { arch: 'qwen3_5', hidden: 32, layers: 3, heads: 4, kvHeads: 2, headDim: 16, intermediate: 48 } as const;

function storedNames(bytes: Uint8Array): string[] {
  const n = readHeaderLength(bytes.subarray(0, 8), bytes.byteLength, 'w');
  return parseHeader(bytes.subarray(8, 8 + n), bytes.byteLength, 'w').tensors.map((t) => t.name);
}

describe('tiny Qwen3.5', () => {
  it('writes both layer types with the DeltaNet tensors, the gated q_proj and (1 + w) norms near 0', async () => {
    const model = await makeTinyModel({ ...SHAPE, layerTypes: ['linear_attention', 'full_attention', 'linear_attention'] });
    const c = model.config;
    expect(c).toMatchObject({ architecture: 'qwen3_5', attnOutputGate: true, rotaryDim: 4, tensorPrefix: 'model.', tieWordEmbeddings: true });
    expect(c.linearAttention).toEqual({ numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 16, valueHeadDim: 16, convKernelDim: 4 });
    const ckpt = await openCheckpoint(model.files);
    expect(validateQwen3Tensors(ckpt).warnings).toEqual([]);
    const shape = (n: string) => ckpt.tensors.get(n)?.shape;
    // 2·Hk·dk + Hv·dv = 2·2·16 + 4·16 conv channels.
    expect(shape('model.layers.0.linear_attn.in_proj_qkv.weight')).toEqual([128, 32]);
    expect(shape('model.layers.0.linear_attn.conv1d.weight')).toEqual([128, 1, 4]);
    expect(shape('model.layers.0.linear_attn.in_proj_b.weight')).toEqual([4, 32]);
    expect(shape('model.layers.0.linear_attn.A_log')).toEqual([4]);
    expect(shape('model.layers.0.linear_attn.norm.weight')).toEqual([16]);
    expect(shape('model.layers.0.linear_attn.out_proj.weight')).toEqual([32, 64]);
    expect(shape('model.layers.0.self_attn.q_proj.weight')).toBeUndefined();
    expect(shape('model.layers.1.self_attn.q_proj.weight')).toEqual([2 * 4 * 16, 32]);
    expect(shape('model.layers.1.linear_attn.A_log')).toBeUndefined();
    expect(layerLinears(c, 0)).toEqual(['in_proj_qkv', 'in_proj_z', 'in_proj_b', 'in_proj_a', 'out_proj', 'gate_proj', 'up_proj', 'down_proj']);
    expect(layerLinears(c, 1)).toEqual(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj']);
    expect(linearShape(c, 'in_proj_z')).toEqual([64, 32]);
    const mean = (a: Float32Array) => a.reduce((s, x) => s + x, 0) / a.length;
    expect(Math.abs(mean(await readTensorFloat32(ckpt, 'model.layers.0.input_layernorm.weight')))).toBeLessThan(0.1);
    expect(mean(await readTensorFloat32(ckpt, 'model.layers.0.linear_attn.norm.weight'))).toBeGreaterThan(0.9);
  });

  it('writes the composite form under model.language_model.* and opens it under the canonical names', async () => {
    const flat = await makeTinyModel({ ...SHAPE, seed: 3 });
    const composite = await makeTinyModel({ ...SHAPE, seed: 3, composite: true, tie: false });
    const raw = JSON.parse(new TextDecoder().decode(composite.files.get('config.json')));
    expect(raw).toMatchObject({ architectures: ['Qwen3_5ForConditionalGeneration'], model_type: 'qwen3_5', text_config: { model_type: 'qwen3_5_text' } });
    const names = storedNames(composite.files.get('model.safetensors')!);
    expect(names).toContain('model.language_model.layers.0.linear_attn.A_log');
    expect(names).toContain('lm_head.weight');
    expect(names.filter((n) => n.startsWith('model.') && !n.startsWith('model.language_model.'))).toEqual([]);
    const a = await openCheckpoint(flat.files);
    const b = await openCheckpoint(composite.files);
    expect(validateQwen3Tensors(b).usesSeparateLmHead).toBe(true);
    expect([...b.tensors.keys()].filter((n) => n !== 'lm_head.weight').sort()).toEqual([...a.tensors.keys()].sort());
    // Same seed and names: the same weights, whichever form holds them.
    expect(await b.readTensor('model.layers.2.linear_attn.conv1d.weight')).toEqual(await a.readTensor('model.layers.2.linear_attn.conv1d.weight'));
  });

  it('ignores the vision tower and the MTP head a real Qwen3.5 checkpoint carries, and names strays', async () => {
    const model = await makeTinyModel({ ...SHAPE, composite: true });
    const tensors = (await openCheckpoint(model.files)).tensors;
    const extra = (name: string) => ({ name, dtype: 'F32' as const, shape: [2], data: encodeFromFloat32('F32', new Float32Array([1, 2])) });
    const withExtras = async (names: string[]) => {
      const ckpt = await openCheckpoint(model.files);
      const parts = await Promise.all([...tensors.keys()].map(async (n) => ({ name: `model.language_model.${n.slice(6)}`, dtype: ckpt.tensors.get(n)!.dtype, shape: ckpt.tensors.get(n)!.shape, data: await ckpt.readTensor(n) })));
      const files = new Map(model.files);
      files.set('model.safetensors', writeSafetensors([...parts, ...names.map(extra)]));
      return openCheckpoint(memoryFiles(files));
    };
    const real = await withExtras(['model.visual.blocks.0.attn.qkv.weight', 'mtp.fc.weight']);
    expect([...real.tensors.keys()].sort()).toEqual([...tensors.keys()].sort());
    expect(real.totalTensorBytes).toBe([...tensors.values()].reduce((s, t) => s + t.byteLength, 0));
    expect(validateQwen3Tensors(real).warnings).toEqual([]);
    await expect(withExtras(['model.layers.0.mystery.weight']).then(validateQwen3Tensors)).rejects.toThrow(
      /unexpected tensor 'model\.layers\.0\.mystery\.weight' \(not part of a 3-layer Qwen3\.5 text model\)/,
    );
  });

  it('make-tiny-model --arch qwen3_5 writes a loadable folder and reports its layer types', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-tiny35-'));
    try {
      const logs: string[] = [];
      const log = console.log;
      console.log = (s: string) => logs.push(s);
      try {
        expect(await makeTinyModelCli(['--out', dir, '--arch', 'qwen3_5', '--layers', '4', '--layer-types', 'linear_attention,linear_attention,linear_attention,full_attention', '--linear-value-heads', '2', '--composite', 'true'])).toBe(0);
      } finally {
        console.log = log;
      }
      const summary = JSON.parse(logs.join('\n'));
      expect(summary.config).toMatchObject({ architecture: 'qwen3_5', layer_types: ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention'], linear_num_value_heads: 2 });
      const ckpt = await openCheckpoint(dir);
      expect(ckpt.config.tensorPrefix).toBe('model.language_model.');
      expect((await readSafetensorsHeader(ckpt.files, 'model.safetensors')).some((t) => t.name === 'model.language_model.norm.weight')).toBe(true);
      expect(validateQwen3Tensors(ckpt).usesSeparateLmHead).toBe(false);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await expect(makeTinyModelCli(['--out', dir, '--arch', 'qwen3_5', '--layer-types', 'linear_attention,mamba'])).rejects.toThrow(/'mamba' is not linear_attention or full_attention/);
    await expect(makeTinyModelCli(['--out', dir, '--composite', 'true'])).rejects.toThrow(/apply to arch qwen3_5 only/);
  });
});
