// "Export as a page": one run as one self-contained HTML file that opens anywhere, from disk, with no
// server and no script: its charts as inline SVG (one step axis, TRL's metric names), its config, the
// rollouts of its last steps, and the trained weights embedded as download links while they are small
// enough (the LoRA adapter as a data: URL per file; a fully fine-tuned model, whose folder is only
// useful whole, as one zip), else named with the run store route they can be fetched from.
// Steps: the store keys them from 0 (the API's `step`); every human-facing view, this page and the
// app alike, shows step + 1, so "step 1" is the first step everywhere a person reads one.
import type { ArtifactInfo, RolloutRecord, RunSummary, StepRecord } from './runs-wire.ts';

/** Weight bytes (adapter or full model) embedded in the page at most (base64 makes them a third larger). */
export const EMBED_LIMIT_BYTES = 8 * 1024 * 1024;
/** Steps whose rollouts the page shows, the first rollouts of each it shows, and characters of one rollout turn. */
export const PAGE_ROLLOUT_STEPS = 3;
export const PAGE_ROLLOUTS_PER_STEP = 64;
const TURN_CHARS = 2000;

const CHARTS: { title: string; metric: string }[] = [
  { title: 'success rate', metric: 'success_rate' },
  { title: 'reward', metric: 'reward' },
  { title: 'held-out success (eval loop)', metric: 'eval_success_rate' },
  { title: 'held-out success (Evaluate)', metric: 'evaluate/success_rate' },
  { title: 'loss', metric: 'loss' },
  { title: 'kl', metric: 'kl' },
  { title: 'entropy', metric: 'entropy' },
  { title: 'completion length', metric: 'completions/mean_length' },
];

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const num = (v: number) => (Math.abs(v) >= 100 || v === 0 ? String(Math.round(v * 100) / 100) : v.toPrecision(3));

/** One metric against the step (steps counted from 1), as an SVG polyline with its range labelled. */
function svgChart(title: string, metric: string, steps: StepRecord[]): string | null {
  const points = steps.flatMap((s) => (typeof s.metrics[metric] === 'number' ? [[s.step + 1, s.metrics[metric] as number] as const] : []));
  if (points.length === 0) return null;
  const W = 420, H = 180, L = 48, R = 10, T = 10, B = 28;
  const xs = points.map((p) => p[0]);
  const ys = points.map((p) => p[1]);
  const [x0, x1] = [Math.min(1, ...xs), Math.max(...xs, 2)];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (y0 === y1) [y0, y1] = [y0 - 1, y1 + 1];
  const px = (x: number) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const py = (y: number) => T + (1 - (y - y0) / (y1 - y0)) * (H - T - B);
  const line = points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
  const dots = points.map(([x, y]) => `<circle cx="${px(x).toFixed(1)}" cy="${py(y).toFixed(1)}" r="2.5"/>`).join('');
  const last = ys[ys.length - 1]!;
  return `<figure class="chart" data-testid="page-chart" data-metric="${escape(metric)}" data-points="${points.length}">
<figcaption><b>${escape(title)}</b> <code>${escape(metric)}</code> ${num(last)}</figcaption>
<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${escape(title)} per step">
<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" class="axis"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" class="axis"/>
<text x="${L - 4}" y="${T + 8}" text-anchor="end">${num(y1)}</text><text x="${L - 4}" y="${H - B}" text-anchor="end">${num(y0)}</text>
<text x="${L}" y="${H - 8}">step ${x0}</text><text x="${W - R}" y="${H - 8}" text-anchor="end">${x1}</text>
<polyline points="${line}" class="line"/><g class="dots">${dots}</g></svg></figure>`;
}

const pct = (v: unknown) => (typeof v === 'number' ? `${Math.round(v * 100)}%` : '—');
const interval = (m: Record<string, number | null>, key: string) => `${pct(m[key])} (${pct(m[`${key.replace(/_rate$/, '')}_ci95_low`])}–${pct(m[`${key.replace(/_rate$/, '')}_ci95_high`])})`;
const pp = (v: number | null | undefined) => (typeof v === 'number' ? `${v >= 0 ? '+' : '−'}${Math.abs(Math.round(v * 100))}` : '?');

/**
 * Every held-out evaluation of the run, a row per step: the app's Evaluate (greedy, trained against
 * the base on the same episodes, with the paired difference) and the trainer's eval loop (TRL's eval_*).
 */
