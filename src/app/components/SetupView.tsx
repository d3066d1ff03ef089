// Set up a run: model, environment, config (with presets), SFT warm-up; then start it. Recent runs
// are listed on top, so a returning user finds (and resumes) them here. A fork arrives with the
// parent's model, environment and config, and the new run records its parent.
import { useEffect, useMemo, useState } from 'react';
import { DEFAULT_CONFIG } from '../../rl/config.ts';
import { api } from '../api.ts';
import { parsePromptText } from '../../rl/tasks/mcp-task.ts';
import { checkFields } from '../config-fields.ts';
import { ensureRunModel } from '../model-loader.ts';
import { DEFAULT_PRESET, PRESETS, presetValues, tierFor, type PresetName } from '../setup-presets.ts';
import { useUi } from '../store.ts';
import type { BuiltinEnvName } from '../../../workers/api.ts';
import { ConfigForm, formValuesOf } from './ConfigForm.tsx';
import { EnvPicker, type EnvSelection } from './EnvPicker.tsx';
import { ModelPicker } from './ModelPicker.tsx';
import { RunsList } from './RunsList.tsx';
import { TaskPanel, useEnvTasks, type TaskMode } from './TaskPanel.tsx';
import { startLiveRun } from '../live-run.ts';
import { setupMemoryPlan } from '../run-plan.ts';
import { ENV_CLASS_TASK, envClassRecord, PASTED_SOURCE, runEnvClass } from '../env-class-draft.ts';
import type { EnvClassText } from '../../../workers/api.ts';
import { EnvClassEditor, useEnvClassPreview } from './EnvClassEditor.tsx';

/** What "fork" on a run view hands to the setup page (sessionStorage 'webgrpo.fork'). */
export interface ForkSeed {
  parent: string;
  name: string;
  config: Record<string, unknown>;
  model: Record<string, unknown>;
  env: Record<string, unknown>;
}

function takeFork(): ForkSeed | null {
  const text = sessionStorage.getItem('webgrpo.fork');
  sessionStorage.removeItem('webgrpo.fork');
  if (!text) return null;
  const seed = JSON.parse(text) as Partial<ForkSeed>;
  return seed.parent && seed.config ? { parent: seed.parent, name: seed.name ?? 'run', config: seed.config, model: seed.model ?? {}, env: seed.env ?? {} } : null;
}

/** The environment class a fork carries (shown, not run, until the user loads it), or why it cannot be read. */
function forkEnvClass(fork: ForkSeed | null): { module: EnvClassText | null; error: string | null } {
  try {
    return { module: fork ? runEnvClass(fork.env) : null, error: null };
  } catch (err) {
    return { module: null, error: (err as Error).message };
  }
}

/** The form values of a preset for a model of `params` parameters (null: the built-in demo model, before loading). */
function presetForm(name: PresetName, params: number | null): Record<string, string> {
  return formValuesOf({ ...DEFAULT_CONFIG, ...presetValues(name, params) });
}

