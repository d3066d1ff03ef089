// Choose the model: the built-in demo model (the default; shipped with the app), the built-in random
// tiny model, a Hugging Face id (downloaded with progress, cached) or a local folder. Shows the memory
// plan of the config as typed (SetupView computes it) against the adapter's limits.
import { useEffect, useState } from 'react';
import type { MemoryPlan } from '../../engine/memory-plan.ts';
import { useUi } from '../store.ts';
import { loadModel } from '../model-loader.ts';
import type { ModelChoice } from '../../../workers/api.ts';
import type { ModelConfig } from '../../model/types.ts';
import { formatBytes, formatDuration } from '../format.ts';
import { ProgressBar } from './ProgressBar.tsx';

/**
 * The model in a few words: Qwen3.5's layer mix is what its memory (state vs KV cache) depends on, and
 * a vision tower is what lets it train on screenshots (the worker loads it whenever config.vision is usable).
 */
function architectureOf(config: ModelConfig): string {
  if (config.architecture !== 'qwen3_5') return `Qwen3, ${config.numLayers} layers`;
  const linear = config.layerTypes.filter((t) => t === 'linear_attention').length;
  const decoder = `Qwen3.5, ${config.numLayers} layers (${linear} Gated DeltaNet, ${config.numLayers - linear} gated attention)`;
  if (config.vision) return `${decoder} + a vision tower (${config.vision.depth} blocks): reads images`;
  return config.visionError ? `${decoder}, text only (its vision tower cannot be used: ${config.visionError})` : decoder;
}

/** `plan`: the memory plan of the config in the form (null until model, adapter limits and config are known); `lower`: which setting to lower when it does not fit. */
export function ModelPicker({ plan, lower = null }: { plan: MemoryPlan | null; lower?: string | null }) {
  const { model, modelError, progress, probe, set, modelLoading: busy, modelSource } = useUi();
  const [kind, setKind] = useState<'demo' | 'tiny' | 'hub' | 'files'>(modelSource?.kind ?? 'demo');
  const [repo, setRepo] = useState(modelSource?.kind === 'hub' ? modelSource.repo : 'Qwen/Qwen3-0.6B');
  const [revision, setRevision] = useState(modelSource?.kind === 'hub' ? modelSource.revision : 'main');
  // The choice names the loaded model: this page can mount after a load (back from a run view), and a
  // fork or a resume loads the run's model by itself.
  useEffect(() => {
    if (!modelSource) return;
    setKind(modelSource.kind);
    if (modelSource.kind === 'hub') {
      setRepo(modelSource.repo);
      setRevision(modelSource.revision);
    }
  }, [modelSource]);
  const [files, setFiles] = useState<File[]>([]);
  const [weightDtype, setWeightDtype] = useState<'auto' | 'f16' | 'f32'>('auto');

  async function load() {
    const source = kind === 'demo' || kind === 'tiny' ? { kind } : kind === 'hub' ? { kind, repo, revision } : { kind, files };
    const choice = { ...source, weightDtype } as ModelChoice;
    if (kind === 'files' && files.length === 0) {
      set({ modelError: 'Pick a folder with config.json, model.safetensors and tokenizer files first.' });
      return;
    }
    // The error lands in the store (shown below); nothing else to do here.
    await loadModel(choice).catch(() => undefined);
  }

  const pct = progress && progress.totalBytes > 0 ? progress.loadedBytes / progress.totalBytes : 0;
  const eta = progress?.rate ? (progress.totalBytes - progress.loadedBytes) / progress.rate : NaN;
  return (
    <section className="panel">
      <h3>Model</h3>
      <div className="choices">
        <label><input type="radio" name="model" checked={kind === 'demo'} onChange={() => setKind('demo')} /> built-in demo model (a tiny Qwen3 warmed up on catch and echo; no download)</label>
        <label><input type="radio" name="model" checked={kind === 'tiny'} onChange={() => setKind('tiny')} /> built-in random tiny model (untrained)</label>
        <label><input type="radio" name="model" checked={kind === 'hub'} onChange={() => setKind('hub')} /> Hugging Face model</label>
        <label><input type="radio" name="model" checked={kind === 'files'} onChange={() => setKind('files')} /> local folder</label>
      </div>
      {kind === 'hub' && (
        <div className="row">
          <input aria-label="model id" value={repo} onChange={(e) => setRepo(e.target.value)} size={30} />
          <input aria-label="revision" value={revision} onChange={(e) => setRevision(e.target.value)} size={10} />
        </div>
      )}
      {kind === 'files' && (
        <input
          type="file"
          multiple
          // Non-standard but supported by Chromium and Firefox: pick a whole folder.
          {...{ webkitdirectory: '' }}
          onChange={(e) => setFiles([...(e.target.files ?? [])])}
        />
      )}
      <label className="row muted">
        weights on the GPU{' '}
        <select aria-label="weight dtype" value={weightDtype} onChange={(e) => setWeightDtype(e.target.value as 'auto' | 'f16' | 'f32')}>
          <option value="auto">auto (the checkpoint's precision{probe?.f16 ? '; bf16 in f16 with shader-f16' : ''})</option>
          <option value="f16" disabled={probe?.f16 === false}>f16 (half the memory)</option>
          <option value="f32">f32</option>
        </select>
      </label>
      <button disabled={busy || probe?.webgpu === false} onClick={load} data-testid="load-model">{busy ? 'Loading…' : 'Load model'}</button>
      {busy && progress && (
        <div className="progress-block">
          <ProgressBar fraction={pct} />
          <div className="muted">
            {progress.phase} {progress.file ?? ''}: {formatBytes(progress.loadedBytes)} / {formatBytes(progress.totalBytes)}
            {progress.rate ? ` · ${formatBytes(progress.rate)}/s · ${formatDuration(eta)} left` : ''}
          </div>
        </div>
      )}
      {modelError && <p className="error" role="alert">{modelError}</p>}
      {model && (
        <div className="model-info" data-testid="model-info">
          <p>
            <b>{model.name}</b>: {architectureOf(model.config)}, hidden {model.hidden}, vocab {model.vocab}, {(model.params / 1e6).toFixed(2)}M parameters,
            weights in <b>{model.weightDtype}</b>{model.weightPrecision ? ` (${model.weightPrecision})` : ''}.
          </p>
          {plan ? (
            <>
              <p className="muted">Memory plan for the config below ({plan.items.find((i) => i.name === 'KV cache')?.detail}):</p>
              <table className="memory" data-testid="memory-plan">
                <tbody>
                  {plan.items.map((m) => <tr key={m.name}><td>{m.name}</td><td>{formatBytes(m.bytes)}</td></tr>)}
                  <tr className="total"><td>total</td><td data-testid="memory-total">{formatBytes(plan.totalBytes)}</td></tr>
                </tbody>
              </table>
              {!plan.fits && <p className="error">{plan.message}</p>}
              {lower && <p className="error" data-testid="memory-lower">{lower}</p>}
            </>
          ) : (
            <p className="muted">The memory plan shows once the config below is valid.</p>
          )}
          {!model.fits && <p className="error">{model.message ?? 'This model does not fit this GPU with the chosen settings.'}</p>}
        </div>
      )}
    </section>
  );
}
