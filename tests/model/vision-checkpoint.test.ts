// Qwen3.5's vision tower in the loader: vision_config → VisionConfig, model.visual.* kept only when
// asked and checked against the config, and make-tiny-model --vision writing a folder both read.
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { parseConfig } from '../../src/model/config.ts';
import { validateQwen3Tensors } from '../../src/model/qwen3-tensors.ts';
import { visionTensorLayout } from '../../src/model/qwen3_5-vision-tensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';

const DIR = 'tests/fixtures/transformers-qwen3_5-vl';
const raw = JSON.parse(await readFile(`${DIR}/config.json`, 'utf8')) as Record<string, unknown>;

describe('vision_config', () => {
  it('reads the config transformers wrote (rope_parameters.partial_rotary_factor wins over the stale top-level one)', () => {
    const c = parseConfig(raw);
    expect(c.partialRotaryFactor).toBe(0.75);
    expect(c.rotaryDim).toBe(12);
    expect(c.vision).toEqual({
      depth: 2, hiddenSize: 32, intermediateSize: 64, numHeads: 2, headDim: 16, inChannels: 3, patchSize: 16,
      temporalPatchSize: 2, spatialMergeSize: 2, outHiddenSize: 32, numPositionEmbeddings: 16, positionGridSide: 4,
      hiddenAct: 'gelu_pytorch_tanh', ropeTheta: 10000, layerNormEps: 1e-6, imageTokenId: 484, videoTokenId: 485,
      visionStartTokenId: 481, visionEndTokenId: 482, mropeSection: [2, 2, 2],
    });
  });

  const vision = raw.vision_config as Record<string, unknown>;
  const text = raw.text_config as Record<string, unknown>;
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['deepstack', { ...raw, vision_config: { ...vision, deepstack_visual_indexes: [1] } }, /deepstack_visual_indexes \[1\] is not supported/],
    ['merger width', { ...raw, vision_config: { ...vision, out_hidden_size: 64 } }, /out_hidden_size \(64\) must equal the text model's hidden_size \(32\)/],
    ['position grid', { ...raw, vision_config: { ...vision, num_position_embeddings: 15 } }, /num_position_embeddings \(15\) must be a square/],
    ['rope type', { ...raw, vision_config: { ...vision, rope_parameters: { rope_type: 'yarn' } } }, /rope_type 'yarn' is not supported \(only 'axial'\)/],
    ['heads', { ...raw, vision_config: { ...vision, num_heads: 3 } }, /hidden_size \(32\) is not divisible by num_heads \(3\)/],
    ['activation', { ...raw, vision_config: { ...vision, hidden_act: 'relu' } }, /hidden_act "relu" is not supported/],
    ['token id', { ...raw, image_token_id: 600 }, /image_token_id 600 is not a token id below vocab_size 512/],
    ['mrope', { ...raw, text_config: { ...text, rope_parameters: { ...(text.rope_parameters as object), mrope_section: [2, 2] } } }, /mrope_section must be three non-negative integers/],
  ];
  for (const [name, bad, message] of cases) {
    // The text model still loads (as in transformers); the tower is refused, by name, when asked for.
    it(`rejects an unsupported ${name} by name`, () => {
      const c = parseConfig(bad, 'm/config.json');
      expect(c.vision).toBeNull();
      expect(c.visionError).toMatch(/^m\/config\.json: /);
      expect(c.visionError).toMatch(message);
    });
  }
});

describe('openCheckpoint with the vision tower', () => {
  it('drops model.visual.* by default and keeps every one of them, checked, when asked', async () => {
    const text = await openCheckpoint(DIR);
    expect([...text.tensors.keys()].some((n) => n.startsWith('model.visual.'))).toBe(false);
    expect(() => validateQwen3Tensors(text)).not.toThrow();

    const full = await openCheckpoint(DIR, { vision: true });
    const layout = visionTensorLayout(full.config.vision!);
    expect(layout).toHaveLength(33);
    for (const t of layout) expect(full.tensors.get(t.name)?.shape).toEqual(t.shape);
    expect(full.tensors.size).toBe(text.tensors.size + layout.length);
    expect(() => validateQwen3Tensors(full)).not.toThrow();

    const broken = new Map(full.tensors);
    broken.set('model.visual.merger.linear_fc1.weight', { ...broken.get('model.visual.merger.linear_fc1.weight')!, shape: [128, 32] });
    expect(() => validateQwen3Tensors({ config: full.config, tensors: broken })).toThrow(/'model\.visual\.merger\.linear_fc1\.weight' has shape \[128,32\] but config\.json implies \[128,128\]/);
    broken.delete('model.visual.blocks.1.norm2.bias');
    broken.set('model.visual.merger.linear_fc1.weight', full.tensors.get('model.visual.merger.linear_fc1.weight')!);
    expect(() => validateQwen3Tensors({ config: full.config, tensors: broken })).toThrow(/'model\.visual\.blocks\.1\.norm2\.bias' is missing/);
  });

  it('refuses vision on a text-only checkpoint with a clear error', async () => {
    await expect(openCheckpoint('tests/fixtures/transformers-qwen3_5-f32', { vision: true })).rejects.toThrow(/no vision_config, so there is no vision tower to load/);
  });

  it('make-tiny-model --vision writes a Qwen3_5ForConditionalGeneration folder the loader reads whole', async () => {
    const tiny = await makeTinyModel({ arch: 'qwen3_5', vision: true });
    expect(tiny.config.vision).toMatchObject({ depth: 2, hiddenSize: 32, outHiddenSize: 64, imageTokenId: 484, mropeSection: [1, 1, 0] });
    const ckpt = await openCheckpoint(tiny.files, { vision: true });
    expect(() => validateQwen3Tensors(ckpt)).not.toThrow();
    expect(JSON.parse(new TextDecoder().decode(tiny.files.get('processor_config.json')!)).image_processor.patch_size).toBe(16);
    await expect(makeTinyModel({ arch: 'qwen3', vision: true })).rejects.toThrow(/vision apply to arch qwen3_5 only/);
  });

  it('visionShape sets the generated tower\'s shape (the benches\' real proportions); the rest stays the tiny tower\'s', async () => {
    const tiny = await makeTinyModel({ arch: 'qwen3_5', vision: true, visionShape: { depth: 3, hidden_size: 48, intermediate_size: 192, num_heads: 3, num_position_embeddings: 64 } });
    expect(tiny.config.vision).toMatchObject({ depth: 3, hiddenSize: 48, intermediateSize: 192, numHeads: 3, headDim: 16, numPositionEmbeddings: 64, positionGridSide: 8, patchSize: 16, spatialMergeSize: 2, outHiddenSize: 64 });
    const ckpt = await openCheckpoint(tiny.files, { vision: true });
    expect(() => validateQwen3Tensors(ckpt)).not.toThrow();
    expect(ckpt.tensors.get('model.visual.blocks.2.mlp.linear_fc1.weight')?.shape).toEqual([192, 48]);
    await expect(makeTinyModel({ arch: 'qwen3_5', visionShape: { depth: 3 } })).rejects.toThrow(/visionShape needs vision: true/);
  });
});
