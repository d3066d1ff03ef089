// Native f16 loads (`array<f16>`, shader-f16) against unpacking halves from u32 words, on the
// engine's forward matmul at Qwen3-0.6B's MLP shape (K = 1024 → N = 3072) for decode-like (M = 1, 8)
// and prefill-like (M = 128) rows. Rounds alternate the two modes so both see the same background
// load; each mode keeps its fastest round. Outputs are checked against float64 (matmulPeak).
//
// Options: rounds (default 3), N, K (default 3072, 1024), rows (default 1,8,128).
import { getGpu } from '../../src/engine/gpu.ts';
import { Qwen3Forward } from '../../src/engine/forward.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import { openCheckpoint } from '../../src/model/checkpoint.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { matmulPeak, num } from './common.ts';

export async function benchHalfLoads(opts: Record<string, string> = {}) {
  const gpu = await getGpu();
  if (!gpu.f16) {
    gpu.device.destroy();
    return { adapter: gpu.adapterInfo, rounds: 0, results: [], note: 'no shader-f16 on this adapter: the u32 path is the only one' };
  }
  const model = await makeTinyModel({ seed: 1, dtype: 'bf16', hidden: 32, layers: 1, heads: 2, kvHeads: 1, headDim: 16, intermediate: 64, vocab: 512 });
  const engine = await loadEngine(await openCheckpoint(model.files), { gpu });
  const fwd: Qwen3Forward = engine.internals;
  const N = num(opts, 'N', 3072);
  const K = num(opts, 'K', 1024);
  const rows = (opts.rows ?? '1,8,128').split(',').map(Number);
  const rounds = num(opts, 'rounds', 3);
  try {
    const out = [];
    for (const M of rows) {
      const best: Record<string, number> = {};
      for (let r = 0; r < rounds; r++) {
        for (const res of await matmulPeak(fwd, M, N, K, ['blocked'])) {
          if (!res.halfLoads) continue;
          best[res.halfLoads] = Math.max(best[res.halfLoads] ?? 0, res.gflops);
        }
      }
      out.push({ M, N, K, nativeGflops: best.native!, u32Gflops: best.u32!, nativeOverU32: best.native! / best.u32! });
    }
    return { adapter: gpu.adapterInfo, rounds, results: out };
  } finally {
    engine.destroy();
    gpu.device.destroy();
  }
}
