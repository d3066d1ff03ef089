// Hash routes: `#/` lists recent runs and sets up a new one, `#/runs` lists this browser's runs,
// `#/runs/<id>` shows one (live or read-only; a share link adds `?share=<token>`), `#/compare/<id>,<id>…`
// overlays several, anything else 404s.
import { useEffect, useState } from 'react';
import { runRoute, shareTokens } from '../api.ts';
import { sendLeftoverWrites } from '../leftover-writes.ts';
import { compareIds } from '../compare.ts';
import { useUi } from '../store.ts';
import { trainer } from '../trainer-client.ts';
import { CompareView } from './CompareView.tsx';
import { ErrorBoundary } from './ErrorBoundary.tsx';
import { NotFound } from './NotFound.tsx';
import { RunsList } from './RunsList.tsx';
import { RunView } from './RunView.tsx';
import { SetupView } from './SetupView.tsx';

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

export function App() {
  const hash = useHash();
  const probe = useUi((s) => s.probe);
  useEffect(() => {
    // Steps a closed tab could not save (the store was away then) are sent now.
    void sendLeftoverWrites().catch(() => undefined);
    trainer().probe().then((p) => useUi.getState().set({ probe: p }), (e) => useUi.getState().set({ probe: { webgpu: false, error: (e as Error).message } }));
  }, []);
  const run = runRoute(hash);
  // A share link's token is kept: this browser may read the run from now on (charts, compare, files).
  if (run?.share) shareTokens.set(run.id, run.share);
  const setup = hash === '' || hash === '#' || hash === '#/';
  const list = hash === '#/runs' || hash === '#/runs/';
  const compare = compareIds(hash);
  return (
    <div className="app">
      <nav>
        <a href="#/" className="brand">webgrpo</a>
        <span className="muted">GRPO for tool-using agents, on WebGPU, in this tab</span>
        <a href="#/" className={setup ? 'nav-link active' : 'nav-link'}>new run</a>
        <a href="#/runs" className={list ? 'nav-link active' : 'nav-link'} data-testid="nav-runs">your runs</a>
        <span className="adapter" data-testid="adapter">
          {probe?.adapter ? `${probe.adapter.vendor || probe.adapter.architecture || 'GPU'} ${probe.adapter.architecture}${probe.adapter.isFallbackAdapter ? ' (software)' : ''}${probe.f16 ? ' · f16' : ''}` : probe?.webgpu === false ? 'no WebGPU' : ''}
        </span>
      </nav>
      <main>
        <ErrorBoundary key={hash} what="this page">
          {setup ? <SetupView /> : list ? <RunsList title="Your runs" pageSize={25} /> : compare ? <CompareView ids={compare} /> : run ? <RunView key={run.id} id={run.id} /> : <NotFound what={`page ${hash}`} />}
        </ErrorBoundary>
      </main>
    </div>
  );
}
