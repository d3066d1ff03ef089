// A rollout as the run store keeps it is whatever JSON object its writer (or an imported file) sent:
// checked here against RolloutView before anything renders it, so a malformed one is shown as such
// (one line naming what is wrong) and the rest of the run renders.
import type { RolloutView } from '../../workers/api.ts';

export type CheckedRollout = { ok: true; view: RolloutView } | { ok: false; index: number; problem: string };

const ROLES = ['prompt', 'assistant', 'tool', 'env'] as const;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;
const isScore = (v: unknown): v is number | null => v === null || (typeof v === 'number' && Number.isFinite(v));
/** Only inline PNG/JPEG images: a stored or imported run never makes the viewer fetch anything. */
export const IMAGE_DATA_URL = /^data:image\/(png|jpeg);base64,[A-Za-z0-9+/]+={0,2}$/;

function imageProblem(v: unknown): string | null {
  if (!isObject(v)) return 'must be an object';
  if (typeof v.src !== 'string' || !IMAGE_DATA_URL.test(v.src)) return 'src must be a data:image/png or data:image/jpeg base64 URL';
  if (!(Number.isInteger(v.width) && (v.width as number) > 0 && Number.isInteger(v.height) && (v.height as number) > 0)) return 'width and height must be positive integers';
  return null;
}

/** The first thing wrong with `data` as a RolloutView, or null when it is one. */
function problemOf(data: unknown): string | null {
  if (!isObject(data)) return `expected an object, got ${Array.isArray(data) ? 'an array' : data === null ? 'null' : typeof data}`;
  if (!isCount(data.group)) return `"group" must be a non-negative integer, got ${JSON.stringify(data.group) ?? 'nothing'}`;
  if (!isCount(data.index)) return `"index" must be a non-negative integer, got ${JSON.stringify(data.index) ?? 'nothing'}`;
  if (!Array.isArray(data.turns)) return `"turns" must be an array, got ${JSON.stringify(data.turns) ?? 'nothing'}`;
  for (const [i, t] of data.turns.entries()) {
    if (!isObject(t)) return `turns[${i}] must be an object`;
    if (!(ROLES as readonly unknown[]).includes(t.role)) return `turns[${i}].role must be one of ${ROLES.join(', ')}, got ${JSON.stringify(t.role) ?? 'nothing'}`;
    if (typeof t.text !== 'string') return `turns[${i}].text must be a string`;
    if (t.name !== undefined && typeof t.name !== 'string') return `turns[${i}].name must be a string`;
    if (t.images !== undefined) {
      if (!Array.isArray(t.images)) return `turns[${i}].images must be an array`;
      for (const [j, im] of t.images.entries()) {
        const problem = imageProblem(im);
        if (problem) return `turns[${i}].images[${j}] ${problem}`;
      }
    }
    if (t.omittedImages !== undefined && !isCount(t.omittedImages)) return `turns[${i}].omittedImages must be a non-negative integer`;
  }
  if (!isScore(data.reward)) return `"reward" must be a number or null, got ${JSON.stringify(data.reward) ?? 'nothing'}`;
  if (typeof data.advantage !== 'number' || !Number.isFinite(data.advantage)) return `"advantage" must be a number, got ${JSON.stringify(data.advantage) ?? 'nothing'}`;
  if (!isObject(data.rewards) || !Object.values(data.rewards).every(isScore)) return '"rewards" must be an object of numbers (or null)';
  if (data.error !== undefined && typeof data.error !== 'string') return '"error" must be a string';
  if (data.overBudget !== undefined && !(isObject(data.overBudget) && isCount(data.overBudget.tokens) && isCount(data.overBudget.budget))) return '"overBudget" must be {"tokens", "budget"} (non-negative integers)';
  return null;
}

/** `data` (the idx-th stored rollout of its step) as a RolloutView, or why it is not one. */
export function checkRollout(data: unknown, index: number): CheckedRollout {
  const problem = problemOf(data);
  return problem === null ? { ok: true, view: data as unknown as RolloutView } : { ok: false, index, problem };
}
