import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { backwardBuffers, chooseKvDtype, kvBytesPerToken, linearStateBytesPerSequence, loraParamCount, planBuffer, planMemory } from '../../src/engine/memory-plan.ts';
import { parseConfig } from '../../src/model/config.ts';
import { QWEN3_5_LINEARS, QWEN3_LINEARS } from '../../src/model/qwen3-tensors.ts';
import { visionParamCount } from '../../src/model/qwen3_5-vision-tensors.ts';

// Qwen3-0.6B (shared/specs/qwen3.md §2); the expected numbers are the spec's derived ones (§4).
const qwen3 = parseConfig({
  architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', bos_token_id: 151643, eos_token_id: 151645, head_dim: 128,
  hidden_size: 1024, intermediate_size: 3072, max_position_embeddings: 40960, num_attention_heads: 16,
  num_hidden_layers: 28, num_key_value_heads: 8, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true,
  torch_dtype: 'bfloat16', vocab_size: 151936,
});
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const DEFAULT_LIMITS = { maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB };
const RAISED_LIMITS = { maxStorageBufferBindingSize: GiB, maxBufferSize: GiB };
const ATTENTION = ['q_proj', 'k_proj', 'v_proj', 'o_proj'] as const;

describe('memory plan for Qwen3-0.6B', () => {
  it('matches the spec: params, LoRA sizes, KV cache per token', () => {
    const plan = planMemory({ config: qwen3, weightDtype: 'f16', mode: { kind: 'lora', r: 16, targets: QWEN3_LINEARS }, numSequences: 8, maxTokensPerSequence: 1024, limits: RAISED_LIMITS });
    expect(plan.params).toBe(596_049_920);
    expect(plan.trainableParams).toBe(10_092_544);
    const item = (name: string) => plan.items.find((i) => i.name === name)!.bytes;
    expect(item('weights')).toBe(1_192_099_840 + 2 * 65_536); // matrices in f16, the 65,536 norm weights in f32
    expect(kvBytesPerToken(qwen3, 'f32')).toBe(229_376);
    expect(kvBytesPerToken(qwen3, 'f16')).toBe(114_688);
    expect(item('KV cache')).toBe(8 * 1024 * 229_376); // the engine's KV cache is f32: 1.75 GiB
    expect(item('activation checkpoints')).toBe(8 * 1024 * 114_688); // 112 KiB per token in f32
    // No T×T attention scores (attention is streamed per (token, head)); the LM head's logits are
    // chunked over the vocabulary, at most 32 MiB.
    expect(plan.items.map((i) => i.name)).not.toContain('attention scores');
    // LoRA training state in f32: weight + grad + m + v = 16 B/param = 154 MiB for r=16 on all linears.
    expect(item('LoRA params + grads') + item('AdamW moments')).toBe(10_092_544 * 16);
    expect((10_092_544 * 16) / MiB).toBeCloseTo(154, 0);
    expect(plan.totalBytes).toBe(plan.items.reduce((s, i) => s + i.bytes, 0));
    expect(plan.fits).toBe(true);
    expect(plan.message).toMatch(/^needs \d+\.\d+ GiB: weights 1\.11 GiB, KV cache 1\.75 GiB/);
  });

  it('counts LoRA params like the spec table', () => {
    for (const [r, qkvo, all] of [[8, 2_293_760, 5_046_272], [16, 4_587_520, 10_092_544], [32, 9_175_040, 20_185_088]] as const) {
      expect(loraParamCount(qwen3, r, ATTENTION)).toBe(qkvo);
      expect(loraParamCount(qwen3, r, QWEN3_LINEARS)).toBe(all);
    }
  });

  it('splits the embedding by rows under the default 128 MiB binding instead of rejecting it', () => {
    const plan = planMemory({ config: qwen3, weightDtype: 'f32', mode: { kind: 'lora', r: 16, targets: ATTENTION }, numSequences: 8, maxTokensPerSequence: 1024, limits: DEFAULT_LIMITS });
    const emb = plan.buffers.find((b) => b.name === 'model.embed_tokens.weight')!;
    expect(emb.bytes).toBe(622_329_856); // 593.5 MiB
    expect(emb.rowsPerBinding).toBe(32_768);
    expect(emb.bindings).toBe(5);
    expect(plan.fits).toBe(true);
    expect(plan.message).toContain('model.embed_tokens.weight (594 MiB) split into 5 bindings of ≤ 32768 rows');
    // With raised limits, the f16 embedding (296.75 MiB) is one binding.
    const raised = planMemory({ config: qwen3, weightDtype: 'f16', mode: { kind: 'lora', r: 16, targets: ATTENTION }, numSequences: 1, maxTokensPerSequence: 16, limits: RAISED_LIMITS });
    expect(raised.buffers[0]).toMatchObject({ bytes: 311_164_928, bindings: 1 });
  });

  it('says clearly what does not fit a memory budget', () => {
    const plan = planMemory({ config: qwen3, weightDtype: 'f32', mode: { kind: 'full' }, numSequences: 8, maxTokensPerSequence: 1024, limits: { ...RAISED_LIMITS, budgetBytes: 8 * GiB } });
    expect(plan.fits).toBe(false);
    // Full fine-tuning in f32: weights + grads + m + v = 16 B/param = 9.54 GB.
    const state = ['weights', 'gradients', 'AdamW moments'].reduce((s, n) => s + plan.items.find((i) => i.name === n)!.bytes, 0);
    expect(state).toBe(596_049_920 * 16);
    expect(plan.message).toMatch(/Does not fit: total \d+\.\d+ GiB exceeds the 8\.00 GiB budget \(largest: .*\); try fewer or shorter sequences, or LoRA instead of full fine-tuning/);
  });

  it('rejects a row wider than a binding and bad inputs', () => {
    expect(planBuffer('w', 4, 2 * MiB, MiB)).toMatchObject({ rowsPerBinding: 0, bindings: Infinity });
    const wide = planMemory({ config: qwen3, weightDtype: 'f32', mode: { kind: 'lora', r: 8, targets: ['q_proj'] }, numSequences: 1, maxTokensPerSequence: 8, limits: { maxStorageBufferBindingSize: 2048, maxBufferSize: 2048 } });
    expect(wide.fits).toBe(false);
    expect(wide.message).toContain('model.embed_tokens.weight: one row is 4.00 KiB, more than maxStorageBufferBindingSize (2.00 KiB)');
    expect(() => planMemory({ config: qwen3, weightDtype: 'f16', mode: { kind: 'lora', r: 0, targets: ['q_proj'] }, numSequences: 1, maxTokensPerSequence: 8, limits: RAISED_LIMITS })).toThrow(/LoRA rank must be a positive integer, got 0/);
    expect(() => planMemory({ config: qwen3, weightDtype: 'f16', mode: { kind: 'lora', r: 8, targets: ['qkv' as never] }, numSequences: 1, maxTokensPerSequence: 8, limits: RAISED_LIMITS })).toThrow(/unknown LoRA target\(s\) qkv/);
    expect(() => planMemory({ config: qwen3, weightDtype: 'f16', mode: { kind: 'full' }, numSequences: 0, maxTokensPerSequence: 8, limits: RAISED_LIMITS })).toThrow(/numSequences must be a positive integer, got 0/);
  });
});

