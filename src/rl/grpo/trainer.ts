// The GRPO loop (specs/grpo-semantics.md §0): rows → G adjacent repeats → rollouts → rewards →
// group advantages → (old / reference log-probs) → per micro-batch: score, loss, backward(dL/dlogp)
// → AdamW step with the scheduled lr → one metrics event per optimizer step. One step reads top to
// bottom as collectGeneration → optimizeGeneration → stepEvent. The engine does the tensor work;
// everything here is bookkeeping on small CPU arrays.

import { cutByStop } from '../../engine/stoppable.ts';
import type { Engine, NamedTensor, ScoreImages, ScoreSequence } from '../../engine/types.ts';
import { groupAdvantages, normalizeThenSumAdvantages } from './advantages.ts';
import { serializeTrainerState, type TrainerState, type TrainerCounters } from './trainer-state.ts';
import { generationBatchSize, stepsPerGeneration, validateConfig, type GRPOConfig } from '../config.ts';
import type { DatasetRow } from '../rollout/env.ts';
import type { PlacedImage } from '../rollout/image-tokens.ts';
import { computeLoss, lossOptionsFromConfig, type LossMetrics, type LossSequence } from './losses.ts';
import { invalidToolsOf, stepMetrics, stepWarnings, type CompletionSample, type InvalidTools, type Metrics, type RolloutStats } from './metrics.ts';
import { hashInts, permutation, Purpose } from '../seeds.ts';
import { rewardWeights, rolloutRewards, weightedRewardSum, type RewardFunction, type RewardMessage } from './rewards.ts';
import { learningRateAt, warmupSteps, type Schedule } from './schedule.ts';
import { MetricsWindow } from './logging.ts';

/** What the trainer needs from one finished rollout (the rollout loop's output, §7–§8). */
export interface TrainerRollout {
  promptIds: readonly number[];
  completionIds: readonly number[];
  /** One per completion token: 0 on tool-result suffix tokens, 1 on sampled tokens. */
  toolMask: readonly number[];
  truncated: boolean;
  /** The prompt after reset() folded the observation in. */
  prompt: readonly RewardMessage[];
  /** [assistant, tool…, assistant, …]. */
  completion: readonly RewardMessage[];
  /** The env instance the rollout ran on (reward functions read its final state). */
  env: unknown;
  toolCalls: number;
  toolFailures: number;
  /** Calls that never reached the env, the names called that no tool has, and the env's tools (rollout.ts). */
  invalidToolCalls?: number;
  unknownTools?: readonly string[];
  offeredTools?: readonly string[];
  /** Images in the context and where their placeholders sit in promptIds + completionIds. */
  images?: readonly PlacedImage[];
  /** Set when the environment itself failed: the rollout is unscorable (all rewards NaN → advantage 0). */
  error?: string | null;
  /** The episode or one of its env calls ran past its timeout (`error` says which). */
  timedOut?: boolean;
  /** Per completion token: 1 on turns that repeat a failing call (dropped from the loss with mask_stubborn_steps). */
  stubbornMask?: readonly number[];
  stubbornCalls?: number;
  /** The last tool results were rolled back: they did not fit the token budget. */
  overBudget?: { tokens: number; budget: number };
}

export interface GenerationRequest {
  /** generation_batch_size rows: each prompt repeated num_generations times, adjacent. */
  rows: DatasetRow[];
  /** Sampling seed of this generation batch (a function of the run seed and the generation index). */
  seed: number;
  /** Optimizer steps done so far. */
  step: number;
}

/** Runs one generation batch of episodes (the rollout loop over the engine and the envs). */
export type RolloutSource = (req: GenerationRequest) => Promise<TrainerRollout[]>;

