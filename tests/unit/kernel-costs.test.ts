// The FLOP / byte accounting of bench/engine/kernel-costs.ts, family by family, against numbers
// worked out by hand from each kernel's math (see the comments there), and the roofline split of
// bench/engine/profile.ts. A wrong formula (or a kernel with none) fails here.
import { describe, expect, it } from 'vitest';
import { dispatchCost, type CostContext } from '../../bench/engine/kernel-costs.ts';
import { familyTable } from '../../bench/engine/profile.ts';
import { KERNEL_SOURCES } from '../../src/engine/kernels/index.ts';
import { gemmBLoads, weightLoads } from '../../src/engine/weight-loads.ts';

const ctx: CostContext = { attention: { attendedKeys: 10, kvRows: 4 }, vocab: 100 };
const d = (file: string, params: number[], constants: Record<string, string | number | boolean> = {}, groups: [number, number, number] = [1, 1, 1]) =>
  ({ file, constants, params: Uint32Array.from(params), groups });
const cost = (...a: Parameters<typeof d>) => dispatchCost(d(...a), ctx);

describe('kernel costs', () => {
  it('forward matmul: 2·M·N·K, x + W (in its stored dtype) + y (+ the read y/residual)', () => {
    // M = 2, N = 3, K = 4: 48 FLOPs; x 2·4·4 = 32 B, y 2·3·4 = 24 B, W 3·4 = 12 values.
    const f32 = cost('matmul.wgsl', [2, 3, 4, 0, 3, 0, 0, 0, 0], { ...weightLoads('f32', 'u32'), MODE: 0 });
    expect(f32).toMatchObject({ family: 'matmul f32 W', flops: 48, bytes: 32 + 48 + 24, precision: 'f32' });
    const u32 = cost('matmul_vec4.wgsl', [2, 3, 4, 0, 3, 0, 0, 0, 0], { MODE: 2, W_VEC: 'vec2u' });
    expect(u32).toMatchObject({ family: 'matmul f16 W', kernel: 'matmul_vec4 (f16 u32)', flops: 48, bytes: 32 + 24 + 24 + 24, precision: 'f16' });
    const native = cost('matmul_tiled.wgsl', [2, 3, 4, 0, 3, 0, 0, 0, 0], { ...weightLoads('f16', 'native'), MODE: 1 });
    expect(native).toMatchObject({ family: 'matmul f16 W', kernel: 'matmul_tiled (f16 native)', flops: 48, bytes: 32 + 24 + 24 + 24 });
  });

  it('matmul_backward: 2·M·N·K, A + B (f32 or halves) + C (read too when accumulating)', () => {
    expect(cost('matmul_backward.wgsl', [2, 3, 4, 0, 4, 0, 3, 0, 3, 1, 0, 0], gemmBLoads(false, 'u32')))
      .toMatchObject({ family: 'matmul_backward f32 B', kernel: 'matmul_backward (f32)', flops: 48, bytes: 32 + 48 + 48 });
    for (const halfLoads of ['u32', 'native'] as const) {
      expect(cost('matmul_backward_tiled.wgsl', [2, 3, 4, 0, 4, 0, 3, 0, 3, 0, 0, 0], gemmBLoads(true, halfLoads)))
        .toMatchObject({ family: 'matmul_backward f16 B', kernel: `matmul_backward_tiled (f16 ${halfLoads})`, flops: 48, bytes: 32 + 24 + 24, precision: 'f16' });
    }
  });

  it('attention (forward and backward) from the keys visited', () => {
    // T = 2, H = 4, KV = 2, d = 8, 10 keys visited, 4 K/V rows: 4·10·(4·8 + 3) = 1400 FLOPs;
    // q + out 2·2·4·8 = 128, lse 8, K and V 2·4·2·8 = 128 values.
    expect(cost('attention.wgsl', [2, 4, 2, 0, 0], { HEAD_DIM: 8 })).toMatchObject({ family: 'attention', flops: 1400, bytes: (128 + 8 + 128) * 4 });
    expect(cost('attention_wg.wgsl', [2, 4, 2, 0, 0], { HEAD_DIM: 8 }).flops).toBe(1400);
    // PASS 0: 40 pairs·(6·8 + 4) = 2080; q, o, dO 3·64, k, v 2·32, dq 64, stats 16.
    expect(cost('attention_backward.wgsl', [2, 4, 2], { HEAD_DIM: 8, PASS: 0 })).toMatchObject({ family: 'attention_backward', flops: 2080, bytes: (192 + 64 + 64 + 16) * 4 });
    // PASS 1: 40·(8·8 + 4) = 2720; q, dO 128, k, v 64, stats 16, dk, dv 64.
    expect(cost('attention_backward.wgsl', [2, 4, 2], { HEAD_DIM: 8, PASS: 1 })).toMatchObject({ flops: 2720, bytes: (128 + 64 + 16 + 64) * 4 });
  });

  it('norms, rope, swiglu', () => {
    // rows 3, n 5: 4·15 + 3·3 = 69; x, y 30, w 5, rstd 3.
    expect(cost('rmsnorm.wgsl', [3, 5, 0, 0, 0])).toMatchObject({ family: 'rmsnorm', flops: 69, bytes: 38 * 4 });
    expect(cost('rmsnorm_backward.wgsl', [3, 5, 0, 1], { PASS: 0 })).toMatchObject({ family: 'rmsnorm_backward', flops: 9 * 15 + 12, bytes: (60 + 5 + 3) * 4 });
    expect(cost('rmsnorm_backward.wgsl', [3, 5, 0, 0], { PASS: 1 })).toMatchObject({ flops: 45, bytes: (30 + 3 + 10) * 4 });
    // T 2, heads 3, half 4: 24 pairs; the forward's params give half, the backward's head_dim.
    expect(cost('rope.wgsl', [2, 3, 4, 0])).toMatchObject({ family: 'rope', flops: 144, bytes: (96 + 16) * 4 });
    expect(cost('rope_backward.wgsl', [2, 3, 8, 4])).toMatchObject({ family: 'rope_backward', flops: 144, bytes: (96 + 16) * 4 });
    expect(cost('swiglu.wgsl', [10, 0, 0, 0])).toMatchObject({ flops: 50, bytes: 120 });
    expect(cost('swiglu_backward.wgsl', [10, 0, 0, 0])).toMatchObject({ flops: 100, bytes: 200 });
  });

  it('embedding, gathers, logits, sampling, optimizer', () => {
    // T 4 tokens, D 8, a chunk of 25 of the 100 rows (f16 u32): ids 16 B + 4·8·(2 + 4)·¼.
    expect(cost('embedding.wgsl', [4, 8, 0, 25], weightLoads('f16', 'u32'))).toMatchObject({ family: 'embedding', flops: 0, bytes: 16 + 48 });
    expect(cost('embedding_backward.wgsl', [4, 8, 0, 50])).toMatchObject({ flops: 16, bytes: 16 + 128 + 128 });
    expect(cost('gather_rows.wgsl', [3, 5, 0, 0])).toMatchObject({ flops: 0, bytes: 33 * 4 });
    expect(cost('gather_rows_backward.wgsl', [3, 5, 0, 0])).toMatchObject({ flops: 15, bytes: 48 * 4 });
    expect(cost('kv_write.wgsl', [3, 5, 0, 0])).toMatchObject({ flops: 0, bytes: 72 * 4 });
    expect(cost('logits_stats.wgsl', [2, 50, 50, 0, 1, 0, 0, 0])).toMatchObject({ flops: 500, bytes: (100 + 18) * 4 });
    expect(cost('logprob_finalize.wgsl', [2, 0, 0, 0])).toMatchObject({ flops: 12, bytes: 56 });
    expect(cost('log_softmax_backward.wgsl', [2, 0, 50, 0], { PASS: 0 })).toMatchObject({ flops: 600, bytes: (100 + 18) * 4 });
    expect(cost('log_softmax_backward.wgsl', [2, 0, 50, 0], { PASS: 1 })).toMatchObject({ flops: 900, bytes: (200 + 12) * 4 });
    expect(cost('sample.wgsl', [100, 100, 0, 0, 7, 0, 0, 0, 0, 0], {}, [3, 1, 1])).toMatchObject({ family: 'sample', flops: 2400, bytes: (300 + 15) * 4 });
    expect(cost('adamw.wgsl', [10, 0, 0, 0, 0, 0, 0, 0])).toMatchObject({ flops: 150, bytes: 280 });
    expect(cost('grad_norm.wgsl', [10, 0, 0, 0], { PASS: 0 })).toMatchObject({ flops: 20, bytes: 44 });
    expect(cost('grad_norm.wgsl', [6, 0, 0, 0], { PASS: 1 })).toMatchObject({ flops: 10, bytes: 32 });
    expect(cost('half_to_float.wgsl', [10, 0, 0, 0])).toMatchObject({ flops: 0, bytes: 60 });
  });

  it('gated delta rule: 7·dk FLOPs per (token, value head, column); decoding also moves the recurrent state', () => {
    // 2 sequences, T = 3, 1 key head / 2 value heads, dk = 8, dv = 4: 3·2·4·7·8 = 1344 FLOPs;
    // q, k 3·2·8 + v, o 2·3·2·4 + (g, β) 2·3·2 = 108 floats; S read + written: 2·2·2·8·4 = 256 floats.
    const params = [2, 3, 1, 2, 4, 16, 32, 0];
    expect(cost('gated_delta.wgsl', params, { DK: 8, WITH_STATE: false })).toMatchObject({ family: 'gated_delta', flops: 1344, bytes: 108 * 4 });
    expect(cost('gated_delta.wgsl', params, { DK: 8, WITH_STATE: true })).toMatchObject({ flops: 1344, bytes: (108 + 256) * 4 });
    // Chunked (C = 4): per (token, value head) 2·4·8 pair FLOPs + per column 6·8 + 2·4: 3·2·(64 + 4·56) = 1728; same bytes.
    expect(cost('gated_delta_chunked.wgsl', params, { DK: 8, DV: 4, CHUNK: 4, WITH_STATE: true })).toMatchObject({ family: 'gated_delta_chunked', flops: 1728, bytes: (108 + 256) * 4 });
  });

  it('every kernel file has a cost model', () => {
    for (const file of Object.keys(KERNEL_SOURCES)) {
      const params = [64, 64, 64, 0, 64, 0, 64, 0, 64, 0, 0, 0];
      expect(() => cost(file, params, { HEAD_DIM: 16, PASS: 0, MODE: 0 }), file).not.toThrow();
    }
    expect(() => cost('nope.wgsl', [])).toThrow(/no cost model for nope.wgsl/);
  });

  it('familyTable sums per family and splits compute- from memory-bound on the roofline', () => {
    const mm = d('matmul_backward.wgsl', [64, 64, 64, 0, 64, 0, 64, 0, 64, 0, 0, 0], gemmBLoads(false, 'u32')); // 524288 FLOPs, 49152 B
    const ax = d('adamw.wgsl', [1000, 0, 0, 0, 0, 0, 0, 0]); // 15000 FLOPs, 28000 B
    const t = (x: ReturnType<typeof d>, ms: number) => ({ d: { ...x, label: '', recorder: '', ms }, ctx });
    // Peaks: 10 GFLOP/s, 1 GB/s: the GEMM's 10.7 FLOP/B × 1 GB/s > 10 → compute-bound; AdamW memory-bound.
    const { gpuMs, families } = familyTable([t(mm, 0.1), t(mm, 0.1), t(ax, 0.05)], { f32Gflops: 10, f16Gflops: null, gbps: 1 });
    expect(gpuMs).toBeCloseTo(0.25, 12);
    const gemm = families.find((f) => f.family === 'matmul_backward f32 B')!;
    expect(gemm).toMatchObject({ dispatches: 2, bound: 'compute', peak: 'matmul f32' });
    expect(gemm.gflops).toBeCloseTo((2 * 524288) / 0.2e-3 / 1e9, 9);
    expect(gemm.shareOfPeak).toBeCloseTo(gemm.gflops / 10, 12);
    expect(gemm.shareOfTime).toBeCloseTo(0.8, 12);
    const adam = families.find((f) => f.family === 'adamw')!;
    expect(adam).toMatchObject({ bound: 'memory', peak: 'bandwidth' });
    expect(adam.gbps).toBeCloseTo(28000 / 0.05e-3 / 1e9, 9);
    expect(adam.shareOfPeak).toBeCloseTo(adam.gbps, 12);
  });

  it('a one-row GEMM is memory-bound on the roofline; streaming kernels are always compared with bandwidth', () => {
    // decode-like: M = 1, N = K = 64, f16 W: 8192 FLOPs over 256 + 8192 + 256 B ≈ 0.94 FLOP/B.
    const gemv = d('matmul_vec4.wgsl', [1, 64, 64, 0, 64, 0, 0, 0, 0], { MODE: 0, W_VEC: 'vec2u' });
    const ax = d('adamw.wgsl', [1000, 0, 0, 0, 0, 0, 0, 0]);
    const t = (x: ReturnType<typeof d>) => ({ d: { ...x, label: '', recorder: '', ms: 1 }, ctx });
    // 100 GFLOP/s f16 over 10 GB/s: the GEMV's 0.94 FLOP/B reaches only 9.4 → memory-bound; with
    // 1000 GB/s AdamW's 0.54 FLOP/B would reach the compute peak, but it stays a bandwidth family.
    const slow = familyTable([t(gemv)], { f32Gflops: 50, f16Gflops: 100, gbps: 10 }).families[0]!;
    expect(slow).toMatchObject({ family: 'matmul f16 W', bound: 'memory', peak: 'bandwidth' });
    const fast = familyTable([t(gemv), t(ax)], { f32Gflops: 1, f16Gflops: 2, gbps: 1000 }).families;
    expect(fast.find((f) => f.family === 'matmul f16 W')).toMatchObject({ bound: 'compute', peak: 'matmul f16' });
    expect(fast.find((f) => f.family === 'adamw')).toMatchObject({ bound: 'memory', peak: 'bandwidth' });
  });
});
