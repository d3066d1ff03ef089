// LoRA merged into the base weights: W' = W + s·B·A with s = alpha/r (alpha/√r with rsLoRA), as
// PEFT's merge_and_unload does, so the exported model needs no adapter at run time. The product
// is accumulated in float64 and rounded once.

import type { PeftLoraAdapter } from '../../engine/peft-adapter.ts';
import { loraScale } from '../../engine/train/trainable.ts';

/** Base linear name (`…q_proj.weight`) → its merged f32 weight, for every linear the adapter touches. */
export function mergeLora(adapter: PeftLoraAdapter, base: (name: string) => Float32Array): Map<string, Float32Array> {
  const { r } = adapter.settings;
  const scale = loraScale(adapter.settings);
  const byName = new Map(adapter.tensors.map((t) => [t.name, t]));
  const merged = new Map<string, Float32Array>();
  for (const t of adapter.tensors) {
    if (!t.name.endsWith('.lora_A.weight')) continue;
    const linear = t.name.replace(/\.lora_A\.weight$/, '.weight');
    const b = byName.get(t.name.replace(/\.lora_A\.weight$/, '.lora_B.weight'));
    if (!b) throw new Error(`adapter: ${t.name} has no matching lora_B`);
    const [, inp] = t.shape as [number, number];
    const [out] = b.shape as [number, number];
    const w = base(linear);
    if (w.length !== out * inp) throw new Error(`adapter: ${linear} is ${out}×${inp} by its factors, but the model's has ${w.length} values`);
    const A = t.data;
    const B = b.data;
    const result = new Float32Array(w.length);
    const row = new Float64Array(inp);
    for (let o = 0; o < out; o++) {
      row.fill(0);
      for (let k = 0; k < r; k++) {
        const bk = B[o * r + k]!;
        if (bk === 0) continue;
        for (let i = 0; i < inp; i++) row[i] += bk * A[k * inp + i]!;
      }
      for (let i = 0; i < inp; i++) result[o * inp + i] = w[o * inp + i]! + scale * row[i]!;
    }
    merged.set(linear, result);
  }
  return merged;
}