export interface TrainerOptions {
  engine: Engine;
  config: GRPOConfig;
  /** Prompt rows; empty = TRL's no-dataset mode (one empty user message per prompt; max_steps required). */
  dataset: DatasetRow[];
  rollouts: RolloutSource;
  /** Every reward source, env rewards included (see rewardSources in rewards.ts). */
  rewardFuncs: RewardFunction[];
  /**
   * Keeps the trainer's state files taken after optimizer step `step` (a checkpoint); returns where they
   * went, for logs. The run (src/rl/run.ts) adds where it stood and hands them to its RunStateStore.
   */
  saveState?: (step: number, files: Map<string, Uint8Array>) => Promise<string>;
  resume?: TrainerState;
  /** Abort = pause: the loop stops at the next generation boundary and saves a checkpoint if it can. */
  signal?: AbortSignal;
  /**
   * A vision-language engine's image inputs of a rollout's sequence (prompt + completion ids and the
   * images placed in it): scoring and training then see the images the rollout saw. Without it the
   * image placeholders are scored as plain tokens.
   */
  imageInputs?: (ids: readonly number[], images: readonly PlacedImage[]) => ScoreImages | undefined;
  /** Token ids → text for logged completions; without it the completion messages are logged as JSON. */
  decode?: (ids: readonly number[]) => string;
  /**
   * Called once a generation's rewards are in, with the next generation's request (when the run goes on),
   * so the rollout source can start its resets while this generation trains. The same request object is
   * then passed to `rollouts`.
   */
  prefetch?: (next: GenerationRequest) => void;
  /**
   * The KL reference policy (used when beta ≠ 0): the engine state GRPO starts from, captured after
   * an SFT warm-up (see referenceAfterWarmup). Without it the reference is TRL's: the base model with
   * the adapters off, which is the starting policy when GRPO starts from fresh adapters.
   */
  reference?: EngineState;
  /** Where a step is between rollouts and its event (log-prob passes, micro-batches), for progress displays. */
  onProgress?: (p: TrainerProgress) => void;
  /**
   * Plays the held-out split with the current weights and returns its `eval_*` metrics (src/rl/eval/
   * trainer-eval.ts). It only generates: no gradient, no optimizer call. Called when eval_strategy and
   * eval_steps (or eval_on_start) say so; without it there is no evaluation.
   */
  evaluate?: (step: number) => Promise<Metrics>;
}

/**
 * The work of a step after its rollouts: the extra log-prob passes over the generation batch (old
 * log-probs when the policy moves within a generation, the KL reference when beta ≠ 0), then per
 * micro-batch the log-prob forward, the backward, and every gradient_accumulation_steps the AdamW step.
 */
export type TrainerProgress =
  | { phase: 'logprobs'; of: 'old' | 'reference'; done: number; total: number }
  | { phase: 'optimize'; microBatch: number; microBatches: number; stage: 'forward' | 'backward' | 'optimizer' };

export type EngineState = { tensors: NamedTensor[]; step: number };

/**
 * The KL reference after an SFT warm-up: the warmed-up policy itself, so KL measures the drift GRPO
 * causes (0 at GRPO's first step) rather than the warm-up's. Null when no reference is needed (beta = 0)
 * or when GRPO's start is the base model anyway (no warm-up).
 */
export async function referenceAfterWarmup(engine: Pick<Engine, 'saveState'>, config: Pick<GRPOConfig, 'beta'>, warmedUp: boolean): Promise<EngineState | undefined> {
  if (config.beta === 0 || !warmedUp) return undefined;
  return engine.saveState();
}

/** Log-probs under a captured reference state: swap it in, score, swap the current state back. */
async function scoreUnderState(engine: Engine, reference: EngineState, seqs: ScoreSequence[], batch: number, temperature: number, onChunk?: ScoredSoFar): Promise<Float32Array[]> {
  const current = await engine.saveState();
  await engine.loadState(reference);
  try {
    return await scoreAll(engine, seqs, batch, temperature, true, onChunk);
  } finally {
    await engine.loadState(current);
  }
}

