// Whether a run's config fits the GPU adapter's limits on a given model, field by field: the setup
// page shows each error beside the field to lower (and keeps Start disabled), and the `train` CLI
// refuses the config before any weight is uploaded. Pure: config + model config + adapter limits.
//
// What is checked is what the engine really allocates as ONE buffer (a binding it cannot split):
//   - a sequence's positions: the prompt budget plus max_completion_length within the model's
//     max_position_embeddings (RoPE was trained that far);
//   - the KV cache of one layer (kv-cache.ts): every sequence of a generation batch decodes at once,
//     each with room for the whole sequence, in one buffer per layer;
//   - the decode logits (generate.ts): (sequences, vocab) f32 in one buffer;
//   - every buffer of one backward call (backwardBufferPlan), over one micro-batch of
//     per_device_train_batch_size sequences;
//   - and, when the memory is known (a software adapter's is the machine's RAM), the memory plan's
//     total against it (a vision-language model's tower included).
// An error names the buffer, its size and the limit, and the largest value of the field that fits.

import { backwardBufferPlan, DEFAULT_IMAGE_PATCHES, formatBytes, kvBytesPerToken, planMemory, towerPlan, type GpuDtype, type TrainingMode } from '../engine/memory-plan.ts';
import { bindingLimit } from '../engine/params.ts';
import type { ModelConfig } from '../model/types.ts';
import { generationBatchSize, type GRPOConfig } from './config.ts';

/** Prompt tokens budgeted per sequence in a run's memory plan (the example prompts plus tool schemas fit). */
export const PLANNED_PROMPT_TOKENS = 1024;

export interface AdapterLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
  /** Memory the run may use in all, when known (WebGPU does not report a GPU's; a software adapter's is RAM). */
  budgetBytes?: number;
}

/** The model a run trains: its config and how its weights sit on the GPU. */
export interface PlannedModel {
  config: ModelConfig;
  weightDtype: GpuDtype;
}

/**
 * The workload a run's memory plan is checked for (engine `plan`, the setup page's plan): one
 * generation batch of sequences, each a budgeted prompt plus a full completion. Its numSequences is
 * the rollouts' decode-slot cap (GrpoOptions.maxBatchSize): no engine batch holds more sequences.
 */
export function plannedWorkload(c: GRPOConfig): { numSequences: number; maxTokensPerSequence: number; mode: TrainingMode } {
  return {
    numSequences: generationBatchSize(c),
    maxTokensPerSequence: PLANNED_PROMPT_TOKENS + c.max_completion_length,
    mode: c.train_mode === 'full' ? { kind: 'full', ...(c.freeze_vision_tower ? { freezeVisionTower: true } : {}) } : { kind: 'lora', r: c.lora_r, targets: c.lora_target_modules, ...(c.vision_lora_target_modules?.length ? { visionTargets: c.vision_lora_target_modules } : {}) },
  };
}

/** Field → why the adapter (or the model) cannot hold the config, and what to lower it to. */
export type RunLimitErrors = Partial<Record<keyof GRPOConfig, string>>;

interface Overflow {
  what: string;
  bytes: number;
  /** e.g. "this adapter's 1 GiB buffer limit" */
  limit: string;
}

/** The first buffer (or the total) that does not fit, for `sequences` decoding at once and `micro` per backward call of `tokens` each. */
function overflow(planned: PlannedModel, mode: TrainingMode, limits: AdapterLimits, sequences: number, micro: number, tokens: number): Overflow | null {
  const model = planned.config;
  const loraR = mode.kind === 'lora' ? mode.r : 0;
  // kv-cache.ts and params.ts keep one binding below bindingLimit; scratch and backward buffers below both limits.
  const kvLimit = bindingLimit(limits);
  const bufferLimit = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  // One layer's row: kvBytesPerToken counts the attention layers only (Qwen3.5's others keep a state).
  const attentionLayers = model.layerTypes.filter((t) => t === 'full_attention').length;
  const kvRow = attentionLayers > 0 ? kvBytesPerToken(model, 'f32') / attentionLayers / 2 : 0;
  const kv = sequences * tokens * kvRow;
  if (kv > kvLimit) return { what: `the KV cache of one layer (${sequences} sequences × ${tokens} tokens × ${kvRow} B)`, bytes: kv, limit: `this adapter's ${formatBytes(kvLimit)} buffer limit` };
  const logits = sequences * model.vocabSize * 4;
  if (logits > bufferLimit) return { what: `the decode logits (${sequences} sequences × ${model.vocabSize} vocabulary × 4 B)`, bytes: logits, limit: `this adapter's ${formatBytes(bufferLimit)} buffer limit` };
  // The tower's backward buffers too when it is trained (LoRA on it, or full fine-tuning without freeze_vision_tower).
  const towerTrained = model.vision && (mode.kind === 'full' ? !mode.freezeVisionTower : (mode.visionTargets?.length ?? 0) > 0);
  const tower = towerTrained && model.vision ? { config: model.vision, patches: DEFAULT_IMAGE_PATCHES, full: mode.kind === 'full' } : undefined;
  for (const [role, bytes] of backwardBufferPlan(model, Array<number>(micro).fill(tokens), micro * (tokens - 1), loraR, bufferLimit, tower)) {
    if (bytes > bufferLimit) return { what: `the backward '${role}' buffer (${micro} sequences × ${tokens} tokens)`, bytes, limit: `this adapter's ${formatBytes(bufferLimit)} buffer limit` };
  }
  if (limits.budgetBytes !== undefined) {
    // A vision-language checkpoint trains with its tower loaded (CLI and app): its weights and activations count.
    const plan = planMemory({ config: model, weightDtype: planned.weightDtype, mode, numSequences: sequences, maxTokensPerSequence: tokens, limits, ...towerPlan(model) });
    if (plan.totalBytes > limits.budgetBytes) return { what: `the run's memory plan (${sequences} sequences × ${tokens} tokens)`, bytes: plan.totalBytes, limit: `the ${formatBytes(limits.budgetBytes)} of memory available` };
  }
  return null;
}

