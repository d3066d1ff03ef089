// Runs in headless Chromium (worker or page): the engine's scoring and greedy decoding against
// the float64 CPU reference on a small GQA model, exactly as tests/engine does in Node.
import { getGpu } from '../../src/engine/gpu.ts';
import { loadEngine } from '../../src/engine/engine.ts';
import { randomRefWeights } from '../../src/engine/reference/weights.ts';
import { refGreedy, refScore } from '../../src/engine/reference/qwen3.ts';
import { maxAbsDiff, memoryCheckpoint, someIds, tinyConfig } from '../engine/helpers.ts';

export interface EngineForwardResult {
  inWorker: boolean;
  adapter: string;
  logprobErr: number;
  entropyErr: number;
  greedy: number[][];
  refGreedy: number[][];
  sampledTwice: number[][][];
}

export default async function (): Promise<EngineForwardResult> {
  const gpu = await getGpu();
  const cfg = tinyConfig({ vocabSize: 64 });
  const w = randomRefWeights(cfg, 21);
  const engine = await loadEngine(memoryCheckpoint(cfg, w), { gpu, weightDtype: 'f32' });
  try {
    const seqs = [{ ids: someIds(9, cfg.vocabSize, 1), scoreFrom: 1 }, { ids: someIds(5, cfg.vocabSize, 2), scoreFrom: 2 }];
    const out = await engine.score({ sequences: seqs, temperature: 0.9 });
    let logprobErr = 0;
    let entropyErr = 0;
    seqs.forEach((s, i) => {
      const ref = refScore(cfg, w, s, 0.9);
      logprobErr = Math.max(logprobErr, maxAbsDiff(out.logprobs[i]!, ref.logprobs));
      entropyErr = Math.max(entropyErr, maxAbsDiff(out.entropy[i]!, ref.entropy));
    });
    const prompts = [someIds(4, cfg.vocabSize, 3), someIds(7, cfg.vocabSize, 4)];
    const generate = async (temperature: number) => {
      const handles = prompts.map(() => engine.newSequence());
      const res = await engine.generate({
        items: prompts.map((p, i) => ({ seq: handles[i]!, append: p, maxNewTokens: 5 })),
        sampling: { temperature, topP: 0.9, topK: 10, seed: 3 },
        stopIds: [],
      });
      handles.forEach((h) => engine.releaseSequence(h));
      return res.map((r) => r.tokens);
    };
    return {
      inWorker: typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined',
      adapter: `${gpu.adapterInfo.vendor} ${gpu.adapterInfo.architecture}`,
      logprobErr,
      entropyErr,
      greedy: await generate(0),
      refGreedy: prompts.map((p) => refGreedy(cfg, w, p, 5)),
      sampledTwice: [await generate(1), await generate(1)],
    };
  } finally {
    engine.destroy();
    gpu.device.destroy();
  }
}
