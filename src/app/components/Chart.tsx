// A uPlot line chart of one or more metrics against the training step. Every chart of a run shares
// one step axis (counted from 1, as the progress bar and the rollout tabs count) with the SFT warm-up
// shaded and labelled apart from GRPO. The title carries the latest value; the legend shows values
// only while the pointer is over the chart (a chart of several runs carries each run's latest value).
// Missing values (NaN, null) are gaps. Evaluations are points of their own, not joined. A band series pair (mean ± std) is drawn as dashed bounds. A
// chart with no value yet shows an empty state of its size, not axes around nothing.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { StepRecord } from '../api.ts';
import { formatNumber } from '../format.ts';
import { distinctTickLabels } from './ticks.ts';

export interface ChartSeries {
  label: string;
  value: (m: Record<string, number | null>) => number | null | undefined;
  color: string;
  dash?: boolean;
  /** Drawn as points only (an evaluation now and then, beside training's line), never joined. */
  points?: boolean;
  /** A points series drawn as a larger ring: a point at the same value as another's stays visible around it. */
  ring?: boolean;
}

/** The run's step axis: steps 1…total, the first `sftSteps` of them the SFT warm-up. */
export interface StepAxis {
  total: number;
  sftSteps: number;
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#be185d'];
export const color = (i: number) => PALETTE[i % PALETTE.length];

const finite = (v: number | null | undefined): v is number => v !== null && v !== undefined && Number.isFinite(v);

/**
 * `latest`: 'first' puts the first series' latest value beside the title (a run's metric); 'each' puts
 * every series' own (one series a run, in the compare view). `note`: what the metric means, under the title.
 */
export function Chart({ title, steps, series, axis, height = 180, format = formatNumber, yRange, latest: latestOf = 'first', note }: { title: string; steps: StepRecord[]; series: ChartSeries[]; axis: StepAxis; height?: number; format?: (v: number) => string; yRange?: [number, number]; latest?: 'first' | 'each'; note?: string }) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const axisRef = useRef(axis);
  axisRef.current = axis;
  const key = series.map((s) => s.label).join('|');

  const data = (): uPlot.AlignedData => [
    steps.map((s) => s.step + 1),
    ...series.map((s) => steps.map((st) => {
      const v = s.value(st.metrics);
      return finite(v) ? v : null;
    })),
  ];

  useEffect(() => {
    if (!host.current) return;
    const width = Math.max(240, host.current.clientWidth);
    plot.current = new uPlot(
      {
        width,
        height,
        scales: {
          // The whole run's steps, so every chart lines up with the others and with the progress bar.
          x: {
            time: false,
            // Half a step of margin: the first tick is step 1, never a step 0 that does not exist.
            range: (_u, _min, max) => [0.5, Math.max(axisRef.current.total, Number.isFinite(max) ? max : 1) + 0.5],
          },
          // A flat series (all rewards 0 early on) gets a ±1 band instead of uPlot's 0–100.
          // A rate has its own fixed 0–1 range.
          y: { range: (_u, min, max) => yRange ?? (min === max ? [min - 1, max + 1] : uPlot.rangeNum(min, max, 0.1, true)) },
        },
        axes: [
          { label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000], values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')) },
          // Wide enough for the longest label (a narrow range needs many digits).
          { values: (_u, splits) => distinctTickLabels(splits), size: (_u, values) => Math.max(40, 20 + 8 * Math.max(0, ...(values ?? []).map((v) => String(v).length))) },
        ],
        legend: { live: true },
        cursor: { points: { show: true } },
        hooks: { drawClear: [(u) => drawPhases(u, axisRef.current)] },
        series: [{ label: 'step' }, ...series.map((s) => (s.points
          ? { label: s.label, stroke: s.color, width: 2, paths: () => null, points: { show: true, size: s.ring ? 16 : 9, width: 2, fill: s.ring ? 'rgba(0,0,0,0)' : s.color, stroke: s.color } }
          : { label: s.label, stroke: s.color, width: 2, dash: s.dash ? [4, 4] : undefined, spanGaps: false, points: { show: steps.length < 40 } }))],
      },
      data(),
      host.current,
    );
    const resize = new ResizeObserver(() => {
      if (host.current && plot.current) plot.current.setSize({ width: Math.max(240, host.current.clientWidth), height });
    });
    resize.observe(host.current);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
    // Recreate only when the set of series changes; data updates go through setData below.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, height]);

  useEffect(() => {
    plot.current?.setData(data());
  });

  const points = steps.filter((st) => series.some((s) => finite(s.value(st.metrics)))).length;
  const latestOfSeries = (s: ChartSeries | undefined) => [...steps].reverse().map((st) => s?.value(st.metrics)).find(finite);
  const latest = latestOfSeries(series[0]);
  return (
    <figure className="chart" data-testid={`chart-${title}`} data-points={points}>
      <figcaption>
        {title}
        {latestOf === 'first' && latest !== undefined && <span className="current" data-testid="chart-current">{format(latest)}</span>}
        {latestOf === 'each' && series.map((s) => {
          const v = latestOfSeries(s);
          return v === undefined ? null : (
            <span key={s.label} className="current" data-testid="chart-current-series" title={s.label} style={{ color: s.color }}>{format(v)}</span>
          );
        })}
      </figcaption>
      {note && <p className="chart-note muted" data-testid="chart-note">{note}</p>}
      {points === 0 && (
        <div className="chart-empty muted" style={{ height }} data-testid="chart-empty">
          {steps.length === 0 ? 'no steps yet: the first point comes with the first step' : 'not logged yet'}
        </div>
      )}
      {/* Kept mounted while empty (hidden), so the first value lands on a plot already laid out. */}
      <div ref={host} style={points === 0 ? { display: 'none' } : undefined} />
    </figure>
  );
}

/** Shades the SFT warm-up and labels both phases, under the series. */
function drawPhases(u: uPlot, axis: StepAxis): void {
  if (axis.sftSteps <= 0) return;
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  const split = Math.min(left + width, Math.max(left, u.valToPos(axis.sftSteps + 0.5, 'x', true)));
  const dpr = devicePixelRatio || 1;
  ctx.save();
  ctx.fillStyle = 'rgba(245, 158, 11, 0.12)';
  ctx.fillRect(left, top, split - left, height);
  ctx.font = `${11 * dpr}px system-ui, sans-serif`;
  ctx.fillStyle = '#92400e';
  // uPlot leaves the y axis's right alignment set on the context.
  ctx.textAlign = 'left';
  ctx.textBaseline = 'top';
  if (split - left > 40 * dpr) ctx.fillText('SFT warm-up', left + 4 * dpr, top + 3 * dpr);
  ctx.fillStyle = '#1e40af';
  if (left + width - split > 40 * dpr) ctx.fillText('GRPO', split + 4 * dpr, top + 3 * dpr);
  ctx.restore();
}
