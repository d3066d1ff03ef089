// The dashboard of a run: the task's success rate first (what a person watches a demo for, with what
// "success" means for the task), then every metric people watch while GRPO learns, all on the run's one
// step axis. A chart of one metric is labelled with its TRL name in the run's first colour, the same
// way for every such chart.
import type { StepRecord } from '../api.ts';
import { successDefinition } from '../success-definition.ts';
import { Chart, color, type ChartSeries, type StepAxis } from './Chart.tsx';

const m = (name: string) => (x: Record<string, number | null>) => x[name];
const percent = (v: number) => `${Math.round(v * 100)}%`;

/** A reward function's mean that is the reward itself at every step (a task's one function, weight 1) would be a second legend for one line. */
const sameAsReward = (steps: StepRecord[], key: string) =>
  steps.every((s) => {
    const [a, b] = [s.metrics[key], s.metrics.reward];
    return typeof a !== 'number' || typeof b !== 'number' || Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
  });

function rewardSeries(steps: StepRecord[]): ChartSeries[] {
  const fns = new Set<string>();
  for (const s of steps) for (const k of Object.keys(s.metrics)) if (/^rewards\/.+\/mean$/.test(k)) fns.add(k);
  // Only a task's one function can be the reward itself; of several, each is drawn (all 0 early on is no match).
  if (fns.size === 1 && sameAsReward(steps, [...fns][0]!)) fns.clear();
  return [
    { label: 'reward', value: m('reward'), color: color(0) },
    { label: '+std', value: (x) => (x.reward ?? NaN) + (x.reward_std ?? NaN), color: color(0), dash: true },
    { label: '−std', value: (x) => (x.reward ?? NaN) - (x.reward_std ?? NaN), color: color(0), dash: true },
    ...[...fns].sort().map((k, i) => ({ label: k.slice('rewards/'.length, -'/mean'.length), value: m(k), color: color(i + 1) })),
  ];
}

/** A metric logged at some steps only: present in any step. */
const logged = (steps: StepRecord[], key: string) => steps.some((s) => typeof s.metrics[key] === 'number');

/**
 * Held-out evaluations as points beside training's line: the trainer's eval loop (TRL's `eval_*`,
 * at eval_steps) and the app's Evaluate (`evaluate/*`, greedy, with the base on the same episodes).
 */
function evalPoints(steps: StepRecord[], kind: 'success' | 'reward'): ChartSeries[] {
  const keys = kind === 'success'
    ? [['eval_success_rate', 'held-out (eval loop)', 3], ['evaluate/success_rate', 'held-out, trained (Evaluate)', 4], ['evaluate/base_success_rate', 'held-out, base (Evaluate)', 6]] as const
    : [['eval_reward', 'eval_reward', 3], ['evaluate/mean_reward', 'held-out, trained (Evaluate)', 4], ['evaluate/base_mean_reward', 'held-out, base (Evaluate)', 6]] as const;
  // The base as a ring around the trained model's point: at equal values both stay visible.
  return keys.filter(([k]) => logged(steps, k)).map(([k, label, c]) => ({ label, value: m(k), color: color(c), points: true, ring: k.startsWith('evaluate/base') }));
}

/** One metric's chart, as every single-metric chart is drawn: its TRL name as the legend, the first colour. */
const single = (title: string, metric: string, steps: StepRecord[], axis: StepAxis) => (
  <Chart title={title} steps={steps} axis={axis} series={[{ label: metric, value: m(metric), color: color(0) }]} />
);

/** `klOff`: the run's beta is 0, so no KL is computed: its panel says so instead of waiting for values. */
export function Charts({ steps, axis, task, klOff }: { steps: StepRecord[]; axis: StepAxis; task: string; klOff: boolean }) {
  // Shown from the start (no layout jump at the first GRPO step); left out only for a run whose GRPO
  // steps logged no rollouts to count successes in (log_completions = false).
  const grpoSteps = steps.filter((s) => !s.metrics.phase_sft);
  const hasSuccess = grpoSteps.length === 0 || steps.some((s) => s.metrics.success_rate !== undefined && s.metrics.success_rate !== null) || evalPoints(steps, 'success').length > 0;
  return (
    <>
      <div className="charts headline">
        {hasSuccess && (
          <Chart title="success rate" steps={steps} axis={axis} height={220} format={percent} yRange={[0, 1]} note={successDefinition(task)} series={[{ label: `${task || 'task'} success`, value: m('success_rate'), color: color(2) }, ...evalPoints(steps, 'success')]} />
        )}
        <Chart title="reward" steps={steps} axis={axis} height={220} series={[...rewardSeries(steps), ...evalPoints(steps, 'reward')]} />
      </div>
      <div className="charts">
        {single('loss', 'loss', steps, axis)}
        {klOff ? (
          <div className="chart-off panel" data-testid="kl-off"><b>kl</b> <span className="muted">off: beta = 0 (no reference policy, as in TRL)</span></div>
        ) : (
          single('kl', 'kl', steps, axis)
        )}
        {single('entropy', 'entropy', steps, axis)}
        <Chart
          title="clip ratio"
          steps={steps}
          axis={axis}
          series={[
            { label: 'region', value: m('clip_ratio/region_mean'), color: color(0) },
            { label: 'low', value: m('clip_ratio/low_mean'), color: color(1) },
            { label: 'high', value: m('clip_ratio/high_mean'), color: color(2) },
          ]}
        />
        <Chart
          title="completion length"
          steps={steps}
          axis={axis}
          series={[
            { label: 'mean', value: m('completions/mean_length'), color: color(0) },
            { label: 'min', value: m('completions/min_length'), color: color(1), dash: true },
            { label: 'max', value: m('completions/max_length'), color: color(2), dash: true },
          ]}
        />
        <Chart
          title="tools"
          steps={steps}
          axis={axis}
          series={[
            { label: 'call frequency', value: m('tools/call_frequency'), color: color(0) },
            { label: 'failure frequency', value: m('tools/failure_frequency'), color: color(1) },
            { label: 'over budget', value: m('tools/over_budget_frequency'), color: color(2), dash: true },
          ]}
        />
        {single('tokens/s', 'tokens_per_second', steps, axis)}
        {single('step time (s)', 'step_time', steps, axis)}
        {single('GPU memory (MiB)', 'gpu_memory_mib', steps, axis)}
      </div>
    </>
  );
}
