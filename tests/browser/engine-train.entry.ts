// Gradient parity of the training side inside Chromium: the same tiny-engine backward (full and
// LoRA on all 7 targets) as tests/engine/train-grad-parity.test.ts, checked against the float64
// reference in the same worker; returns the worst relative error per mode.
import { getGpu } from '../../src/engine/gpu.ts';
import { randomRefLora } from '../../src/engine/reference/weights.ts';
import type { LoraTarget } from '../../src/engine/types.ts';
import { someIds, tinyConfig, tinyEngine } from '../engine/helpers.ts';
import { loraStateTensors, refBatchGrads, relNormError, someGrads } from '../engine/train-helpers.ts';

const ALL_TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

export default async function () {
  const gpu = await getGpu();
  const cfg = tinyConfig();
  const temperature = 0.8;
  const sequences = [
    { ids: someIds(9, cfg.vocabSize, 1), scoreFrom: 1 },
    { ids: someIds(6, cfg.vocabSize, 2), scoreFrom: 2 },
  ];
  const dLdLogp = someGrads(sequences, 3);
  const result: Record<string, { tensors: number; maxRelError: number }> = {};

  {
    const { engine, weights } = await tinyEngine(gpu, cfg, 21);
    engine.setTrainable({ kind: 'full' });
    await engine.backward({ sequences, temperature, dLdLogp });
    const ref = refBatchGrads(cfg, weights, sequences, temperature, dLdLogp);
    const got = await engine.readGrads();
    result.full = { tensors: got.length, maxRelError: Math.max(...got.map((t) => relNormError(t.data, ref.get(t.name)!))) };
    engine.destroy();
  }
  {
    const { engine, weights } = await tinyEngine(gpu, cfg, 22);
    const lora = randomRefLora(cfg, { r: 2, alpha: 4, targets: ALL_TARGETS, seed: 4 });
    engine.setTrainable({ kind: 'lora', lora: { r: 2, alpha: 4, targetModules: ALL_TARGETS, seed: 1 } });
    await engine.loadState({ tensors: loraStateTensors(lora), step: 0 });
    await engine.backward({ sequences, temperature, dLdLogp });
    const ref = refBatchGrads(cfg, weights, sequences, temperature, dLdLogp, lora);
    const got = await engine.readGrads();
    result.lora = { tensors: got.length, maxRelError: Math.max(...got.map((t) => relNormError(t.data, ref.get(t.name)!))) };
    engine.destroy();
  }
  const inWorker = typeof (globalThis as { WorkerGlobalScope?: unknown }).WorkerGlobalScope !== 'undefined';
  gpu.device.destroy();
  return { inWorker, adapter: gpu.adapterInfo.architecture, ...result };
}
