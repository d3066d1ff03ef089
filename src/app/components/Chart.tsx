// A uPlot line chart of one or more metrics against the training step. Missing values (NaN, null)
// are gaps. A band series pair (mean ± std) is drawn as dashed bounds.
import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { StepRecord } from '../api.ts';

export interface ChartSeries {
  label: string;
  value: (m: Record<string, number | null>) => number | null | undefined;
  color: string;
  dash?: boolean;
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#be185d'];
export const color = (i: number) => PALETTE[i % PALETTE.length];

export function Chart({ title, steps, series, height = 180 }: { title: string; steps: StepRecord[]; series: ChartSeries[]; height?: number }) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const key = series.map((s) => s.label).join('|');

  const data = (): uPlot.AlignedData => [
    steps.map((s) => s.step),
    ...series.map((s) => steps.map((st) => {
      const v = s.value(st.metrics);
      return v === null || v === undefined || !Number.isFinite(v) ? null : v;
    })),
  ];

  useEffect(() => {
    if (!host.current) return;
    const width = Math.max(240, host.current.clientWidth);
    plot.current = new uPlot(
      {
        width,
        height,
        // Steps are integers: integer tick increments, and a visible range around a single point.
        // A flat series (all rewards 0 early on) gets a ±1 band instead of uPlot's 0–100.
        scales: {
          x: { time: false, range: (_u, min, max) => (min === max ? [min - 1, max + 1] : [min, max]) },
          y: { range: (_u, min, max) => (min === max ? [min - 1, max + 1] : uPlot.rangeNum(min, max, 0.1, true)) },
        },
        axes: [{ label: 'step', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000] }, {}],
        legend: { live: true },
        series: [{ label: 'step' }, ...series.map((s) => ({ label: s.label, stroke: s.color, width: 2, dash: s.dash ? [4, 4] : undefined, spanGaps: false, points: { show: steps.length < 40 } }))],
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

  const points = steps.filter((st) => series.some((s) => Number.isFinite(s.value(st.metrics) ?? NaN))).length;
  return (
    <figure className="chart" data-testid={`chart-${title}`} data-points={points}>
      <figcaption>{title}{points === 0 && steps.length > 0 ? <span className="muted"> — not logged in this run</span> : null}</figcaption>
      <div ref={host} />
    </figure>
  );
}
