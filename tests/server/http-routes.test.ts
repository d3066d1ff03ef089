// The stateless HTTP routes of §2, their 422 bodies, `/mcp`, the 404/405 bodies, the top-level
// routes, and the extra handlers other parts of the app mount on the same server.

import { afterEach, describe, expect, it } from 'vitest';
import type { EnvServer } from '../../env-server/server.ts';
import { legacyEchoEnv } from '../../env-server/envs/legacy-echo.ts';
import { expectNoLeaks, Servers } from './helpers.ts';

const servers = new Servers();
afterEach(() => servers.closeAll());

async function call(server: EnvServer, method: string, path: string, body?: string): Promise<{ status: number; text: string; type: string | null; headers: Headers }> {
  const reply = await fetch(server.url + path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body });
  return { status: reply.status, text: await reply.text(), type: reply.headers.get('content-type'), headers: reply.headers };
}

describe('env HTTP routes (§2)', () => {
  it('health, metadata, schema, state', async () => {
    const server = await servers.start();
    expect(await call(server, 'GET', '/envs/echo/health')).toMatchObject({ status: 200, text: '{"status":"healthy"}', type: 'application/json' });
    expect((await call(server, 'GET', '/envs/echo/metadata')).text).toBe(
      '{"name":"EchoEnvironment","description":"EchoEnvironment environment","readme_content":null,"version":"1.0.0","author":null,"documentation_url":null}',
    );
    const schema = JSON.parse((await call(server, 'GET', '/envs/echo/schema')).text);
    expect(Object.keys(schema)).toEqual(['action', 'observation', 'state']);
    const state = JSON.parse((await call(server, 'GET', '/envs/echo/state')).text);
    expect(Object.keys(state)).toEqual(['episode_id', 'step_count']);
    expect(state.step_count).toBe(0);
    await expectNoLeaks(server);
  });

  it('POST /reset with no body, {}, extras, and the seed/episode_id 422s', async () => {
    // The base spec's (pre-MCP) echo; rewards are written as Python floats.
    const server = await servers.start({ envs: { echo: legacyEchoEnv } });
    const ready = '{"observation":{"echoed_message":"Echo environment ready!","message_length":0},"reward":0.0,"done":false}';
    expect(await call(server, 'POST', '/envs/echo/reset')).toMatchObject({ status: 200, text: ready });
    expect(await call(server, 'POST', '/envs/echo/reset', '{}')).toMatchObject({ status: 200, text: ready });
    expect(await call(server, 'POST', '/envs/echo/reset', '{"seed": 3, "anything": [1]}')).toMatchObject({ status: 200, text: ready });
    expect(await call(server, 'POST', '/envs/echo/reset', '{"seed":-1}')).toMatchObject({
      status: 422,
      text: '{"detail":[{"type":"greater_than_equal","loc":["body","seed"],"msg":"Input should be greater than or equal to 0","input":-1,"ctx":{"ge":0}}]}',
    });
    const long = 'e'.repeat(256);
    expect(JSON.parse((await call(server, 'POST', '/envs/echo/reset', JSON.stringify({ episode_id: long }))).text)).toEqual({
      detail: [{ type: 'string_too_long', loc: ['body', 'episode_id'], msg: 'String should have at most 255 characters', input: long, ctx: { max_length: 255 } }],
    });
    expect(JSON.parse((await call(server, 'POST', '/envs/echo/reset', '{"seed":1.5}')).text).detail[0]).toMatchObject({ type: 'int_from_float', loc: ['body', 'seed'] });
    const broken = JSON.parse((await call(server, 'POST', '/envs/echo/reset', '{"seed":')).text);
    expect(broken.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body', 8], msg: 'JSON decode error', ctx: { error: 'Expecting value' } });
    await expectNoLeaks(server);
  });

  it('POST /step: missing action (422 with body prefix), bad action (422 without), success, no shared state', async () => {
    const server = await servers.start();
    expect(await call(server, 'POST', '/envs/echo/step', '{}')).toMatchObject({
      status: 422,
      text: '{"detail":[{"type":"missing","loc":["body","action"],"msg":"Field required","input":{}}]}',
    });
    const bad = JSON.parse((await call(server, 'POST', '/envs/echo/step', '{"action":{"message":""}}')).text);
    expect(bad.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['message']]);
    expect(await call(server, 'POST', '/envs/echo/step', '{"action":{"message":"Hello"}}')).toMatchObject({
      status: 200,
      text: '{"observation":{"echoed_message":"Hello","message_length":5},"reward":0.5,"done":false}',
    });
    expect((await call(server, 'POST', '/envs/echo/step', '')).text).toBe('{"detail":[{"type":"missing","loc":["body"],"msg":"Field required","input":null}]}');
    for (const extras of ['', ',"timeout_s":5,"request_id":"r"']) {
      expect((await call(server, 'POST', '/envs/echo/step', `{"action":{"message":"a"}${extras}}`)).status).toBe(200);
    }
    // Each call builds a fresh env: two LEFT moves both find the paddle at its start (column 2),
    // so both leave it in column 1 with the ball on row 1.
    for (let i = 0; i < 2; i++) {
      const obs = JSON.parse((await call(server, 'POST', '/envs/catch/step', '{"action":{"action_id":0}}')).text).observation;
      const ones = obs.info_state.flatMap((v: number, j: number) => (v === 1 ? [j] : []));
      expect(ones[0]).toBeGreaterThanOrEqual(5);
      expect(ones[0]).toBeLessThan(10);
      expect(ones[1]).toBe(9 * 5 + 1);
    }
    await expectNoLeaks(server);
  });

  it('an env that raises is a 500', async () => {
    const server = await servers.start();
    const reply = await call(server, 'POST', '/envs/catch/step', '{"action":{"action_id":9}}');
    expect(reply.status).toBe(500);
    expect(reply.text).toBe('Internal Server Error');
    await expectNoLeaks(server);
  });

  it('POST /mcp answers JSON-RPC, always 200', async () => {
    const server = await servers.start();
    expect(await call(server, 'POST', '/envs/echo/mcp', 'nope')).toMatchObject({
      status: 200,
      text: '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error","data":null}}',
    });
    const empty = JSON.parse((await call(server, 'POST', '/envs/echo/mcp', '{}')).text);
    expect(empty).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    // catch is not an MCP env (echo is: tests/server/mcp-echo.test.ts).
    expect((await call(server, 'POST', '/envs/catch/mcp', '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"},"id":7}')).text).toBe(
      '{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Environment does not support MCP","data":null}}',
    );
    // params must be an object: -32600 with pydantic's text, and id null (openenv-mcp.md §3.2).
    expect(JSON.parse((await call(server, 'POST', '/envs/echo/mcp', '{"jsonrpc":"2.0","method":"tools/list","params":[1],"id":8}')).text)).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: -32600,
        message:
          'Invalid request: 1 validation error for JsonRpcRequest\nparams\n  Input should be a valid dictionary [type=dict_type, input_value=[1], input_type=list]\n    For further information visit https://errors.pydantic.dev/2.13/v/dict_type',
        data: null,
      },
    });
    await expectNoLeaks(server);
  });

  it('404 and 405 bodies; no CORS', async () => {
    const server = await servers.start();
    for (const path of ['/nope', '/envs/nope/health', '/envs/echo/nope', '/envs/echo']) {
      expect(await call(server, 'GET', path)).toMatchObject({ status: 404, text: '{"detail":"Not Found"}' });
    }
    const options = await call(server, 'OPTIONS', '/envs/echo/reset');
    expect(options).toMatchObject({ status: 405, text: '{"detail":"Method Not Allowed"}' });
    expect([...options.headers.keys()].filter((k) => k.startsWith('access-control-'))).toEqual([]);
    expect((await call(server, 'GET', '/envs/echo/reset')).status).toBe(405);
    await expectNoLeaks(server);
  });
});