/** Largest n in [1, hi) with fits(n), or 0 when none (fits is monotone: smaller never overflows more). */
function largestFitting(hi: number, fits: (n: number) => boolean): number {
  let lo = 0;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** Every field of `c` the adapter's limits (or the model's positions) cannot hold on `model`; {} when the run fits. */
export function runLimitErrors(c: GRPOConfig, planned: PlannedModel, limits: AdapterLimits): RunLimitErrors {
  const errors: RunLimitErrors = {};
  const model = planned.config;
  const { mode } = plannedWorkload(c);
  const over = (sequences: number, micro: number, tokens: number) => overflow(planned, mode, limits, sequences, micro, tokens);
  const tokens = PLANNED_PROMPT_TOKENS + c.max_completion_length;
  if (tokens > model.maxPositionEmbeddings) {
    errors.max_completion_length = `the prompt budget (${PLANNED_PROMPT_TOKENS} tokens) + max_completion_length = ${tokens} tokens, beyond the model's max_position_embeddings (${model.maxPositionEmbeddings}): lower max_completion_length to ≤ ${model.maxPositionEmbeddings - PLANNED_PROMPT_TOKENS}`;
    return errors;
  }
  const sequences = generationBatchSize(c);
  const micro = c.per_device_train_batch_size;
  const found = over(sequences, micro, tokens);
  if (!found) return errors;
  const says = `${found.what} needs ${formatBytes(found.bytes)}, over ${found.limit}`;
  // Shorter sequences always help; fewer sequences help unless one alone is already too long.
  const oneFits = over(1, 1, tokens) === null;
  if (!oneFits) {
    const mcl = largestFitting(c.max_completion_length, (m) => over(1, 1, PLANNED_PROMPT_TOKENS + m) === null);
    // Not even the shortest sequence fits: the model itself (its weights, fully trained) is too big.
    if (mcl === 0 && c.train_mode === 'full') errors.train_mode = `${says}, even for one short sequence: train a LoRA adapter instead of every weight${model.vision && !c.freeze_vision_tower ? ' (or keep the vision tower frozen: freeze_vision_tower true)' : ''}`;
    else errors.max_completion_length = `${says}, even for one sequence: lower max_completion_length${mcl > 0 ? ` to ≤ ${mcl}` : ''}`;
    return errors;
  }
  // The generation batch is per_device_train_batch_size × steps_per_generation unless set outright.
  const batchField: keyof GRPOConfig = c.generation_batch_size !== null ? 'generation_batch_size' : 'per_device_train_batch_size';
  const ratio = sequences / micro;
  const fitting = c.generation_batch_size !== null
    ? largestFitting(sequences, (n) => over(n, Math.min(micro, n), tokens) === null)
    : largestFitting(micro, (b) => over(b * ratio, b, tokens) === null);
  errors[batchField] = `${says}: lower ${batchField}${fitting > 0 ? ` to ≤ ${fitting}` : ''} (with num_generations dividing it), or max_completion_length`;
  // A generation batch holds whole groups: when not even one group fits, num_generations is the field to lower.
  const groupsFit = c.generation_batch_size !== null ? fitting : fitting * ratio;
  if (groupsFit < c.num_generations) errors.num_generations = `${says}: not even one group of ${c.num_generations} completions fits; lower num_generations to ≤ ${Math.max(1, groupsFit)}, or max_completion_length`;
  return errors;
}

/** The errors as one message for the CLI: "field: reason; field: reason". */
export function runLimitMessage(errors: RunLimitErrors): string | null {
  const parts = Object.entries(errors).map(([k, v]) => `${k}: ${v}`);
  return parts.length ? `this config does not fit the GPU adapter: ${parts.join('; ')}` : null;
}
