// The progress bar's time-left: it counts down between steps, and a resumed run (no step timed in
// this tab yet) has one from its stored steps' step_time.
import { describe, expect, it } from 'vitest';
import { secondsLeft } from '../../src/app/time-left.ts';

describe('time left', () => {
  it('counts down between steps from the last step’s ETA', () => {
    const base = { arrivals: [0, 10_000, 20_000], stepTimes: [], total: 12, done: 3, since: 0 };
    expect(secondsLeft({ ...base, now: 20_000 })).toBe(90); // 10 s a step × 9 steps
    expect(secondsLeft({ ...base, now: 21_000 })).toBe(89);
    expect(secondsLeft({ ...base, now: 25_500 })).toBe(84.5);
  });

  it('exists right after a resume, from the stored steps’ step_time, counted from when this tab took over', () => {
    const resumed = { arrivals: [], stepTimes: [4, 6, null], total: 10, done: 6, since: 1_000 };
    expect(secondsLeft({ ...resumed, now: 1_000 })).toBe(20);
    expect(secondsLeft({ ...resumed, now: 3_000 })).toBe(18);
    expect(secondsLeft({ ...resumed, stepTimes: [], now: 3_000 })).toBeNaN();
  });
});
