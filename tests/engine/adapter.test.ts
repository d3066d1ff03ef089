// PEFT LoRA adapters on the engine: `score --adapter` equals scoring the merged weights
// (W + scale·B·A written into a new checkpoint), `--checkpoint` (a trainer checkpoint) equals the same
// adapter, and an adapter the engine cannot run is refused by name.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { peftAdapterConfig, peftAdapterFiles, peftTensorName, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import type { LoraTarget, NamedTensor } from '../../src/engine/types.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { writeSafetensors } from '../../src/model/safetensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import { serializeTrainerState } from '../../src/rl/grpo/trainer-state.ts';
import { configFromObject } from '../../src/rl/config.ts';
import { mulberry32 } from '../../src/random.ts';
import { run as runScore } from '../../src/cli/score.ts';
import { run as runGenerate } from '../../src/cli/generate.ts';
import { captureCliJson } from '../cli-capture.ts';
import { maxAbsDiff } from './helpers.ts';

const R = 4;
const ALPHA = 8;
const TARGETS: LoraTarget[] = ['q_proj', 'v_proj', 'o_proj', 'down_proj'];
const BLOCK = (t: LoraTarget) => (t.endsWith('_proj') && ['gate_proj', 'up_proj', 'down_proj'].includes(t) ? 'mlp' : 'self_attn');
const IDS = [5, 70, 33, 9, 120, 64, 2, 17, 88];

async function capture(fn: () => Promise<number>): Promise<any> {
  const { code, json } = await captureCliJson(fn);
  expect(code).toBe(0);
  return json;
}

/** Random non-zero A (r, in) and B (out, r) for every targeted linear, under the engine's names. */
function randomFactors(cfg: ModelConfig): NamedTensor[] {
  const rand = mulberry32(42);
  const out: NamedTensor[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    for (const t of TARGETS) {
      const q = cfg.numHeads * cfg.headDim;
      const kv = cfg.numKvHeads * cfg.headDim;
      const [o, i] = { q_proj: [q, cfg.hiddenSize], v_proj: [kv, cfg.hiddenSize], o_proj: [cfg.hiddenSize, q], down_proj: [cfg.hiddenSize, cfg.intermediateSize] }[t as 'q_proj']!;
      const name = `model.layers.${l}.${BLOCK(t)}.${t}`;
      const fill = (n: number) => Float32Array.from({ length: n }, () => (2 * rand() - 1) * 0.3);
      out.push({ name: `${name}.lora_A.weight`, shape: [R, i], data: fill(R * i) });
      out.push({ name: `${name}.lora_B.weight`, shape: [o, R], data: fill(o * R) });
    }
  }
  return out;
}

function writeFolder(dir: string, files: Map<string, Uint8Array>): string {
  mkdirSync(dir, { recursive: true });
  for (const [name, bytes] of files) writeFileSync(join(dir, name), bytes);
  return dir;
}

