// GRPOConfig: TRL's GRPOConfig/TrainingArguments keys with TRL's defaults (specs/grpo-semantics.md §12),
// plus webgrpo's own keys (LoRA, SFT warm-up, checkpoints). One table drives the defaults, the
// validation, the `--TRLNAME value` flags (split by the CLI's util.parseArgs, coerced here) and the
// one-line help the UI shows, so they never drift.

import type { LoraTarget, VisionLoraTarget } from '../engine/types.ts';
import { VISION_LORA_TARGETS } from '../model/qwen3_5-vision-tensors.ts';
import { QWEN3_5_LINEARS } from '../model/qwen3-tensors.ts';

export type LossType = 'dapo' | 'grpo' | 'bnpo' | 'dr_grpo';
export type ScaleRewards = 'group' | 'batch' | 'none';
export type Aggregation = 'sum_then_normalize' | 'normalize_then_sum';
export type SamplingLevel = 'token' | 'sequence';
export type SchedulerType = 'linear' | 'constant' | 'cosine' | 'constant_with_warmup';
export type TrainMode = 'lora' | 'full';
export type RolloutSchedulerName = 'lockstep' | 'continuous';
export type EvalStrategy = 'no' | 'steps';

export interface GRPOConfig {
  // --- batch shape (TRL) ---
  num_generations: number;
  per_device_train_batch_size: number;
  gradient_accumulation_steps: number;
  steps_per_generation: number | null;
  generation_batch_size: number | null;
  num_iterations: number;
  // --- sampling (TRL) ---
  max_completion_length: number;
  max_tool_calling_iterations: number | null;
  temperature: number;
  top_p: number;
  top_k: number;
  min_p: number | null;
  repetition_penalty: number;
  chat_template_kwargs: Record<string, unknown> | null;
  // --- optimizer and schedule (TrainingArguments) ---
  learning_rate: number;
  lr_scheduler_type: SchedulerType;
  warmup_steps: number;
  warmup_ratio: number;
  weight_decay: number;
  max_grad_norm: number;
  adam_beta1: number;
  adam_beta2: number;
  adam_epsilon: number;
  num_train_epochs: number;
  max_steps: number;
  // --- loss (TRL) ---
  loss_type: LossType;
  beta: number;
  epsilon: number;
  epsilon_high: number | null;
  delta: number | null;
  scale_rewards: ScaleRewards;
  multi_objective_aggregation: Aggregation;
  reward_weights: number[] | null;
  importance_sampling_level: SamplingLevel;
  mask_truncated_completions: boolean;
  top_entropy_quantile: number;
  entropy_coef: number;
  use_bias_correction_kl: boolean;
  // --- logging and checkpoints ---
  log_completions: boolean;
  logging_steps: number;
  save_steps: number;
  // --- evaluation on the held-out split (TRL) ---
  eval_strategy: EvalStrategy;
  eval_steps: number | null;
  eval_on_start: boolean;
  num_generations_eval: number | null;
  per_device_eval_batch_size: number;
  output_dir: string | null;
  seed: number;
  // --- webgrpo's own keys ---
  train_mode: TrainMode;
  lora_r: number;
  lora_alpha: number;
  lora_target_modules: LoraTarget[];
  /** Qwen3.5 VL: the vision tower's linears to adapt too (PEFT target_modules suffixes); [] = the tower stays frozen. */
  vision_lora_target_modules: VisionLoraTarget[];
  /** Qwen3.5 VL, train_mode full: keep the vision tower's weights fixed (saves its gradients and AdamW moments); false = trained, as TRL's full fine-tuning. */
  freeze_vision_tower: boolean;
  sft_steps: number;
  sft_learning_rate: number;
  sft_batch_size: number;
  // --- rollouts (webgrpo) ---
  rollout_scheduler: RolloutSchedulerName;
  episode_timeout_s: number | null;
  env_call_timeout_s: number | null;
  max_concurrent_envs: number | null;
  mask_stubborn_steps: boolean;
  stubborn_threshold: number;
  max_context_images: number | null;
}

type Kind = 'int' | 'number' | 'bool' | 'string' | 'json';

interface KeySpec {
  kind: Kind;
  nullable?: boolean;
  /** Allowed values for enum-like string keys. */
  choices?: readonly string[];
  /** Inclusive lower bound for numbers. */
  min?: number;
  /** Exclusive lower bound for numbers. */
  gt?: number;
  max?: number;
  help: string;
}

