// The engine benches' models (bench/engine/common.ts): the named real shapes (`--shape`) carry the
// real configs' numbers, and a generated Qwen3.5 (`--arch qwen3_5`) has transformers' layer pattern
// (every 4th layer full attention), so a bench "at Qwen3.5-0.8B's shapes" runs those shapes.
import { describe, expect, it } from 'vitest';
import { benchCheckpoint, SHAPES, withShape } from '../../bench/engine/common.ts';
import { trainStepFlops } from '../../bench/engine/train-step.ts';
import { parseConfig } from '../../src/model/config.ts';

describe('bench shapes', () => {
  it('qwen3.5-0.8b is the text model of Qwen/Qwen3.5-0.8B', () => {
    // text_config of Qwen/Qwen3.5-0.8B (as in tests/model/config.test.ts).
    expect(SHAPES['qwen3.5-0.8b']).toEqual({
      arch: 'qwen3_5', hidden: '1024', layers: '24', heads: '8', kvHeads: '2', headDim: '256', intermediate: '3584', vocab: '248320',
      linearKeyHeads: '16', linearValueHeads: '16', linearKeyHeadDim: '128', linearValueHeadDim: '128', fullAttentionInterval: '4',
    });
    expect(SHAPES['qwen3-0.6b']).toEqual({ hidden: '1024', layers: '28', heads: '16', kvHeads: '8', headDim: '128', intermediate: '3072', vocab: '151936' });
  });

  it('qwen3.5-2b is Qwen/Qwen3.5-2B, text model and vision tower (the seeds\' model)', () => {
    expect(SHAPES['qwen3.5-2b']).toEqual({
      arch: 'qwen3_5', hidden: '2048', layers: '24', heads: '8', kvHeads: '2', headDim: '256', intermediate: '6144', vocab: '248320',
      linearKeyHeads: '16', linearValueHeads: '16', linearKeyHeadDim: '128', linearValueHeadDim: '128', fullAttentionInterval: '4',
      visionDepth: '24', visionHidden: '1024', visionIntermediate: '4096', visionHeads: '16', visionPositions: '2304',
    });
  });

  it('--shape expands to the preset, explicit options win, an unknown name is a clear error', () => {
    expect(withShape({ shape: 'qwen3.5-0.8b', layers: '8' })).toMatchObject({ arch: 'qwen3_5', layers: '8', hidden: '1024' });
    expect(withShape({ hidden: '64' })).toEqual({ hidden: '64' });
    expect(() => withShape({ shape: 'qwen3.5-9b' })).toThrow(/--shape must be one of qwen3-0.6b, qwen3.5-0.8b, qwen3.5-2b, got 'qwen3.5-9b'/);
  });

  it('a generated Qwen3.5 has 3 linear-attention layers to 1 full, with the asked-for DeltaNet heads', async () => {
    const { ckpt, source } = await benchCheckpoint({
      arch: 'qwen3_5', hidden: '32', layers: '8', heads: '2', kvHeads: '1', headDim: '16', intermediate: '64', vocab: '512',
      linearKeyHeads: '2', linearValueHeads: '4', linearKeyHeadDim: '8', linearValueHeadDim: '8',
    }, 'f32');
    const c = ckpt.config;
    expect(c.architecture).toBe('qwen3_5');
    expect(c.layerTypes).toEqual(Array.from({ length: 8 }, (_, i) => ((i + 1) % 4 === 0 ? 'full_attention' : 'linear_attention')));
    expect(c.linearAttention).toMatchObject({ numKeyHeads: 2, numValueHeads: 4, keyHeadDim: 8, valueHeadDim: 8 });
    expect(source).toContain('"fullAttentionInterval":4');
    await expect(benchCheckpoint({ arch: 'qwen4' }, 'f32')).rejects.toThrow(/--arch must be qwen3 or qwen3_5, got 'qwen4'/);
  });

  it('trainStepFlops counts each layer type\'s own linears (Qwen3.5: DeltaNet projections in linear layers)', () => {
    const c = parseConfig({
      architectures: ['Qwen3_5ForCausalLM'], model_type: 'qwen3_5_text', hidden_size: 8, intermediate_size: 16, num_hidden_layers: 2,
      layer_types: ['linear_attention', 'full_attention'], num_attention_heads: 2, num_key_value_heads: 1, head_dim: 4, vocab_size: 10,
      linear_num_key_heads: 1, linear_num_value_heads: 2, linear_key_head_dim: 4, linear_value_head_dim: 4, linear_conv_kernel_dim: 4,
      rms_norm_eps: 1e-6, rope_parameters: { rope_theta: 1e6, partial_rotary_factor: 0.5 }, tie_word_embeddings: true,
    });
    // Layer 0 (linear): in_proj_qkv 16×8, in_proj_z 8×8, in_proj_b 2×8, in_proj_a 2×8, out_proj 8×8; layer 1 (full):
    // q_proj (gated) 16×8, k/v 4×8 each, o_proj 8×8; both: MLP 3 × 16×8.
    const P = (128 + 64 + 16 + 16 + 64) + (128 + 32 + 32 + 64) + 2 * 3 * 128;
    const T = 3;
    const Ts = 2;
    const head = 2 * Ts * 10 * 8;
    expect(trainStepFlops(c, T, Ts, 'full', 1).matmulFlops).toBe(4 * P * T + 2 * P * T + 3 * head + 2 * P * T + head);
    // LoRA r = 1: per linear 2·(2T(in + out)) forward + recompute, 2T(3·in + 2·out) backward.
    const shapes: [number, number][] = [[8, 16], [8, 8], [8, 2], [8, 2], [8, 8], [8, 16], [8, 4], [8, 4], [8, 8], ...Array(2).fill([[8, 16], [8, 16], [16, 8]]).flat()];
    const lora = shapes.reduce((a, [i, o]) => a + 4 * T * (i + o) + 2 * T * (3 * i + 2 * o), 0);
    expect(trainStepFlops(c, T, Ts, 'lora', 1).matmulFlops).toBe(4 * P * T + 2 * P * T + 3 * head + lora);
  });
});