export interface GrpoStepEvent {
  step: number;
  totalSteps: number;
  epoch: number;
  metrics: Metrics;
  /** Completions of this step with their rewards and advantages (all with log_completions, else the first group). */
  completions: CompletionSample[];
  /** Rollouts that could not be scored, with the environment's failure. */
  unscorable: { rollout: number; reason: string }[];
  /** Set when a checkpoint was written after this step. */
  checkpoint?: string;
  /** Problems to say out loud (e.g. every tool call failed); absent when there are none. */
  warnings?: string[];
  /** Set when a call never reached the env: the names the model called that the env lacks, and its tools. */
  invalidTools?: InvalidTools;
  /** On logging steps (every logging_steps, and the last): the metrics averaged since the previous log (TRL's logs). */
  logs?: Metrics;
  /**
   * Evaluations on the held-out split taken with this step's weights (eval_strategy steps, every
   * eval_steps), and on the first step also the one before any update (eval_on_start, step 0): TRL's
   * `eval_*` metrics, logged beside the step's.
   */
  evals?: { step: number; metrics: Metrics }[];
}

export class TrainingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TrainingError';
  }
}

/** Optimizer steps of the whole run and the shape of a generation. */
export function stepPlan(config: GRPOConfig, datasetSize: number) {
  const G = config.num_generations;
  const promptsPerGeneration = generationBatchSize(config) / G;
  const microPerGeneration = stepsPerGeneration(config);
  const stepsPerGen = (microPerGeneration * config.num_iterations) / config.gradient_accumulation_steps;
  let generationsPerEpoch = Infinity;
  if (datasetSize > 0) {
    generationsPerEpoch = Math.floor(datasetSize / promptsPerGeneration);
    if (generationsPerEpoch === 0) {
      throw new TrainingError(`the dataset has ${datasetSize} rows but one generation batch needs ${promptsPerGeneration} prompts`);
    }
  }
  let totalSteps: number;
  if (config.max_steps > 0) totalSteps = config.max_steps;
  else if (datasetSize === 0) throw new TrainingError('without a dataset, max_steps must be > 0');
  else totalSteps = Math.ceil(config.num_train_epochs * generationsPerEpoch) * stepsPerGen;
  return { promptsPerGeneration, microPerGeneration, stepsPerGen, generationsPerEpoch, totalSteps };
}

/** The rows of generation g: a seeded shuffle per epoch (TRL's RepeatSampler), each row repeated G times. */
export function generationRows(dataset: DatasetRow[], config: GRPOConfig, g: number): DatasetRow[] {
  const plan = stepPlan(config, dataset.length);
  const G = config.num_generations;
  let prompts: DatasetRow[];
  if (dataset.length === 0) {
    prompts = Array.from({ length: plan.promptsPerGeneration }, () => ({ prompt: [{ role: 'user' as const, content: '' }] }));
  } else {
    const epoch = Math.floor(g / plan.generationsPerEpoch);
    const within = g % plan.generationsPerEpoch;
    const order = permutation(dataset.length, hashInts(config.seed, Purpose.dataOrder, epoch));
    prompts = order.slice(within * plan.promptsPerGeneration, (within + 1) * plan.promptsPerGeneration).map((i) => dataset[i]!);
  }
  return prompts.flatMap((row) => Array.from({ length: G }, () => row));
}

function lossMask(r: TrainerRollout, config: GRPOConfig): Float32Array {
  if (r.toolMask.length !== r.completionIds.length) {
    throw new TrainingError(`a rollout has ${r.completionIds.length} completion ids but ${r.toolMask.length} tool_mask entries`);
  }
  // mask_truncated_completions drops cut-off episodes from the loss entirely.
  const keep = config.mask_truncated_completions && r.truncated ? 0 : 1;
  const stubborn = config.mask_stubborn_steps ? r.stubbornMask : undefined;
  if (stubborn && stubborn.length !== r.completionIds.length) {
    throw new TrainingError(`a rollout has ${r.completionIds.length} completion ids but ${stubborn.length} stubborn_mask entries`);
  }
  // mask_stubborn_steps drops the turns that repeat a failing tool call (WebGym's stubborn steps).
  return Float32Array.from(r.toolMask, (m, t) => m * keep * (stubborn ? 1 - stubborn[t]! : 1));
}

