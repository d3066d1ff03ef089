import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { taskFromMetadata, UnknownGameError } from '../../src/rl/tasks/env-task.ts';

/**
 * An OpenEnv server of `envClass` (default metadata, as upstream's) whose /ws state reports `state`
 * after a reset: OpenSpiel's `game_name`, TextArena's `env_id` (specs/openenv-protocol.md §5.2, §5.3).
 */
async function gameServer(envClass: string, state: Record<string, unknown>): Promise<{ url: string; close(): Promise<void> }> {
  const http: Server = createServer((req, res) => {
    const meta = req.url === '/metadata' ? JSON.stringify({ name: envClass, description: `${envClass} environment`, readme_content: null, version: '1.0.0', author: null, documentation_url: null }) : null;
    res.writeHead(meta ? 200 : 404, { 'content-type': 'application/json' });
    res.end(meta ?? '{"detail":"Not Found"}');
  });
  const wss = new WebSocketServer({ server: http, path: '/ws' });
  wss.on('connection', (ws) => ws.on('message', (raw) => {
    const frame = JSON.parse(raw.toString()) as { type: string };
    if (frame.type === 'reset') ws.send('{"type":"observation","data":{"observation":{"legal_actions":[0,1]},"reward":null,"done":false}}');
    else if (frame.type === 'state') ws.send(JSON.stringify({ type: 'state', data: { episode_id: 'e', step_count: 0, ...state } }));
    else if (frame.type === 'close') ws.close(1000, '');
  }));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(http.address() as { port: number }).port}`,
    close: () => new Promise<void>((resolve) => { for (const c of wss.clients) c.terminate(); wss.close(); http.close(() => resolve()); http.closeAllConnections(); }),
  };
}

describe('taskFromMetadata', () => {
  let server: EnvServer;
  beforeAll(async () => { server = await createEnvServer({ port: 0 }); });
  afterAll(async () => { await server?.close(); });

  it('tells each built-in env by the class its /metadata names, and the game it plays', async () => {
    expect(await taskFromMetadata(`${server.url}/envs/echo`)).toBe('echo');
    expect(await taskFromMetadata(`${server.url}/envs/catch/`)).toBe('catch');
    expect(await taskFromMetadata(`${server.url}/envs/wordle`)).toBe('wordle');
  });

  it('names the URL and the class when it cannot tell', async () => {
    await expect(taskFromMetadata(`${server.url}/envs/nope`)).rejects.toThrow(`Cannot read ${server.url}/envs/nope/metadata to tell which environment this is: HTTP 404`);
    const other = (async () => new Response(JSON.stringify({ name: 'ChessEnvironment' }))) as typeof fetch;
    await expect(taskFromMetadata('http://space.example', other)).rejects.toThrow('http://space.example reports ChessEnvironment; the trainer has tool wrappers for EchoEnvironment, OpenSpielEnvironment, TextArenaEnvironment, BrowserGymEnvironment only');
  });

  it('an OpenSpiel or TextArena server is matched by its game, not its class: other games are refused by name', async () => {
    const cases = [
      { envClass: 'OpenSpielEnvironment', state: { game_name: 'catch', agent_player: 0 }, task: 'catch' },
      { envClass: 'TextArenaEnvironment', state: { env_id: 'Wordle-v0', num_players: 1 }, task: 'wordle' },
      { envClass: 'OpenSpielEnvironment', state: { game_name: 'tic_tac_toe' }, error: "serves OpenSpielEnvironment playing 'tic_tac_toe'; the trainer's OpenSpielEnvironment tasks play 'catch' (the catch task) only" },
      // TRL's sudoku.py against a Sudoku Space trains as sudoku, never as wordle.
      { envClass: 'TextArenaEnvironment', state: { env_id: 'Sudoku-v0' }, task: 'sudoku' },
      { envClass: 'TextArenaEnvironment', state: { env_id: 'TicTacToe-v0' }, error: "serves TextArenaEnvironment playing 'TicTacToe-v0'; the trainer's TextArenaEnvironment tasks play 'Wordle-v0' (the wordle task), 'Sudoku-v0' (the sudoku task)" },
      { envClass: 'TextArenaEnvironment', state: {}, error: "serves TextArenaEnvironment, which plays many games, but its state names none (no 'env_id')" },
    ];
    for (const c of cases) {
      const game = await gameServer(c.envClass, c.state);
      try {
        const got = await taskFromMetadata(game.url).catch((e: unknown) => e);
        if (c.task) expect(got).toBe(c.task);
        else {
          expect(got).toBeInstanceOf(UnknownGameError);
          expect((got as Error).message).toContain(`${game.url} ${c.error}`);
        }
      } finally {
        await game.close();
      }
    }
  });

  it("a proxied upstream (the app's path) is told by its game through the proxy", async () => {
    const proxy = await createEnvServer({ port: 0, envs: {}, upstreams: { space: [`${server.url}/envs/wordle`] } });
    try {
      expect(await taskFromMetadata(`${proxy.url}/envs/space`)).toBe('wordle');
    } finally {
      await proxy.close();
    }
  });

  it('a game named in /metadata is read from there, with no episode', async () => {
    const meta = (game: string) => (async () => new Response(JSON.stringify({ name: 'OpenSpielEnvironment', game_name: game }))) as typeof fetch;
    expect(await taskFromMetadata('http://unreachable.invalid', meta('catch'))).toBe('catch');
    await expect(taskFromMetadata('http://unreachable.invalid', meta('chess'))).rejects.toThrow("http://unreachable.invalid serves OpenSpielEnvironment playing 'chess'");
  });
});