describe('server-level routes', () => {
  it('GET /health and GET /envs', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 3 });
    expect((await call(server, 'GET', '/health')).text).toBe('{"status":"healthy"}');
    const listing = JSON.parse((await call(server, 'GET', '/envs')).text);
    expect(listing.envs.map((e: { name: string }) => e.name)).toEqual(['echo', 'catch', 'wordle', 'sudoku', 'browsergym']);
    expect(listing.envs[0]).toEqual({ name: 'echo', kind: 'builtin', path: '/envs/echo', active: 0, queued: 0, max_concurrent_envs: 3 });
    await expectNoLeaks(server);
  });

  it('extra handlers run before the 404, in order, and may decline', async () => {
    const seen: string[] = [];
    const server = await servers.start({
      extraHandlers: [
        (req) => {
          seen.push(`first ${req.url}`);
          return false;
        },
        async (req, res) => {
          if (req.url !== '/api/runs') return false;
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('[]');
          return true;
        },
      ],
    });
    expect(await call(server, 'GET', '/api/runs')).toMatchObject({ status: 200, text: '[]' });
    expect((await call(server, 'GET', '/other')).status).toBe(404);
    // Env routes never reach the extra handlers.
    await call(server, 'GET', '/envs/echo/health');
    expect(seen).toEqual(['first /api/runs', 'first /other']);
    await expectNoLeaks(server);
  });
});
