// A run's environment class, as any view of the run shows it (a shared one included): the module's text,
// read-only. It is never imported here; it runs only in a tab that forks the run and loads it there.
import { runEnvClass } from '../env-class-draft.ts';
import './env-class.css';

export function EnvClassCode({ env }: { env: Record<string, unknown> }) {
  let module;
  try {
    module = runEnvClass(env);
  } catch (err) {
    return <p className="error">{(err as Error).message}</p>;
  }
  if (!module) return null;
  return (
    <details className="panel env-class-code" data-testid="run-env-class">
      <summary>Environment class: <code>{module.source}</code> ({module.text.split('\n').length} lines) — not run in this view; fork the run to train it</summary>
      <pre>{module.text}</pre>
    </details>
  );
}
