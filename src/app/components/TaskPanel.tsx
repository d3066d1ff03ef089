// What the model is asked to do in the chosen environment: the TRL example the env serves (echo,
// catch, wordle, browsergym), or — on any MCP environment — the user's own prompts, with the tools
// the env lists and the rewards it gives (src/rl/tasks/mcp-task.ts, the CLI's `--env URL --prompt`).
import { useEffect, useState, type ReactNode } from 'react';
import { envProtocol, type McpTool } from '../../openenv/index.ts';
import { openEnvEpisodes } from '../../rl/tasks/envs/episode-session.ts';
import { listEnvTools } from '../../rl/tasks/envs/mcp.ts';
import { envUnreachable, taskForEnv } from '../api.ts';
import type { EnvSelection } from './EnvPicker.tsx';

export type TaskMode = 'example' | 'prompts';

export interface EnvTasks {
  /** The TRL example this env serves, or why there is none. */
  example: { task: string } | { error: string };
  /** The env's MCP tools, or why it has none. */
  tools: { list: McpTool[] } | { error: string };
  /** Why the env does not answer at all: then neither of the above says anything about its kind. */
  unreachable?: string;
}

/** Which tasks the env offers (null while asking it). */
export function useEnvTasks(env: EnvSelection | null): EnvTasks | null {
  const [tasks, setTasks] = useState<EnvTasks | null>(null);
  useEffect(() => {
    if (!env) return;
    let live = true;
    setTasks(null);
    void askEnv(env).then((t) => live && setTasks(t));
    return () => {
      live = false;
    };
  }, [env?.name, env?.url]);
  return tasks;
}

/** What the env offers: its TRL example and its MCP tools, asked only once it answers at all. */
async function askEnv(env: EnvSelection): Promise<EnvTasks> {
  // An env that does not answer is not asked what kind it is: every answer would be a guess.
  const unreachable = await envUnreachable(env.name);
  if (unreachable) return { example: { error: unreachable }, tools: { error: unreachable }, unreachable };
  const example = taskForEnv(env.name).then((task) => ({ task }), (err: Error) => ({ error: err.message }));
  // The protocol first (GET /schema, a tools/list probe: no reset), so an action env such as
  // browsergym does not open a session (a browser context) just to be looked at.
  const tools = envProtocol(env.url)
    .then((protocol) => {
      if (protocol === 'action') throw new Error('it takes its own actions, not MCP tool calls');
      return listEnvTools(env.url, openEnvEpisodes());
    })
    .then(({ tools: list }) => ({ list }), (err: Error) => ({ error: err.message }));
  const [e, t] = await Promise.all([example, tools]);
  return { example: e, tools: t };
}

interface Props {
  tasks: EnvTasks | null;
  mode: TaskMode;
  onMode: (m: TaskMode) => void;
  promptText: string;
  onPromptText: (t: string) => void;
  promptError: string | null;
}

export function TaskPanel({ tasks, mode, onMode, promptText, onPromptText, promptError }: Props) {
  if (!tasks) return <section className="panel"><h3>Task</h3><p className="muted">Asking the environment what it offers…</p></section>;
  const example = 'task' in tasks.example ? tasks.example.task : null;
  const tools = 'list' in tasks.tools ? tasks.tools.list : null;
  return (
    <section className="panel" data-testid="task-panel">
      <h3>Task</h3>
      {example && (
        <label className="choice">
          <input type="radio" name="task" checked={mode === 'example'} onChange={() => onMode('example')} /> <span>TRL's <b>{example}</b> example: its dataset, tool wrappers and reward functions</span>
        </label>
      )}
      {tools && (
        <label className="choice">
          <input type="radio" name="task" checked={mode === 'prompts'} onChange={() => onMode('prompts')} data-testid="task-prompts" /> <span>Your own prompts, with this environment's MCP tools and rewards</span>
        </label>
      )}
      {tasks.unreachable && (
        <p className="error" role="alert" data-testid="task-unreachable">
          The environment is unreachable — {tasks.unreachable}. Nothing to train on until it answers: check the <code>--upstream</code> URL the server was started with.
        </p>
      )}
      {!example && !tools && !tasks.unreachable && (
        <p className="error" role="alert">Nothing to train on here: {'error' in tasks.example ? tasks.example.error : ''}; and it is not an MCP environment ({'error' in tasks.tools ? tasks.tools.error : ''}).</p>
      )}
      {tools && mode === 'prompts' && (
        <>
          <p className="muted">Tools the model can call: {tools.map((t) => <code key={t.name} title={t.description}>{t.name}</code>).reduce<ReactNode[]>((a, c, i) => (i ? [...a, ', ', c] : [c]), [])}</p>
          <textarea
            aria-label="prompts"
            data-testid="prompts"
            rows={4}
            value={promptText}
            placeholder={'One prompt per line, e.g.\nEcho the word "hello" back with the echo tool.\n(or JSONL: {"prompt": "…"} per line)'}
            onChange={(e) => onPromptText(e.target.value)}
          />
          {promptError && <p className="error field-error" role="alert">{promptError}</p>}
          <p className="muted">Each generation cycles through these prompts; the reward is what the environment returns. No scripted solver knows your task: set <code>sft_steps</code> to 0 or upload SFT transcripts.</p>
        </>
      )}
    </section>
  );
}
