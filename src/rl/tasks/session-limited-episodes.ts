// Episodes that wait for a session of a server that serves few at once (src/openenv/session-limit.ts):
// the opens of the generic tasks (zero-code action-schema and MCP), queued per base URL under the limit
// the server's refusal named. Environment classes get the same through EnvClient.

import { SessionLimiter } from '../../openenv/session-limit.ts';
import type { OpenEpisode } from './envs/episode-session.ts';

/** `open`, queued per base URL under the session limit its server reported. */
export function sessionLimitedEpisodes(open: OpenEpisode): OpenEpisode {
  const limiter = new SessionLimiter();
  return async (baseUrl, reset) => {
    const { value: session, release } = await limiter.open(baseUrl, () => open(baseUrl, reset));
    let closed = false;
    return {
      ...session,
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await session.close();
        } finally {
          release();
        }
      },
    };
  };
}
