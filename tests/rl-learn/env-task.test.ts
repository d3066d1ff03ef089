import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { taskFromMetadata } from '../../src/rl/tasks/env-task.ts';

describe('taskFromMetadata', () => {
  let server: EnvServer;
  beforeAll(async () => { server = await createEnvServer({ port: 0 }); });
  afterAll(async () => { await server?.close(); });

  it('tells each built-in env by the class its /metadata names', async () => {
    expect(await taskFromMetadata(`${server.url}/envs/echo`)).toBe('echo');
    expect(await taskFromMetadata(`${server.url}/envs/catch/`)).toBe('catch');
    expect(await taskFromMetadata(`${server.url}/envs/wordle`)).toBe('wordle');
  });

  it('names the URL and the class when it cannot tell', async () => {
    await expect(taskFromMetadata(`${server.url}/envs/nope`)).rejects.toThrow(`Cannot read ${server.url}/envs/nope/metadata to tell which environment this is: HTTP 404`);
    const other = (async () => new Response(JSON.stringify({ name: 'ChessEnvironment' }))) as typeof fetch;
    await expect(taskFromMetadata('http://space.example', other)).rejects.toThrow('http://space.example reports ChessEnvironment; the trainer has tool wrappers for EchoEnvironment, OpenSpielEnvironment, TextArenaEnvironment, BrowserGymEnvironment only');
  });
});