/** The default targets: every linear of Qwen3 (in Qwen3.5, the attention layers' and every MLP). */
const DEFAULT_LORA_TARGETS: readonly LoraTarget[] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];
/**
 * Names a config may list: every linear of either model, as PEFT/TRL users write them (Qwen3.5's
 * DeltaNet in_proj_qkv/in_proj_z/in_proj_b/in_proj_a/out_proj included). A target is adapted in the
 * layers that have it; one the loaded model has nowhere is refused when training starts.
 */
const LORA_TARGETS: readonly LoraTarget[] = QWEN3_5_LINEARS;

export const DEFAULT_CONFIG: Readonly<GRPOConfig> = Object.freeze({
  num_generations: 8,
  per_device_train_batch_size: 8,
  gradient_accumulation_steps: 1,
  steps_per_generation: null,
  generation_batch_size: null,
  num_iterations: 1,
  max_completion_length: 512,
  max_tool_calling_iterations: null,
  temperature: 1.0,
  top_p: 1.0,
  top_k: 0,
  min_p: null,
  repetition_penalty: 1.0,
  chat_template_kwargs: null,
  learning_rate: 1e-6,
  lr_scheduler_type: 'linear',
  warmup_steps: 0,
  warmup_ratio: 0,
  weight_decay: 0,
  max_grad_norm: 1.0,
  adam_beta1: 0.9,
  adam_beta2: 0.999,
  adam_epsilon: 1e-8,
  num_train_epochs: 3,
  max_steps: -1,
  loss_type: 'dapo',
  beta: 0,
  epsilon: 0.2,
  epsilon_high: null,
  delta: null,
  scale_rewards: 'group',
  multi_objective_aggregation: 'sum_then_normalize',
  reward_weights: null,
  importance_sampling_level: 'token',
  mask_truncated_completions: false,
  top_entropy_quantile: 1.0,
  entropy_coef: 0,
  use_bias_correction_kl: false,
  log_completions: false,
  logging_steps: 10,
  save_steps: 500,
  eval_strategy: 'no',
  eval_steps: null,
  eval_on_start: false,
  num_generations_eval: null,
  per_device_eval_batch_size: 8,
  output_dir: null,
  seed: 42,
  train_mode: 'lora',
  lora_r: 16,
  lora_alpha: 32,
  lora_target_modules: [...DEFAULT_LORA_TARGETS],
  vision_lora_target_modules: [],
  freeze_vision_tower: false,
  sft_steps: 0,
  sft_learning_rate: 1e-3,
  sft_batch_size: 8,
  rollout_scheduler: 'continuous',
  episode_timeout_s: null,
  env_call_timeout_s: null,
  max_concurrent_envs: null,
  mask_stubborn_steps: false,
  stubborn_threshold: 2,
  max_context_images: 2,
});