function scoreSequence(r: TrainerRollout, imageInputs: TrainerOptions['imageInputs']): ScoreSequence {
  const ids = [...r.promptIds, ...r.completionIds];
  const images = imageInputs?.(ids, r.images ?? []);
  return { ids, scoreFrom: r.promptIds.length, ...(images ? { images } : {}) };
}

/** Told the sequences scored so far, before the first chunk and after each. */
type ScoredSoFar = (done: number) => void;

/** Scores sequences in chunks of `batch` (one engine call per micro-batch keeps memory bounded). */
async function scoreAll(engine: Engine, seqs: ScoreSequence[], batch: number, temperature: number, adapters: boolean, onChunk?: ScoredSoFar): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  onChunk?.(0);
  for (let i = 0; i < seqs.length; i += batch) {
    const res = await engine.score({ sequences: seqs.slice(i, i + batch), temperature, adapters });
    out.push(...res.logprobs);
    onChunk?.(out.length);
  }
  return out;
}

function lastText(messages: readonly RewardMessage[]): string {
  const last = messages[messages.length - 1];
  return typeof last?.content === 'string' ? last.content : '';
}

/** What one run's steps share: options, plan, schedule, counters (mutated as steps complete). */
interface RunState {
  opts: TrainerOptions;
  c: GRPOConfig;
  plan: ReturnType<typeof stepPlan>;
  counters: TrainerCounters;
  schedule: Schedule;
  weights: number[];
  rewardNames: string[];
  /** Old log-probs are scored when the policy moves within a generation (ratios ≠ 1). */
  needOld: boolean;
  /** The KL reference state when it is not the base model (after an SFT warm-up); see referenceAfterWarmup. */
  reference: EngineState | undefined;
  /** logging_steps: averages the metrics between logs. */
  logWindow: MetricsWindow;
  saveCheckpoint(): Promise<string | undefined>;
  generationRequest(g: number, step: number): GenerationRequest;
  /** Evaluations not yet reported (eval_on_start's, until the first step's event). */
  pendingEvals: { step: number; metrics: Metrics }[];
}

/** One generation batch, played and scored, ready to optimize on. */
interface Generation {
  g: number;
  startedAt: number;
  rollouts: TrainerRollout[];
  /** Prompt and completion tokens of its rollouts (num_tokens counts them). */
  tokens: number;
  sequences: ScoreSequence[];
  masks: Float32Array[];
  advantages: ArrayLike<number>;
  R: Float64Array[];
  rewards: ArrayLike<number>;
  std: ArrayLike<number>;
  unscorable: { rollout: number; reason: string }[];
  lossOpts: ReturnType<typeof lossOptionsFromConfig>;
  logpOld: Float32Array[] | null;
  logpRef: Float32Array[] | null;
  microBatches: number[][];
  stats: RolloutStats[];
  completions: CompletionSample[];
  /** The next generation's request, when it was announced to the rollout source (prefetch). */
  next: GenerationRequest | null;
}

