// How the trainer tells an env-server that is gone from an env that failed an episode (workers/env-outage.ts).
import { describe, expect, it } from 'vitest';
import { envServerUnreachable, envTrouble } from '../../workers/env-outage.ts';

describe('env-server outage check', () => {
  it("asks the env-server's own /health, and names it when nothing answers", async () => {
    const asked: string[] = [];
    const down = (async (url: string) => {
      asked.push(url);
      throw new TypeError('Failed to fetch');
    }) as unknown as typeof fetch;
    expect(await envServerUnreachable('http://127.0.0.1:8000/envs/echo', down)).toBe('The env-server at http://127.0.0.1:8000 is unreachable (Failed to fetch)');
    expect(asked).toEqual(['http://127.0.0.1:8000/health']);
    // Any answer, an error status included, means the server is up: the env's trouble is its own.
    const up = (async () => new Response('{}', { status: 503 })) as unknown as typeof fetch;
    expect(await envServerUnreachable('http://127.0.0.1:8000/envs/echo', up)).toBeNull();
  });

  it('counts failed episodes and failed tool calls as env trouble, a clean generation as none', () => {
    expect(envTrouble([{ toolFailures: 0 }, { toolFailures: 0 }])).toBeNull();
    expect(envTrouble([{ toolFailures: 0 }, { error: 'reset failed: closed (code: CONNECT_FAILED)', toolFailures: 0 }])).toBe('reset failed: closed (code: CONNECT_FAILED)');
    expect(envTrouble([{ toolFailures: 2 }, { toolFailures: 1 }])).toBe('3 tool calls failed');
  });
});
