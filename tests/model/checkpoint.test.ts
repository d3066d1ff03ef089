import { qwen3ArchitectureFields } from '../../src/model/config.ts';
import { describe, expect, it } from 'vitest';
import { browserFiles } from '../../src/model/files.ts';
import { openCheckpoint, readTensorFloat32 } from '../../src/model/checkpoint.ts';
import { qwen3TensorLayout, validateQwen3Tensors } from '../../src/model/qwen3-tensors.ts';
import { encodeHeader } from '../../src/model/safetensors.ts';
import { makeTinyCheckpointFiles } from '../../src/model/tiny-model.ts';
import type { TensorInfo } from '../../src/model/types.ts';

const enc = new TextEncoder();
const withFile = (files: Map<string, Uint8Array>, name: string, bytes: Uint8Array | null) => {
  const out = new Map(files);
  if (bytes) out.set(name, bytes);
  else out.delete(name);
  return out;
};

describe('openCheckpoint', () => {
  it('reads a checkpoint from browser File objects of a picked folder', async () => {
    const files = await makeTinyCheckpointFiles({ seed: 4, shards: 2 });
    const picked = [...files].map(([name, bytes]) => {
      const f = new File([bytes as Uint8Array<ArrayBuffer>], name);
      Object.defineProperty(f, 'webkitRelativePath', { value: `tiny/${name}` });
      return f;
    });
    // A stray copy in a sub-folder must not shadow the top-level config.
    const stray = new File(['{}'], 'config.json');
    Object.defineProperty(stray, 'webkitRelativePath', { value: 'tiny/old/config.json' });
    const fromFiles = await openCheckpoint(browserFiles([stray, ...picked]));
    const fromMemory = await openCheckpoint(files);
    expect(fromFiles.weightFiles).toEqual(fromMemory.weightFiles);
    for (const name of fromMemory.tensors.keys()) expect(Buffer.from(await fromFiles.readTensor(name)).equals(await fromMemory.readTensor(name)), name).toBe(true);
    expect(await fromFiles.readText('tokenizer_config.json')).toBe(await fromMemory.readText('tokenizer_config.json'));
    expect(await readTensorFloat32(fromFiles, 'model.norm.weight')).toEqual(await readTensorFloat32(fromMemory, 'model.norm.weight'));
  });

  it('explains what is missing or inconsistent, naming the file and tensor', async () => {
    const files = await makeTinyCheckpointFiles({ seed: 1 });
    const shardedFiles = await makeTinyCheckpointFiles({ seed: 1, shards: 2 });
    const index = JSON.parse(new TextDecoder().decode(shardedFiles.get('model.safetensors.index.json')!));
    const cases: [string, Map<string, Uint8Array>, RegExp][] = [
      ['no config', withFile(files, 'config.json', null), /^memory: no config.json/],
      ['no weights', withFile(files, 'model.safetensors', null), /no model.safetensors and no model.safetensors.index.json/],
      ['a missing shard', withFile(shardedFiles, 'model-00002-of-00002.safetensors', null), /shard 'model-00002-of-00002.safetensors' named in model.safetensors.index.json does not exist/],
      ['an index listing a tensor a shard lacks', withFile(shardedFiles, 'model.safetensors.index.json', enc.encode(JSON.stringify({ ...index, weight_map: { ...index.weight_map, 'model.extra.weight': 'model-00001-of-00002.safetensors' } }))), /lists tensor 'model.extra.weight' in model-00001-of-00002.safetensors, but that shard does not contain it/],
      ['an index placing a tensor in the wrong shard', withFile(shardedFiles, 'model.safetensors.index.json', enc.encode(JSON.stringify({ ...index, weight_map: { ...index.weight_map, 'model.norm.weight': 'model-00001-of-00002.safetensors' } }))), /model-00002-of-00002.safetensors: tensor 'model.norm.weight' is not listed for this shard/],
      ['an index without weight_map', withFile(shardedFiles, 'model.safetensors.index.json', enc.encode('{"metadata": {}}')), /model.safetensors.index.json: missing "weight_map" object/],
      ['a corrupt weights file', withFile(files, 'model.safetensors', files.get('model.safetensors')!.subarray(0, 100)), /memory\/model.safetensors: header length \d+ runs past the end of the file \(100 bytes\)/],
      ['a truncated byte buffer', withFile(files, 'model.safetensors', files.get('model.safetensors')!.subarray(0, files.get('model.safetensors')!.byteLength - 4)), /memory\/model.safetensors: tensor '.*' data_offsets .* run past the byte buffer/],
    ];
    for (const [what, broken, message] of cases) {
      await expect(openCheckpoint(broken), what).rejects.toThrow(message);
    }
    // A path is never sent to the Hub: a missing folder is named as one.
    await expect(openCheckpoint('/definitely/not/here')).rejects.toThrow(/^no model folder \/definitely\/not\/here$/);
  });
});

