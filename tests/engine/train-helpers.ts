// Shared fixtures of the training tests: the train side attached to a tiny engine, reference
// gradients summed over a batch, and the norm-wise relative error the gradients are judged by.
import type { ModelConfig } from '../../src/model/types.ts';
import type { NamedTensor } from '../../src/engine/types.ts';
import { refBackward, type RefSequence } from '../../src/engine/reference/qwen3.ts';
import type { RefLora, RefWeights } from '../../src/engine/reference/weights.ts';
import { loraTensorName } from '../../src/engine/train/trainable.ts';

/** ‖a − b‖ / ‖b‖ (‖a‖ when b is zero). */
export function relNormError(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let diff = 0;
  let ref = 0;
  for (let i = 0; i < a.length; i++) {
    diff += (a[i]! - b[i]!) ** 2;
    ref += b[i]! ** 2;
  }
  return ref > 0 ? Math.sqrt(diff / ref) : Math.sqrt(diff);
}

/** Deterministic dL/dlogp values in [−1, 1) per scored token. */
export function someGrads(seqs: RefSequence[], salt: number): Float32Array[] {
  return seqs.map((s, i) =>
    Float32Array.from({ length: s.ids.length - s.scoreFrom }, (_, j) => Math.sin(1 + salt * 7.1 + i * 3.3 + j * 1.7)),
  );
}

/** Reference gradients of Σ over the batch (with the entropy term when dLdEntropy is given), keyed like the engine's readGrads (checkpoint or LoRA names). */
export function refBatchGrads(
  cfg: ModelConfig,
  w: RefWeights,
  seqs: RefSequence[],
  temperature: number,
  dLdLogp: Float32Array[],
  lora?: RefLora,
  dLdEntropy?: Float32Array[],
): Map<string, Float64Array> {
  const sum = new Map<string, Float64Array>();
  const add = (name: string, g: Float64Array) => {
    const acc = sum.get(name);
    if (!acc) sum.set(name, Float64Array.from(g));
    else for (let i = 0; i < g.length; i++) acc[i]! += g[i]!;
  };
  seqs.forEach((s, i) => {
    const entropyGrads = dLdEntropy ? Array.from(dLdEntropy[i]!) : undefined;
    const r = refBackward(cfg, w, s, temperature, Array.from(dLdLogp[i]!), lora, { baseGrads: !lora, dLdEntropy: entropyGrads });
    if (lora) {
      for (const [name, g] of r.loraGrads!.A) add(loraTensorName(name, 'A'), g);
      for (const [name, g] of r.loraGrads!.B) add(loraTensorName(name, 'B'), g);
    } else {
      for (const [name, g] of r.grads) add(name, g);
    }
  });
  return sum;
}

/** The LoRA adapter as saveState tensors (weights, zero moments) for loadState. */
export function loraStateTensors(lora: RefLora): NamedTensor[] {
  const out: NamedTensor[] = [];
  const push = (name: string, shape: number[], data: Float64Array) => {
    out.push({ name, shape, data: Float32Array.from(data) });
    out.push({ name: `${name}.exp_avg`, shape, data: new Float32Array(data.length) });
    out.push({ name: `${name}.exp_avg_sq`, shape, data: new Float32Array(data.length) });
  };
  for (const [name, a] of lora.A) push(loraTensorName(name, 'A'), [lora.r, a.length / lora.r], a);
  for (const [name, b] of lora.B) push(loraTensorName(name, 'B'), [b.length / lora.r, lora.r], b);
  return out;
}
