// `webgrpo make-tiny-model --out DIR …`: writes a deterministic random Qwen3 or Qwen3.5 checkpoint in
// Hugging Face layout and prints a JSON summary.

import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { qwen3ParamCount } from '../model/qwen3-tensors.ts';
import { makeTinyModel, TINY_DEFAULTS, type TinyModelOptions } from '../model/tiny-model.ts';
import { parseCli, str, type OptionTable } from './args.ts';

const HELP = `usage: webgrpo make-tiny-model --out DIR [options]

  --out DIR              folder to write (created if missing)
  --arch qwen3|qwen3_5   Qwen3, or Qwen3.5's hybrid Gated DeltaNet + gated attention (default qwen3)
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
  --shards N             write N shards + model.safetensors.index.json (default 1)

qwen3_5 only:
  --layer-types LIST     comma-separated linear_attention|full_attention, one per layer
                         (default: alternating, starting with linear_attention)
  --linear-key-heads N   linear_num_key_heads (default ${TINY_DEFAULTS.linearKeyHeads})
  --linear-value-heads N linear_num_value_heads (default ${TINY_DEFAULTS.linearValueHeads})
  --linear-key-head-dim N    linear_key_head_dim (default ${TINY_DEFAULTS.linearKeyHeadDim})
  --linear-value-head-dim N  linear_value_head_dim (default ${TINY_DEFAULTS.linearValueHeadDim})
  --conv-kernel N        linear_conv_kernel_dim (default ${TINY_DEFAULTS.convKernel})
  --partial-rotary X     partial_rotary_factor (default ${TINY_DEFAULTS.partialRotary})
  --composite true|false write Qwen3_5ForConditionalGeneration's form (text_config,
                         model.language_model.* tensors) instead of Qwen3_5ForCausalLM's (default false)
  --vision               add a tiny vision tower (vision_config, model.visual.* tensors,
                         processor_config.json) and Qwen3.5's image-aware chat template
                         (chat_template.jinja); implies --composite true`;

const INT_FLAGS: Record<string, keyof TinyModelOptions> = {
  seed: 'seed', hidden: 'hidden', layers: 'layers', heads: 'heads', 'kv-heads': 'kvHeads',
  'head-dim': 'headDim', intermediate: 'intermediate', vocab: 'vocab', shards: 'shards',
  'linear-key-heads': 'linearKeyHeads', 'linear-value-heads': 'linearValueHeads',
  'linear-key-head-dim': 'linearKeyHeadDim', 'linear-value-head-dim': 'linearValueHeadDim', 'conv-kernel': 'convKernel',
};

const OPTIONS: OptionTable = {
  ...Object.fromEntries(
    ['out', ...Object.keys(INT_FLAGS), 'tie', 'store-lm-head', 'tokenizer', 'dtype', 'config-form', 'arch', 'layer-types', 'partial-rotary', 'composite'].map((k) => [k, { type: 'string' as const }]),
  ),
  vision: { type: 'boolean' },
};

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
  for (const [flag, key] of [['tie', 'tie'], ['store-lm-head', 'storeLmHead'], ['composite', 'composite']] as const) {
    const value = str(p, flag);
    if (value === undefined) continue;
    if (value !== 'true' && value !== 'false') throw new Error(`--${flag} must be true or false, got '${value}'`);
    options[key] = value === 'true';
  }
  for (const [flag, key] of [['tokenizer', 'tokenizer'], ['dtype', 'dtype'], ['config-form', 'configForm'], ['arch', 'arch']] as const) {
    if (str(p, flag) !== undefined) options[key] = str(p, flag);
  }
  if (p.values.vision === true) options.vision = true;
  const partial = str(p, 'partial-rotary');
  if (partial !== undefined) {
    const x = Number(partial);
    if (partial.trim() === '' || !(x > 0 && x <= 1)) throw new Error(`--partial-rotary must be a number in (0, 1], got '${partial}'`);
    options.partialRotary = x;
  }
  const layerTypes = str(p, 'layer-types');
  if (layerTypes !== undefined) {
    options.layerTypes = layerTypes.split(',').map((t) => {
      const type = t.trim();
      if (type !== 'linear_attention' && type !== 'full_attention') throw new Error(`--layer-types: '${type}' is not linear_attention or full_attention`);
      return type;
    });
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
      ...(c.linearAttention && {
        architecture: c.architecture, layer_types: c.layerTypes, linear_num_key_heads: c.linearAttention.numKeyHeads,
        linear_num_value_heads: c.linearAttention.numValueHeads, linear_key_head_dim: c.linearAttention.keyHeadDim,
        linear_value_head_dim: c.linearAttention.valueHeadDim, linear_conv_kernel_dim: c.linearAttention.convKernelDim,
        partial_rotary_factor: c.partialRotaryFactor,
      }),
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
