// The evaluation's numbers against known values: Wilson intervals (as statsmodels'
// proportion_confint(method='wilson') gives them), the paired difference and its interval, the
// failure reasons told from rollouts, and the summary's fields (per task, wordle's columns).
import { describe, expect, it } from 'vitest';
import { comparison, pairedDifference, summarize, wilsonInterval } from '../../src/rl/eval/summary.ts';
import { failureReason, invalidCalls, trajectoryTurns, type Trajectory } from '../../src/rl/eval/trajectory.ts';
import type { ChatMessage } from '../../src/model/chat-template.ts';

describe('wilsonInterval', () => {
  it.each([
    [5, 10, 0.236593, 0.763407],
    [0, 128, 0, 0.029141],
    [64, 128, 0.414652, 0.585348],
    [128, 128, 0.970859, 1],
    [1, 3, 0.061492, 0.792340],
  ])('%i of %i → [%f, %f]', (x, n, lo, hi) => {
    const [a, b] = wilsonInterval(x, n);
    expect(a).toBeCloseTo(lo, 5);
    expect(b).toBeCloseTo(hi, 5);
  });
});

describe('pairedDifference', () => {
  it('mean of a − b with the normal interval of the mean difference', () => {
    const d = pairedDifference([1, 1, 0, 1], [0, 1, 0, 0]);
    expect(d.difference).toBe(0.5);
    // sd of [1, 0, 0, 1] = √(1/3); half-width 1.959964 · sd / 2
    expect(d.ci95[0]).toBeCloseTo(0.5 - 0.565792, 5);
    expect(d.ci95[1]).toBeCloseTo(0.5 + 0.565792, 5);
    expect(() => pairedDifference([1], [1, 0])).toThrow(/same episodes/);
  });
});

const call = (name: string, args: Record<string, unknown> = {}) => ({ type: 'function' as const, function: { name, arguments: args } });
const assistant = (content: string, calls: ReturnType<typeof call>[] = []): ChatMessage => ({ role: 'assistant', content, ...(calls.length ? { tool_calls: calls } : {}) });
const tool = (name: string, content: string): ChatMessage => ({ role: 'tool', name, content });

function rollout(completion: ChatMessage[], extra: Record<string, unknown> = {}) {
  const toolCalls = completion.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : [])).length;
  return { completion, toolCalls, toolFailures: 0, truncated: false, ...extra };
}

describe('failure reasons', () => {
  const reason = (completion: ChatMessage[], o: { success?: boolean; done?: boolean | null; extra?: Record<string, unknown>; cap?: number | null } = {}) =>
    failureReason({ rollout: rollout(completion, o.extra) as never, success: o.success ?? false, done: o.done ?? null, maxIterations: o.cap ?? null });

  it('tells each cause apart', () => {
    expect(reason([assistant('I will not.')])).toBe('never called a tool');
    expect(reason([assistant('<tool_call>\n{move: left}\n</tool_call>')])).toBe('malformed call');
    expect(reason([assistant('', [call('move', { direction: 'up' })]), tool('move', `{'error': "Invalid direction 'up': must be 'left' or 'right'."}`), assistant('ok')])).toBe('invalid move');
    expect(reason([assistant('', [call('guess', { guess: '[xxxxx]' })]), tool('guess', 'You attempted an invalid move. Reason: not an English word')])).toBe('invalid move');
    expect(reason([assistant('', [call('jump')]), tool('jump', "{'error': 'Tool jump not found.'}"), assistant('')])).toBe('tool error');
    expect(reason([assistant('', [call('stay')])], { extra: { overBudget: { tokens: 500, budget: 400 } } })).toBe('over budget');
    expect(reason([assistant('', [call('stay')])], { extra: { timedOut: true, error: 'episode timed out' } })).toBe('timed out');
    expect(reason([], { extra: { error: 'reset failed: refused' } })).toBe('tool error');
    expect(reason([assistant('', [call('stay')]), tool('stay', 'left'), assistant('', [call('stay')]), tool('stay', 'left')], { cap: 2 })).toBe('episode cap');
    expect(reason([assistant('', [call('stay')]), tool('stay', 'left'), assistant('Done.')], { done: false })).toBe('stopped early');
    expect(reason([assistant('', [call('stay')]), tool('stay', 'missed'), assistant('Done.')], { done: true })).toBe('none');
    expect(reason([assistant('', [call('stay')]), tool('stay', 'caught'), assistant('Done.')], { success: true, done: true })).toBe('none');
  });

  it('turns pair each model text and call with what answered', () => {
    const turns = trajectoryTurns([assistant('Sure.', [call('move', { direction: 'left' }), call('stay')]), tool('move', 'a'), tool('stay', 'b'), assistant('Done.')]);
    expect(turns).toEqual([
      { model_text: 'Sure.', call: { name: 'move', arguments: { direction: 'left' } }, more_calls: [{ name: 'stay', arguments: {} }], observations: ['a', 'b'] },
      { model_text: 'Done.', call: null, observations: [] },
    ]);
    expect(invalidCalls({ completion: [assistant('', [call('x')]), tool('x', "{'error': 'Tool x not found.'}")], toolFailures: 1 })).toBe(1);
  });
});

function traj(task: string, seed: number, success: boolean, extra: Partial<Trajectory> = {}): Trajectory {
  return { task, seed, prompt: '', turns: [], reward: success ? 1 : 0, rewards: { r: success ? 1 : 0 }, success, done: true, tool_calls: 3, invalid_calls: 0, failure_reason: 'none', ...extra };
}

describe('summarize', () => {
  it('fields, per task for several tasks, the failure histogram', () => {
    const ts = [traj('a', 0, true), traj('a', 1, false, { failure_reason: 'never called a tool', tool_calls: 0 }), traj('b', 2, true, { invalid_calls: 1 }), traj('b', 3, false, { reward: null, failure_reason: 'tool error' })];
    const s = summarize(ts, 'browsergym');
    expect(s).toMatchObject({ episodes: 4, success_rate: 0.5, mean_reward: 2 / 3, tool_calls_per_episode: 9 / 4, invalid_calls_per_episode: 0.25, failure_reasons: { 'never called a tool': 1, 'tool error': 1, none: 2 } });
    expect(s.success_ci95).toEqual(wilsonInterval(2, 4));
    expect(Object.keys(s.per_task!)).toEqual(['a', 'b']);
    expect(s.per_task!.b!.success_rate).toBe(0.5);
    expect(s.wordle).toBeUndefined();
  });

  it("wordle: the tutorial's wins, guesses per win, invalid guesses", () => {
    const s = summarize([traj('wordle', 0, true, { tool_calls: 5, invalid_calls: 1 }), traj('wordle', 1, true, { tool_calls: 3 }), traj('wordle', 2, false, { tool_calls: 6, invalid_calls: 2 })], 'wordle');
    expect(s.wordle).toEqual({ wins: 2, guesses_per_win: 3.5, invalid_guesses: 3 });
  });

  it('comparison pairs the same episodes and refuses different ones', () => {
    const a = [traj('c', 0, true), traj('c', 1, true)];
    const b = [traj('c', 0, false), traj('c', 1, true)];
    expect(comparison(a, b).success.difference).toBe(0.5);
    expect(() => comparison(a, [traj('c', 5, true), traj('c', 1, true)])).toThrow(/not the same episodes/);
  });
});