export async function* trainGRPO(opts: TrainerOptions): AsyncGenerator<GrpoStepEvent, void> {
  const { engine, config: c } = opts;
  validateConfig(c);
  // A resumed run keeps the reference it started with (stored in its checkpoints).
  const reference = opts.resume?.reference ?? opts.reference;
  if (c.beta !== 0 && c.train_mode === 'full' && !reference) {
    throw new TrainingError('beta ≠ 0 needs a reference policy; in full fine-tuning mode the base weights change, so use train_mode lora');
  }
  const plan = stepPlan(c, opts.dataset.length);
  // On resume the run length comes from the current config (same config = same schedule; a larger
  // max_steps extends the run).
  const counters: TrainerCounters = opts.resume
    ? { ...opts.resume.counters, totalSteps: plan.totalSteps }
    : { step: 0, generation: 0, numTokens: 0, totalSteps: plan.totalSteps };
  if (opts.resume) await engine.loadState(opts.resume.engine);
  const run: RunState = {
    opts,
    c,
    plan,
    counters,
    schedule: {
      type: c.lr_scheduler_type,
      peak: c.learning_rate,
      warmupSteps: warmupSteps(c.warmup_steps, c.warmup_ratio, counters.totalSteps),
      totalSteps: counters.totalSteps,
    },
    weights: rewardWeights(c.reward_weights, opts.rewardFuncs),
    rewardNames: opts.rewardFuncs.map((f) => f.name),
    needOld: c.num_iterations > 1 || plan.microPerGeneration > c.gradient_accumulation_steps,
    reference,
    logWindow: new MetricsWindow(c.logging_steps),
    saveCheckpoint: async () => {
      if (!opts.saveState) return undefined;
      const files = serializeTrainerState({ counters: { ...counters }, config: c, engine: await engine.saveState(), reference });
      return opts.saveState(counters.step, files);
    },
    generationRequest: (g, step) => ({ rows: generationRows(opts.dataset, c, g), seed: hashInts(c.seed, Purpose.sampling, g), step }),
    pendingEvals: [],
  };
  // TRL's eval_on_start: the starting policy, before any update (not again on resume).
  if (c.eval_on_start && opts.evaluate && !opts.resume) run.pendingEvals.push({ step: 0, metrics: await opts.evaluate(0) });

  // One generation at a time: play and score it, then take its optimizer steps (one event each).
  let next: GenerationRequest | null = null;
  while (counters.step < counters.totalSteps) {
    if (opts.signal?.aborted) {
      await run.saveCheckpoint();
      return;
    }
    const request: GenerationRequest = next ?? run.generationRequest(counters.generation, counters.step);
    const generation = await collectGeneration(run, request);
    if (!generation) {
      await run.saveCheckpoint();
      return;
    }
    next = generation.next;
    if ((yield* optimizeGeneration(run, generation)) === 'stopped') return;
  }
}

/**
 * Plays one generation batch and prepares it for the optimizer: rollouts → rewards (§9) → (prefetch of
 * the next batch) → advantages (§10) → loss masks, old / reference log-probs, micro-batches, logs.
 */