describe('memory plan for a Qwen3.5 hybrid', () => {
  // The transformers-written tiny checkpoint: layers linear, full, linear; Hk 2, Hv 4, dk 8, dv 12, conv 4.
  const cfg = parseConfig(JSON.parse(readFileSync(new URL('../fixtures/transformers-qwen3_5-f32/config.json', import.meta.url), 'utf8')));
  it('counts the KV cache of the full-attention layers only, and each sequence\'s recurrent + conv state', () => {
    expect(kvBytesPerToken(cfg, 'f32')).toBe(1 * 2 * 2 * 16 * 4);
    const C = 2 * 2 * 8 + 4 * 12;
    expect(linearStateBytesPerSequence(cfg)).toBe(2 * (4 * 8 * 12 + C * 3) * 4);
    const plan = planMemory({ config: cfg, weightDtype: 'f32', mode: { kind: 'full' }, numSequences: 3, maxTokensPerSequence: 64, limits: RAISED_LIMITS });
    expect(plan.items.find((i) => i.name === 'linear-attention state')!.bytes).toBe(3 * linearStateBytesPerSequence(cfg));
    expect(plan.items.find((i) => i.name === 'linear-attention state snapshot')!.bytes).toBe(3 * linearStateBytesPerSequence(cfg));
    expect(plan.items.find((i) => i.name === 'weights')!.bytes).toBe(plan.params * 4);
  });

  it('one scratch for both layer types: each attention-only role shares a buffer with a DeltaNet-only one, sized by the larger', () => {
    const T = 40;
    const { buffers, slotOf } = backwardBuffers(cfg, [T], T - 1, 2, GiB);
    // H·2d = 128 (the gated q_proj's output) pairs with the largest DeltaNet role, C = 80 (conv input).
    expect(slotOf.get('layer qGate')).toBe(slotOf.get('layer laQkv'));
    expect(buffers.get(slotOf.get('layer qGate')!)).toBe(T * 2 * 4 * 16 * 4);
    // No role of one type shares with a role of the same type, and every role used by both types keeps its own buffer.
    for (const [role, slot] of slotOf) {
      const parts = slot.split(' | ');
      expect(parts).toContain(role);
      if (parts.length === 2) expect(parts.filter((p) => /^(layer la|la )/.test(p))).toHaveLength(1);
    }
    for (const role of ['dx', 'dnorm', 'rstd', 'layer x', 'layer xMid', 'la delta work']) expect(slotOf.has(role)).toBe(false);
    // The shared plan is smaller than one buffer per role by the smaller role of every pair.
    const perRole = [...slotOf.keys()].length;
    expect(perRole).toBeGreaterThan(20);
    const qwen3Plan = backwardBuffers(qwen3, [T], T - 1, 2, GiB);
    expect(qwen3Plan.slotOf.size).toBe(0);
  });

  it('an f16 KV cache halves the KV item; chooseKvDtype: f16 on GPUs with shader-f16, f32 on software adapters unless only f16 fits, an error without shader-f16', () => {
    const at = (kvDtype: 'f16' | 'f32') => planMemory({ config: cfg, weightDtype: 'f16', mode: { kind: 'full' }, numSequences: 4, maxTokensPerSequence: 64, limits: RAISED_LIMITS, kvDtype });
    const kv = (dtype: 'f16' | 'f32') => at(dtype).items.find((i) => i.name === 'KV cache')!.bytes;
    expect(kv('f16')).toBe(4 * 64 * kvBytesPerToken(cfg, 'f16'));
    expect(kv('f16') * 2).toBe(kv('f32'));
    expect(at('f16').kvDtype).toBe('f16');
    const gpu = { f16: true, software: false };
    const cpu = { f16: true, software: true };
    expect(chooseKvDtype('auto', gpu, () => true)).toBe('f16');
    expect(chooseKvDtype('auto', cpu, () => true)).toBe('f32');
    expect(chooseKvDtype('auto', cpu, (d) => d === 'f16')).toBe('f16');
    expect(chooseKvDtype('auto', { f16: false, software: false }, () => true)).toBe('f32');
    expect(chooseKvDtype('f32', gpu, () => true)).toBe('f32');
    expect(() => chooseKvDtype('f16', { f16: false, software: true }, () => true)).toThrow(/kvCache: 'f16' needs an adapter with shader-f16/);
  });

  it('counts LoRA per layer type: DeltaNet linears in linear_attention layers, q/k/v/o in the attention layer; a name in neither is an error', () => {
    const r = 2;
    const D = 32, F = 48, H = 4, K = 2, d = 16, C = 2 * 2 * 8 + 4 * 12, Vd = 4 * 12, Hv = 4;
    const mlp = r * ((D + F) * 2 + (F + D));
    const attention = r * ((D + 2 * H * d) + 2 * (D + K * d) + (H * d + D)); // the gated q_proj emits 2·H·d
    const deltaNet = r * ((D + C) + (D + Vd) + 2 * (D + Hv) + (Vd + D));
    expect(loraParamCount(cfg, r, [...QWEN3_5_LINEARS])).toBe(3 * mlp + attention + 2 * deltaNet);
    const plan = planMemory({ config: cfg, weightDtype: 'f32', mode: { kind: 'lora', r, targets: ['in_proj_qkv', 'q_proj'] }, numSequences: 2, maxTokensPerSequence: 40, limits: RAISED_LIMITS });
    expect(plan.trainableParams).toBe(2 * r * (D + C) + r * (D + 2 * H * d));
    expect(() => planMemory({ config: qwen3, weightDtype: 'f16', mode: { kind: 'lora', r, targets: ['in_proj_qkv'] }, numSequences: 1, maxTokensPerSequence: 8, limits: RAISED_LIMITS }))
      .toThrow(/unknown LoRA target\(s\) in_proj_qkv \(valid: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj\)/);
  });

  it('full fine-tuning of a VL model trains the tower: its f32 weights, a gradient and two moments per parameter, its grad-norm slots and backward; freezeVisionTower keeps the old plan', () => {
    const vl = parseConfig(JSON.parse(readFileSync(new URL('../fixtures/transformers-qwen3_5-vl/config.json', import.meta.url), 'utf8')));
    const vision = { config: vl.vision!, maxPatches: 24 };
    const plan = (mode: Parameters<typeof planMemory>[0]['mode'], weightDtype: 'f32' | 'f16' = 'f32') => planMemory({ config: vl, weightDtype, mode, numSequences: 1, maxTokensPerSequence: 32, limits: RAISED_LIMITS, vision });
    const item = (p: ReturnType<typeof plan>, name: string) => p.items.find((i) => i.name === name)?.bytes ?? 0;
    const trained = plan({ kind: 'full' });
    const frozen = plan({ kind: 'full', freezeVisionTower: true });
    const towerParams = visionParamCount(vl.vision!);
    expect(trained.trainableParams - frozen.trainableParams).toBe(towerParams);
    expect(item(trained, 'gradients') - item(frozen, 'gradients')).toBe(towerParams * 4);
    expect(item(trained, 'AdamW moments') - item(frozen, 'AdamW moments')).toBe(towerParams * 8);
    expect(item(trained, 'gradient norm scratch')).toBeGreaterThan(item(frozen, 'gradient norm scratch'));
    expect(item(trained, 'vision tower backward')).toBeGreaterThan(0);
    expect(frozen.items.map((i) => i.name)).not.toContain('vision tower backward');
    // f16 weights asked for: the trained tower is promoted to f32 master weights, a frozen one stays in halves.
    expect(item(plan({ kind: 'full' }, 'f16'), 'vision tower weights')).toBe(item(trained, 'vision tower weights'));
    expect(item(plan({ kind: 'full', freezeVisionTower: true }, 'f16'), 'vision tower weights')).toBeLessThan(item(trained, 'vision tower weights'));
    expect(trained.items.find((i) => i.name === 'vision tower weights')!.detail).toMatch(/trained/);
  });
});