function heldOutSection(steps: StepRecord[]): string {
  const rows = steps.flatMap((s) => {
    const m = s.metrics;
    const out: string[] = [];
    if (typeof m['evaluate/success_rate'] === 'number') {
      const d = m['evaluate/success_difference'];
      out.push(`<tr data-testid="page-held-out"><td>${s.step + 1}</td><td>Evaluate (greedy)</td><td>${m['evaluate/episodes'] ?? '—'}</td><td>${interval(m, 'evaluate/success_rate')}</td><td>${interval(m, 'evaluate/base_success_rate')}</td><td>${typeof d === 'number' ? `${pp(d)} pp (${pp(m['evaluate/success_difference_ci95_low'])} to ${pp(m['evaluate/success_difference_ci95_high'])})` : '—'}</td></tr>`);
    }
    if (typeof m.eval_success_rate === 'number') {
      out.push(`<tr data-testid="page-held-out"><td>${s.step + 1}</td><td>eval loop</td><td>${m.eval_episodes ?? '—'}</td><td>${interval(m, 'eval_success_rate')}</td><td>—</td><td>—</td></tr>`);
    }
    return out;
  });
  if (rows.length === 0) return '';
  return `<section><h2>Held-out evaluation</h2><p class="muted">Success on episodes training never drew, with its 95% interval (Wilson); the difference is trained − base over the same episodes.</p>
<table><tr><td>step</td><td>by</td><td>episodes</td><td>trained</td><td>base</td><td>difference</td></tr>${rows.join('')}</table></section>`;
}

/** Inline PNG/JPEG only (the page's CSP allows nothing else): a stored turn's screenshots. */
const IMAGE_DATA_URL = /^data:image\/(png|jpeg);base64,[A-Za-z0-9+/]+={0,2}$/;

function imagesHtml(images: unknown): string {
  if (!Array.isArray(images)) return '';
  const shown = images.flatMap((im) => {
    const { src, width, height } = (typeof im === 'object' && im !== null ? im : {}) as { src?: unknown; width?: unknown; height?: unknown };
    if (typeof src !== 'string' || !IMAGE_DATA_URL.test(src) || !Number.isInteger(width) || !Number.isInteger(height)) return [];
    return [`<img class="shot" src="${src}" width="${width as number}" height="${height as number}" alt="screenshot">`];
  });
  return shown.length > 0 ? `<div class="shots">${shown.join('')}</div>` : '';
}

function rolloutHtml(r: RolloutRecord): string {
  const d = r.data as { reward?: unknown; turns?: unknown; error?: unknown; overBudget?: { tokens?: unknown; budget?: unknown } };
  const turns = Array.isArray(d.turns) ? d.turns : [];
  const body = turns
    .map((t) => {
      const turn = (typeof t === 'object' && t !== null ? t : {}) as { role?: unknown; text?: unknown; images?: unknown };
      const text = typeof turn.text === 'string' ? turn.text : JSON.stringify(t);
      return `<div class="turn"><b>${escape(String(turn.role ?? '?'))}</b>${imagesHtml(turn.images)}<pre>${escape(text.length > TURN_CHARS ? `${text.slice(0, TURN_CHARS)}…` : text)}</pre></div>`;
    })
    .join('');
  const reward = typeof d.reward === 'number' ? num(d.reward) : '—';
  // Why a rollout says less than it seems to: unscorable, or its last tool results rolled back for the budget.
  const notes = [
    typeof d.error === 'string' ? `unscorable: ${d.error.length > TURN_CHARS ? `${d.error.slice(0, TURN_CHARS)}…` : d.error}` : null,
    d.overBudget && Number.isInteger(d.overBudget.tokens) && Number.isInteger(d.overBudget.budget)
      ? `the last tool results were rolled back: ${d.overBudget.tokens as number} tokens with them, over the budget of ${d.overBudget.budget as number}`
      : null,
  ].filter((n): n is string => n !== null).map((n) => `<p class="note">${escape(n)}</p>`).join('');
  return `<details class="rollout"><summary>step ${r.step + 1} · rollout ${r.index + 1} · reward ${reward}</summary>${body || `<pre>${escape(JSON.stringify(r.data).slice(0, TURN_CHARS))}</pre>`}${notes}</details>`;
}

export interface RunPageInput {
  run: RunSummary;
  steps: StepRecord[];
  /** At most PAGE_ROLLOUTS_PER_STEP of each step. */
  rollouts: RolloutRecord[];
  /** How many rollouts each of those steps kept, when more than shown (the page says how many it leaves out). */
  rolloutCounts?: Map<number, number>;
  /** The adapter's files (the bundle as kept), with their bytes when they fit EMBED_LIMIT_BYTES together. */
  adapter: { files: ArtifactInfo[]; bytes: Map<string, Buffer> | null };
  /** A fully fine-tuned run's model files (config.json, model.safetensors, …), zipped when they fit EMBED_LIMIT_BYTES together. */
  model?: { files: ArtifactInfo[]; zip: Buffer | null };
}

const dataLink = (testid: string, name: string, bytes: Buffer, type = 'application/octet-stream') =>
  `<a data-testid="${testid}" download="${escape(name)}" href="data:${type};base64,${bytes.toString('base64')}">${escape(name)}</a>`;

