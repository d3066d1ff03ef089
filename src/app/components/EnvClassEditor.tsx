// "Your environment" on the setup page: an environment class (TRL's environment_factory, in JavaScript)
// opened from a file or written in the editor, and what the trainer makes of it before Start — the
// tools exactly as the model will see them, the reward sources and the data — or the error that stops
// it, all from loading the module in a worker of its own (env-class-preview-client.ts). Code from a
// forked run is shown first and runs only once the user chose to load it.
import { useEffect, useRef, useState, type ReactNode } from 'react';
import type { EnvClassPreview, EnvClassText } from '../../../workers/api.ts';
import type { ToolSchema } from '../../rl/rollout/schema.ts';
import { draftProblem } from '../env-class-draft.ts';
import { previewInWorker } from '../env-class-preview-client.ts';
import type { CodeEditor } from './code-editor.ts';
import './env-class.css';

/** How long the text must rest before it is loaded again (each load is a fresh worker). */
const PREVIEW_DEBOUNCE_MS = 400;

export type PreviewState = { state: 'idle' } | { state: 'checking' } | { state: 'done'; preview: EnvClassPreview };

/** The preview of `draft` (null: none wanted, e.g. a fork's code not loaded yet), again whenever it changes. */
export function useEnvClassPreview(draft: EnvClassText | null): PreviewState {
  const [state, setState] = useState<PreviewState>({ state: 'idle' });
  useEffect(() => {
    // Nothing written yet is no error: the Start button says what is missing.
    if (!draft || draft.text.trim() === '') {
      setState({ state: 'idle' });
      return;
    }
    const problem = draftProblem(draft.text);
    if (problem) {
      setState({ state: 'done', preview: { ok: false, error: problem } });
      return;
    }
    setState({ state: 'checking' });
    const aborted = new AbortController();
    const timer = setTimeout(() => {
      previewInWorker(draft, aborted.signal).then(
        (preview) => { if (preview && !aborted.signal.aborted) setState({ state: 'done', preview }); },
        (err: Error) => { if (!aborted.signal.aborted) setState({ state: 'done', preview: { ok: false, error: err.message } }); },
      );
    }, PREVIEW_DEBOUNCE_MS);
    return () => {
      clearTimeout(timer);
      aborted.abort();
    };
  }, [draft?.text, draft?.source]);
  return state;
}

interface Props {
  draft: EnvClassText;
  onDraft: (d: EnvClassText) => void;
  /** The code came with a fork of this run and has not been loaded: it is shown, not run. */
  pendingFork: { parent: string; name: string } | null;
  onLoadFork: () => void;
  preview: PreviewState;
}

export function EnvClassEditor({ draft, onDraft, pendingFork, onLoadFork, preview }: Props) {
  const host = useRef<HTMLDivElement>(null);
  const editor = useRef<CodeEditor | null>(null);
  const [editorError, setEditorError] = useState<string | null>(null);
  // The latest callbacks, for the editor's listener (mounted once).
  const latest = useRef({ draft, onDraft });
  latest.current = { draft, onDraft };

  useEffect(() => {
    let live = true;
    import('./code-editor.ts').then(({ mountCodeEditor }) => {
      if (!live || !host.current) return;
      editor.current = mountCodeEditor(host.current, {
        text: latest.current.draft.text,
        label: 'environment module',
        onChange: (text) => { if (text !== latest.current.draft.text) latest.current.onDraft({ ...latest.current.draft, text }); },
      });
    }, (err: Error) => setEditorError(`The editor did not load (${err.message}); reload the page`));
    return () => {
      live = false;
      editor.current?.destroy();
      editor.current = null;
    };
  }, []);
  // Text from outside the editor (a file opened, a fork's code) replaces what it shows.
  useEffect(() => editor.current?.setText(draft.text), [draft.text]);

  async function open(file: File) {
    onDraft({ source: file.name, text: await file.text() });
  }

  return (
    <section className="panel wide env-class" data-testid="env-class">
      <h3>Your environment</h3>
      <p className="muted">
        A JavaScript module whose default export is an environment class, as TRL's <code>environment_factory</code>: <code>reset(row)</code> starts an episode,
        every public method documented with JSDoc (<code>@param {'{type}'} name description</code>) is a tool, and <code>getReward()</code> or an exported <code>rewardFuncs</code> scores it.{' '}
        <code>import {'{ EnvClient, envUrl }'} from 'webgrpo/openenv'</code> talks to any OpenEnv server. The repository's <code>examples/</code> folder has echo, catch, wordle and multi_env.
      </p>
      <label className="muted">Open a module file: <input type="file" accept=".mjs,.js" data-testid="env-class-file" onChange={(e) => { const f = e.target.files?.[0]; if (f) void open(f); }} /></label>
      {pendingFork && (
        <div className="banner" data-testid="env-class-fork">
          This code comes with the run <a href={`#/runs/${pendingFork.parent}`}>{pendingFork.name}</a>. It runs in this tab only once you load it: read it first.
          <button className="primary" onClick={onLoadFork} data-testid="env-class-load">Load this code</button>
        </div>
      )}
      <div className="code-editor" ref={host} data-testid="env-class-editor" />
      {editorError && <p className="error" role="alert">{editorError}</p>}
      <p className="muted">{draft.source} · {draft.text.length.toLocaleString()} characters</p>
      <EnvClassPreviewView preview={preview} />
    </section>
  );
}

