// Set up a run: model, environment, config (with presets), SFT warm-up; then start it.
import { useEffect, useState } from 'react';
import { configFromObject, DEFAULT_CONFIG } from '../../rl/config.ts';
import { api, ownedRuns, taskForEnv } from '../api.ts';
import { DEFAULT_PRESET, PRESETS, presetValues, tierFor } from '../presets.ts';
import { useUi } from '../store.ts';
import type { BuiltinEnvName } from '../worker-api.ts';
import { ConfigForm, formValuesOf, parseFormValues } from './ConfigForm.tsx';
import { EnvPicker, type EnvSelection } from './EnvPicker.tsx';
import { ModelPicker } from './ModelPicker.tsx';
import { startLiveRun } from '../live-run.ts';

export function SetupView() {
  const { model, probe } = useUi();
  const [env, setEnv] = useState<EnvSelection | null>(null);
  // "fork" on a run view hands its config over to a new run.
  const [fork] = useState(() => {
    const f = sessionStorage.getItem('webgrpo.fork');
    sessionStorage.removeItem('webgrpo.fork');
    return f;
  });
  const [values, setValues] = useState<Record<string, string>>(() => formValuesOf(fork ? JSON.parse(fork) : { ...DEFAULT_CONFIG, ...presetValues(DEFAULT_PRESET, model?.params ?? null) }));
  // The preset whose values the form holds (null after a fork): re-applied when the model's tier changes.
  const [preset, setPreset] = useState<BuiltinEnvName | null>(fork ? null : DEFAULT_PRESET);
  const [configError, setConfigError] = useState<string | null>(null);
  const [sftJsonl, setSftJsonl] = useState<string | undefined>(undefined);
  const [starting, setStarting] = useState(false);
  const [importError, setImportError] = useState<string | null>(null);

  function applyPreset(name: BuiltinEnvName) {
    setPreset(name);
    setValues(formValuesOf({ ...DEFAULT_CONFIG, ...presetValues(name, model?.params ?? null) }));
    setEnv({ name, url: `${location.origin}/envs/${name}` });
  }

  // A preset is a value for the model the run trains: loading a model of another tier re-applies it
  // (the values before loading are the built-in demo model's, so loading that one changes nothing).
  const tier = tierFor(model?.params ?? null);
  const [appliedTier, setAppliedTier] = useState(tier);
  useEffect(() => {
    if (tier === appliedTier) return;
    setAppliedTier(tier);
    if (preset) setValues(formValuesOf({ ...DEFAULT_CONFIG, ...presetValues(preset, model?.params ?? null) }));
  }, [tier, appliedTier, preset, model]);

  async function start() {
    if (!model || !env) return;
    let config: Record<string, unknown>;
    try {
      config = { ...configFromObject(parseFormValues(values)) };
      setConfigError(null);
    } catch (err) {
      setConfigError((err as Error).message);
      return;
    }
    setStarting(true);
    try {
      const task = await taskForEnv(env.name);
      const created = await api.createRun({ name: `${env.name} · ${model.name}`, config, model: { name: model.name, params: model.params, weightDtype: model.weightDtype }, env: { name: env.name, task } });
      ownedRuns.set(created.id, created.writeToken);
      location.hash = `#/runs/${created.id}`;
      void startLiveRun({ runId: created.id, token: created.writeToken, config, envUrl: env.url, envName: task, sftSteps: Number(config.sft_steps ?? 0), sftJsonl, resume: false });
    } catch (err) {
      setConfigError((err as Error).message);
    } finally {
      setStarting(false);
    }
  }

  async function importRun(file: File) {
    try {
      const created = await api.importRun(await file.text());
      location.hash = `#/runs/${created.id}`;
    } catch (err) {
      setImportError((err as Error).message);
    }
  }

  return (
    <div className="setup">
      {probe && !probe.webgpu && (
        <p className="error banner" role="alert">WebGPU is not available in this browser: {probe.error}. Use a recent Chrome or Edge with a GPU (chrome://gpu shows WebGPU status).</p>
      )}
      <ModelPicker />
      <EnvPicker value={env} onChange={setEnv} />
      <section className="panel">
        <h3>Presets</h3>
        {Object.values(PRESETS).map((p) => (
          <button key={p.env} onClick={() => applyPreset(p.env)} title={p.description}>{p.label}</button>
        ))}
        <p className="muted">{env ? PRESETS[env.name as BuiltinEnvName]?.description ?? '' : ''}</p>
        {env?.name === 'catch' && tier === 'tiny' && (
          <p className="muted">With the built-in models, catch uses a compact prompt (one-word observations, no tool-schema block) against the same environment and outcome reward, so a step takes seconds on a software GPU.</p>
        )}
        <h4>SFT warm-up data</h4>
        <p className="muted">By default transcripts come from the built-in scripted solver of the chosen environment. Or upload JSONL, one message list per line.</p>
        <input type="file" accept=".jsonl,.json,.txt" onChange={async (e) => { const f = e.target.files?.[0]; setSftJsonl(f ? await f.text() : undefined); }} />
      </section>
      <ConfigForm values={values} onChange={(k, t) => setValues({ ...values, [k]: t })} error={configError} />
      <div className="actions">
        <button className="primary" disabled={!model || !env || starting || !model.fits} onClick={start} data-testid="start-run">Start training</button>
        {!model && <span className="muted">Load a model first.</span>}
        <label className="import">
          Import a run (JSON): <input type="file" accept=".json" onChange={(e) => e.target.files?.[0] && importRun(e.target.files[0])} />
        </label>
        {importError && <p className="error" role="alert">{importError}</p>}
      </div>
    </div>
  );
}