/** What the page says about a bundle over the embed limit: its size and the run store route of each file. */
const overLimit = (what: string, run: RunSummary, bundle: string, files: ArtifactInfo[]) =>
  `<p>The ${what} (${files.reduce((n, f) => n + f.bytes, 0)} bytes) is over the ${EMBED_LIMIT_BYTES} bytes this page embeds: fetch it from the run store with the token of the run's share link, <code>/api/runs/${escape(run.id)}/artifacts/${bundle}/&lt;file&gt;?share=&lt;token&gt;</code> (${files.map((f) => escape(f.name)).join(', ')}).</p>`;

/** A file-name-safe form of a run's name (the model zip is named after the run). */
const slug = (name: string) => name.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '') || 'run';

function weightsSection(run: RunSummary, adapter: RunPageInput['adapter'], model: RunPageInput['model']): string {
  if (model && model.files.length > 0) {
    const body = model.zip
      ? `<ul><li>${dataLink('page-model', `${slug(run.name)}-model.zip`, model.zip, 'application/zip')} (${model.zip.length} bytes: ${model.files.map((f) => `${escape(f.name)} ${f.bytes} bytes`).join(', ')})</li></ul>`
      : overLimit('model', run, 'model', model.files);
    return `<section><h2>Trained model (full fine-tuning, Hugging Face layout)</h2>${body}</section>`;
  }
  const body = adapter.files.length === 0
    ? '<p class="muted">No weights were kept with this run.</p>'
    : adapter.bytes
      ? `<ul>${adapter.files.map((f) => `<li>${dataLink('page-adapter', f.name, adapter.bytes!.get(f.name)!)} (${f.bytes} bytes)</li>`).join('')}</ul>`
      : overLimit('adapter', run, 'adapter', adapter.files);
  return `<section><h2>Trained adapter (PEFT)</h2>${body}</section>`;
}

/** A step's rollouts as shown, and a line for the ones left out. */
function stepRolloutsHtml(step: number, shown: RolloutRecord[], kept: number): string {
  const more = kept - shown.length;
  return shown.map(rolloutHtml).join('\n') + (more > 0 ? `\n<p class="muted">step ${step + 1} kept ${kept} rollouts; the first ${shown.length} are shown</p>` : '');
}

export function renderRunPage({ run, steps, rollouts, rolloutCounts, adapter, model: modelFiles }: RunPageInput): string {
  const byStep = new Map<number, RolloutRecord[]>();
  for (const r of rollouts) {
    const list = byStep.get(r.step);
    if (list) list.push(r);
    else byStep.set(r.step, [r]);
  }
  const rolloutsHtml = [...byStep].map(([step, shown]) => stepRolloutsHtml(step, shown, rolloutCounts?.get(step) ?? shown.length)).join('\n');
  const charts = CHARTS.map((c) => svgChart(c.title, c.metric, steps)).filter((c): c is string => c !== null);
  const config = Object.entries(run.config).sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `<tr><td><code>${escape(k)}</code></td><td>${escape(typeof v === 'string' ? v : JSON.stringify(v))}</td></tr>`).join('');
  const model = String(run.model.name ?? run.model.id ?? '');
  const task = String(run.env.task ?? run.env.name ?? '');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<title>${escape(run.name)} — webgrpo run</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1f2937;background:#f9fafb}
h1{font-size:22px;margin:0 0 4px}.muted{color:#6b7280}.status{background:#e5e7eb;border-radius:4px;padding:1px 6px;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:12px}.chart{margin:0;background:#fff;border:1px solid #e5e7eb;border-radius:6px;padding:8px}
svg text{font-size:10px;fill:#6b7280}.axis{stroke:#d1d5db}.line{fill:none;stroke:#2563eb;stroke-width:1.5}.dots circle{fill:#2563eb}
table{border-collapse:collapse;background:#fff}td{border-bottom:1px solid #e5e7eb;padding:3px 10px;vertical-align:top}
pre{white-space:pre-wrap;margin:2px 0 8px;background:#fff;border:1px solid #e5e7eb;padding:6px;border-radius:4px}
.rollout{margin:4px 0}.note{color:#b91c1c;margin:2px 0 8px}section{margin-top:20px}.shots{display:flex;gap:6px;flex-wrap:wrap}.shot{width:256px;height:auto;border:1px solid #ccc}
</style></head><body>
<h1>${escape(run.name)} <span class="status" data-testid="page-status">${escape(run.status)}</span></h1>
<p class="muted">task <b>${escape(task)}</b> · model <b>${escape(model)}</b> · ${steps.length} steps · run ${escape(run.id)} · exported ${escape(new Date().toISOString())} from webgrpo</p>
${run.error ? `<p>${escape(run.error)}</p>` : ''}
<section><h2>Curves</h2><div class="charts">${charts.join('\n') || '<p class="muted">No steps were recorded.</p>'}</div></section>
${heldOutSection(steps)}
${weightsSection(run, adapter, modelFiles)}
<section><h2>Config</h2><table data-testid="page-config">${config}</table></section>
<section><h2>Rollouts of the last steps</h2>${rolloutsHtml || '<p class="muted">None were kept.</p>'}</section>
</body></html>
`;
}
