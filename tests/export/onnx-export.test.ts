// The ONNX export run by onnxruntime-node (CPU): its log-probs equal the float64 reference's within
// 1e-4 for the demo model and generated Qwen3s (GQA, head_dim ≠ hidden/heads, tied and untied),
// with a LoRA adapter merged; the KV-cache path (prefix, then the rest with past_key_values) equals
// one call; left padding leaves the real tokens' logits unchanged; fp16 weights stay within a
// stated tolerance; weights moved to external data load the same.

import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { run as runExport } from '../../src/cli/export.ts';
import { run as runScore } from '../../src/cli/score.ts';
import { captureCliJson } from '../cli-capture.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, describe, expect, it } from 'vitest';
import { peftAdapterConfig, peftAdapterFiles, readPeftAdapter } from '../../src/engine/peft-adapter.ts';
import { refScore } from '../../src/engine/reference/qwen3.ts';
import { refLoraFromTensors, refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import type { LoraTarget, NamedTensor } from '../../src/engine/types.ts';
import { exportOnnx, type ExportedFile } from '../../src/export/onnx/export.ts';
import { openCheckpoint, type OpenedCheckpoint } from '../../src/model/checkpoint.ts';
import { linearShape } from '../../src/model/qwen3-tensors.ts';
import { makeTinyModel } from '../../src/model/tiny-model.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import { mulberry32 } from '../../src/random.ts';

const IDS = [5, 70, 33, 9, 120, 64, 2, 17, 88, 41, 300, 7];
/** fp16 weights (rounded to 11 significant bits) move log-probs by this much on these models. */
const FP16_TOLERANCE = 5e-3;

const tmp = mkdtempSync(join(tmpdir(), 'onnx-export-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

function file(files: ExportedFile[], name: string): Uint8Array {
  const f = files.find((x) => x.name === name);
  if (!f) throw new Error(`no ${name} among ${files.map((x) => x.name).join(', ')}`);
  return f.bytes;
}

function emptyPast(cfg: ModelConfig, batch: number): Record<string, ort.Tensor> {
  const feeds: Record<string, ort.Tensor> = {};
  for (let l = 0; l < cfg.numLayers; l++) {
    for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [batch, cfg.numKvHeads, 0, cfg.headDim]);
  }
  return feeds;
}

const i64 = (v: number[], dims: number[]) => new ort.Tensor('int64', BigInt64Array.from(v.map(BigInt)), dims);

/** One forward: logits [B, S, V] and the presents renamed as the next call's past. */
async function forward(session: ort.InferenceSession, cfg: ModelConfig, ids: number[][], mask: number[][], positions: number[][], past?: Record<string, ort.Tensor>) {
  const B = ids.length;
  const S = ids[0]!.length;
  const out = await session.run({
    input_ids: i64(ids.flat(), [B, S]),
    attention_mask: i64(mask.flat(), [B, mask[0]!.length]),
    position_ids: i64(positions.flat(), [B, S]),
    ...(past ?? emptyPast(cfg, B)),
  });
  const next: Record<string, ort.Tensor> = {};
  for (const [name, t] of Object.entries(out)) if (name.startsWith('present.')) next[name.replace('present.', 'past_key_values.')] = t;
  return { logits: out.logits!.data as Float32Array, past: next };
}

/** Log-probs of ids[1..] from logits of one sequence (rows 0..S−2). */
function logprobs(logits: Float32Array, ids: number[], V: number, fromRow = 0): number[] {
  const out: number[] = [];
  for (let t = 1; t < ids.length; t++) {
    const row = logits.subarray((t - 1 - fromRow) * V, (t - fromRow) * V);
    let max = -Infinity;
    for (const x of row) max = Math.max(max, x);
    let sum = 0;
    for (const x of row) sum += Math.exp(x - max);
    out.push(row[ids[t]!]! - max - Math.log(sum));
  }
  return out;
}

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
};

async function session(files: ExportedFile[], name = 'onnx/model.onnx') {
  return ort.InferenceSession.create(file(files, name));
}

const TARGETS: LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
const R = 4;
const ALPHA = 8;

/** A random PEFT adapter on every linear, as the files a run exports. */
function randomAdapterFiles(cfg: ModelConfig): Map<string, Uint8Array> {
  const rand = mulberry32(7);
  const tensors: NamedTensor[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    for (const t of TARGETS) {
      const [o, i] = linearShape(cfg, t);
      const block = ['gate_proj', 'up_proj', 'down_proj'].includes(t) ? 'mlp' : 'self_attn';
      const fill = (n: number) => Float32Array.from({ length: n }, () => (2 * rand() - 1) * 0.2);
      tensors.push({ name: `base_model.model.model.layers.${l}.${block}.${t}.lora_A.weight`, shape: [R, i], data: fill(R * i) });
      tensors.push({ name: `base_model.model.model.layers.${l}.${block}.${t}.lora_B.weight`, shape: [o, R], data: fill(o * R) });
    }
  }
  return peftAdapterFiles({ adapterConfig: peftAdapterConfig({ r: R, alpha: ALPHA, targetModules: TARGETS, useRslora: false }, { name: 'base' }), tensors });
}

const MODELS: [string, () => Promise<OpenedCheckpoint>][] = [
  ['the demo model (tied, GQA 4:2)', () => openCheckpoint('models/demo')],
  // head_dim 16 ≠ 48/4, one KV head for four query heads, an untied head.
  ['a generated Qwen3 (untied, GQA 4:1, head_dim ≠ hidden/heads)', async () => openCheckpoint((await makeTinyModel({ seed: 3, hidden: 48, heads: 4, kvHeads: 1, headDim: 16, intermediate: 80, tie: false })).files)],
  ['a generated Qwen3 (tied, GQA 6:2, head_dim 8)', async () => openCheckpoint((await makeTinyModel({ seed: 4, hidden: 40, heads: 6, kvHeads: 2, headDim: 8, intermediate: 72 })).files)],
];

describe('ONNX export run by onnxruntime-node', () => {
  for (const [label, open] of MODELS) {
    it(`${label}: log-probs within 1e-4 of the float64 reference, with and without a merged LoRA adapter`, async () => {
      const ckpt = await open();
      const cfg = ckpt.config;
      const w = await refWeightsFromCheckpoint(ckpt);
      const positions = [IDS.map((_, i) => i)];
      const mask = [IDS.map(() => 1)];

      const plain = await session(await exportOnnx(ckpt));
      const got = logprobs((await forward(plain, cfg, [IDS], mask, positions)).logits, IDS, cfg.vocabSize);
      const want = refScore(cfg, w, { ids: IDS, scoreFrom: 1 }, 1).logprobs;
      expect(maxDiff(got, want)).toBeLessThan(1e-4);

      const adapterFiles = randomAdapterFiles(cfg);
      const adapter = await readPeftAdapter(adapterFiles, cfg);
      const lora = refLoraFromTensors(cfg, { r: R, alpha: ALPHA, targets: TARGETS }, adapter.tensors);
      const tuned = await session(await exportOnnx(ckpt, { adapter }));
      const gotLora = logprobs((await forward(tuned, cfg, [IDS], mask, positions)).logits, IDS, cfg.vocabSize);
      const wantLora = refScore(cfg, w, { ids: IDS, scoreFrom: 1 }, 1, lora).logprobs;
      expect(maxDiff(gotLora, wantLora)).toBeLessThan(1e-4);
      // The adapter must matter, or the check above would not see a missing merge.
      expect(maxDiff(wantLora, want)).toBeGreaterThan(1e-2);
    });
  }

  it('webgrpo export onnx --adapter: onnxruntime scores the folder as webgrpo score --adapter does (engine, WebGPU)', { timeout: 120_000 }, async () => {
    const ckpt = await openCheckpoint('models/demo');
    const cfg = ckpt.config;
    const adapterDir = join(tmp, 'adapter');
    mkdirSync(adapterDir, { recursive: true });
    for (const [name, bytes] of randomAdapterFiles(cfg)) writeFileSync(join(adapterDir, name), bytes);
    const out = join(tmp, 'exported-adapter');
    const cli = async (run: (argv: string[]) => Promise<number>, argv: string[]) => {
      const { code, json } = await captureCliJson(() => run(argv));
      expect(code).toBe(0);
      return json as any;
    };
    const written = await cli(runExport, ['onnx', '--model', 'models/demo', '--adapter', adapterDir, '--out', out]);
    expect(written.files.map((f: { name: string }) => f.name)).toEqual(['onnx/model.onnx', 'config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json']);
    const scored = await cli(runScore, ['--model', 'models/demo', '--adapter', adapterDir, '--ids', IDS.join(','), '--weights', 'f32']);
    const s = await ort.InferenceSession.create(join(out, 'onnx/model.onnx'));
    const got = logprobs((await forward(s, cfg, [IDS], [IDS.map(() => 1)], [IDS.map((_, i) => i)])).logits, IDS, cfg.vocabSize);
    expect(maxDiff(got, scored.logprobs)).toBeLessThan(1e-4);
    const plain = refScore(cfg, await refWeightsFromCheckpoint(ckpt), { ids: IDS, scoreFrom: 1 }, 1).logprobs;
    expect(maxDiff(got, plain)).toBeGreaterThan(1e-2);
    // The side files are the base's, with transformers.js told which file to load.
    const files = nodeFolderFiles(out);
    expect(await files.readText('tokenizer_config.json')).toBe(await ckpt.readText('tokenizer_config.json'));
    expect(JSON.parse((await files.readText('config.json'))!)['transformers.js_config']).toEqual({ dtype: 'fp32' });
  });

  it('the KV cache (prefix, then the rest with past_key_values) equals one call, and left padding changes no real logit', async () => {
    const ckpt = await MODELS[1]![1]();
    const cfg = ckpt.config;
    const V = cfg.vocabSize;
    const s = await session(await exportOnnx(ckpt));
    const all = IDS.map((_, i) => i);
    const one = await forward(s, cfg, [IDS], [IDS.map(() => 1)], [all]);
    const split = 5;
    const first = await forward(s, cfg, [IDS.slice(0, split)], [IDS.slice(0, split).map(() => 1)], [all.slice(0, split)]);
    const rest = await forward(s, cfg, [IDS.slice(split)], [IDS.map(() => 1)], [all.slice(split)], first.past);
    expect(maxDiff([...first.logits, ...rest.logits], one.logits)).toBeLessThan(1e-5);

    // Batch of two: the second row is the last 8 ids, left-padded by 4 (as transformers.js pads).
    const pad = 4;
    const short = IDS.slice(pad);
    const batch = await forward(
      s, cfg,
      [IDS, [...Array(pad).fill(0), ...short]],
      [IDS.map(() => 1), [...Array(pad).fill(0), ...short.map(() => 1)]],
      [all, [...Array(pad).fill(1), ...short.map((_, i) => i)]],
    );
    const alone = await forward(s, cfg, [short], [short.map(() => 1)], [short.map((_, i) => i)]);
    const S = IDS.length;
    expect(maxDiff(batch.logits.subarray(0, S * V), one.logits)).toBeLessThan(1e-5);
    expect(maxDiff(batch.logits.subarray((S + pad) * V, 2 * S * V), alone.logits)).toBeLessThan(1e-5);
  });

  it(`fp16 weights: log-probs within ${FP16_TOLERANCE} of fp32, from half the bytes`, async () => {
    const ckpt = await openCheckpoint('models/demo');
    const cfg = ckpt.config;
    const fp32Files = await exportOnnx(ckpt);
    const fp16Files = await exportOnnx(ckpt, { dtype: 'fp16' });
    expect(JSON.parse(new TextDecoder().decode(file(fp16Files, 'config.json')))['transformers.js_config']).toEqual({ dtype: 'fp16' });
    const run = async (files: ExportedFile[], name: string) =>
      logprobs((await forward(await session(files, name), cfg, [IDS], [IDS.map(() => 1)], [IDS.map((_, i) => i)])).logits, IDS, cfg.vocabSize);
    const a = await run(fp32Files, 'onnx/model.onnx');
    const b = await run(fp16Files, 'onnx/model_fp16.onnx');
    const d = maxDiff(a, b);
    expect(d).toBeLessThan(FP16_TOLERANCE);
    expect(d).toBeGreaterThan(0); // the weights really were rounded
    expect(file(fp16Files, 'onnx/model_fp16.onnx').byteLength).toBeLessThan(0.6 * file(fp32Files, 'onnx/model.onnx').byteLength);
  });

  it('weights past the threshold go to external data (model.onnx_data) and load the same', async () => {
    const ckpt = await openCheckpoint('models/demo');
    const cfg = ckpt.config;
    const inline = await exportOnnx(ckpt);
    const external = await exportOnnx(ckpt, { externalDataThreshold: 0 });
    expect(external.map((f) => f.name)).toContain('onnx/model.onnx_data');
    expect(file(external, 'onnx/model.onnx').byteLength).toBeLessThan(file(inline, 'onnx/model.onnx').byteLength / 10);
    expect(JSON.parse(new TextDecoder().decode(file(external, 'config.json')))['transformers.js_config'].use_external_data_format).toEqual({ 'model.onnx': 1 });
    const dir = join(tmp, 'external');
    for (const f of external) {
      mkdirSync(dirname(join(dir, f.name)), { recursive: true });
      writeFileSync(join(dir, f.name), f.bytes);
    }
    const feeds: [number[][], number[][], number[][]] = [[IDS], [IDS.map(() => 1)], [IDS.map((_, i) => i)]];
    const fromDisk = await forward(await ort.InferenceSession.create(join(dir, 'onnx/model.onnx')), cfg, ...feeds);
    const fromMemory = await forward(await session(inline), cfg, ...feeds);
    expect(maxDiff(fromDisk.logits, fromMemory.logits)).toBe(0);
  });
});
