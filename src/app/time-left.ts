// Time left of the run this tab trains, as the progress bar shows it: the mean step time × the steps
// left, counted down every second since the last step ended. The mean is measured between this tab's
// steps; a resumed run has none yet, so it starts from the stored steps' step_time.

export interface TimeLeftInput {
  /** performance.now() at each step this tab received, in order. */
  arrivals: number[];
  /** step_time (seconds) of the latest stored and received steps. */
  stepTimes: (number | null | undefined)[];
  total: number;
  done: number;
  /** performance.now() when this tab took the run on (the count starts there before any step arrives). */
  since: number;
  now: number;
}

/** Seconds left (may fall below 0 when the current step runs longer than the mean); NaN when unknown. */
export function secondsLeft({ arrivals, stepTimes, total, done, since, now }: TimeLeftInput): number {
  const timed = stepTimes.filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0);
  const perStep = arrivals.length > 1 ? (arrivals[arrivals.length - 1]! - arrivals[0]!) / 1000 / (arrivals.length - 1) : timed.length ? timed.reduce((a, b) => a + b, 0) / timed.length : NaN;
  if (!total || !Number.isFinite(perStep)) return NaN;
  const lastAt = arrivals.length ? arrivals[arrivals.length - 1]! : since;
  return perStep * (total - done) - (now - lastAt) / 1000;
}
