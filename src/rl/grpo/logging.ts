// logging_steps with TRL's meaning: the trainer logs one record every logging_steps optimizer steps
// (and after the last step), holding each metric's NaN-filtered mean over the steps since the previous
// record (grpo-semantics.md §13). Values that are a position rather than a rate — the learning rate,
// the cumulative token count, the epoch, the last gradient norm — are the latest step's, as in
// transformers' Trainer logs.

import type { Metrics } from './metrics.ts';

const LATEST = new Set(['learning_rate', 'num_tokens', 'epoch', 'grad_norm']);

export class MetricsWindow {
  private rows: Metrics[] = [];

  /** `loggingSteps`: the config's logging_steps (checked there, src/rl/config.ts). */
  constructor(private readonly loggingSteps: number) {}

  /** Adds one step's metrics; returns the record to log when `step` is a logging step (or the last one). */
  add(step: number, metrics: Metrics, last: boolean): Metrics | undefined {
    this.rows.push(metrics);
    if (step % this.loggingSteps !== 0 && !last) return undefined;
    const rows = this.rows;
    this.rows = [];
    const keys = new Set(rows.flatMap((r) => Object.keys(r)));
    const out: Metrics = {};
    for (const k of keys) {
      const values = rows.map((r) => r[k]).filter((v): v is number => v !== undefined);
      if (LATEST.has(k)) {
        out[k] = values[values.length - 1]!;
        continue;
      }
      const finite = values.filter((v) => !Number.isNaN(v));
      out[k] = finite.length === 0 ? NaN : finite.reduce((a, b) => a + b, 0) / finite.length;
    }
    return out;
  }
}