export function SetupView() {
  const { model, probe, modelSource, modelLoading } = useUi();
  const [fork] = useState(takeFork);
  const [forkClass] = useState(() => forkEnvClass(fork));
  const [env, setEnv] = useState<EnvSelection | null>(() => {
    const name = fork?.env.name;
    return typeof name === 'string' && name && !forkClass.module ? { name, url: `${location.origin}/envs/${name}` } : null;
  });
  // "Your environment": a class module instead of a served env's task.
  const [classMode, setClassMode] = useState(forkClass.module !== null);
  const [draft, setDraft] = useState<EnvClassText>(forkClass.module ?? { source: PASTED_SOURCE, text: '' });
  const [pendingFork, setPendingFork] = useState(forkClass.module && fork ? { parent: fork.parent, name: fork.name } : null);
  const classPreview = useEnvClassPreview(classMode && !pendingFork ? draft : null);
  const classReady = classPreview.state === 'done' && classPreview.preview.ok ? classPreview.preview : null;
  const [preset, setPreset] = useState<PresetName | null>(fork ? null : DEFAULT_PRESET);
  const [values, setValues] = useState<Record<string, string>>(() =>
    fork ? formValuesOf({ ...DEFAULT_CONFIG, ...fork.config }) : presetForm(DEFAULT_PRESET, model?.params ?? null),
  );
  /** The values the selected preset filled in: the fields differ from them once the user edits one. */
  const [presetBase, setPresetBase] = useState(values);
  const [startError, setStartError] = useState<string | null>(null);
  const [forkError, setForkError] = useState<string | null>(forkClass.error);
  const [sftJsonl, setSftJsonl] = useState<string | undefined>(undefined);
  const [starting, setStarting] = useState(false);
  const [importError, setImportError] = useState<string | null>(null);
  const envTasks = useEnvTasks(env);
  const forkPrompts = fork?.env.task === 'mcp' && Array.isArray(fork.env.prompts) ? (fork.env.prompts as { prompt: { content?: unknown }[] }[]) : null;
  const [taskMode, setTaskMode] = useState<TaskMode>(forkPrompts ? 'prompts' : 'example');
  const [promptText, setPromptText] = useState(() => forkPrompts?.map((r) => JSON.stringify(r)).join('\n') ?? '');
  // An env that is no TRL example but an MCP env: the user's prompts are the only task it has.
  const exampleTask = envTasks && 'task' in envTasks.example ? envTasks.example.task : null;
  const hasTools = envTasks !== null && 'list' in envTasks.tools;
  const mode: TaskMode = !exampleTask && hasTools ? 'prompts' : exampleTask && !hasTools ? 'example' : taskMode;
  const prompts = useMemo(() => {
    if (mode !== 'prompts') return { rows: null, error: null };
    try {
      return { rows: parsePromptText(promptText, 'prompts'), error: null };
    } catch (err) {
      return { rows: null, error: promptText.trim() === '' ? null : (err as Error).message };
    }
  }, [mode, promptText]);
  const checked = useMemo(() => checkFields(values), [values]);
  // The memory plan follows the config as typed; what the adapter cannot hold is an error beside its field.
  const live = useMemo(() => setupMemoryPlan(model, probe, checked.config), [model, probe, checked.config]);
  const errors = { ...checked.errors, ...live?.errors };
  const invalid = Object.keys(errors);

  // A fork trains the parent's model: load it (a picked folder has to be picked again).
  useEffect(() => {
    if (fork) ensureRunModel(fork.model).catch((err) => setForkError((err as Error).message));
  }, [fork]);

  function applyPreset(name: PresetName) {
    const next = presetForm(name, model?.params ?? null);
    const envName = PRESETS[name].env;
    setValues(next);
    setPresetBase(next);
    setPreset(name);
    setEnv({ name: envName, url: `${location.origin}/envs/${envName}` });
  }

  // A preset is a value for the model the run trains: loading a model of another tier re-applies it
  // (the values before loading are the built-in demo model's, so loading that one changes nothing).
  const tier = tierFor(model?.params ?? null);
  const [appliedTier, setAppliedTier] = useState(tier);
  useEffect(() => {
    if (tier === appliedTier) return;
    setAppliedTier(tier);
    if (!preset) return;
    const next = presetForm(preset, model?.params ?? null);
    setValues(next);
    setPresetBase(next);
  }, [tier, appliedTier, preset, model]);

  // A module's own config fills the fields when it loads or changes (a fork's fields are kept as forked).
  const moduleConfig = classReady ? JSON.stringify(classReady.config) : null;
  const [configFrom, setConfigFrom] = useState<string | null>(forkClass.module ? 'fork' : null);
  useEffect(() => {
    if (moduleConfig === null || moduleConfig === configFrom) return;
    if (configFrom !== 'fork') setValues((v) => ({ ...v, ...formValuesOf(JSON.parse(moduleConfig) as Record<string, unknown>) }));
    setConfigFrom(moduleConfig);
  }, [moduleConfig, configFrom]);

  // The selected preset, and whether the fields still hold its values.
  const presetEdited = preset !== null && Object.entries(presetBase).some(([k, v]) => values[k] !== v);

  // Picking an env in the list picks its preset too, while the fields hold a preset's values unedited;
  // an edit or a fork's config is never thrown away, and the preset label keeps naming what the fields hold.
  function pickEnv(next: EnvSelection) {
    const name = next.name as BuiltinEnvName;
    if (Object.hasOwn(PRESETS, name) && preset !== null && PRESETS[preset].env !== name && !presetEdited) applyPreset(name);
    else setEnv(next);
  }

  async function start() {
    if (!model || !checked.config || (classMode ? !classReady : !env)) return;
    const config: Record<string, unknown> = { ...checked.config };
    setStarting(true);
    setStartError(null);
    try {
      if (classMode) {
        const created = await api.createRun({
          name: `${classReady!.name} · ${model.name}`,
          config,
          model: { name: model.name, params: model.params, weightDtype: model.weightDtype, ...(modelSource ? { source: modelSource } : {}) },
          env: envClassRecord(classReady!.name, draft),
          ...(fork ? { parent: fork.parent } : {}),
        });
        location.hash = `#/runs/${created.id}`;
        void startLiveRun({ runId: created.id, token: created.writeToken, config, envUrl: `${location.origin}/envs/${classReady!.name}`, task: ENV_CLASS_TASK, envClass: draft, sftJsonl, resume: false });
        return;
      }
      if (!env) return;
      // A preset may name its own task on the env (browsergym-vlm on browsergym); else the env's example.
      const presetTask = preset !== null && PRESETS[preset].env === env.name ? PRESETS[preset].task : undefined;
      const task = mode === 'prompts' ? 'mcp' : presetTask ?? exampleTask!;
      const rows = mode === 'prompts' ? prompts.rows! : undefined;
      const created = await api.createRun({
        name: `${env.name} · ${model.name}`,
        config,
        model: { name: model.name, params: model.params, weightDtype: model.weightDtype, ...(modelSource ? { source: modelSource } : {}) },
        env: { name: env.name, task, ...(rows ? { prompts: rows } : {}) },
        ...(fork ? { parent: fork.parent } : {}),
      });
      location.hash = `#/runs/${created.id}`;
      void startLiveRun({ runId: created.id, token: created.writeToken, config, envUrl: env.url, task, prompts: rows, sftJsonl, resume: false });
    } catch (err) {
      setStartError((err as Error).message);
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

  const taskBlocker = !envTasks ? 'Asking the environment for its tasks…' : !exampleTask && !hasTools ? 'This environment offers nothing to train on.' : mode === 'prompts' && !prompts.rows ? 'Write the prompts for your task.' : null;
  const classBlocker = pendingFork ? 'Read the environment code that came with the fork, then load it.'
    : classPreview.state === 'idle' ? 'Paste or open your environment module.'
    : classPreview.state !== 'done' ? 'Loading your environment…'
    : !classPreview.preview.ok ? 'Fix your environment: its error is shown under the editor.'
    : Number(checked.config?.sft_steps) > 0 && sftJsonl === undefined ? 'No scripted solver knows your environment: set sft_steps to 0, or upload SFT transcripts.'
    : null;
  const blocker = !model ? (modelLoading ? 'Loading the model…' : 'Load a model first.') : !model.fits ? 'This model does not fit this GPU.' : classMode ? (classBlocker ?? (invalid.length ? `Fix ${invalid.length === 1 ? 'the field' : `${invalid.length} fields`} marked in red: ${invalid.join(', ')}.` : null)) : !env ? 'Pick an environment.' : taskBlocker ? taskBlocker : invalid.length ? `Fix ${invalid.length === 1 ? 'the field' : `${invalid.length} fields`} marked in red: ${invalid.join(', ')}.` : null;
  return (
    <div className="setup">
      {probe && !probe.webgpu && (
        <p className="error banner" role="alert">WebGPU is not available in this browser: {probe.error}. Use a recent Chrome or Edge with a GPU (chrome://gpu shows WebGPU status).</p>
      )}
      <div className="wide"><RunsList title="Recent runs" pageSize={5} compact /></div>
      {fork && (
        <p className="banner wide" data-testid="fork-banner">
          Fork of <a href={`#/runs/${fork.parent}`}>{fork.name}</a>: same model ({String(fork.model.name ?? '?')}), environment ({String(fork.env.name ?? '?')}) and config; change what you like and start.
          {forkError && <span className="error"> {forkError}</span>}
        </p>
      )}
      <ModelPicker plan={live?.plan ?? null} lower={live?.lower ?? null} />
      <div className="wide panel env-source" role="radiogroup" aria-label="what to train on">
        <label className="choice"><input type="radio" name="env-source" checked={!classMode} onChange={() => setClassMode(false)} /> An environment the server runs</label>
        <label className="choice"><input type="radio" name="env-source" checked={classMode} onChange={() => setClassMode(true)} data-testid="env-class-mode" /> Your environment: a class you write</label>
      </div>
      {classMode ? (
        <EnvClassEditor draft={draft} onDraft={setDraft} pendingFork={pendingFork} onLoadFork={() => setPendingFork(null)} preview={classPreview} />
      ) : (
        <>
          <EnvPicker value={env} onChange={pickEnv} />
          {env && <TaskPanel tasks={envTasks} mode={mode} onMode={setTaskMode} promptText={promptText} onPromptText={setPromptText} promptError={prompts.error} />}
        </>
      )}
      <section className="panel">
        <h3>Presets</h3>
        <div className="presets" role="group" aria-label="presets">
          {(Object.entries(PRESETS) as [PresetName, (typeof PRESETS)[PresetName]][]).map(([name, p]) => (
            <button key={name} className={preset === name ? 'preset selected' : 'preset'} aria-pressed={preset === name} onClick={() => applyPreset(name)} title={p.description}>
              {preset === name ? <span aria-hidden="true">✓ </span> : null}{p.label}
            </button>
          ))}
          {preset && <span className="muted" data-testid="preset-state">{presetEdited ? `${preset}, edited` : `${preset} preset`}</span>}
        </div>
        <p className="muted">{preset ? PRESETS[preset].description : env ? PRESETS[env.name as BuiltinEnvName]?.description ?? '' : ''}</p>
        {env?.name === 'catch' && tier === 'tiny' && (
          <p className="muted">With the built-in models, catch uses a compact prompt (one-word observations, no tool-schema block) against the same environment and outcome reward, so a step takes seconds on a software GPU.</p>
        )}
        <h4>SFT warm-up data</h4>
        <p className="muted">By default transcripts come from the built-in scripted solver of the chosen environment. Or upload JSONL, one message list per line.</p>
        <input type="file" accept=".jsonl,.json,.txt" onChange={async (e) => { const f = e.target.files?.[0]; setSftJsonl(f ? await f.text() : undefined); }} />
      </section>
      <ConfigForm values={values} onChange={(k, t) => setValues({ ...values, [k]: t })} errors={errors} error={checked.formError} />
      <div className="actions">
        <button className="primary" disabled={blocker !== null || starting} onClick={start} data-testid="start-run">{starting ? 'Starting…' : 'Start training'}</button>
        {blocker && <span className={invalid.length ? 'error' : 'muted'} data-testid="start-blocker">{blocker}</span>}
        {startError && <span className="error" role="alert">{startError}</span>}
        <label className="import">
          Import a run (JSON): <input type="file" accept=".json" onChange={(e) => e.target.files?.[0] && importRun(e.target.files[0])} />
        </label>
        {importError && <p className="error" role="alert">{importError}</p>}
      </div>
    </div>
  );
}
