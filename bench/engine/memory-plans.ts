// `webgrpo bench memory`: the memory plan (src/engine/memory-plan.ts planMemory, the plan the engine checks
// before allocating) at the named real shapes, no GPU and no weights: item by item for Qwen3-0.6B and
// Qwen3.5-0.8B (f32 and f16 KV cache), the seeds' run (LoRA on Qwen3.5-2B with a screenshot per prompt at
// TRL's num_generations = 4, max_completion_length = 1024), and for 8, 12, 16 and 24 GiB GPUs under each
// adapter's binding and buffer limits the longest completion that fits at each num_generations.
// Options: --r (LoRA rank, default 16), --patches (image patches per pass, default one 512×512
// screenshot: 1024), --prompt (prompt tokens, default the app's planned 1024).
import { parseConfig } from '../../src/model/config.ts';
import type { ModelConfig } from '../../src/model/types.ts';
import { backwardBufferPlan, DEFAULT_IMAGE_PATCHES, kvBytesPerToken, planMemory, towerPlan, type GpuDtype, type MemoryPlan } from '../../src/engine/memory-plan.ts';
import { modelLinears } from '../../src/model/qwen3-tensors.ts';
import { PLANNED_PROMPT_TOKENS } from '../../src/rl/run-limits.ts';
import { num, SHAPES } from './common.ts';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;

/** The adapters' limits the plans are checked under: WebGPU's defaults (what lavapipe-like adapters give) and 1 GiB bindings (SwiftShader; GPUs that raise the limit). */
export const ADAPTER_LIMITS = {
  '128 MiB bindings, 256 MiB buffers': { maxStorageBufferBindingSize: 128 * MiB, maxBufferSize: 256 * MiB },
  '1 GiB bindings': { maxStorageBufferBindingSize: GiB, maxBufferSize: GiB },
} as const;

/** A named shape preset (common.ts SHAPES) as the ModelConfig transformers' config.json would give, its vision tower included when the preset has one. */
export function shapeConfig(name: string): ModelConfig {
  const s = SHAPES[name];
  if (!s) throw new Error(`bench memory: unknown shape ${name}`);
  const n = (k: string) => Number(s[k]);
  const text = {
    hidden_size: n('hidden'), num_hidden_layers: n('layers'), num_attention_heads: n('heads'), num_key_value_heads: n('kvHeads'), head_dim: n('headDim'),
    intermediate_size: n('intermediate'), vocab_size: n('vocab'), rms_norm_eps: 1e-6, tie_word_embeddings: true, max_position_embeddings: 262144,
  };
  if (s.arch !== 'qwen3_5') return parseConfig({ architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', rope_theta: 1e6, ...text });
  const every = n('fullAttentionInterval');
  const textConfig = {
    ...text, model_type: 'qwen3_5_text', attn_output_gate: true, linear_conv_kernel_dim: 4,
    linear_num_key_heads: n('linearKeyHeads'), linear_num_value_heads: n('linearValueHeads'), linear_key_head_dim: n('linearKeyHeadDim'), linear_value_head_dim: n('linearValueHeadDim'),
    layer_types: Array.from({ length: n('layers') }, (_, i) => ((i + 1) % every === 0 ? 'full_attention' : 'linear_attention')),
    rope_parameters: { mrope_interleaved: true, mrope_section: [11, 11, 10], rope_type: 'default', rope_theta: 10000000, partial_rotary_factor: 0.25 },
  };
  const vision = s.visionDepth ? {
    depth: n('visionDepth'), hidden_size: n('visionHidden'), intermediate_size: n('visionIntermediate'), num_heads: n('visionHeads'),
    num_position_embeddings: n('visionPositions'), out_hidden_size: n('hidden'), model_type: 'qwen3_5',
  } : undefined;
  if (!vision) return parseConfig({ architectures: ['Qwen3_5ForCausalLM'], ...textConfig });
  return parseConfig({
    architectures: ['Qwen3_5ForConditionalGeneration'], model_type: 'qwen3_5', tie_word_embeddings: true, image_token_id: 248056, text_config: textConfig, vision_config: vision,
  });
}

interface PlanArgs { config: ModelConfig; r: number; sequences: number; tokens: number; kvDtype: GpuDtype; limits: { maxStorageBufferBindingSize: number; maxBufferSize: number; budgetBytes?: number }; patches?: number }

function plan(a: PlanArgs): MemoryPlan {
  return planMemory({
    config: a.config, weightDtype: 'f16', kvDtype: a.kvDtype, mode: { kind: 'lora', r: a.r, targets: modelLinears(a.config) },
    numSequences: a.sequences, maxTokensPerSequence: a.tokens, limits: a.limits, ...(a.patches ? towerPlan(a.config, a.patches) : {}),
  });
}

const gib = (b: number) => +(b / GiB).toFixed(2);
const itemsOf = (p: MemoryPlan) => Object.fromEntries([...p.items.map((i) => [i.name, gib(i.bytes)] as const), ['total', gib(p.totalBytes)]]);

/**
 * Whether one sequence's backward call (per_device_train_batch_size = 1, the least the trainer can do) and
 * one layer's KV cache for `g` sequences fit the adapter's binding and buffer limits (backward.ts and
 * kv-cache.ts keep each in one buffer; src/rl/run-limits.ts checks the same for a run's config).
 */
function fitsBindings(a: PlanArgs): boolean {
  const limit = Math.min(a.limits.maxStorageBufferBindingSize, a.limits.maxBufferSize);
  const backward = [...backwardBufferPlan(a.config, [a.tokens], a.tokens - 1, a.r, limit).values()];
  const layers = a.config.layerTypes.filter((t) => t === 'full_attention').length;
  const kvLayer = (a.sequences * a.tokens * kvBytesPerToken(a.config, a.kvDtype)) / layers / 2;
  return backward.every((b) => b <= limit) && kvLayer <= limit;
}

/** Longest completion (a multiple of 64 tokens, ≤ 32768) after `prompt` tokens whose plan fits the budget and the limits at `g` sequences; 0 when none. */
function longestCompletion(base: Omit<PlanArgs, 'sequences' | 'tokens'>, g: number, prompt: number): number {
  const fits = (c: number) => {
    const a = { ...base, sequences: g, tokens: prompt + c };
    return plan(a).fits && fitsBindings(a);
  };
  let lo = 0;
  let hi = 32768 / 64 + 1;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid * 64)) lo = mid;
    else hi = mid;
  }
  return lo * 64;
}

