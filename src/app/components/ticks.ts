// Axis tick labels that never repeat: uPlot's default labels round a narrow range (entropy drifting
// in its fourth decimal) to one number printed on every tick. Use just enough digits to tell
// neighbouring ticks apart.

export function distinctTickLabels(values: readonly number[]): string[] {
  const finite = values.filter((v) => Number.isFinite(v));
  const biggest = Math.max(0, ...finite.map(Math.abs));
  const exponential = biggest !== 0 && (biggest < 1e-3 || biggest >= 1e5);
  for (let digits = exponential ? 1 : 0; digits <= 10; digits++) {
    const labels = values.map((v) => (!Number.isFinite(v) ? '' : exponential ? v.toExponential(digits) : trimZeros(v.toFixed(digits))));
    if (labels.every((l, i) => i === 0 || l !== labels[i - 1])) return labels.map(tidyExponent);
  }
  return values.map((v) => String(v));
}

function trimZeros(s: string): string {
  const t = s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
  return t === '-0' ? '0' : t;
}

/** JavaScript writes 1e5 as "1.0e+5": drop the plus. */
function tidyExponent(s: string): string {
  return s.replace('e+', 'e');
}
