// The `browsergym` tasks: TRL's text-only BrowserGym example (examples/browsergym_llm.mjs, specs/browsergym.md
// §6.2, §6.7) and its screenshot variant, each over a task mix. TRL trains one MiniWoB task (`--task-name click-test`); here a run can
// also name a list of tasks, or the easy-biased mix WebGym found learns fastest while the harder
// tasks keep pushing (§7): each dataset row carries its `task_name`, which reset passes on.

import type { DatasetRow } from '../rollout/env.ts';
import { BROWSERGYM_DATASET_PROMPT, BrowserGymToolEnv, rewardCompletion } from './envs/browsergym.ts';
import { BROWSERGYM_VLM_SYSTEM_PROMPT, BrowserGymVlmToolEnv } from './envs/browsergym-vlm.ts';
import { openEnvEpisodes } from './envs/episode-session.ts';
import type { ChatTemplateTask, ExampleTask } from './task.ts';
import { builtinClassTask } from './env-class-builtin.ts';
import { hashInts } from '../seeds.ts';
import { miniwobTaskSplit } from '../eval/task-split.ts';
import type { RewardFunction } from '../grpo/rewards.ts';

/** The env-server's tasks by difficulty with TRL's five tools (choose-list needs the combobox typed into). */
export const BROWSERGYM_TIERS = {
  easy: ['click-test', 'click-test-2', 'focus-text', 'click-dialog', 'click-button', 'enter-text'],
  medium: ['click-button-sequence', 'click-dialog-2', 'focus-text-2', 'enter-text-2', 'enter-text-dynamic', 'click-option', 'click-tab', 'click-collapsible', 'unicode-test', 'click-widget'],
  hard: ['click-checkboxes', 'enter-password', 'login-user', 'simple-arithmetic', 'choose-list'],
} as const;

export const BROWSERGYM_TASK_NAMES: readonly string[] = [...BROWSERGYM_TIERS.easy, ...BROWSERGYM_TIERS.medium, ...BROWSERGYM_TIERS.hard];

/** Sampling weight per tier in the `mix`: easy tasks 3×, medium 2×, hard 1× (an assumption; WebGym gives no numbers). */
const TIER_WEIGHT = { easy: 3, medium: 2, hard: 1 } as const;

/** One task, a list, or `mix` (every task, easy-biased). */
export type BrowserGymMix = readonly string[] | 'mix';

/**
 * `click-test`, `click-test,enter-text` or `mix` → a mix; unknown names are an error naming the known
 * ones. `known` is a real MiniWoB++ folder's task list when training on one: there `mix` is every training task (eval/task-split.ts)
 * of the folder in turn (the tiers describe only the built-in tasks).
 */
export function parseBrowserGymMix(spec: string, known?: readonly string[]): BrowserGymMix {
  // Over a folder, `mix` trains its training tasks only: the held-out ones are for evaluation.
  if (spec === 'mix') return known ? miniwobTaskSplit(known).train : 'mix';
  const names = spec.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (names.length === 0) throw new Error('browsergym: name at least one task (or mix)');
  const have = known ?? BROWSERGYM_TASK_NAMES;
  for (const name of names) {
    if (!have.includes(name)) throw new Error(`browsergym: unknown task '${name}' (have ${have.join(', ')}, or mix)`);
  }
  return names;
}

/** The task of dataset row `i`: a list cycles; the mix draws by tier weight from a fixed hash. */
export function mixTaskAt(mix: BrowserGymMix, i: number): string {
  if (mix !== 'mix') return mix[i % mix.length]!;
  const weighted = (Object.keys(BROWSERGYM_TIERS) as (keyof typeof BROWSERGYM_TIERS)[]).flatMap((tier) =>
    BROWSERGYM_TIERS[tier].map((name) => ({ name, weight: TIER_WEIGHT[tier] })),
  );
  const total = weighted.reduce((sum, t) => sum + t.weight, 0);
  let r = hashInts(0xb6, i) % total;
  for (const t of weighted) {
    if (r < t.weight) return t.name;
    r -= t.weight;
  }
  throw new Error('unreachable');
}

function rewardFunction(): RewardFunction {
  const fn: RewardFunction = ({ environments }) =>
    environments.map((env, i) => {
      if (!(env instanceof BrowserGymToolEnv)) throw new Error(`reward function: environment ${i} is not a BrowserGymToolEnv`);
      return rewardCompletion(env);
    });
  Object.defineProperty(fn, 'name', { value: 'reward_completion' });
  return fn;
}

function dataset(mix: BrowserGymMix, system: string) {
  return (size = 1000): DatasetRow[] =>
    Array.from({ length: size }, (_, i) => ({
      prompt: [
        { role: 'system', content: system },
        { role: 'user', content: BROWSERGYM_DATASET_PROMPT },
      ],
      task_name: mixTaskAt(mix, i),
    }));
}

/** A task whose rows are its first row with each row's task of the mix (reset passes `task_name` on). */
function overMix(task: ChatTemplateTask, mix: BrowserGymMix): ChatTemplateTask {
  const [first] = task.dataset(1);
  return { ...task, dataset: (size = 1000) => Array.from({ length: size }, (_, i) => ({ ...structuredClone(first!), task_name: mixTaskAt(mix, i) })) };
}

/** The built-in browsergym task, examples/browsergym_llm.mjs (TRL's browsergym_llm.py), over a mix (default: TRL's click-test). */
export async function browsergymTask(mix: BrowserGymMix = ['click-test']): Promise<ChatTemplateTask> {
  return overMix((await builtinClassTask('browsergym'))!, mix);
}

/**
 * TRL's vision-language example (browsergym.py, BrowserGymVLMEnv) over a mix: screenshots in every tool
 * result, so it trains only a model that reads images (`needsVision`).
 */
export function browsergymVlmTask(mix: BrowserGymMix = ['click-test']): ExampleTask {
  return {
    name: 'browsergym-vlm',
    needsVision: true,
    dataset: dataset(mix, BROWSERGYM_VLM_SYSTEM_PROMPT),
    envFactory: (urls, open = openEnvEpisodes()) => {
      const url = urls.browsergym;
      if (!url) throw new Error('the browsergym-vlm task needs the browsergym env\'s base URL');
      return () => new BrowserGymVlmToolEnv(url, open);
    },
    rewardFuncs: [rewardFunction()],
    // browsergym.py's GRPOConfig arguments (§6.7): temperature and top_k stay at GRPOConfig's defaults there.
    config: {
      chat_template_kwargs: { enable_thinking: false },
      learning_rate: 5e-6,
      gradient_accumulation_steps: 32,
      num_generations: 4,
      max_completion_length: 1024,
      num_train_epochs: 1,
      logging_steps: 1,
      log_completions: true,
    },
  };
}

