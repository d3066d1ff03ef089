// The prompt rows of each task's splits. Catch and wordle prompts are one text (the game differs by
// seed: seed-space.ts); echo's held-out split asks for messages training never asks for; browsergym
// over a MiniWoB++ folder holds whole tasks out (train on some, evaluate on others); any other task,
// or a --dataset run, brings its held-out rows as --eval_dataset FILE.jsonl.

import { WORDLE_EVAL_WORDS } from '../../openenv/eval-split.ts';
import type { DatasetRow } from '../rollout/env.ts';
import type { ResolvedTask } from '../tasks/resolve-task.ts';
import type { Split } from './seed-space.ts';
import { miniwobTaskSplit } from './task-split.ts';

export { miniwobTaskSplit };

/** Echo's held-out prompts: TRL's five phrasings, asking for messages none of its prompts asks for. */
export const ECHO_EVAL_PROMPTS: readonly string[] = [
  "Try to echo 'Held-out prompts matter!' in the environment.",
  "Make the environment echo 'See you tomorrow!'",
  "Can you ask the environment to echo 'WebGPU trains agents!'?",
  "What happens if you ask the environment to echo 'I love GRPO!'?",
  "Try to make the environment echo 'Evaluation is not training!'",
  "Try to echo 'Good morning, Paris!' in the environment.",
  "Make the environment echo 'Seven green apples.'",
  "Can you ask the environment to echo 'Rewards are not skills!'?",
  "What happens if you ask the environment to echo 'Lavapipe runs on CPUs!'?",
  "Try to make the environment echo 'Trajectories tell the truth!'",
];

/** The task a row plays, for per-task summaries of multi-task envs (browsergym's task_name, multi's env). */
export function rowTask(row: DatasetRow, fallback: string): string {
  if (typeof row.task_name === 'string') return row.task_name;
  if (typeof row.env === 'string') return row.env;
  return fallback;
}

export interface SplitRowsOptions {
  /** A MiniWoB++ folder's task names, when browsergym plays one. */
  miniwobNames?: readonly string[];
  /** --eval_dataset rows: they are the held-out split. */
  evalDataset?: readonly DatasetRow[];
}

/**
 * The rows a split plays, one per episode in order (episode i plays row i mod length). The train split
 * is the task's own dataset; the eval split is its held-out counterpart.
 */
export function splitRows(r: ResolvedTask, split: Split, o: SplitRowsOptions = {}): DatasetRow[] {
  const train = r.task.dataset();
  if (split === 'train') return train;
  if (o.evalDataset && o.evalDataset.length > 0) return [...o.evalDataset];
  if (r.name === 'echo') return ECHO_EVAL_PROMPTS.map((content) => ({ prompt: [{ role: 'user', content }] }));
  if (r.name.startsWith('browsergym') && o.miniwobNames && o.miniwobNames.length > 0) {
    // The folder's held-out tasks first, then the run's own tasks at held-out seeds (`mix`: every training
    // task of the folder; `browsergym:a,b`: a and b, not the folder's other tasks): one of each per cycle.
    // A held-out task the run names itself counts as one of its own (it trains on it).
    const trained = [...new Set(train.map((row) => row.task_name).filter((t): t is string => typeof t === 'string'))];
    const heldOut = miniwobTaskSplit(o.miniwobNames).eval.filter((t) => !trained.includes(t));
    const template = train[0]!;
    return [...heldOut, ...trained].map((task_name) => ({ ...structuredClone(template), task_name }));
  }
  if (r.name === 'mcp') throw new Error('the mcp task has no held-out split of its own: give its held-out prompts with --eval_dataset FILE.jsonl');
  // Catch, wordle, multi, browsergym's built-in tasks: the same prompts, held-out games (seed-space.ts).
  if (r.name === 'multi') return train.filter((row, i, all) => all.findIndex((x) => x.env === row.env) === i);
  const distinct = train.slice(0, 1).concat(uniqueTasks(train));
  if (distinct.length > 1) return distinct;
  // One prompt, many games: as many rows as held-out games an evaluation plays (wordle: its 30 words).
  return Array.from({ length: r.name === 'wordle' ? WORDLE_EVAL_WORDS.length : HELD_OUT_GAMES }, () => structuredClone(distinct[0]!));
}

/** Rows (games) of a one-prompt task's held-out split: what one evaluation in training plays per generation. */
const HELD_OUT_GAMES = 32;

/** One row per distinct task_name after the first row's (browsergym over named tasks: each task once). */
function uniqueTasks(rows: readonly DatasetRow[]): DatasetRow[] {
  const seen = new Set<unknown>([rows[0]?.task_name]);
  return rows.filter((row) => {
    if (row.task_name === undefined || seen.has(row.task_name)) return false;
    seen.add(row.task_name);
    return true;
  });
}

/** A clear error when a held-out row is also a training row (a --dataset / --eval_dataset pair that overlaps). */
export function checkDisjoint(train: readonly DatasetRow[], heldOut: readonly DatasetRow[]): void {
  const seen = new Set(train.map((row) => JSON.stringify(row)));
  const i = heldOut.findIndex((row) => seen.has(JSON.stringify(row)));
  if (i >= 0) throw new Error(`--eval_dataset row ${i + 1} is also a training row (${JSON.stringify(heldOut[i]).slice(0, 200)}): held-out rows must never be trained on`);
}
