export function ProgressBar({ fraction, label }: { fraction: number; label?: string }) {
  const pct = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0)) * 100;
  return (
    <div className="progress" role="progressbar" aria-valuenow={Math.round(pct)} aria-valuemin={0} aria-valuemax={100}>
      <div className="bar" style={{ width: `${pct}%` }} />
      {label && <span className="label">{label}</span>}
    </div>
  );
}