describe('validateQwen3Tensors', () => {
  it('names the tensor that is missing, misshapen or unexpected', async () => {
    const ckpt = await openCheckpoint(await makeTinyCheckpointFiles({ seed: 2 }));
    const edit = (f: (m: Map<string, TensorInfo>) => void) => {
      const tensors = new Map(ckpt.tensors);
      f(tensors);
      return () => validateQwen3Tensors({ config: ckpt.config, tensors });
    };
    expect(edit((m) => m.delete('model.layers.1.self_attn.k_norm.weight'))).toThrow("tensor 'model.layers.1.self_attn.k_norm.weight' is missing (expected shape [16] from config.json)");
    expect(edit((m) => m.set('model.layers.0.mlp.up_proj.weight', { ...m.get('model.layers.0.mlp.up_proj.weight')!, shape: [64, 128] }))).toThrow("tensor 'model.layers.0.mlp.up_proj.weight' has shape [64,128] but config.json implies [128,64]");
    expect(edit((m) => m.set('model.layers.2.input_layernorm.weight', { name: 'x', dtype: 'F32', shape: [64], byteLength: 256 }))).toThrow("unexpected tensor 'model.layers.2.input_layernorm.weight' (not part of a 2-layer Qwen3ForCausalLM)");
    expect(edit((m) => m.set('model.layers.0.self_attn.rotary_emb.inv_freq', { name: 'x', dtype: 'F32', shape: [8], byteLength: 32 }))).not.toThrow();
    const untied = { ...ckpt.config, tieWordEmbeddings: false };
    expect(() => validateQwen3Tensors({ config: untied, tensors: ckpt.tensors })).toThrow(/tensor 'lm_head.weight' is missing \(tie_word_embeddings is false/);
  });

  it('lists the 311 tensors of Qwen3-0.6B with the spec shapes', () => {
    const qwen = { vocabSize: 151936, hiddenSize: 1024, intermediateSize: 3072, numLayers: 28, numHeads: 16, numKvHeads: 8, headDim: 128, ...qwen3ArchitectureFields(28, 128) } as Parameters<typeof qwen3TensorLayout>[0];
    const layout = qwen3TensorLayout(qwen, true);
    expect(layout.length).toBe(311);
    const shape = (n: string) => layout.find((t) => t.name === n)!.shape;
    expect(shape('model.layers.27.self_attn.q_proj.weight')).toEqual([2048, 1024]);
    expect(shape('model.layers.0.self_attn.o_proj.weight')).toEqual([1024, 2048]);
    expect(shape('model.layers.5.self_attn.k_proj.weight')).toEqual([1024, 1024]);
    expect(shape('model.layers.5.mlp.down_proj.weight')).toEqual([1024, 3072]);
    expect(shape('model.layers.5.self_attn.q_norm.weight')).toEqual([128]);
    expect(shape('lm_head.weight')).toEqual([151936, 1024]);
    const stored = layout.reduce((s, t) => s + t.shape.reduce((p, d) => p * d, 1), 0);
    expect(stored).toBe(751_632_384);
  });
});

describe('header-only reads', () => {
  it('opens a checkpoint by reading just the headers, never the whole weights file', async () => {
    const files = await makeTinyCheckpointFiles({ seed: 6 });
    const reads: [string, number, number][] = [];
    const weights = files.get('model.safetensors')!;
    const ckpt = await openCheckpoint({
      location: 'spy',
      size: async (f) => files.get(f)?.byteLength ?? null,
      read: async (f, start, end) => {
        reads.push([f, start, end]);
        return files.get(f)!.subarray(start, end);
      },
      readText: async (f) => (files.has(f) ? new TextDecoder().decode(files.get(f)) : null),
    });
    expect(reads.length).toBe(2);
    expect(reads.every(([, s, e]) => e - s < weights.byteLength / 10)).toBe(true);
    const t = ckpt.stored.get('model.layers.0.mlp.gate_proj.weight')!;
    await ckpt.readTensor(t.name);
    expect(reads[2]).toEqual(['model.safetensors', t.fileOffset, t.fileOffset + t.byteLength]);
    // The writer's header and the reader agree on where the data starts.
    expect(reads[1]![2]).toBe(encodeHeader([...ckpt.stored.values()].sort((a, b) => a.fileOffset - b.fileOffset), { format: 'pt' }).byteLength);
  });
});
