// `webgrpo bench kv-cache`: decode tokens/s at B = 1 and B = 8 with an f16 KV cache against the f32 one, in
// one process on one adapter (it needs shader-f16): two engines over the same weights, rounds alternating
// between them so both see the same background load, the fastest round of each kept; the ratio is f16 / f32.
// Options: the engine benches' model options (--shape …), prompt (default 256: the cache's share of a
// decode step grows with the context), newTokens (default 16), weights (default f16), rounds (default 2).
import { getGpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { benchCheckpoint, num } from './common.ts';
import { measure } from './forward.ts';

export async function benchKvCache(opts: Record<string, string> = {}) {
  const prompt = num(opts, 'prompt', 256);
  const newTokens = num(opts, 'newTokens', 16);
  const rounds = num(opts, 'rounds', 2);
  const gpu = await getGpu();
  if (!gpu.f16) {
    gpu.device.destroy();
    throw new Error('bench kv-cache: this adapter has no shader-f16, so no f16 KV cache (SwiftShader); run it on lavapipe or a GPU');
  }
  const { ckpt, source } = await benchCheckpoint(opts, 'bf16');
  const weightDtype = (opts.weights ?? 'f16') as 'f16' | 'f32';
  const engines = { f32: await loadEngine(ckpt, { gpu, weightDtype, kvCache: 'f32' }), f16: await loadEngine(ckpt, { gpu, weightDtype, kvCache: 'f16' }) };
  try {
    const V = ckpt.config.vocabSize;
    for (const e of Object.values(engines)) await measure(e, 1, 8, 2, V); // compile every pipeline once
    const best: Record<string, number> = {};
    for (let r = 0; r < rounds; r++) {
      for (const B of [1, 8]) {
        for (const [kv, e] of Object.entries(engines)) {
          const m = await measure(e, B, prompt, newTokens, V);
          const key = `${kv} B=${B}`;
          best[key] = Math.max(best[key] ?? 0, m.decodeTokensPerSec);
        }
      }
    }
    return {
      adapter: { ...gpu.adapterInfo, software: gpu.software },
      model: source,
      weightDtype,
      prompt,
      newTokens,
      decodeTokensPerSec: best,
      ratioF16OverF32: { 'B=1': best['f16 B=1']! / best['f32 B=1']!, 'B=8': best['f16 B=8']! / best['f32 B=8']! },
    };
  } finally {
    for (const e of Object.values(engines)) e.destroy();
    gpu.device.destroy();
  }
}
