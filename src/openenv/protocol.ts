// Which form an OpenEnv URL speaks (specs/openenv-mcp.md §6), asked once per URL and remembered:
// GET /schema, and if that does not settle it, one JSON-RPC `tools/list` frame on a fresh `/ws` (or
// `POST /mcp` on a server with no `/ws` route).

import { connect } from './client.ts';
import { OpenEnvError } from './errors.ts';
import { HttpEpisode, lacksWsRoute } from './http-episode.ts';
import { detectProtocol, type EnvProtocol, type McpProbe } from './mcp.ts';

/** Capacity refusals are retried like an episode's (full jitter, doubling from 200 ms up to 5 s, 5 retries). */
const PROBE_RETRIES = 5;

/** Opens `/ws`, sends the `mcp` tools/list frame before any reset, closes. An old server's UNKNOWN_TYPE = unsupported. */
export const wsMcpProbe: McpProbe = async (baseUrl) => {
  for (let attempt = 0; ; attempt++) {
    let session;
    try {
      session = await connect(baseUrl, { timeoutMs: 10_000 });
    } catch (err) {
      // No /ws route (an HTTP-only server): the same tools/list over POST /mcp.
      if (lacksWsRoute(err)) return new HttpEpisode(baseUrl, 10_000).mcp({ jsonrpc: '2.0', method: 'tools/list', id: 1 });
      throw err;
    }
    try {
      return await session.mcp({ jsonrpc: '2.0', method: 'tools/list', id: 1 });
    } catch (err) {
      if (err instanceof OpenEnvError && err.code === 'CAPACITY_REACHED' && attempt < PROBE_RETRIES) {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(5000, 200 * 2 ** attempt)));
        continue;
      }
      // Refused or cut off says nothing about the protocol: fail (uncached) rather than guess.
      if (err instanceof OpenEnvError && !['CLOSED', 'TIMEOUT', 'CAPACITY_REACHED', 'CONNECT_FAILED'].includes(err.code)) return 'unsupported';
      throw err;
    } finally {
      await session.close();
    }
  }
};

const known = new Map<string, Promise<EnvProtocol>>();

/** detectProtocol with the `/ws` probe, cached per base URL (a failed detection is not cached). */
export function envProtocol(baseUrl: string): Promise<EnvProtocol> {
  const key = baseUrl.trim().replace(/\/+$/, '');
  let found = known.get(key);
  if (!found) {
    found = detectProtocol(key, wsMcpProbe);
    known.set(key, found);
    found.catch(() => known.delete(key));
  }
  return found;
}
