// The `browsergym` tasks: TRL's text-only BrowserGym example (examples/browsergym_llm.mjs, specs/browsergym.md
// §6.2, §6.7) and its screenshot variant, each over a task mix. TRL trains one MiniWoB task (`--task-name click-test`); here a run can
// also name a list of tasks, or the easy-biased mix WebGym found learns fastest while the harder
// tasks keep pushing (§7): each dataset row carries its `task_name`, which reset passes on.

import type { ChatTemplateTask } from './task.ts';
import { builtinClassTask } from './env-class-builtin.ts';
import { hashInts } from '../seeds.ts';
import { miniwobTaskSplit } from '../eval/task-split.ts';

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

/** A task whose rows are its first row with each row's task of the mix (reset passes `task_name` on). */
function overMix(task: ChatTemplateTask, mix: BrowserGymMix): ChatTemplateTask {
  const [first] = task.dataset(1);
  return { ...task, dataset: (size = 1000) => Array.from({ length: size }, (_, i) => ({ ...structuredClone(first!), task_name: mixTaskAt(mix, i) })) };
}

/** The built-in browsergym task, examples/browsergym_llm.mjs (TRL's browsergym_llm.py), over a mix (default: TRL's click-test). */
export async function browsergymTask(mix: BrowserGymMix = ['click-test']): Promise<ChatTemplateTask> {
  return overMix((await builtinClassTask('browsergym'))!, mix);
}

/** The built-in browsergym-vlm task, examples/browsergym.mjs (TRL's browsergym.py: screenshots in every tool result), over a mix. */
export async function browsergymVlmTask(mix: BrowserGymMix = ['click-test']): Promise<ChatTemplateTask> {
  return overMix((await builtinClassTask('browsergym-vlm'))!, mix);
}
