// While a run is paused because its env-server stopped answering: asks the server's /health again with
// growing pauses (run-outbox.ts's backoff) until it answers, so the run continues by itself once the
// server is back. The page shows the time to the next try.
import { backoffMs } from './run-outbox.ts';

/**
 * Resolves once `GET /health` on this page's server answers (any HTTP status), trying first after
 * 1 s, then 2, 4, … 30 s; `onWait(retryAt)` before each wait. Rejects with an AbortError when `signal`
 * aborts (the user resumed or stopped the run meanwhile).
 */
export async function untilServerAnswers(signal: AbortSignal, onWait: (retryAt: number) => void, fetchImpl: typeof fetch = fetch): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const wait = backoffMs(attempt);
    onWait(Date.now() + wait);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, wait);
      signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(signal.reason);
      }, { once: true });
    });
    signal.throwIfAborted();
    try {
      await fetchImpl('/health', { cache: 'no-store', signal: AbortSignal.any([signal, AbortSignal.timeout(5000)]) });
      return;
    } catch {
      signal.throwIfAborted();
    }
  }
}
