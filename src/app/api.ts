// Client of the env-server's run store (/api/runs) and environment listing (/envs).
// The wire types come from their own module (no code), so the page never bundles the SQLite store.
import type { ArtifactInfo, CreatedRun, RunListEntry, RunSummary, StepRecord } from '../../env-server/runs-wire.ts';
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

/** Headers that prove who is asking: the write token (writes, and an owner's reads) or a reader's share token. */
type Auth = { write: string } | { share: string } | Record<string, never>;

function authHeaders(auth: Auth): Record<string, string> {
  if ('write' in auth) return { 'x-webgrpo-write-token': auth.write };
  if ('share' in auth) return { 'x-webgrpo-share-token': auth.share };
  return {};
}

/** How this browser reads run `id`: as its owner, with a share link's token, or (unknown run) with nothing. */
function readAuth(id: string): Auth {
  const write = ownedRuns.get(id);
  if (write) return { write };
  const share = shareTokens.get(id);
  return share ? { share } : {};
}

/** `?share=` for read URLs the page navigates to (downloads cannot carry headers); never a write token. */
function shareQuery(id: string): string {
  const share = shareTokens.get(id);
  return share ? `?share=${encodeURIComponent(share)}` : '';
}

async function call<T>(method: string, path: string, body?: unknown, token?: string | Auth): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers: { 'content-type': 'application/json', ...authHeaders(typeof token === 'string' ? { write: token } : token ?? {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(`The env-server at ${location.origin} is unreachable (${(err as Error).message})`, 0);
  }
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new ApiError((data as { detail?: string }).detail ?? `${method} ${path} failed with HTTP ${res.status}`, res.status);
  return data as T;
}

/** A run this browser created or imported: it keeps the write token (ownership) and the share token (links). */
function remember(created: CreatedRun): CreatedRun {
  ownedRuns.set(created.id, created.writeToken);
  shareTokens.set(created.id, created.shareToken);
  return created;
}

export const api = {
  createRun: async (run: { name: string; config: Record<string, unknown>; model: Record<string, unknown>; env: Record<string, unknown>; parent?: string }) =>
    remember(await call<CreatedRun>('POST', '/api/runs', run)),
  async getRun(id: string, after = -1): Promise<{ run: RunSummary; steps: StepRecord[] }> {
    const got = await call<{ run: RunSummary; steps: StepRecord[]; shareToken: string }>('GET', `/api/runs/${encodeURIComponent(id)}?after=${after}`, undefined, readAuth(id));
    // An owner's run from before share tokens (or from another tab): its links need the token.
    shareTokens.set(id, got.shareToken);
    return got;
  },
  rollouts: (id: string, lastSteps = 5) =>
    call<RolloutsPage>('GET', `/api/runs/${encodeURIComponent(id)}/rollouts?last=${lastSteps}`, undefined, readAuth(id)),
  /** The rollouts of one step (any step: the viewer pages through all of them). */
  stepRollouts: (id: string, step: number) => call<RolloutsPage>('GET', `/api/runs/${encodeURIComponent(id)}/rollouts?step=${step}`, undefined, readAuth(id)),
  rename: (id: string, token: string, name: string) => call('POST', `/api/runs/${encodeURIComponent(id)}/name`, { name }, token),
  deleteRun: (id: string, token: string) => call('DELETE', `/api/runs/${encodeURIComponent(id)}`, undefined, token),
  /** One step as the store keeps it (see stepRecord); re-sending a step replaces it. */
  appendStep: (id: string, token: string, step: { step: number; metrics: Record<string, number | null>; rollouts: unknown[] }) =>
    call('POST', `/api/runs/${encodeURIComponent(id)}/steps`, step, token),
  /** Metrics added to a stored step (an Evaluate result, kept with the step it evaluated). */
  mergeStepMetrics: (id: string, token: string, step: number, metrics: Record<string, number | null>) =>
    call('POST', `/api/runs/${encodeURIComponent(id)}/step-metrics`, { step, metrics }, token),
  setStatus: (id: string, token: string, status: string, error?: string) => call('POST', `/api/runs/${encodeURIComponent(id)}/status`, { status, error }, token),
  /** The importer owns the copy (a new run with its own tokens). */
  importRun: async (text: string) => remember(await call<CreatedRun>('POST', '/api/runs/import', text)),
  exportUrl: (id: string) => `/api/runs/${encodeURIComponent(id)}/export${shareQuery(id)}`,
  /** The run as one HTML file that opens without a server (env-server/run-page.ts). */
  pageUrl: (id: string) => `/api/runs/${encodeURIComponent(id)}/page${shareQuery(id)}`,
  /** The link that lets others read the run (its share token, in the fragment: never sent to a server). */
  shareLink: (id: string) => `${location.origin}/#/runs/${id}?share=${shareTokens.get(id) ?? ''}`,
  /** This browser's own runs: the store lists a run only to whoever shows its write token. */
  async listRuns(limit = 50, offset = 0): Promise<{ runs: RunListEntry[]; total: number }> {
    const list = await call<{ runs: RunListEntry[]; total: number }>('POST', '/api/runs/list', { writeTokens: ownedRuns.tokens(), limit, offset });
    for (const r of list.runs) shareTokens.set(r.id, r.shareToken);
    return list;
  },
  artifacts: (id: string) => call<{ artifacts: ArtifactInfo[] }>('GET', `/api/runs/${encodeURIComponent(id)}/artifacts`, undefined, readAuth(id)),
  artifactUrl: (id: string, bundle: string, name: string) => `/api/runs/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(bundle)}/${encodeURIComponent(name)}${shareQuery(id)}`,
  /** Keeps files with the run (JSON with base64, as every write to the run store is JSON). */
  putArtifacts: (id: string, token: string, bundle: string, files: { name: string; bytes: Uint8Array }[]) =>
    call('POST', `/api/runs/${encodeURIComponent(id)}/artifacts/${encodeURIComponent(bundle)}`, { files: files.map((f) => ({ name: f.name, base64: toBase64(f.bytes) })) }, token),
  async artifactBytes(id: string, bundle: string, name: string): Promise<Uint8Array> {
    const res = await fetch(api.artifactUrl(id, bundle, name), { headers: authHeaders(readAuth(id)) });
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

const OWNED_PREFIX = 'webgrpo.run.';

/**
 * Write tokens of the runs this browser created: only the creator's tab may write to a run. They stay
 * in this origin's storage and go only to this server, in a header or a list request's body.
 */
export const ownedRuns = {
  get(id: string): string | null {
    return localStorage.getItem(`webgrpo.run.${id}`);
  },
  /** Every write token this browser keeps (the runs list asks for these runs). */
  tokens(): string[] {
    const out: string[] = [];
    for (let i = 0; i < localStorage.length; i++) {
      const key = localStorage.key(i);
      const token = key?.startsWith(OWNED_PREFIX) ? localStorage.getItem(key) : null;
      if (token) out.push(token);
    }
    return out;
  },
  set(id: string, token: string): void {
    localStorage.setItem(`webgrpo.run.${id}`, token);
  },
  /** A deleted run's tokens are of no use any more. */
  forget(id: string): void {
    localStorage.removeItem(`webgrpo.run.${id}`);
    shareTokens.forget(id);
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

/** Share tokens of the runs this browser may read: its own, and those it opened by a share link. */
export const shareTokens = {
  get(id: string): string | null {
    return localStorage.getItem(`webgrpo.share.${id}`);
  },
  set(id: string, token: string): void {
    localStorage.setItem(`webgrpo.share.${id}`, token);
  },
  forget(id: string): void {
    localStorage.removeItem(`webgrpo.share.${id}`);
  },
};

/** A run route's hash (`#/runs/<id>` or a share link's `#/runs/<id>?share=<token>`) → its id and token. */
export function runRoute(hash: string): { id: string; share: string | null } | null {
  const m = /^#\/runs\/([A-Za-z0-9_-]+)(?:\?share=([A-Za-z0-9_-]+))?$/.exec(hash);
  return m ? { id: m[1]!, share: m[2] ?? null } : null;
}