export const CONFIG_KEYS: Readonly<Record<keyof GRPOConfig, KeySpec>> = {
  num_generations: { kind: 'int', min: 2, help: 'completions sampled per prompt (the group size G)' },
  per_device_train_batch_size: { kind: 'int', min: 1, help: 'completions per micro-batch (one backward call)' },
  gradient_accumulation_steps: { kind: 'int', min: 1, help: 'micro-batches accumulated into one optimizer step' },
  steps_per_generation: { kind: 'int', min: 1, nullable: true, help: 'micro-batches per generation batch (null = gradient_accumulation_steps)' },
  generation_batch_size: { kind: 'int', min: 1, nullable: true, help: 'completions generated at once (null = per_device_train_batch_size × steps_per_generation)' },
  num_iterations: { kind: 'int', min: 1, help: 'optimization passes over each generation batch (>1 keeps old log-probs: real ratios)' },
  max_completion_length: { kind: 'int', min: 1, help: 'token budget of a whole episode: all model tokens plus all tool-result tokens' },
  max_tool_calling_iterations: { kind: 'int', min: 0, nullable: true, help: 'cap on tool-call rounds per episode (null = unbounded)' },
  temperature: { kind: 'number', gt: 0, help: 'sampling temperature (> 0); log-probs are scored at this temperature too' },
  top_p: { kind: 'number', gt: 0, max: 1, help: 'nucleus sampling mass (1.0 = off)' },
  top_k: { kind: 'int', min: 0, help: 'sample among the k most likely tokens (0 = off)' },
  min_p: { kind: 'number', min: 0, max: 1, nullable: true, help: 'min-p sampling (not supported by the WebGPU sampler: must stay null)' },
  repetition_penalty: { kind: 'number', gt: 0, help: 'repetition penalty (not supported by the WebGPU sampler: must stay 1.0)' },
  chat_template_kwargs: { kind: 'json', nullable: true, help: 'extra chat template variables, e.g. {"enable_thinking": false}' },
  learning_rate: { kind: 'number', min: 0, help: 'peak AdamW learning rate' },
  lr_scheduler_type: { kind: 'string', choices: ['linear', 'constant', 'cosine', 'constant_with_warmup'], help: 'learning-rate schedule after warmup' },
  warmup_steps: { kind: 'int', min: 0, help: 'linear warmup steps (overrides warmup_ratio when > 0)' },
  warmup_ratio: { kind: 'number', min: 0, max: 1, help: 'warmup as a fraction of the total optimizer steps' },
  weight_decay: { kind: 'number', min: 0, help: 'AdamW decoupled weight decay' },
  max_grad_norm: { kind: 'number', min: 0, help: 'global gradient-norm clip (0 = off)' },
  adam_beta1: { kind: 'number', min: 0, max: 1, help: 'AdamW β1' },
  adam_beta2: { kind: 'number', min: 0, max: 1, help: 'AdamW β2' },
  adam_epsilon: { kind: 'number', gt: 0, help: 'AdamW ε' },
  num_train_epochs: { kind: 'number', gt: 0, help: 'passes over the prompt dataset (ignored when max_steps > 0)' },
  max_steps: { kind: 'int', min: -1, help: 'total optimizer steps (-1 = from num_train_epochs)' },
  loss_type: { kind: 'string', choices: ['dapo', 'grpo', 'bnpo', 'dr_grpo'], help: 'loss normalization: dapo (tokens of the generation batch), grpo, bnpo, dr_grpo' },
  beta: { kind: 'number', min: 0, help: 'KL coefficient against the reference policy (0 = no reference pass)' },
  epsilon: { kind: 'number', min: 0, help: 'lower clip range of the importance ratio' },
  epsilon_high: { kind: 'number', min: 0, nullable: true, help: 'upper clip range (null = epsilon)' },
  delta: { kind: 'number', gt: 1, nullable: true, help: 'two-sided clipping: cap on the unclipped ratio (null = off)' },
  scale_rewards: { kind: 'string', choices: ['group', 'batch', 'none'], help: 'advantage scaling: group std, batch std, or none (true = group, false = none)' },
  multi_objective_aggregation: { kind: 'string', choices: ['sum_then_normalize', 'normalize_then_sum'], help: 'how several reward functions combine' },
  reward_weights: { kind: 'json', nullable: true, help: 'one weight per reward function (null = all 1)' },
  importance_sampling_level: { kind: 'string', choices: ['token', 'sequence'], help: 'importance ratio per token, or per sequence (GSPO)' },
  mask_truncated_completions: { kind: 'bool', help: 'exclude completions cut by the token budget from the loss' },
  top_entropy_quantile: { kind: 'number', gt: 0, max: 1, help: 'train only the top fraction of tokens by entropy (1.0 = all)' },
  entropy_coef: { kind: 'number', min: 0, help: 'entropy bonus coefficient: loss −= entropy_coef · mean token entropy' },
  use_bias_correction_kl: { kind: 'bool', help: 'multiply the KL term by the importance ratio' },
  log_completions: { kind: 'bool', help: 'attach every completion of a step (prompt, completion, rewards, advantage) to its log' },
  logging_steps: { kind: 'int', min: 1, help: 'log every N optimizer steps the metrics averaged over them (TRL); per-step metrics are still reported' },
  save_steps: { kind: 'int', min: 0, help: 'checkpoint every this many optimizer steps (0 = only at the end)' },
  eval_strategy: { kind: 'string', choices: ['no', 'steps'], help: 'evaluate on the held-out split: no, or every eval_steps optimizer steps (eval_* metrics, no gradient)' },
  eval_steps: { kind: 'int', min: 1, nullable: true, help: 'optimizer steps between evaluations (null = logging_steps)' },
  eval_on_start: { kind: 'bool', help: 'also evaluate before the first optimizer step (the starting policy)' },
  num_generations_eval: { kind: 'int', min: 1, nullable: true, help: 'episodes per held-out prompt in an evaluation (null = num_generations)' },
  per_device_eval_batch_size: { kind: 'int', min: 1, help: 'episodes decoded at once in an evaluation' },
  output_dir: { kind: 'string', nullable: true, help: 'folder for checkpoints and the final adapter' },
  seed: { kind: 'int', min: 0, help: 'seed of data order, sampling and LoRA init' },
  train_mode: { kind: 'string', choices: ['lora', 'full'], help: 'train LoRA adapters or every weight (small models only)' },
  lora_r: { kind: 'int', min: 1, help: 'LoRA rank' },
  lora_alpha: { kind: 'number', gt: 0, help: 'LoRA alpha (scale = alpha / r)' },
  lora_target_modules: { kind: 'json', help: `LoRA target linears among ${LORA_TARGETS.join(', ')}` },
  vision_lora_target_modules: { kind: 'json', help: `Qwen3.5 VL: also LoRA on the vision tower's linears among ${VISION_LORA_TARGETS.join(', ')} ([] = tower frozen)` },
  freeze_vision_tower: { kind: 'bool', help: 'Qwen3.5 VL, train_mode full: keep the vision tower frozen (less memory: no gradients or AdamW moments for it); false = trained too, as TRL does' },
  sft_steps: { kind: 'int', min: 0, help: 'SFT warm-up optimizer steps on transcripts before GRPO' },
  sft_learning_rate: { kind: 'number', min: 0, help: 'constant learning rate of the SFT warm-up' },
  sft_batch_size: { kind: 'int', min: 1, help: 'transcripts per SFT optimizer step' },
  rollout_scheduler: { kind: 'string', choices: ['lockstep', 'continuous'], help: 'continuous: each episode rejoins the next decode step when its env reply arrives; lockstep: every turn waits for all env replies (same tokens)' },
  episode_timeout_s: { kind: 'number', gt: 0, nullable: true, help: 'wall-clock cap of one episode after its reset; past it the episode is closed as unscorable (null = none)' },
  env_call_timeout_s: { kind: 'number', gt: 0, nullable: true, help: 'cap on one env call (reset or one turn of tool calls); past it the episode is closed as unscorable (null = none)' },
  max_concurrent_envs: { kind: 'int', min: 1, nullable: true, help: "most env sessions open at once, for a server capped below the decode slots (OpenEnv's MAX_CONCURRENT_ENVS); episodes play this many at a time (null = as many as decode slots)" },
  mask_stubborn_steps: { kind: 'bool', help: 'exclude turns that repeat a failing tool call more than stubborn_threshold times from the loss' },
  stubborn_threshold: { kind: 'int', min: 0, help: 'repeats of the same failing tool call allowed before its turns count as stubborn' },
  max_context_images: { kind: 'int', min: 0, nullable: true, help: "most images (screenshots) an episode's context holds; older ones are replaced by a short text marker (null = keep all)" },
};

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function isKey(key: string): key is keyof GRPOConfig {
  return Object.prototype.hasOwnProperty.call(CONFIG_KEYS, key);
}