export async function benchMemoryPlans(opts: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const r = num(opts, 'r', 16);
  const patches = num(opts, 'patches', DEFAULT_IMAGE_PATCHES);
  const prompt = num(opts, 'prompt', PLANNED_PROMPT_TOKENS);
  const limits = ADAPTER_LIMITS['128 MiB bindings, 256 MiB buffers'];
  // The earlier plans' workload (BENCHMARKS.md): G = 8 × 1024 tokens, text only, f32 and f16 KV cache.
  const reference: Record<string, unknown> = {};
  for (const name of ['qwen3-0.6b', 'qwen3.5-0.8b'] as const) {
    const config = shapeConfig(name);
    for (const kvDtype of ['f32', 'f16'] as const) reference[`${name} kv ${kvDtype}`] = itemsOf(plan({ config, r, sequences: 8, tokens: 1024, kvDtype, limits }));
  }
  // The seeds' run: TRL's BrowserGym example on Qwen3.5-2B, a screenshot per prompt encoded by the tower.
  const seeds = shapeConfig('qwen3.5-2b');
  const seedsRun: Record<string, unknown> = {};
  for (const kvDtype of ['f32', 'f16'] as const) seedsRun[`kv ${kvDtype}`] = itemsOf(plan({ config: seeds, r, sequences: 4, tokens: prompt + 1024, kvDtype, limits, patches }));
  const fitsWhere: Record<string, unknown> = {};
  for (const [adapter, lim] of Object.entries(ADAPTER_LIMITS)) {
    for (const gpuGiB of [8, 12, 16, 24]) {
      const base = { config: seeds, r, kvDtype: 'f16' as const, limits: { ...lim, budgetBytes: gpuGiB * GiB }, patches };
      fitsWhere[`${gpuGiB} GiB, ${adapter}`] = Object.fromEntries([1, 2, 4, 8, 16].map((g) => [`G=${g}`, longestCompletion(base, g, prompt)]));
    }
  }
  return {
    lora: `r = ${r} on every linear of the text model, f16 base weights, frozen vision tower`,
    reference: { workload: 'G = 8 × 1024 tokens, text only, 128 MiB bindings', gib: reference },
    seedsRun: { workload: `Qwen3.5-2B, G = 4 × (${prompt} prompt + 1024 completion) tokens, ${patches} image patches per pass, 128 MiB bindings`, gib: seedsRun },
    longestCompletion: {
      workload: `Qwen3.5-2B, ${prompt} prompt tokens, ${patches} image patches, f16 KV cache; completion tokens (multiple of 64) that fit at each num_generations: the plan's total (one backward call over all G sequences) within the GPU, one sequence's backward buffers and one layer's KV within the limits`,
      byGpu: fitsWhere,
    },
  };
}
