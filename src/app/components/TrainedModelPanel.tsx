// This tab's trained model once its run paused or ended: downloads (the full model or the LoRA
// adapter, and a transformers.js export), keeping the files with the run again, and Evaluate: the
// trained policy against its base, greedy, on the task's held-out episodes — after LoRA the base is
// the adapters off, after full fine-tuning the run's starting weights uploaded again (the worker puts
// the trained ones back). The result is kept with the run's last step (charts, runs list, share links).
import { useState } from 'react';
import { api, type RunSummary } from '../api.ts';
import { downloadZip, slug } from '../downloads.ts';
import { evaluateMetrics } from '../eval-metrics.ts';
import { formatDifference, formatNumber, formatSuccess } from '../format.ts';
import { keepRunFiles } from '../live-run.ts';
import { runPrompts } from '../resume.ts';
import { proxy, trainer } from '../trainer-client.ts';
import type { RunAct } from '../use-run-data.ts';
import type { EvalProgress, EvalResult } from '../../../workers/api.ts';
import type { EvalSummary } from '../../rl/eval/summary.ts';
import { EvalTrajectories } from './EvalTrajectories.tsx';

/** Episodes per policy by default: enough that the interval says something, short enough to wait for. */
export const DEFAULT_EVAL_EPISODES = 32;

function Row({ label, s }: { label: string; s: EvalSummary }) {
  return (
    <tr data-testid={`eval-row-${label}`}>
      <td>{label}</td><td>{s.episodes}</td><td data-testid="eval-success">{formatSuccess(s.success_rate, s.success_ci95)}</td>
      <td>{formatNumber(s.mean_reward)}</td><td>{formatNumber(s.tool_calls_per_episode, 2)}</td><td>{formatNumber(s.invalid_calls_per_episode, 2)}</td>
    </tr>
  );
}

export function TrainedModelPanel(p: { id: string; run: RunSummary | null; owned: string | null; full: boolean; envPath: string; task: string; busy: string | null; act: RunAct; lastStep: number | null; onEvaluated: (step: number, metrics: Record<string, number | null>) => void }) {
  const { id, run, owned, full, busy, act } = p;
  const [result, setResult] = useState<EvalResult | null>(null);
  const [episodes, setEpisodes] = useState(DEFAULT_EVAL_EPISODES);
  const [progress, setProgress] = useState<EvalProgress | null>(null);
  const name = slug(run?.name ?? 'run');
  const evaluate = () => act('eval', async () => {
    if (!Number.isInteger(episodes) || episodes < 1) throw new Error(`episodes must be a whole number of at least 1, got ${episodes}`);
    setResult(null);
    try {
      const r = await trainer().evaluate(
        { envUrl: `${location.origin}/envs/${p.envPath}`, task: p.task, prompts: run ? runPrompts(run.env) : undefined, episodes, config: run?.config ?? {} },
        proxy({ onProgress: setProgress }),
      );
      setResult(r);
      if (p.lastStep !== null) {
        const metrics = evaluateMetrics(r);
        p.onEvaluated(p.lastStep, metrics);
        if (owned) await api.mergeStepMetrics(id, owned, p.lastStep, metrics);
      }
    } finally {
      setProgress(null);
    }
  });
  return (
    <section className="panel" data-testid="trained-model">
      <h3>Trained model</h3>
      {full ? (
        <button disabled={!!busy} data-testid="download-model" onClick={() => act('model', async () => {
          downloadZip(`${name}-model.zip`, await trainer().exportModel());
        })}>{busy === 'model' ? 'exporting…' : 'download model (one zip: safetensors, Hugging Face layout)'}</button>
      ) : (
        <button disabled={!!busy} data-testid="download-adapter" onClick={() => act('adapter', async () => {
          downloadZip(`${name}-adapter.zip`, await trainer().exportAdapter());
        })}>download LoRA adapter (one zip, PEFT)</button>
      )}
      <button disabled={!!busy} data-testid="download-onnx" onClick={() => act('onnx', async () => {
        downloadZip(`${name}-transformers-js.zip`, await trainer().exportOnnx());
      })}>{busy === 'onnx' ? 'exporting…' : 'download for transformers.js (one zip, ONNX)'}</button>
      {owned && <button disabled={!!busy} onClick={() => act('keep', () => keepRunFiles(id, owned, run?.config ?? {}))}>{busy === 'keep' ? 'saving…' : 'save files with the run again'}</button>}
      <h4>Evaluate on held-out episodes</h4>
      <p className="muted">
        Greedy, on games training never drew, the trained model and its base on the same episodes
        {full ? ' (full fine-tuning changed every weight: the starting weights are uploaded again to play the base, then the trained ones are put back)' : ' (the base is the model with the LoRA adapter off)'}.
      </p>
      <div className="eval-form">
        <label>episodes <input type="number" min={1} step={1} value={episodes} data-testid="eval-episodes" onChange={(e) => setEpisodes(Number(e.target.value))} /></label>
        <button disabled={!!busy} data-testid="evaluate" onClick={evaluate}>{busy === 'eval' ? 'evaluating…' : 'evaluate vs base'}</button>
        {progress && <span className="muted" data-testid="eval-progress">{progress.policy} model ({progress.round} of {progress.rounds}): {progress.done} / {progress.total} episodes</span>}
      </div>
      {result && (
        <>
          <table className="eval" data-testid="eval-table">
            <thead><tr><th>policy</th><th>episodes</th><th>success (95% interval)</th><th>mean reward</th><th>tool calls</th><th>invalid calls</th></tr></thead>
            <tbody>
              <Row label="base" s={result.base} />
              <Row label="trained" s={result.trained} />
            </tbody>
          </table>
          <p data-testid="eval-difference">
            trained − base, paired over the same {result.paired.success.episodes} episodes: success <b>{formatDifference(result.paired.success.difference, result.paired.success.ci95)}</b>
            {result.paired.reward.episodes > 0 && <>, reward {formatNumber(result.paired.reward.difference)} (95%: {formatNumber(result.paired.reward.ci95[0])} to {formatNumber(result.paired.reward.ci95[1])})</>}
            {' '}<span className="muted">{Number.isFinite(result.paired.success.ci95[0]) && result.paired.success.ci95[0] <= 0 && result.paired.success.ci95[1] >= 0 ? '— the success interval holds 0: no difference in success shown at this many episodes' : ''}</span>
          </p>
          <EvalTrajectories trained={result.trajectories.trained} base={result.trajectories.base} />
        </>
      )}
    </section>
  );
}
