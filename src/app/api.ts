// Client of the env-server's run store (/api/runs) and environment listing (/envs).
// Type-only: erased at build time, so the page never bundles the SQLite store.
import type { ArtifactInfo, RunListEntry, RunSummary, StepRecord } from '../../env-server/runs.ts';
import { TASK_BY_METADATA, taskFromMetadata } from '../rl/tasks/env-task.ts';

export type { ArtifactInfo, RunListEntry, RunSummary, StepRecord };

/** Rollouts as stored (data unchecked: see stored-rollout.ts), and every step that kept some. */
export interface RolloutsPage {
  rollouts: { step: number; index: number; data: Record<string, unknown> }[];
  steps: number[];
}

/** Bytes as base64, in chunks (String.fromCharCode of a whole model would overflow the call stack). */
function toBase64(bytes: Uint8Array): string {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

export class ApiError extends Error {
  constructor(message: string, readonly status: number) {
    super(message);
  }
}

async function call<T>(method: string, path: string, body?: unknown, token?: string): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { 'content-type': 'application/json', ...(token ? { 'x-webgrpo-write-token': token } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(`The env-server at ${location.origin} is unreachable (${(err as Error).message})`, 0);
  }
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError((data as { detail?: string }).detail ?? `${method} ${path} failed with HTTP ${res.status}`, res.status);
  return data as T;
}

export const api = {
  createRun: (run: { name: string; config: Record<string, unknown>; model: Record<string, unknown>; env: Record<string, unknown>; parent?: string }) =>
    call<{ id: string; writeToken: string; shareUrl: string }>('POST', '/api/runs', run),
  getRun: (id: string, after = -1) => call<{ run: RunSummary; steps: StepRecord[] }>('GET', `/api/runs/${encodeURIComponent(id)}?after=${after}`),
  rollouts: (id: string, lastSteps = 5) =>
    call<RolloutsPage>('GET', `/api/runs/${encodeURIComponent(id)}/rollouts?last=${lastSteps}`),
  /** The rollouts of one step (any step: the viewer pages through all of them). */
  stepRollouts: (id: string, step: number) => call<RolloutsPage>('GET', `/api/runs/${encodeURIComponent(id)}/rollouts?step=${step}`),
  rename: (id: string, token: string, name: string) => call('POST', `/api/runs/${encodeURIComponent(id)}/name`, { name }, token),
  deleteRun: (id: string, token: string) => call('DELETE', `/api/runs/${encodeURIComponent(id)}`, undefined, token),
  /** One step as the store keeps it (see stepRecord); re-sending a step replaces it. */
  appendStep: (id: string, token: string, step: { step: number; metrics: Record<string, number | null>; rollouts: unknown[] }) =>
    call('POST', `/api/runs/${encodeURIComponent(id)}/steps`, step, token),
  setStatus: (id: string, token: string, status: string, error?: string) => call('POST', `/api/runs/${encodeURIComponent(id)}/status`, { status, error }, token),
  importRun: (text: string) => call<{ id: string; writeToken: string; shareUrl: string }>('POST', '/api/runs/import', text),
  exportUrl: (id: string) => `/api/runs/${encodeURIComponent(id)}/export`,
  /** The run as one HTML file that opens without a server (env-server/run-page.ts). */
  pageUrl: (id: string) => `/api/runs/${encodeURIComponent(id)}/page`,
  listRuns: (limit = 50, offset = 0) => call<{ runs: RunListEntry[]; total: number }>('GET', `/api/runs?limit=${limit}&offset=${offset}`),
  artifacts: (id: string) => call<{ artifacts: ArtifactInfo[] }>('GET', `/api/runs/${encodeURIComponent(id)}/artifacts`),
  artifactUrl: (id: string, bundle: string, name: string) => `/api/runs/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(bundle)}/${encodeURIComponent(name)}`,
  /** Keeps files with the run (JSON with base64, as every write to the run store is JSON). */
  putArtifacts: (id: string, token: string, bundle: string, files: { name: string; bytes: Uint8Array }[]) =>
    call('POST', `/api/runs/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(bundle)}`, { files: files.map((f) => ({ name: f.name, base64: toBase64(f.bytes) })) }, token),
  async artifactBytes(id: string, bundle: string, name: string): Promise<Uint8Array> {
    const res = await fetch(api.artifactUrl(id, bundle, name));
    if (!res.ok) throw new ApiError(`Could not fetch ${bundle}/${name} of run ${id}: HTTP ${res.status}`, res.status);
    return new Uint8Array(await res.arrayBuffer());
  },
  envs: () => call<{ envs: EnvListEntry[] }>('GET', '/envs'),
  envHealth: (base: string) => call<{ status: string }>('GET', `${base}/health`),
  envMetadata: (base: string) => call<Record<string, unknown>>('GET', `${base}/metadata`),
};

/** One env of the env-server's `GET /envs`; a proxied one says whether its upstream answers (and why not). */
export interface EnvListEntry {
  name: string;
  kind: string;
  /** Proxies: probed at startup, refreshed by each session; null while unknown. */
  reachable?: boolean | null;
  error?: string;
}

/**
 * Why the env `name` does not answer (its /health through the env-server fails), in the env-server's
 * words from `GET /envs` when it has them; null when it answers.
 */
export async function envUnreachable(name: string): Promise<string | null> {
  try {
    await api.envHealth(`/envs/${encodeURIComponent(name)}`);
    return null;
  } catch (err) {
    const listed = await api.envs().then((r) => r.envs.find((e) => e.name === name), () => undefined);
    return listed?.reachable === false && listed.error ? listed.error : (err as Error).message;
  }
}

/**
 * The trainer task (TRL example) an environment serves: a built-in name as is; a proxied upstream
 * (any name) by the environment class its /metadata reports.
 */
export async function taskForEnv(name: string): Promise<string> {
  if ((Object.values(TASK_BY_METADATA) as string[]).includes(name)) return name;
  return taskFromMetadata(`${location.origin}/envs/${encodeURIComponent(name)}`);
}

/** Write tokens of the runs this browser created: only the creator's tab may write to a run. */
export const ownedRuns = {
  get(id: string): string | null {
    return localStorage.getItem(`webgrpo.run.${id}`);
  },
  set(id: string, token: string): void {
    localStorage.setItem(`webgrpo.run.${id}`, token);
  },
  /** A deleted run's token is of no use any more. */
  forget(id: string): void {
    localStorage.removeItem(`webgrpo.run.${id}`);
  },
  /** The run a tab was training when it closed (offered for resume). */
  active(): string | null {
    return localStorage.getItem('webgrpo.activeRun');
  },
  setActive(id: string | null): void {
    if (id) localStorage.setItem('webgrpo.activeRun', id);
    else localStorage.removeItem('webgrpo.activeRun');
  },
};
