// One evaluation episode as a record a person can read back: per turn the model's text, the call it
// made as parsed, and what the tool answered; the reward, whether the game ended, whether it was won,
// and why not — the failure reasons the issue names, told from the rollout alone.

import type { ChatMessage, ToolCall } from '../../model/chat-template.ts';
import type { Rollout } from '../rollout/rollout.ts';

export type FailureReason =
  | 'never called a tool'
  | 'malformed call'
  | 'invalid move'
  | 'tool error'
  | 'over budget'
  | 'timed out'
  | 'episode cap'
  /** The model stopped calling tools while the game was still on (a catch ball still falling). */
  | 'stopped early'
  | 'none';

export const FAILURE_REASONS: readonly FailureReason[] = ['never called a tool', 'malformed call', 'invalid move', 'tool error', 'over budget', 'timed out', 'episode cap', 'stopped early', 'none'];

export interface TrajectoryTurn {
  /** What the model wrote this turn (its text outside tool calls, or the whole text when a call did not parse). */
  model_text: string;
  /** The calls parsed from it (TRL's parse_response), null when none. */
  call: ToolCall['function'] | null;
  /** More calls of the same turn, if it made several. */
  more_calls?: ToolCall['function'][];
  /** The tool results (observations) that answered, in order; [] when none came back (over budget, no call). */
  observations: string[];
}

export interface Trajectory {
  /** The task played (browsergym's task_name, multi's env, else the task's name). */
  task: string;
  /** The env reset seed (null when the env is not seeded by us, e.g. an MCP env). */
  seed: number | null;
  /** The prompt after reset (its last message, with the first observation folded in). */
  prompt: string;
  turns: TrajectoryTurn[];
  /** Combined reward (reward_weights over the task's reward functions); null = unscorable. */
  reward: number | null;
  /** Each reward function's value. */
  rewards: Record<string, number | null>;
  success: boolean;
  /** The env said the episode is over (null when the env does not say). */
  done: boolean | null;
  tool_calls: number;
  invalid_calls: number;
  failure_reason: FailureReason;
  /** The env failure, when the episode could not be scored. */
  error?: string;
}

/** Tool results that report a move the game refused (the env's own words): counted as invalid moves, not tool errors. */
const INVALID_MOVE = /invalid move|Invalid direction|Illegal action|Episode is done|Game over|Game is over|not a valid|must be exactly|wrong format/i;
/** Errors of the call itself: an unknown tool or arguments that do not fit it (grpo-semantics.md §6). */
const CALL_ERROR = /not found\.|unexpected keyword argument|missing \d+ required|must be a mapping|Unsupported tool call type/;

function text(content: ChatMessage['content']): string {
  return typeof content === 'string' ? content : '';
}

/** The model's turns and what answered each one. */
export function trajectoryTurns(completion: readonly ChatMessage[]): TrajectoryTurn[] {
  const turns: TrajectoryTurn[] = [];
  for (const m of completion) {
    if (m.role === 'assistant') {
      const calls = (m.tool_calls ?? []).map((c) => c.function);
      turns.push({ model_text: m.content, call: calls[0] ?? null, ...(calls.length > 1 ? { more_calls: calls.slice(1) } : {}), observations: [] });
    } else if (m.role === 'tool' && turns.length > 0) {
      turns[turns.length - 1]!.observations.push(text(m.content));
    }
  }
  return turns;
}

/** Tool results that are errors (TRL's `{'error': …}`) or a game's refusal of the move. */
function invalidObservations(turns: readonly TrajectoryTurn[]): { invalidMoves: number; callErrors: number } {
  let invalidMoves = 0;
  let callErrors = 0;
  for (const o of turns.flatMap((t) => t.observations)) {
    if (o.startsWith("{'error'") || o.startsWith('{"error"')) {
      if (CALL_ERROR.test(o)) callErrors++;
      else invalidMoves++;
    } else if (INVALID_MOVE.test(o)) invalidMoves++;
  }
  return { invalidMoves, callErrors };
}

export interface FailureInput {
  rollout: Pick<Rollout, 'completion' | 'toolCalls' | 'timedOut' | 'overBudget' | 'truncated' | 'error'>;
  success: boolean;
  done: boolean | null;
  /** max_tool_calling_iterations (null = none). */
  maxIterations: number | null;
}

/** Why an episode was not won, the first cause that applies; 'none' for a won episode or a game lost on its merits. */
export function failureReason(f: FailureInput): FailureReason {
  const { rollout: r } = f;
  if (r.timedOut) return 'timed out';
  if (f.success) return 'none';
  const turns = trajectoryTurns(r.completion);
  const { invalidMoves, callErrors } = invalidObservations(turns);
  if (r.error) return 'tool error';
  if (r.toolCalls === 0) return turns.some((t) => t.model_text.includes('<tool_call>')) ? 'malformed call' : 'never called a tool';
  if (r.overBudget || r.truncated) return 'over budget';
  if (callErrors > 0) return 'tool error';
  if (invalidMoves > 0) return 'invalid move';
  if (turns.some((t) => t.call === null && t.model_text.includes('<tool_call>'))) return 'malformed call';
  const calling = turns.filter((t) => t.call !== null).length;
  if (f.maxIterations !== null && calling >= f.maxIterations && turns[turns.length - 1]?.call) return 'episode cap';
  if (f.done === false) return 'stopped early';
  return 'none';
}

/** Invalid calls of an episode: tool failures plus moves the game refused without raising. */
export function invalidCalls(rollout: Pick<Rollout, 'completion' | 'toolFailures'>): number {
  const { invalidMoves, callErrors } = invalidObservations(trajectoryTurns(rollout.completion));
  return Math.max(rollout.toolFailures, invalidMoves + callErrors);
}