async function collectGeneration(run: RunState, request: GenerationRequest): Promise<Generation | null> {
  const { opts, c, plan, counters } = run;
  const { engine } = opts;
  const g = counters.generation;
  const startedAt = performance.now();
  const { rows } = request;
  let rollouts: TrainerRollout[];
  try {
    rollouts = await opts.rollouts(request);
  } catch (err) {
    // An abort may cut the rollouts short (the CLI's Ctrl-C): nothing of this generation was
    // applied yet, so the state to save is the one after the last finished step (null).
    if (opts.signal?.aborted) return null;
    throw err;
  }
  if (rollouts.length !== rows.length) throw new TrainingError(`the rollout loop returned ${rollouts.length} rollouts for ${rows.length} rows`);
  const N = rollouts.length;
  const masks = rollouts.map((r) => lossMask(r, c));
  const unscorable = rollouts.flatMap((r, i) => (r.error ? [{ rollout: i, reason: r.error }] : []));
  // Counted when the generation's first optimizer step is taken: a pause before it saves a checkpoint
  // the generation is played again from, and must not count its tokens twice.
  const tokens = rollouts.reduce((n, r) => n + r.promptIds.length + r.completionIds.length, 0);

  // Rewards and advantages. An env failure makes every reward of that rollout NaN.
  const R = await rolloutRewards(opts.rewardFuncs, rollouts, { globalStep: counters.step, rows });
  const rewards = weightedRewardSum(R, run.weights);
  // The rewards have read the envs' final state: the next generation's resets may start now.
  let next: GenerationRequest | null = null;
  if (opts.prefetch && counters.step + plan.stepsPerGen < counters.totalSteps && !opts.signal?.aborted) {
    next = run.generationRequest(g + 1, counters.step + plan.stepsPerGen);
    opts.prefetch(next);
  }
  const G = c.num_generations;
  const { advantages, std } =
    c.multi_objective_aggregation === 'normalize_then_sum' ? normalizeThenSumAdvantages(R, run.weights, G) : groupAdvantages(rewards, G, c.scale_rewards);

  const sequences = rollouts.map((r) => scoreSequence(r, opts.imageInputs));
  const numItemsInBatch = masks.reduce((n, m) => n + m.reduce((a, b) => a + b, 0), 0);
  const B = c.per_device_train_batch_size;
  const scored = (of: 'old' | 'reference'): ScoredSoFar => (done) => opts.onProgress?.({ phase: 'logprobs', of, done, total: N });
  let logpOld: Float32Array[] | null;
  let logpRef: Float32Array[] | null;
  try {
    logpOld = run.needOld ? await scoreAll(engine, sequences, B, c.temperature, true, scored('old')) : null;
    logpRef =
      c.beta === 0
        ? null
        : run.reference
          ? await scoreUnderState(engine, run.reference, sequences, B, c.temperature, scored('reference'))
          : await scoreAll(engine, sequences, B, c.temperature, false, scored('reference'));
  } catch (err) {
    // A stop cut a log-prob pass short (at a layer boundary): scoring applies nothing, so as after
    // cut rollouts the generation is dropped and the checkpoint is the last finished step's.
    if (cutByStop(err, opts.signal)) return null;
    throw err;
  }

  // TRL shuffles the generation batch before splitting it into micro-batches.
  const order = permutation(N, hashInts(c.seed, Purpose.microBatchOrder, g));
  const microBatches = Array.from({ length: plan.microPerGeneration }, (_, j) => order.slice(j * B, (j + 1) * B));

  const stats: RolloutStats[] = rollouts.map((r) => ({
    modelTokens: r.toolMask.reduce((a, b) => a + b, 0),
    totalTokens: r.promptIds.length + r.completionIds.length,
    truncated: r.truncated,
    toolCalls: r.toolCalls,
    toolFailures: r.toolFailures,
    stubbornCalls: r.stubbornCalls ?? 0,
    invalidCalls: r.invalidToolCalls ?? 0,
    timedOut: r.timedOut ?? false,
    overBudget: r.overBudget !== undefined,
  }));
  const sampleIdx = c.log_completions ? rollouts.map((_, i) => i) : rollouts.slice(0, G).map((_, i) => i);
  const completions: CompletionSample[] = sampleIdx.map((i) => ({
    step: counters.step + 1,
    prompt: lastText(rollouts[i]!.prompt),
    completion: opts.decode ? opts.decode(rollouts[i]!.completionIds) : JSON.stringify(rollouts[i]!.completion),
    rewards: Object.fromEntries(run.rewardNames.map((n, k) => [n, Number.isNaN(R[k]![i]!) ? null : R[k]![i]!])),
    advantage: advantages[i]!,
  }));
  return {
    g, startedAt, rollouts, tokens, sequences, masks, advantages, R, rewards, std, unscorable,
    lossOpts: lossOptionsFromConfig(c, numItemsInBatch), logpOld, logpRef, microBatches, stats, completions, next,
  };
}

/**
 * The optimizer steps of one generation (§11): per micro-batch score → loss → backward, and every
 * gradient_accumulation_steps micro-batches one AdamW step and one event. Checkpoints sit on
 * generation boundaries (or the last step), so a resume never replays half a generation. Returns
 * 'stopped' when a pause or stop ended it early (its checkpoint, if any, is then saved).
 */