describe('LoRA adapters on the engine (score/generate --adapter, --checkpoint)', () => {
  let root: string;
  let base: string;
  let cfg: ModelConfig;
  let factors: NamedTensor[];
  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'webgrpo-adapter-'));
    const model = await makeTinyModel({ seed: 5, hidden: 32, layers: 2, heads: 4, kvHeads: 2, headDim: 8, intermediate: 64, dtype: 'f32' });
    base = writeFolder(join(root, 'base'), model.files);
    cfg = (await openCheckpoint(base)).config;
    factors = randomFactors(cfg);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  /** A PEFT adapter folder of `factors` (PEFT's tensor names). */
  function adapterFolder(name: string, useRslora: boolean): string {
    const adapterConfig = peftAdapterConfig({ r: R, alpha: ALPHA, targetModules: TARGETS, useRslora }, { name: base });
    return writeFolder(join(root, name), peftAdapterFiles({ adapterConfig, tensors: factors.map((t) => ({ ...t, name: peftTensorName(t.name, cfg) })) }));
  }

  /** The base checkpoint with W + scale·B·A (float64 sums) for every adapted linear. */
  async function mergedFolder(scale: number): Promise<string> {
    const ckpt = await openCheckpoint(base);
    const byName = new Map(factors.map((t) => [t.name, t]));
    const tensors = [];
    for (const name of ckpt.tensors.keys()) {
      const w = await readTensorFloat32(ckpt, name);
      const shape = ckpt.tensors.get(name)!.shape;
      const a = byName.get(name.replace(/\.weight$/, '.lora_A.weight'));
      const b = byName.get(name.replace(/\.weight$/, '.lora_B.weight'));
      if (a && b) {
        const [out, inp] = shape as [number, number];
        for (let o = 0; o < out; o++) {
          for (let i = 0; i < inp; i++) {
            let s = 0;
            for (let k = 0; k < R; k++) s += b.data[o * R + k]! * a.data[k * inp + i]!;
            w[o * inp + i] = w[o * inp + i]! + scale * s;
          }
        }
      }
      tensors.push({ name, dtype: 'F32' as const, shape, data: new Uint8Array(w.buffer) });
    }
    const dir = join(root, `merged-${scale}`);
    const files = new Map<string, Uint8Array>();
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json']) files.set(f, new TextEncoder().encode((await ckpt.readText(f))!));
    files.set('model.safetensors', writeSafetensors(tensors));
    return writeFolder(dir, files);
  }

  it('score --adapter (use_rslora) equals scoring the merged weights within 1e-4', { timeout: 120_000 }, async () => {
    const adapter = adapterFolder('adapter-rslora', true);
    const merged = await mergedFolder(ALPHA / Math.sqrt(R));
    const withAdapter = await capture(() => runScore(['--model', base, '--adapter', adapter, '--ids', IDS.join(','), '--weights', 'f32']));
    const onMerged = await capture(() => runScore(['--model', merged, '--ids', IDS.join(','), '--weights', 'f32']));
    const plain = await capture(() => runScore(['--model', base, '--ids', IDS.join(','), '--weights', 'f32']));
    expect(withAdapter.lora_adapter).toBe(adapter);
    expect(maxAbsDiff(withAdapter.logprobs, onMerged.logprobs)).toBeLessThan(1e-4);
    expect(maxAbsDiff(withAdapter.entropies, onMerged.entropies)).toBeLessThan(1e-4);
    // The adapter matters: without it the numbers are far off.
    expect(maxAbsDiff(plain.logprobs, onMerged.logprobs)).toBeGreaterThan(1e-2);
    // --model defaults to the adapter's base_model_name_or_path.
    const implicit = await capture(() => runScore(['--adapter', adapter, '--ids', IDS.join(','), '--weights', 'f32']));
    expect(implicit.logprobs).toEqual(withAdapter.logprobs);
  });

  it('generate --adapter greedy equals generate on the merged weights; --checkpoint equals the same adapter', { timeout: 120_000 }, async () => {
    const adapter = adapterFolder('adapter-plain', false);
    const merged = await mergedFolder(ALPHA / R);
    const greedy = ['--ids', '1,2,3', '--max-new-tokens', '6', '--temperature', '0', '--stop-ids', '0', '--weights', 'f32'];
    const a = await capture(() => runGenerate(['--model', base, '--adapter', adapter, ...greedy]));
    const m = await capture(() => runGenerate(['--model', merged, ...greedy]));
    expect(a.completions[0].ids).toEqual(m.completions[0].ids);

    // A trainer checkpoint holding the same factors (zero AdamW moments), as `train --output` writes it.
    const config = configFromObject({ train_mode: 'lora', lora_r: R, lora_alpha: ALPHA, lora_target_modules: TARGETS });
    const zeros = (t: NamedTensor, s: string) => ({ name: t.name + s, shape: t.shape, data: new Float32Array(t.data.length) });
    const files = serializeTrainerState({
      counters: { step: 3, generation: 3, numTokens: 100, totalSteps: 10 },
      config,
      engine: { tensors: factors.flatMap((t) => [t, zeros(t, '.exp_avg'), zeros(t, '.exp_avg_sq')]), step: 3 },
    });
    const output = join(root, 'train-output');
    writeFolder(join(output, 'checkpoint-3'), files);
    const viaAdapter = await capture(() => runScore(['--model', base, '--adapter', adapter, '--ids', IDS.join(','), '--weights', 'f32']));
    const viaCheckpoint = await capture(() => runScore(['--model', base, '--checkpoint', output, '--ids', IDS.join(','), '--weights', 'f32']));
    expect(viaCheckpoint).toMatchObject({ checkpoint: join(output, 'checkpoint-3'), step: 3 });
    expect(maxAbsDiff(viaCheckpoint.logprobs, viaAdapter.logprobs)).toBeLessThan(1e-6);
    const onMerged = await capture(() => runScore(['--model', merged, '--ids', IDS.join(','), '--weights', 'f32']));
    expect(maxAbsDiff(viaAdapter.logprobs, onMerged.logprobs)).toBeLessThan(1e-4);
  });

  it('adapter_config.json carries every key current PEFT writes', () => {
    const written = peftAdapterConfig({ r: R, alpha: ALPHA, targetModules: TARGETS, useRslora: false }, { name: 'Qwen/Qwen3-0.6B' });
    for (const key of [
      'peft_type', 'task_type', 'r', 'lora_alpha', 'lora_dropout', 'target_modules', 'bias', 'fan_in_fan_out', 'init_lora_weights', 'use_rslora',
      'use_dora', 'modules_to_save', 'layers_to_transform', 'layers_pattern', 'rank_pattern', 'alpha_pattern', 'megatron_config', 'megatron_core',
      'loftq_config', 'exclude_modules', 'lora_bias', 'layer_replication', 'eva_config', 'corda_config', 'trainable_token_indices',
      'target_parameters', 'auto_mapping', 'base_model_name_or_path', 'revision', 'inference_mode', 'peft_version', 'use_qalora', 'qalora_group_size',
    ]) {
      expect(written, key).toHaveProperty([key]);
    }
    expect(written).toMatchObject({ base_model_name_or_path: 'Qwen/Qwen3-0.6B', peft_type: 'LORA', task_type: 'CAUSAL_LM', r: R, lora_alpha: ALPHA, inference_mode: true });
  });

  it('refuses adapters it cannot run, naming the key, tensor or shape', async () => {
    const good = peftAdapterConfig({ r: R, alpha: ALPHA, targetModules: TARGETS, useRslora: false }, { name: 'x' });
    const peft = factors.map((t) => ({ ...t, name: peftTensorName(t.name, cfg) }));
    const files = (config: Record<string, unknown>, tensors: NamedTensor[]) => peftAdapterFiles({ adapterConfig: config, tensors });
    const read = (config: Record<string, unknown>, tensors: NamedTensor[] = peft) => readPeftAdapter(files(config, tensors), cfg);

    const ok = await read(good);
    expect(ok.settings).toEqual({ r: R, alpha: ALPHA, targetModules: TARGETS, useRslora: false });
    expect(ok.tensors.map((t) => t.name)).toEqual(factors.map((t) => t.name));
    await expect(read({ ...good, use_dora: true })).rejects.toThrow(/unsupported LoRA settings: use_dora/);
    await expect(read({ ...good, rank_pattern: { q_proj: 8 } })).rejects.toThrow(/unsupported LoRA settings: rank_pattern \{"q_proj":8\}/);
    await expect(read({ ...good, modules_to_save: ['lm_head'] })).rejects.toThrow(/modules_to_save/);
    await expect(read({ ...good, peft_type: 'IA3' })).rejects.toThrow(/peft_type is "IA3"; only LORA/);
    await expect(read({ ...good, r: 8 })).rejects.toThrow(/lora_A.weight' has shape \[4, 32\], expected \[8, 32\]/);
    await expect(read({ ...good, target_modules: ['q_proj', 'v_proj', 'o_proj', 'down_proj', 'k_proj'] })).rejects.toThrow(/target_modules lists k_proj but adapter_model.safetensors has no factors for it/);
    await expect(read(good, [...peft, { name: 'base_model.model.lm_head.lora_A.weight', shape: [R, 32], data: new Float32Array(R * 32) }])).rejects.toThrow(/unsupported tensor 'base_model.model.lm_head.lora_A.weight'/);
    await expect(read(good, peft.filter((t) => !t.name.includes('layers.1.self_attn.q_proj.lora_B')))).rejects.toThrow(/no base_model.model.model.layers.1.self_attn.q_proj.lora_B.weight/);
    const configOnly = new Map([['adapter_config.json', new TextEncoder().encode(JSON.stringify(good))]]);
    await expect(readPeftAdapter(configOnly, cfg)).rejects.toThrow(/no adapter_model.safetensors/);
    await expect(readPeftAdapter(join(root, 'nope'), cfg)).rejects.toThrow(/is not a folder/);
  });
});
