// The client a class holds (`webgrpo/openenv`'s EnvClient) on both transports: the built-in env-server's
// `/ws` (echo over MCP call_tool with its tool list, catch's action steps and state) and an HTTP-only MCP
// server (OpenEnv's calendar shape: POST /reset, /step, /mcp; reset kwargs reach it, the step's reward
// comes back with the value). A class reaching past its episode gets a clear error.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from '../../env-server/server.ts';
import { EnvClient, envUrl, setEnvUrls } from '../../src/openenv/index.ts';
import { startHttpMcpDouble, type HttpMcpDouble } from '../openenv/mcp-http-double.ts';

let server: EnvServer;
let calendar: HttpMcpDouble;
beforeAll(async () => {
  server = await createEnvServer({ port: 0, maxConcurrentEnvs: 4 });
  calendar = await startHttpMcpDouble();
});
afterAll(async () => {
  await calendar.close();
  await server.close();
});

describe('EnvClient', () => {
  it('over /ws: MCP tools listed and called (echo), actions stepped and state read (catch), close ends the episode', async () => {
    const echo = new EnvClient(`${server.url}/envs/echo`);
    await echo.reset();
    expect((await echo.listTools()).map((t) => t.name)).toContain('echo_message');
    expect(await echo.callTool('echo_message', { message: 'héllo' })).toEqual({ value: 'héllo', reward: null, done: false });
    await echo.close();
    await expect(echo.step({})).rejects.toThrow(/no episode: call reset\(\) first/);

    const game = new EnvClient(`${server.url}/envs/catch`);
    const first = await game.reset();
    expect(first.observation.info_state).toHaveLength(50);
    const step = await game.step({ action_id: 1, game_name: 'catch', game_params: {} });
    expect(step.done).toBe(false);
    expect(await game.state()).toMatchObject({ game_name: 'catch' });
    await game.close();
  });

  it('over HTTP only (no /ws route): reset kwargs, tools listed, a call_tool step with its reward', async () => {
    const client = new EnvClient(calendar.url);
    const before = calendar.resets.length;
    await client.reset({ user_id: 'u7' });
    expect(calendar.resets.slice(before)).toEqual([{ user_id: 'u7' }]);
    expect((await client.listTools()).map((t) => t.name)).toEqual(['create_event']);
    expect(await client.callTool('create_event', { title: 'lunch' })).toEqual({ value: 'created 1', reward: 1, done: false });
    await expect(client.state()).rejects.toThrow(/serves no \/ws/);
    await client.close();
  });

  it('envUrl names the run\'s env, or says which names it has', () => {
    setEnvUrls({ echo: 'http://127.0.0.1:1/envs/echo' });
    expect(envUrl('echo')).toBe('http://127.0.0.1:1/envs/echo');
    expect(() => envUrl('nope')).toThrow(/no URL for an env named 'nope' \(it has .*echo/);
    expect(() => new EnvClient('localhost:8000')).toThrow(/not an http\(s\) or ws\(s\) URL/);
  });
});
