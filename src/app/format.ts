// Small formatting helpers for the UI.

export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  const s = Math.round(seconds);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}

export function formatNumber(v: number | null | undefined, digits = 3): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  if (v !== 0 && (Math.abs(v) < 1e-3 || Math.abs(v) >= 1e5)) return v.toExponential(2);
  return v.toFixed(digits).replace(/\.?0+$/, '') || '0';
}

/** Splits text so special tokens (`<|im_start|>`, `<think>`, `<tool_call>` …) can be drawn faintly. */
export function splitSpecialTokens(text: string): { text: string; special: boolean }[] {
  const re = /(<\|[a-z_]+\|>|<\/?(?:think|tool_call|tool_response)>)/g;
  const out: { text: string; special: boolean }[] = [];
  let last = 0;
  for (const m of text.matchAll(re)) {
    if (m.index! > last) out.push({ text: text.slice(last, m.index), special: false });
    out.push({ text: m[0], special: true });
    last = m.index! + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last), special: false });
  return out;
}

/** "just now", "5 min ago", "3 h ago", else the date: how long ago a run was touched. */
export function formatAgo(iso: string, now = Date.now()): string {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '—';
  const s = Math.max(0, (now - t) / 1000);
  if (s < 60) return 'just now';
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return new Date(t).toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
}

const pct = (v: number) => `${Math.round(v * 100)}%`;

/** A success rate with its 95% interval: "62% (45%–77%)". */
export function formatSuccess(rate: number, ci95: readonly [number, number]): string {
  return `${pct(rate)} (${pct(ci95[0])}–${pct(ci95[1])})`;
}

/** A paired difference with its 95% interval, in percentage points: "+12 pp (−3 to +27)". */
export function formatDifference(d: number, ci95: readonly [number, number]): string {
  const pp = (v: number) => `${v >= 0 ? '+' : '−'}${Math.abs(Math.round(v * 100))}`;
  return Number.isFinite(ci95[0]) ? `${pp(d)} pp (${pp(ci95[0])} to ${pp(ci95[1])})` : `${pp(d)} pp`;
}