/**
 * One key's value as a person types it — a CLI flag's text or a setup-form field — coerced to the key's
 * type and checked on its own: `null`/`None` for nullable keys, `true`/`false`/`1`/`0` for bools, JSON or
 * a bare comma list for lists. The one text parser of both front ends; throws a ConfigError naming the key.
 */
export function configValueFromText(key: keyof GRPOConfig, text: string): unknown {
  return coerce(key, text.trim(), true);
}

/** Coerces one value (from JSON or from a flag's text) to the key's type, or throws naming the key. */
function coerce(key: keyof GRPOConfig, value: unknown, fromText: boolean): unknown {
  const spec = CONFIG_KEYS[key];
  if (value === null || (fromText && (value === 'null' || value === 'None'))) {
    if (spec.nullable) return null;
    throw new ConfigError(`${key}: null is not allowed`);
  }
  // TRL accepts booleans for scale_rewards (true = "group", false = "none").
  if (key === 'scale_rewards' && (value === true || value === 'true' || value === 'True')) return 'group';
  if (key === 'scale_rewards' && (value === false || value === 'false' || value === 'False')) return 'none';
  switch (spec.kind) {
    case 'int':
    case 'number': {
      const n = typeof value === 'number' ? value : fromText && typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN;
      if (!Number.isFinite(n)) throw new ConfigError(`${key}: expected a number, got ${JSON.stringify(value)}`);
      if (spec.kind === 'int' && !Number.isInteger(n)) throw new ConfigError(`${key}: expected an integer, got ${n}`);
      if (spec.min !== undefined && n < spec.min) throw new ConfigError(`${key}: must be ≥ ${spec.min}, got ${n}`);
      if (spec.gt !== undefined && n <= spec.gt) throw new ConfigError(`${key}: must be > ${spec.gt}, got ${n}`);
      if (spec.max !== undefined && n > spec.max) throw new ConfigError(`${key}: must be ≤ ${spec.max}, got ${n}`);
      return n;
    }
    case 'bool': {
      if (typeof value === 'boolean') return value;
      if (fromText && (value === 'true' || value === 'True' || value === '1')) return true;
      if (fromText && (value === 'false' || value === 'False' || value === '0')) return false;
      throw new ConfigError(`${key}: expected true or false, got ${JSON.stringify(value)}`);
    }
    case 'string': {
      if (typeof value !== 'string') throw new ConfigError(`${key}: expected a string, got ${JSON.stringify(value)}`);
      if (spec.choices && !spec.choices.includes(value)) {
        throw new ConfigError(`${key}: must be one of ${spec.choices.join(', ')}, got '${value}'`);
      }
      return value;
    }
    case 'json': {
      let parsed = value;
      if (fromText && typeof value === 'string') {
        try {
          parsed = JSON.parse(value);
        } catch (err) {
          // A bare comma list is friendlier on a command line: `--lora_target_modules q_proj,v_proj`.
          if (key !== 'lora_target_modules' && key !== 'vision_lora_target_modules' && key !== 'reward_weights') {
            throw new ConfigError(`${key}: not valid JSON (${(err as Error).message})`);
          }
          const items = value.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
          parsed = key === 'reward_weights' ? items.map(Number) : items;
        }
      }
      return checkJson(key, parsed);
    }
  }
}