async function* optimizeGeneration(run: RunState, gen: Generation): AsyncGenerator<GrpoStepEvent, 'done' | 'stopped'> {
  const { opts, c, plan, counters } = run;
  const { engine } = opts;
  const GAS = c.gradient_accumulation_steps;
  let micro = 0;
  let stepLoss = 0;
  let stepLossMetrics: LossMetrics[] = [];
  let saveDue = false;
  let stepT0 = gen.startedAt;
  const stepAtGenerationStart = counters.step;
  for (let iter = 0; iter < c.num_iterations; iter++) {
    for (const idx of gen.microBatches) {
      // Stop between micro-batches only while no optimizer step of this generation was taken, so
      // a checkpoint always sits on a generation boundary.
      if (opts.signal?.aborted && counters.step === stepAtGenerationStart) {
        await run.saveCheckpoint();
        return 'stopped';
      }
      if (micro % GAS === 0) engine.zeroGrad();
      const microBatch = (micro % GAS) + 1;
      const stage = (s: 'forward' | 'backward' | 'optimizer') => opts.onProgress?.({ phase: 'optimize', microBatch, microBatches: GAS, stage: s });
      stage('forward');
      const seqs = idx.map((i) => gen.sequences[i]!);
      let out: ReturnType<typeof computeLoss>;
      try {
        const current = await engine.score({ sequences: seqs, temperature: c.temperature });
        const lossSeqs: LossSequence[] = idx.map((i, j) => ({
          logp: current.logprobs[j]!,
          logpOld: gen.logpOld ? gen.logpOld[i]! : undefined,
          logpRef: gen.logpRef ? gen.logpRef[i]! : undefined,
          entropy: current.entropy[j]!,
          mask: gen.masks[i]!,
          advantage: gen.advantages[i]!,
        }));
        out = computeLoss(lossSeqs, gen.lossOpts);
        if (!Number.isFinite(out.loss)) {
          throw new TrainingError(
            `step ${counters.step + 1}: the loss is ${out.loss} (micro-batch ${micro + 1}); training stopped before the update, the last saved checkpoint is kept`,
          );
        }
        // The entropy bonus (entropy_coef ≠ 0) backpropagates through the engine's dL/dentropy path.
        stage('backward');
        await engine.backward({ sequences: seqs, temperature: c.temperature, dLdLogp: out.dLdLogp, ...(out.dLdEntropy ? { dLdEntropy: out.dLdEntropy } : {}) });
      } catch (err) {
        // A stop cut the forward or the backward short. The gradients may hold a part of this
        // micro-batch's: nothing steps on them (the next micro-batch to run, in this process or after a
        // resume, starts with zeroGrad).
        if (cutByStop(err, opts.signal)) return stoppedInMicroBatch(run, counters.step === stepAtGenerationStart);
        throw err;
      }
      stepLoss += out.loss;
      stepLossMetrics.push(out.metrics);
      micro++;
      if (micro % GAS !== 0) continue;

      const lr = learningRateAt(run.schedule, counters.step);
      stage('optimizer');
      const res = await engine.step({
        learningRate: lr,
        beta1: c.adam_beta1,
        beta2: c.adam_beta2,
        eps: c.adam_epsilon,
        weightDecay: c.weight_decay,
        maxGradNorm: c.max_grad_norm,
      });
      if (!Number.isFinite(res.gradNorm)) {
        throw new TrainingError(`step ${counters.step + 1}: the gradient norm is ${res.gradNorm}; the weights are no longer valid, resume from the last saved checkpoint`);
      }
      if (counters.step === stepAtGenerationStart) counters.numTokens += gen.tokens;
      counters.step++;
      if (c.save_steps > 0 && counters.step % c.save_steps === 0) saveDue = true;
      const now = performance.now();
      const event = stepEvent(run, gen, { loss: stepLoss, lossMetrics: stepLossMetrics, gradNorm: res.gradNorm, learningRate: lr, stepTime: (now - stepT0) / 1000 });
      stepLoss = 0;
      stepLossMetrics = [];
      stepT0 = now;
      const finished = counters.step >= counters.totalSteps;
      if (opts.evaluate && evalDue(c, counters.step)) run.pendingEvals.push({ step: counters.step, metrics: await opts.evaluate(counters.step) });
      if (run.pendingEvals.length > 0) event.evals = run.pendingEvals.splice(0);
      if (micro === plan.microPerGeneration * c.num_iterations) {
        counters.generation++;
        if (saveDue || finished) event.checkpoint = await run.saveCheckpoint();
      } else if (finished) {
        event.checkpoint = await run.saveCheckpoint();
      }
      yield event;
      if (finished) return 'done';
    }
  }
  return 'done';
}

