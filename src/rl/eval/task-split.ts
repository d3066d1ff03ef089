// A MiniWoB++ folder's held-out tasks: train on some, evaluate on others. A leaf module, so the task
// table (browsergym-task.ts: `mix` over a folder trains the training tasks only) and the eval rows share it.

/** Every this-many-th task of a folder (sorted by name) is held out of training. */
const HELD_OUT_EVERY = 5;

/** A MiniWoB++ folder's tasks split in two: training draws `train` only; `eval` is never trained on. */
export function miniwobTaskSplit(names: readonly string[]): { train: string[]; eval: string[] } {
  const sorted = [...names].sort();
  const heldOut = new Set(sorted.filter((_, i) => i % HELD_OUT_EVERY === HELD_OUT_EVERY - 1));
  return { train: sorted.filter((n) => !heldOut.has(n)), eval: [...heldOut] };
}