function checkJson(key: keyof GRPOConfig, value: unknown): unknown {
  if (key === 'reward_weights') {
    if (!Array.isArray(value) || value.some((w) => typeof w !== 'number' || !Number.isFinite(w))) {
      throw new ConfigError(`reward_weights: expected a list of numbers, got ${JSON.stringify(value)}`);
    }
    return value;
  }
  if (key === 'lora_target_modules') {
    if (!Array.isArray(value) || value.length === 0) throw new ConfigError(`lora_target_modules: expected a non-empty list, got ${JSON.stringify(value)}`);
    for (const m of value) {
      if (!LORA_TARGETS.includes(m as LoraTarget)) {
        throw new ConfigError(`lora_target_modules: unknown module '${String(m)}' (choose among ${LORA_TARGETS.join(', ')})`);
      }
    }
    return value;
  }
  if (key === 'vision_lora_target_modules') {
    if (!Array.isArray(value)) throw new ConfigError(`vision_lora_target_modules: expected a list, got ${JSON.stringify(value)}`);
    for (const m of value) {
      if (!VISION_LORA_TARGETS.includes(m as VisionLoraTarget)) {
        throw new ConfigError(`vision_lora_target_modules: unknown module '${String(m)}' (choose among ${VISION_LORA_TARGETS.join(', ')})`);
      }
    }
    if (new Set(value).size !== value.length) throw new ConfigError(`vision_lora_target_modules: lists a module twice: ${value.join(', ')}`);
    return value;
  }
  if (key === 'chat_template_kwargs') {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ConfigError(`chat_template_kwargs: expected a JSON object, got ${JSON.stringify(value)}`);
    }
    return value;
  }
  return value;
}

/** Checks the relations between keys (batch divisibility, unsupported sampling options). */
export function validateConfig(c: GRPOConfig): void {
  const genBatch = generationBatchSize(c);
  if (c.steps_per_generation !== null && c.generation_batch_size !== null) {
    throw new ConfigError('steps_per_generation and generation_batch_size cannot both be set');
  }
  if (genBatch % c.num_generations !== 0) {
    throw new ConfigError(`generation_batch_size (${genBatch}) must be divisible by num_generations (${c.num_generations})`);
  }
  if (genBatch % c.per_device_train_batch_size !== 0) {
    throw new ConfigError(`generation_batch_size (${genBatch}) must be divisible by per_device_train_batch_size (${c.per_device_train_batch_size})`);
  }
  if (((genBatch / c.per_device_train_batch_size) * c.num_iterations) % c.gradient_accumulation_steps !== 0) {
    throw new ConfigError(
      `the micro-batches of a generation (${genBatch / c.per_device_train_batch_size} × num_iterations ${c.num_iterations}) must fill whole optimizer steps of gradient_accumulation_steps (${c.gradient_accumulation_steps})`,
    );
  }
  if (c.min_p !== null) throw new ConfigError('min_p: the WebGPU sampler supports temperature, top_p and top_k only; leave min_p null');
  if (c.repetition_penalty !== 1) throw new ConfigError('repetition_penalty: the WebGPU sampler does not apply a repetition penalty; leave it at 1.0');
  if (c.reward_weights !== null && c.reward_weights.length === 0) throw new ConfigError('reward_weights: must not be empty');
  if (c.epsilon >= 1) throw new ConfigError(`epsilon: must be < 1 (the lower clip bound is 1 − epsilon), got ${c.epsilon}`);
}

