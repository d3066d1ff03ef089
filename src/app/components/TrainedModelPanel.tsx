// This tab's trained model once its run paused or ended: downloads (the full model or the LoRA
// adapter, and a transformers.js export), keeping the files with the run again, and (LoRA only) a
// greedy evaluation against the untouched base.
import { useState } from 'react';
import type { RunSummary } from '../api.ts';
import { downloadZip, slug } from '../downloads.ts';
import { formatNumber } from '../format.ts';
import { keepRunFiles } from '../live-run.ts';
import { runPrompts } from '../resume.ts';
import { trainer } from '../trainer-client.ts';
import type { RunAct } from '../use-run-data.ts';
import type { EvalRow } from '../../../workers/api.ts';

export function TrainedModelPanel(p: { id: string; run: RunSummary | null; owned: string | null; full: boolean; envPath: string; task: string; busy: string | null; act: RunAct }) {
  const { id, run, owned, full, busy, act } = p;
  const [evalRows, setEvalRows] = useState<EvalRow[] | null>(null);
  const name = slug(run?.name ?? 'run');
  return (
    <section className="panel">
      <h3>Trained model</h3>
      {full ? (
        <button disabled={!!busy} data-testid="download-model" onClick={() => act('model', async () => {
          downloadZip(`${name}-model.zip`, await trainer().exportModel());
        })}>{busy === 'model' ? 'exporting…' : 'download model (one zip: safetensors, Hugging Face layout)'}</button>
      ) : (
        <>
          <button disabled={!!busy} data-testid="download-adapter" onClick={() => act('adapter', async () => {
            downloadZip(`${name}-adapter.zip`, await trainer().exportAdapter());
          })}>download LoRA adapter (one zip, PEFT)</button>
          <button disabled={!!busy} onClick={() => act('eval', async () => {
            setEvalRows(await trainer().evaluate({ envUrl: `${location.origin}/envs/${p.envPath}`, task: p.task, prompts: run ? runPrompts(run.env) : undefined, episodes: 8, config: run?.config ?? {} }));
          })}>{busy === 'eval' ? 'evaluating…' : 'evaluate (greedy) vs base'}</button>
        </>
      )}
      <button disabled={!!busy} data-testid="download-onnx" onClick={() => act('onnx', async () => {
        downloadZip(`${name}-transformers-js.zip`, await trainer().exportOnnx());
      })}>{busy === 'onnx' ? 'exporting…' : 'download for transformers.js (one zip, ONNX)'}</button>
      {owned && <button disabled={!!busy} onClick={() => act('keep', () => keepRunFiles(id, owned, run?.config ?? {}))}>{busy === 'keep' ? 'saving…' : 'save files with the run again'}</button>}
      {full && <p className="muted">Full fine-tuning changed every weight, so there is no separate adapter, and no untouched base in this tab to compare against: evaluate the downloaded model against its base elsewhere.</p>}
      {evalRows && (
        <table className="eval" data-testid="eval-table">
          <thead><tr><th>policy</th><th>episodes</th><th>mean reward</th><th>success</th><th>tool calls</th></tr></thead>
          <tbody>
            {evalRows.map((r) => <tr key={r.policy}><td>{r.policy}</td><td>{r.episodes}</td><td>{formatNumber(r.meanReward)}</td><td>{formatNumber(r.successRate * 100, 0)}%</td><td>{formatNumber(r.meanToolCalls, 2)}</td></tr>)}
          </tbody>
        </table>
      )}
    </section>
  );
}
