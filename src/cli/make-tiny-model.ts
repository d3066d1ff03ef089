// `webgrpo make-tiny-model --out DIR …`: writes a deterministic random Qwen3 checkpoint in Hugging
// Face layout and prints a JSON summary.

import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { qwen3ParamCount } from '../model/qwen3-tensors.ts';
import { makeTinyModel, TINY_DEFAULTS, type TinyModelOptions } from '../model/tiny-model.ts';
import { parseCli, str, type OptionTable } from './args.ts';

const HELP = `usage: webgrpo make-tiny-model --out DIR [options]

  --out DIR              folder to write (created if missing)
  --seed S               RNG seed (default ${TINY_DEFAULTS.seed}); same seed, same bytes
  --hidden N             hidden_size (default ${TINY_DEFAULTS.hidden})
  --layers N             num_hidden_layers (default ${TINY_DEFAULTS.layers})
  --heads N              num_attention_heads (default ${TINY_DEFAULTS.heads})
  --kv-heads N           num_key_value_heads (default ${TINY_DEFAULTS.kvHeads})
  --head-dim N           head_dim (default ${TINY_DEFAULTS.headDim})
  --intermediate N       intermediate_size (default ${TINY_DEFAULTS.intermediate})
  --vocab N              vocab_size (default: tokenizer size rounded up to 64; 151936 for qwen3)
  --tokenizer byte|qwen3 small byte-level BPE with Qwen3's specials, or the real Qwen3 tokenizer (default byte)
  --dtype f32|bf16|f16   weight dtype (default ${TINY_DEFAULTS.dtype})
  --tie true|false       tie_word_embeddings (default true)
  --store-lm-head true|false  store lm_head.weight (default: only when untied)
  --config-form v4|v5    rope_theta/torch_dtype (v4) or rope_parameters/dtype (transformers 5)
  --shards N             write N shards + model.safetensors.index.json (default 1)`;

const INT_FLAGS: Record<string, keyof TinyModelOptions> = {
  seed: 'seed', hidden: 'hidden', layers: 'layers', heads: 'heads', 'kv-heads': 'kvHeads',
  'head-dim': 'headDim', intermediate: 'intermediate', vocab: 'vocab', shards: 'shards',
};

const OPTIONS: OptionTable = Object.fromEntries(
  ['out', ...Object.keys(INT_FLAGS), 'tie', 'store-lm-head', 'tokenizer', 'dtype', 'config-form'].map((k) => [k, { type: 'string' as const }]),
);

export function parseArgs(argv: string[]): { out: string; options: TinyModelOptions } | 'help' {
  const p = parseCli(argv, OPTIONS);
  if (p.help) return 'help';
  const options: Record<string, unknown> = {};
  for (const [flag, key] of Object.entries(INT_FLAGS)) {
    const value = str(p, flag);
    if (value === undefined) continue;
    const n = Number(value);
    if (value.trim() === '' || !Number.isSafeInteger(n)) throw new Error(`--${flag} must be an integer, got '${value}'`);
    options[key] = n;
  }
  for (const [flag, key] of [['tie', 'tie'], ['store-lm-head', 'storeLmHead']] as const) {
    const value = str(p, flag);
    if (value === undefined) continue;
    if (value !== 'true' && value !== 'false') throw new Error(`--${flag} must be true or false, got '${value}'`);
    options[key] = value === 'true';
  }
  for (const [flag, key] of [['tokenizer', 'tokenizer'], ['dtype', 'dtype'], ['config-form', 'configForm']] as const) {
    if (str(p, flag) !== undefined) options[key] = str(p, flag);
  }
  const out = str(p, 'out');
  if (!out) throw new Error(`--out DIR is required\n\n${HELP}`);
  return { out, options: options as TinyModelOptions };
}

export async function run(argv: string[]): Promise<number> {
  const parsed = parseArgs(argv);
  if (parsed === 'help') {
    console.log(HELP);
    return 0;
  }
  const model = await makeTinyModel(parsed.options);
  const dir = resolve(parsed.out);
  await mkdir(dir, { recursive: true });
  for (const [name, bytes] of model.files) await writeFile(join(dir, name), bytes);
  const c = model.config;
  console.log(JSON.stringify({
    out: dir,
    files: Object.fromEntries([...model.files].map(([name, bytes]) => [name, bytes.byteLength])),
    params: qwen3ParamCount(c),
    config: {
      vocab_size: c.vocabSize, hidden_size: c.hiddenSize, intermediate_size: c.intermediateSize,
      num_hidden_layers: c.numLayers, num_attention_heads: c.numHeads, num_key_value_heads: c.numKvHeads,
      head_dim: c.headDim, tie_word_embeddings: c.tieWordEmbeddings, rope_theta: c.ropeTheta,
    },
    tokenizer: parsed.options.tokenizer ?? TINY_DEFAULTS.tokenizer,
    tokenizer_size: model.tokenizerSize,
    eos_token_id: model.eosTokenId,
    pad_token_id: model.padTokenId,
    dtype: parsed.options.dtype ?? TINY_DEFAULTS.dtype,
    seed: parsed.options.seed ?? TINY_DEFAULTS.seed,
  }, null, 2));
  return 0;
}
