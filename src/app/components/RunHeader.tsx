// The run page's head: the run's name (renamed in place by its owner) and status, and what any viewer
// can do with the run — share, export, fork — plus rename and delete for its owner.
import { useState } from 'react';
import { api, ownedRuns, type RunSummary } from '../api.ts';
import { useUi } from '../store.ts';
import type { RunAct } from '../use-run-data.ts';

export function RunHeader(p: { id: string; run: RunSummary | null; setRun(run: RunSummary | null): void; status: string; live: boolean; owned: string | null; busy: string | null; act: RunAct }) {
  const { id, run, owned, busy, act } = p;
  const [renaming, setRenaming] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  /** This tab is starting or training the run: it cannot be deleted under the trainer. */
  const deleteBlocked = p.live && !['finished', 'stopped', 'failed'].includes(p.status);
  return (
    <header className="run-head">
      {renaming !== null && owned ? (
        <form className="rename" onSubmit={(e) => { e.preventDefault(); void act('rename', async () => { await api.rename(id, owned, renaming); p.setRun(run && { ...run, name: renaming.trim() }); setRenaming(null); }); }}>
          <input aria-label="run name" value={renaming} onChange={(e) => setRenaming(e.target.value)} maxLength={200} autoFocus />
          <button type="submit" disabled={!!busy || renaming.trim() === ''} data-testid="rename-save">save</button>
          <button type="button" onClick={() => setRenaming(null)}>cancel</button>
        </form>
      ) : (
        <h2><span data-testid="run-name">{run?.name ?? 'run'}</span> <span className={`status ${p.status}`} data-testid="run-status">{p.status}</span></h2>
      )}
      <div className="run-actions">
        <button onClick={() => { void navigator.clipboard?.writeText(api.shareLink(id)); setCopied(true); }} data-testid="share">
          {copied ? 'link copied' : 'copy share link'}
        </button>
        <a className="button" href={api.exportUrl(id)} download>export JSON</a>
        <a className="button" href={api.pageUrl(id)} download data-testid="export-page" title="one HTML file with the charts, config, rollouts and trained weights (adapter or model), that opens without a server">export as a page</a>
        {run && (
          <button
            data-testid="fork"
            title="a new run with this run's model, environment and config"
            onClick={() => { sessionStorage.setItem('webgrpo.fork', JSON.stringify({ parent: id, name: run.name, config: run.config, model: run.model, env: run.env })); location.hash = '#/'; }}
          >fork</button>
        )}
        {run && owned && renaming === null && <button onClick={() => setRenaming(run.name)} data-testid="rename">rename</button>}
        {run && owned && (
          <button
            className="danger"
            disabled={!!busy || deleteBlocked}
            title={deleteBlocked ? 'stop the run before deleting it' : 'delete this run, its steps, rollouts and files'}
            data-testid="delete-run"
            onClick={() => {
              if (!confirm(`Delete the run "${run.name}"? Its steps, rollouts and kept files are removed for good.`)) return;
              void act('delete', async () => {
                await api.deleteRun(id, owned);
                ownedRuns.forget(id);
                if (p.live) useUi.getState().resetRun(null);
                location.hash = '#/';
              });
            }}
          >delete</button>
        )}
      </div>
    </header>
  );
}
