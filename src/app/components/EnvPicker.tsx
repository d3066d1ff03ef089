// Choose the environment: a built-in one of the env-server, or any environment the env-server
// proxies (configured with `--upstream`, so the concurrency cap holds). Shows health and metadata, or
// why a proxied env does not answer (the env-server probes its upstreams, GET /envs says why).
import { useEffect, useState } from 'react';
import { api, envUnreachable, type EnvListEntry } from '../api.ts';

export interface EnvSelection {
  name: string;
  url: string;
}

/**
 * The env's name and version ("EchoEnvironment 1.0.0"), and its description unless it is OpenEnv's
 * default one (`<name> environment`, what every env that sets none reports, the built-in ones as
 * OpenEnv's own do), which would only say the name again.
 */
export function envSummary(metadata: Record<string, unknown>): string {
  const name = String(metadata.name ?? '');
  const head = [name, String(metadata.version ?? '')].filter(Boolean).join(' ');
  const description = typeof metadata.description === 'string' ? metadata.description.trim() : '';
  return description && description !== `${name} environment` ? `${head} — ${description}` : head;
}

export function EnvPicker({ value, onChange }: { value: EnvSelection | null; onChange: (e: EnvSelection) => void }) {
  const [envs, setEnvs] = useState<EnvListEntry[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [meta, setMeta] = useState<{ health: string; metadata: Record<string, unknown> } | null>(null);
  const [unreachable, setUnreachable] = useState<string | null>(null);

  useEffect(() => {
    api.envs().then((r) => {
      setEnvs(r.envs);
      if (!value && r.envs.length) {
        const first = r.envs.find((e) => e.name === 'catch') ?? r.envs[0];
        onChange({ name: first.name, url: `${location.origin}/envs/${first.name}` });
      }
    }, (e) => setError(`Cannot list environments: ${(e as Error).message}`));
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  useEffect(() => {
    if (!value) return;
    setMeta(null);
    setUnreachable(null);
    const base = `/envs/${value.name}`;
    Promise.all([api.envHealth(base), api.envMetadata(base)]).then(
      ([h, m]) => { setMeta({ health: h.status, metadata: m }); setError(null); },
      async (e) => {
        const why = await envUnreachable(value.name);
        if (why) setUnreachable(why);
        else setError(`Environment ${value.name} is not healthy: ${(e as Error).message}`);
      },
    );
  }, [value?.name]);

  return (
    <section className="panel">
      <h3>Environment</h3>
      <select aria-label="environment" value={value?.name ?? ''} onChange={(e) => onChange({ name: e.target.value, url: `${location.origin}/envs/${e.target.value}` })}>
        {envs.map((e) => <option key={e.name} value={e.name}>{e.name}{e.kind === 'proxy' ? ` (proxy${e.reachable === false ? ', unreachable' : ''})` : ''}</option>)}
      </select>
      <p className="muted">Remote OpenEnv servers (a Hugging Face Space, a container) appear here when the server runs with <code>--upstream NAME=URL</code>: sessions then go through its concurrency cap.</p>
      {meta && (
        <p className="env-meta" data-testid="env-meta">
          <span className={meta.health === 'healthy' ? 'ok' : 'error'}>● {meta.health}</span> {envSummary(meta.metadata)}
        </p>
      )}
      {unreachable && (
        <p className="env-meta" data-testid="env-unreachable">
          <span className="error">● unreachable</span> — {unreachable}
        </p>
      )}
      {error && <p className="error" role="alert">{error}</p>}
    </section>
  );
}
