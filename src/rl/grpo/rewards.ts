// Reward functions (specs/grpo-semantics.md §9): TRL's calling convention, `null` → NaN, env-owned
// rewards via `getReward()` as a function named after the env class, and the reward matrix R (N×K).

/** The part of a chat message that reward functions see (completions are message lists). */
export interface RewardMessage {
  role: string;
  content?: unknown;
  name?: string;
  tool_calls?: unknown;
}

/** What every reward function receives; dataset columns other than `prompt` are spread in, one array entry per rollout. */
export interface RewardArgs {
  /** The prompts after `reset()` folded the observation in, one per rollout (adjacent groups of G). */
  prompts: RewardMessage[][];
  /** Each rollout's completion as messages: [assistant, tool…, assistant, …]. */
  completions: RewardMessage[][];
  completion_ids: number[][];
  /** The env instance each rollout ran against (still holding its final state). */
  environments: unknown[];
  trainer_state: { global_step: number };
  [column: string]: unknown;
}

/** Returns one number (or null = "cannot score this one") per rollout; may be async. The metric name is `fn.name`. */
export type RewardFunction = (args: RewardArgs) => ReadonlyArray<number | null | undefined> | Promise<ReadonlyArray<number | null | undefined>>;

interface RewardingEnv {
  getReward(): number | null | Promise<number | null>;
}

function hasGetReward(env: unknown): env is RewardingEnv {
  return typeof env === 'object' && env !== null && typeof (env as { getReward?: unknown }).getReward === 'function';
}

function className(env: unknown): string {
  const ctor = (env as { constructor?: { name?: string } } | null)?.constructor;
  return ctor?.name || 'Environment';
}

/**
 * TRL adds `env.get_reward` as a reward source named after the env class: it scores the rollouts
 * that ran on that class and returns null for the others (so several env types can share a batch).
 */
export function envRewardFunction(envClassName: string): RewardFunction {
  const fn: RewardFunction = async ({ environments }) =>
    Promise.all(environments.map(async (env) => (hasGetReward(env) && className(env) === envClassName ? await env.getReward() : null)));
  Object.defineProperty(fn, 'name', { value: envClassName });
  return fn;
}

/**
 * The reward sources of a run: the user's functions, then the env's own `getReward` (if the probe
 * instance has one). At least one source is required.
 */
export function rewardSources(rewardFuncs: RewardFunction[], probeEnv: unknown): RewardFunction[] {
  const funcs = [...rewardFuncs];
  if (hasGetReward(probeEnv)) funcs.push(envRewardFunction(className(probeEnv)));
  if (funcs.length === 0) throw new Error('no reward source: give reward functions or use an environment with getReward()');
  for (const f of funcs) if (!f.name) throw new Error('every reward function needs a name (it becomes the metric rewards/<name>/mean)');
  const names = funcs.map((f) => f.name);
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup) throw new Error(`two reward functions are named '${dup}'; metric names must be unique`);
  return funcs;
}

/** Calls every reward function; returns R as K columns of N values (NaN for null). */
export async function computeRewardMatrix(funcs: RewardFunction[], args: RewardArgs): Promise<Float64Array[]> {
  const n = args.completions.length;
  return Promise.all(
    funcs.map(async (f) => {
      const out = await f(args);
      if (!out || typeof (out as ArrayLike<unknown>).length !== 'number' || out.length !== n) {
        throw new Error(`reward function '${f.name}' returned ${out && (out as ArrayLike<unknown>).length} values for ${n} completions`);
      }
      const col = new Float64Array(n);
      for (let i = 0; i < n; i++) {
        const v = out[i];
        if (v === null || v === undefined) col[i] = NaN;
        else if (typeof v === 'number') col[i] = v;
        else throw new Error(`reward function '${f.name}' returned a ${typeof v} for completion ${i}; expected a number or null`);
      }
      return col;
    }),
  );
}

/** What the reward functions read of one played rollout. */
export interface ScoredRollout {
  prompt: readonly RewardMessage[];
  completion: readonly RewardMessage[];
  completionIds: readonly number[];
  env: unknown;
  /** Set when the environment failed: every reward of the rollout is NaN (unscorable). */
  error?: string | null;
}

/** Dataset columns other than prompt/completion, one entry per rollout (TRL passes them as kwargs). */
function columnsOf(rows: readonly Record<string, unknown>[]): Record<string, unknown[]> {
  const keys = new Set<string>();
  for (const row of rows) for (const k of Object.keys(row)) if (k !== 'prompt' && k !== 'completion' && k !== 'completion_ids') keys.add(k);
  const out: Record<string, unknown[]> = {};
  for (const k of keys) out[k] = rows.map((row) => row[k]);
  return out;
}

/**
 * R for played rollouts: the reward functions' arguments built from them (and from their dataset rows'
 * columns, when given), every reward of a rollout whose env failed set to NaN. The trainer, the
 * worker's evaluation and the demo build all score through here.
 */
export async function rolloutRewards(funcs: RewardFunction[], rollouts: readonly ScoredRollout[], o: { globalStep: number; rows?: readonly Record<string, unknown>[] }): Promise<Float64Array[]> {
  const R = await computeRewardMatrix(funcs, {
    prompts: rollouts.map((r) => [...r.prompt]),
    completions: rollouts.map((r) => [...r.completion]),
    completion_ids: rollouts.map((r) => [...r.completionIds]),
    environments: rollouts.map((r) => r.env),
    trainer_state: { global_step: o.globalStep },
    ...(o.rows ? columnsOf(o.rows) : {}),
  });
  rollouts.forEach((r, i) => {
    if (r.error) for (const col of R) col[i] = NaN;
  });
  return R;
}

/** Checks reward_weights against the reward sources; null → all 1. */
export function rewardWeights(weights: number[] | null, funcs: RewardFunction[]): number[] {
  if (weights === null) return funcs.map(() => 1);
  if (weights.length !== funcs.length) {
    throw new Error(`reward_weights has ${weights.length} entries but there are ${funcs.length} reward functions (${funcs.map((f) => f.name).join(', ')})`);
  }
  return weights;
}

/** sum_then_normalize's combined reward: r_i = nansum_k(w_k·R_ik), NaN when every R_ik is NaN (unscorable). */
export function weightedRewardSum(R: Float64Array[], weights: number[]): Float64Array {
  const n = R[0]?.length ?? 0;
  const r = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    let scorable = false;
    for (let k = 0; k < R.length; k++) {
      const v = R[k]![i]!;
      if (!Number.isNaN(v)) {
        sum += weights[k]! * v;
        scorable = true;
      }
    }
    r[i] = scorable ? sum : NaN;
  }
  return r;
}
