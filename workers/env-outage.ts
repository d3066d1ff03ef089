// Tells an env-server that is gone (stopped, restarting, the laptop asleep) from an env that failed one
// episode: env trouble ends an episode as unscorable (a failed tool call as one that earned nothing),
// and a generation played against a server that is not there would train on nothing but failures. So
// when any episode of a generation had env trouble, the env-server's own health route is asked; no answer at all means the server is down and the run
// pauses (its state kept) instead of taking the step.

/** How long the health probe waits: a live server answers /health at once. */
const PROBE_TIMEOUT_MS = 5_000;

/** The env's base URL (…/envs/<name>) → the env-server's /health. */
function healthUrl(envUrl: string): string {
  const url = new URL(envUrl);
  url.pathname = '/health';
  url.search = '';
  return url.href;
}

/**
 * Why the env-server behind `envUrl` is unreachable (a sentence naming it), or null when it answers
 * (with any HTTP status: a server that answers is up, whatever it thinks of the request).
 */
export async function envServerUnreachable(envUrl: string, fetchImpl: typeof fetch = fetch): Promise<string | null> {
  const url = healthUrl(envUrl);
  try {
    await fetchImpl(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS), cache: 'no-store' });
    return null;
  } catch (err) {
    const why = (err as Error).name === 'TimeoutError' ? `no answer in ${PROBE_TIMEOUT_MS / 1000} s` : (err as Error).message;
    return `The env-server at ${new URL(url).origin} is unreachable (${why})`;
  }
}

/**
 * What went wrong with the env in a generation, when anything did: an episode that could not start or
 * ended unscorable, or a tool call that failed (a socket closed under it ends the episode with the
 * env's reward of nothing).
 */
export function envTrouble(rollouts: readonly { error?: string; toolFailures: number }[]): string | null {
  const failed = rollouts.find((r) => r.error);
  if (failed) return failed.error!;
  const calls = rollouts.reduce((n, r) => n + r.toolFailures, 0);
  return calls > 0 ? `${calls} tool call${calls === 1 ? '' : 's'} failed` : null;
}
