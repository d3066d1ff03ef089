// Whether an upstream replica answers as an OpenEnv server: GET /health, then GET /metadata, each
// with a short timeout. Run at startup for every `--upstream` replica (a bad URL is reported before
// any client finds out), and the reason worded for a person: connection refused, no answer, HTTP 503.

/** What a probe (or the last session's dial) found of one replica. */
export interface ReplicaReachability {
  /** null: not known yet. */
  reachable: boolean | null;
  /** Why it is unreachable, or what is wrong with an answer; absent when all is well. */
  error?: string;
}

/** The network error behind a failed fetch, in words (undici puts the system error in `cause`). */
export function fetchFailure(err: unknown, timeoutMs: number): string {
  const e = err as Error & { cause?: Error & { code?: string } };
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return `no answer within ${timeoutMs} ms`;
  const cause = e?.cause;
  switch (cause?.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `host not found (${cause.message})`;
    case 'ECONNRESET':
      return 'connection reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'no route to the host';
    default:
      // The Fetch standard's blocked ports (1, 9, 25, 6000, …): no HTTP call will ever reach them.
      if (cause?.message === 'bad port') return "a port fetch() refuses to connect to (the Fetch standard's blocked ports): serve it on another port";
      return cause?.message ?? e?.message ?? String(err);
  }
}

/** HTTP base of a replica URL (ws:// → http://, no trailing slash). */
function httpBase(url: string): string {
  return url.replace(/^ws(s?):\/\//, 'http$1://').replace(/\/+$/, '');
}

async function get(url: string, timeoutMs: number): Promise<{ status: number } | { failure: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs), redirect: 'manual' });
    await res.body?.cancel();
    return { status: res.status };
  } catch (err) {
    return { failure: fetchFailure(err, timeoutMs) };
  }
}

/** GET /health (must be 2xx: else unreachable), then GET /metadata (a failure there is an error, still reachable). */
export async function probeReplica(url: string, timeoutMs: number): Promise<ReplicaReachability> {
  const base = httpBase(url);
  const health = await get(`${base}/health`, timeoutMs);
  if ('failure' in health) return { reachable: false, error: `${health.failure} (GET /health)` };
  if (health.status < 200 || health.status >= 300) return { reachable: false, error: `GET /health answered HTTP ${health.status}` };
  const metadata = await get(`${base}/metadata`, timeoutMs);
  if ('failure' in metadata) return { reachable: true, error: `${metadata.failure} (GET /metadata)` };
  if (metadata.status < 200 || metadata.status >= 300) return { reachable: true, error: `GET /metadata answered HTTP ${metadata.status}: not an OpenEnv server?` };
  return { reachable: true };
}