function EnvClassPreviewView({ preview }: { preview: PreviewState }) {
  if (preview.state === 'idle') return null;
  if (preview.state === 'checking') return <p className="muted" data-testid="env-class-checking">Loading the module in a worker…</p>;
  const p = preview.preview;
  if (!p.ok) return <pre className="error env-class-error" role="alert" data-testid="env-class-error">{p.error}</pre>;
  return (
    <div data-testid="env-class-preview">
      <p><b>{p.name}</b> trains with these reward sources: {p.rewards.map((r) => <code key={r}>rewards/{r}/mean</code>).reduce<ReactNode[]>((a, c, i) => (i ? [...a, ', ', c] : [c]), [])}.</p>
      <p className="muted" data-testid="env-class-data">
        {p.dataset
          ? <>Its dataset: {p.dataset.rows} {p.dataset.rows === 1 ? 'row' : 'rows'}; the first prompt: <q>{p.dataset.firstPrompt.map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content))).join(' / ')}</q></>
          : <>No dataset: the environment owns the data, <code>reset(row)</code> supplies each prompt (set <code>max_steps</code>).</>}
      </p>
      {Object.keys(p.config).length > 0 && <p className="muted">Its <code>config</code> ({Object.keys(p.config).join(', ')}) is filled into the fields below.</p>}
      {p.environments.map((env) => (
        <div key={env.name ?? ''} className="env-class-tools">
          <h4>{env.name === null ? 'Tools the model is offered' : <>Tools in <code>{env.name}</code> (class {env.className})</>}</h4>
          <ul data-testid="env-class-tools">
            {env.tools.map((t) => <ToolItem key={t.function.name} tool={t} />)}
          </ul>
          <p className="muted">Exactly as the chat template writes them into the system prompt:</p>
          <pre className="env-class-json" data-testid="env-class-tool-json">{env.toolJson.join('\n')}</pre>
        </div>
      ))}
    </div>
  );
}

function ToolItem({ tool }: { tool: ToolSchema }) {
  const fn = tool.function;
  const props = fn.parameters.properties as Record<string, { type?: unknown; description?: unknown }>;
  const required = new Set(fn.parameters.required ?? []);
  return (
    <li>
      <code className="tool-name">{fn.name}</code>({Object.keys(props).join(', ')}) — {fn.description}
      {Object.keys(props).length > 0 && (
        <ul className="tool-params">
          {Object.entries(props).map(([name, s]) => (
            <li key={name}><code>{name}</code> <span className="muted">{typeof s.type === 'string' ? s.type : JSON.stringify(s.type ?? 'any')}{required.has(name) ? ', required' : ''}</span>{typeof s.description === 'string' ? ` — ${s.description}` : ''}</li>
          ))}
        </ul>
      )}
    </li>
  );
}
