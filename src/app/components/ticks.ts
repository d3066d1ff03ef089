// Axis tick labels that never repeat or lie: uPlot's default labels round a narrow range (entropy
// drifting in its fourth decimal) to one number printed on every tick, and a fixed number of digits
// prints 0.25 as "0.3". Use the fewest digits that write every tick exactly and tell neighbours apart.

export function distinctTickLabels(values: readonly number[]): string[] {
  const finite = values.filter((v) => Number.isFinite(v));
  const biggest = Math.max(0, ...finite.map(Math.abs));
  const exponential = biggest !== 0 && (biggest < 1e-3 || biggest >= 1e5);
  // "Exact" up to float noise: a millionth of the smallest gap between ticks (or of the value).
  const gaps = finite.slice(1).map((v, i) => Math.abs(v - finite[i]!)).filter((g) => g > 0);
  const tolerance = (gaps.length ? Math.min(...gaps) : biggest || 1) * 1e-6;
  for (let digits = exponential ? 1 : 0; digits <= 12; digits++) {
    const labels = values.map((v) => (!Number.isFinite(v) ? '' : exponential ? v.toExponential(digits) : v.toFixed(digits)));
    const exact = values.every((v, i) => !Number.isFinite(v) || Math.abs(Number(labels[i]) - v) <= tolerance);
    const distinct = labels.every((l, i) => i === 0 || l !== labels[i - 1]);
    if (exact && distinct) return labels.map((l) => (exponential ? l.replace('e+', 'e') : trimZeros(l)));
  }
  return values.map((v) => String(v));
}

function trimZeros(s: string): string {
  const t = s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
  return t === '-0' ? '0' : t;
}