/**
 * A stop cut a micro-batch's forward or backward short. Before the generation's first optimizer step the
 * weights are still the generation's start, the state after the last finished step: that is the
 * checkpoint, as a stop between micro-batches saves it. After one, the weights hold steps of this
 * generation and a checkpoint here would sit inside it, so none is saved: the run keeps its last
 * checkpoint, taken on an earlier generation boundary, and a resume plays this generation again from
 * there, its steps with the same numbers and seeds (the ones already reported are reported again).
 */
async function stoppedInMicroBatch(run: RunState, atGenerationStart: boolean): Promise<'stopped'> {
  if (atGenerationStart) await run.saveCheckpoint();
  return 'stopped';
}

/** eval_strategy 'steps': an evaluation every eval_steps optimizer steps (TRL: eval_steps null = logging_steps). */
export function evalDue(c: Pick<GRPOConfig, 'eval_strategy' | 'eval_steps' | 'logging_steps'>, step: number): boolean {
  return c.eval_strategy === 'steps' && step % (c.eval_steps ?? c.logging_steps) === 0;
}

/** The event of one optimizer step: TRL's metrics (§13) over the generation, and its completions. */
function stepEvent(
  run: RunState,
  gen: Generation,
  step: { loss: number; lossMetrics: LossMetrics[]; gradNorm: number; learningRate: number; stepTime: number },
): GrpoStepEvent {
  const { c, plan, counters } = run;
  const metrics = stepMetrics({
    rollouts: gen.stats,
    rewardNames: run.rewardNames,
    rewardMatrix: gen.R,
    rewards: gen.rewards,
    rewardStd: gen.std,
    lossMetrics: step.lossMetrics,
    loss: step.loss,
    gradNorm: step.gradNorm,
    learningRate: step.learningRate,
    numTokens: counters.numTokens,
    stepTime: step.stepTime,
    beta: c.beta,
    entropyCoef: c.entropy_coef,
  });
  metrics.epoch = (gen.g + 1) / plan.generationsPerEpoch;
  if (!Number.isFinite(metrics.epoch)) delete metrics.epoch;
  const event: GrpoStepEvent = {
    step: counters.step,
    totalSteps: counters.totalSteps,
    epoch: Number.isFinite(plan.generationsPerEpoch) ? Math.floor(gen.g / plan.generationsPerEpoch) : 0,
    metrics,
    completions: gen.completions.map((s) => ({ ...s, step: counters.step })),
    unscorable: gen.unscorable,
  };
  const invalidTools = invalidToolsOf(gen.rollouts);
  if (invalidTools) event.invalidTools = invalidTools;
  const warnings = stepWarnings(metrics, invalidTools);
  if (warnings.length > 0) event.warnings = warnings;
  const logs = run.logWindow.add(counters.step, metrics, counters.step >= counters.totalSteps);
  if (logs) event.logs = logs;
  return event;
}
