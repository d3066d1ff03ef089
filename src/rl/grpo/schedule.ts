// Learning-rate schedules with transformers' formulas (get_*_schedule_with_warmup). The lr used by
// optimizer step k (0-based) is peak · factor(k), as the scheduler is stepped after each update.

import type { SchedulerType } from '../config.ts';

export interface Schedule {
  type: SchedulerType;
  peak: number;
  warmupSteps: number;
  totalSteps: number;
}

/** warmup_steps when > 0, else ceil(warmup_ratio · total) (TrainingArguments.get_warmup_steps). */
export function warmupSteps(warmup_steps: number, warmup_ratio: number, totalSteps: number): number {
  return warmup_steps > 0 ? warmup_steps : Math.ceil(warmup_ratio * totalSteps);
}

export function learningRateAt(s: Schedule, step: number): number {
  // transformers' plain "constant" schedule ignores warmup.
  if (s.type === 'constant') return s.peak;
  if (step < s.warmupSteps) return (s.peak * step) / Math.max(1, s.warmupSteps);
  const progress = (step - s.warmupSteps) / Math.max(1, s.totalSteps - s.warmupSteps);
  switch (s.type) {
    case 'constant_with_warmup':
      return s.peak;
    case 'linear':
      return s.peak * Math.max(0, (s.totalSteps - step) / Math.max(1, s.totalSteps - s.warmupSteps));
    case 'cosine':
      return s.peak * Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress)));
  }
}
