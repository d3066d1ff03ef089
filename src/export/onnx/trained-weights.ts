// What a trainer checkpoint (checkpoint-N of `train --output`, or the app's) trained, in the form
// the exporter merges: LoRA factors as a PEFT adapter, or full fine-tuned weights by name. The
// AdamW moments stored beside them are not weights and are left out.

import type { PeftLoraAdapter } from '../../engine/peft-adapter.ts';
import type { LoraTarget, NamedTensor } from '../../engine/types.ts';
import type { OnnxExportOptions } from './export.ts';

/**
 * What the exporter reads of a trainer checkpoint (src/rl/grpo/trainer-state.ts's TrainerState has
 * this shape): declared here, so the exporter sits below the trainer and imports nothing of src/rl.
 */
export interface TrainedState {
  config: { train_mode: 'lora' | 'full'; lora_r: number; lora_alpha: number; lora_target_modules: LoraTarget[] };
  engine: { tensors: NamedTensor[] };
}

const LORA_FACTOR = /\.lora_[AB]\.weight$/;
const MOMENT = /\.(exp_avg|exp_avg_sq)$/;

export function trainedWeights(ckpt: TrainedState, baseTensors: ReadonlySet<string>): Pick<OnnxExportOptions, 'adapter' | 'weights'> {
  const c = ckpt.config;
  const tensors = ckpt.engine.tensors.filter((t) => !MOMENT.test(t.name));
  if (c.train_mode === 'full') {
    const weights = new Map(tensors.filter((t) => baseTensors.has(t.name)).map((t) => [t.name, t.data]));
    if (weights.size === 0) throw new Error('the trainer checkpoint (train_mode full) holds none of the model\'s tensors');
    return { weights };
  }
  const factors = tensors.filter((t) => LORA_FACTOR.test(t.name));
  if (factors.length === 0) throw new Error('the trainer checkpoint (train_mode lora) holds no LoRA factors');
  const adapter: PeftLoraAdapter = {
    settings: { r: c.lora_r, alpha: c.lora_alpha, targetModules: c.lora_target_modules, useRslora: false },
    baseModel: null,
    tensors: factors,
  };
  return { adapter };
}
