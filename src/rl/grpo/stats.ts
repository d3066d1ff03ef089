// NaN-aware statistics with torch's conventions (std is unbiased, ÷(n−1)), shared by rewards,
// advantages and metrics so the three agree on what "std" means.

/** Mean over the non-NaN values; NaN when there are none. */
export function nanmean(xs: ArrayLike<number>): number {
  let sum = 0;
  let n = 0;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    if (!Number.isNaN(x)) {
      sum += x;
      n++;
    }
  }
  return n === 0 ? NaN : sum / n;
}

/** Unbiased std over the non-NaN values; NaN when fewer than two (TRL's nanstd). */
export function nanstd(xs: ArrayLike<number>): number {
  const mu = nanmean(xs);
  let ss = 0;
  let n = 0;
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    if (!Number.isNaN(x)) {
      ss += (x - mu) * (x - mu);
      n++;
    }
  }
  return n <= 1 ? NaN : Math.sqrt(ss / (n - 1));
}

/** Sum over the non-NaN values (0 when there are none, like torch.nansum). */
export function nansum(xs: ArrayLike<number>): number {
  let sum = 0;
  for (let i = 0; i < xs.length; i++) if (!Number.isNaN(xs[i]!)) sum += xs[i]!;
  return sum;
}

export function nanmin(xs: ArrayLike<number>): number {
  let m = Infinity;
  for (let i = 0; i < xs.length; i++) if (!Number.isNaN(xs[i]!) && xs[i]! < m) m = xs[i]!;
  return m === Infinity ? NaN : m;
}

export function nanmax(xs: ArrayLike<number>): number {
  let m = -Infinity;
  for (let i = 0; i < xs.length; i++) if (!Number.isNaN(xs[i]!) && xs[i]! > m) m = xs[i]!;
  return m === -Infinity ? NaN : m;
}

/** torch.quantile with linear interpolation over the given values (sorted copy). */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}