/** Completions per generation batch (TRL: per_device × processes × steps_per_generation, one process here). */
export function generationBatchSize(c: GRPOConfig): number {
  if (c.generation_batch_size !== null) return c.generation_batch_size;
  return c.per_device_train_batch_size * (c.steps_per_generation ?? c.gradient_accumulation_steps);
}

/** Micro-batches per generation batch. */
export function stepsPerGeneration(c: GRPOConfig): number {
  return generationBatchSize(c) / c.per_device_train_batch_size;
}

/** Builds a config from defaults + a JSON object (e.g. run.json); unknown keys are errors. */
export function configFromObject(obj: Record<string, unknown>, base: GRPOConfig = { ...DEFAULT_CONFIG, lora_target_modules: [...DEFAULT_CONFIG.lora_target_modules] }): GRPOConfig {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new ConfigError('config: expected a JSON object');
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(obj)) {
    if (!isKey(key)) throw new ConfigError(`unknown config key '${key}'${suggest(key)}`);
    out[key] = coerce(key, value, false);
  }
  const config = out as unknown as GRPOConfig;
  validateConfig(config);
  return config;
}

/** Parses a config JSON text (a run.json file). */
export function configFromJson(text: string, base?: GRPOConfig): GRPOConfig {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config: not valid JSON (${(err as Error).message})`);
  }
  return configFromObject(obj as Record<string, unknown>, base);
}

/**
 * Applies flag values (`--TRLNAME value`, already split by the CLI's parser) over `base`: each text is
 * coerced to its key's type (`null`/`None` for nullable keys, `true`/`false` for bools, a comma list
 * for lists), then the whole config is validated.
 */
export function configFromText(values: Readonly<Record<string, string>>, base: GRPOConfig): GRPOConfig {
  const out: Record<string, unknown> = { ...base };
  for (const [key, text] of Object.entries(values)) {
    if (!isKey(key)) throw new ConfigError(`unknown config key '${key}'${suggest(key)}`);
    out[key] = configValueFromText(key, text);
  }
  const config = out as unknown as GRPOConfig;
  validateConfig(config);
  return config;
}

/** The bool keys: as flags they may stand alone (`--log_completions`). */
export const BOOL_KEYS: ReadonlySet<string> = new Set(Object.keys(CONFIG_KEYS).filter((k) => CONFIG_KEYS[k as keyof GRPOConfig].kind === 'bool'));

/** Where a key's value came from, for `train --help` (absent: TRL's default). */
export type ConfigSources = Partial<Record<keyof GRPOConfig, string>>;

/**
 * One line per key: `--name <kind> (default …)  help`, for `train --help` and the UI. With `applied`,
 * each line shows the value that would apply instead and where it came from (TRL's default when it differs).
 */
export function configHelp(applied?: { config: GRPOConfig; from: ConfigSources }): string {
  return (Object.keys(CONFIG_KEYS) as (keyof GRPOConfig)[])
    .map((key) => {
      const spec = CONFIG_KEYS[key];
      const kind = spec.choices ? spec.choices.join('|') : spec.kind;
      const dflt = JSON.stringify(DEFAULT_CONFIG[key]);
      if (!applied) return `  --${key} ${kind} (default ${dflt})  ${spec.help}`;
      const value = JSON.stringify(applied.config[key]);
      const from = applied.from[key];
      const origin = from === undefined ? 'TRL default' : value === dflt ? `${from}, = TRL default` : `${from}; TRL default ${dflt}`;
      return `  --${key} ${kind} = ${value} (${origin})  ${spec.help}`;
    })
    .join('\n');
}

function suggest(key: string): string {
  const known = Object.keys(CONFIG_KEYS);
  const close = known.find((k) => k.replace(/_/g, '') === key.replace(/[_-]/g, '').toLowerCase());
  return close ? ` (did you mean '${close}'?)` : '';
}
