// Host copies of the trainable state: save/load (weights + AdamW moments + step), the gradients under
// the checkpoint's names (`score --grads`), and the LoRA adapter in PEFT's format.

import type { EngineInternals } from '../internals.ts';
import type { NamedTensor } from '../types.ts';
import type { TrainableSet, TrainableTensor, TrainableChunk } from './trainable.ts';
import { peftAdapterConfig, peftTensorName } from '../peft-adapter.ts';

type Which = 'weight' | 'grad' | 'm' | 'v';

/** PyTorch's AdamW state names, appended to the parameter's name. */
const MOMENT_SUFFIX: Record<'m' | 'v', string> = { m: '.exp_avg', v: '.exp_avg_sq' };

function elementCount(shape: number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** Reads one buffer kind of every tensor back to the host, in one submit. */
export async function readTensors(internals: EngineInternals, tensors: TrainableTensor[], which: Which, suffix = ''): Promise<NamedTensor[]> {
  const rec = internals.recorder(`read ${which}`);
  const reads = tensors.map((t) => t.chunks.map((c) => rec.read(c[which], 0, c.count * 4)));
  const bufs = await rec.submit();
  return tensors.map((t, i) => {
    const data = new Float32Array(elementCount(t.shape));
    let at = 0;
    for (const r of reads[i]!) {
      const part = new Float32Array(bufs[r]!);
      data.set(part, at);
      at += part.length;
    }
    return { name: t.name + suffix, shape: [...t.shape], data };
  });
}

export async function saveTrainState(internals: EngineInternals, set: TrainableSet, step: number): Promise<{ tensors: NamedTensor[]; step: number }> {
  const tensors = [
    ...(await readTensors(internals, set.tensors, 'weight')),
    ...(await readTensors(internals, set.tensors, 'm', MOMENT_SUFFIX.m)),
    ...(await readTensors(internals, set.tensors, 'v', MOMENT_SUFFIX.v)),
  ];
  return { tensors, step };
}

/** Writes weights and moments back; every trainable tensor must be present with its exact shape. */
export function loadTrainState(internals: EngineInternals, set: TrainableSet, state: { tensors: NamedTensor[]; step: number }): number {
  if (!Number.isInteger(state.step) || state.step < 0) throw new Error(`loadState: step must be a non-negative integer, got ${state.step}`);
  const byName = new Map<string, NamedTensor>();
  for (const t of state.tensors) {
    if (byName.has(t.name)) throw new Error(`loadState: tensor ${t.name} appears twice`);
    byName.set(t.name, t);
  }
  const expected = new Set<string>();
  const writes: { chunk: TrainableChunk; which: Which; data: Float32Array<ArrayBuffer> }[] = [];
  for (const t of set.tensors) {
    for (const [which, suffix] of [['weight', ''], ['m', MOMENT_SUFFIX.m], ['v', MOMENT_SUFFIX.v]] as const) {
      const name = t.name + suffix;
      expected.add(name);
      const got = byName.get(name);
      if (!got) {
        // A full-mode state saved with the tower frozen (or before full fine-tuning trained it) has none of its tensors.
        const hint = t.name.startsWith('model.visual.') && set.mode.kind === 'full' ? '; a state without the vision tower loads with it frozen (freezeVisionTower, freeze_vision_tower: true)' : '';
        throw new Error(`loadState: missing tensor ${name} (the state must come from the same model and trainable mode${hint})`);
      }
      if (got.shape.length !== t.shape.length || got.shape.some((n, i) => n !== t.shape[i])) {
        throw new Error(`loadState: tensor ${name} has shape [${got.shape.join(', ')}], expected [${t.shape.join(', ')}]`);
      }
      if (got.data.length !== elementCount(t.shape)) throw new Error(`loadState: tensor ${name} has ${got.data.length} values for shape [${t.shape.join(', ')}]`);
      let at = 0;
      for (const c of t.chunks) {
        writes.push({ chunk: c, which, data: new Float32Array(got.data.subarray(at, at + c.count)) });
        at += c.count;
      }
    }
  }
  const unknown = state.tensors.filter((t) => !expected.has(t.name)).map((t) => t.name);
  if (unknown.length > 0) throw new Error(`loadState: unexpected tensors ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''} (not trainable in the current mode)`);
  const { queue } = internals.gpu.device;
  for (const w of writes) queue.writeBuffer(w.chunk[w.which], 0, w.data);
  return state.step;
}

/** The adapter_config.json of the trainable LoRA (the one shared writer: peft-adapter.ts). */
export function loraAdapterConfig(set: TrainableSet, baseModelName: string): Record<string, unknown> {
  if (set.mode.kind !== 'lora') throw new Error('exportAdapter: the engine is not training a LoRA adapter');
  const { r, alpha, targetModules, visionTargetModules, useRslora } = set.mode.lora;
  return peftAdapterConfig({ r, alpha, targetModules, ...(visionTargetModules?.length ? { visionTargetModules } : {}), useRslora: useRslora === true }, { name: baseModelName });
}

export async function exportPeftAdapter(internals: EngineInternals, set: TrainableSet, baseModelName: string): Promise<{ adapterConfig: Record<string, unknown>; tensors: NamedTensor[] }> {
  if (typeof baseModelName !== 'string' || baseModelName.length === 0) throw new Error('exportAdapter: baseModelName must be a non-empty string (e.g. "Qwen/Qwen3-0.6B")');
  const adapterConfig = loraAdapterConfig(set, baseModelName);
  const tensors = (await readTensors(internals, set.tensors, 'weight')).map((t) => ({ ...t, name: peftTensorName(t.name, internals.config) }));
  return { adapterConfig, tensors };
}
