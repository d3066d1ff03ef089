// `/ws` against the spec: the §4 exchanges replayed frame by frame (parsed JSON, key order included),
// every error code, and the one-socket-one-session lifecycle.

import { afterEach, describe, expect, it } from 'vitest';
import { echoEnv } from '../../env-server/envs/echo.ts';
import { legacyEchoEnv } from '../../env-server/envs/legacy-echo.ts';
import type { EnvDefinition } from '../../env-server/envs/types.ts';
import { expectNoLeaks, expectSameJson, RawClient, Servers, wsBase } from './helpers.ts';

/** The base spec's echo, before MCP (`/envs/echo` is now the MCP echo: tests/server/mcp-echo.test.ts). */
const LEGACY_ECHO = { envs: { echo: legacyEchoEnv } };

const servers = new Servers();
afterEach(() => servers.closeAll());

const brokenEnv: EnvDefinition = {
  ...echoEnv,
  name: 'broken',
  metadata: { ...echoEnv.metadata, name: 'BrokenEnvironment' },
  create: () => {
    throw new Error('no resources');
  },
};

describe('/ws exchanges of specs/openenv-protocol.md §4', () => {
  it('(a) legacy echo: reset, step, state, validation error, close', async () => {
    const server = await servers.start(LEGACY_ECHO);
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('{"type": "reset", "data": {}}');
    expectSameJson(await c.next(), '{"type":"observation","data":{"observation":{"echoed_message":"Echo environment ready!","message_length":0},"reward":0.0,"done":false}}');
    c.send('{"type": "step", "data": {"message": "Hello, World!", "metadata": {"k": "v"}}}');
    expectSameJson(await c.next(), '{"type":"observation","data":{"observation":{"echoed_message":"Hello, World!","message_length":13},"reward":1.3,"done":false}}');
    c.send('{"type": "state"}');
    const state = await c.nextJson();
    expect(Object.keys(state)).toEqual(['type', 'data']);
    expect(state.type).toBe('state');
    expect(Object.keys(state.data)).toEqual(['episode_id', 'step_count']);
    expect(state.data.episode_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    c.send('{"type": "step", "data": {"msg": "x"}}');
    expectSameJson(
      await c.next(),
      '{"type":"error","data":{"message":"Invalid message","code":"VALIDATION_ERROR","errors":[{"type":"missing","loc":["message"],"msg":"Field required","input":{"msg":"x"},"url":"https://errors.pydantic.dev/2.13/v/missing"},{"type":"extra_forbidden","loc":["msg"],"msg":"Extra inputs are not permitted","input":"x","url":"https://errors.pydantic.dev/2.13/v/extra_forbidden"}]}}',
    );
    c.send('{"type": "close"}');
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    expect(c.pending).toBe(0);
    await expectNoLeaks(server);
  });

  it('(b) non-ASCII message: 7 code points, raw UTF-8 out', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('{"type": "step", "data": {"message": "héllo ✓"}}');
    const text = await c.next();
    expect(text).toContain('héllo ✓'); // raw UTF-8, no \u escapes
    expectSameJson(text, '{"type":"observation","data":{"observation":{"echoed_message":"héllo ✓","message_length":7},"reward":0.7000000000000001,"done":false}}');
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('(c) envelope errors keep the socket usable', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('not json');
    expectSameJson(await c.next(), '{"type":"error","data":{"message":"Invalid JSON: Expecting value: line 1 column 1 (char 0)","code":"INVALID_JSON"}}');
    c.send('{"data": {}}');
    expectSameJson(await c.next(), '{"type":"error","data":{"message":"Unknown message type: ","code":"UNKNOWN_TYPE"}}');
    c.send('{"type": "state", "data": {}}');
    expectSameJson(
      await c.next(),
      '{"type":"error","data":{"message":"Invalid message","code":"VALIDATION_ERROR","errors":[{"type":"extra_forbidden","loc":["data"],"msg":"Extra inputs are not permitted","input":{},"url":"https://errors.pydantic.dev/2.13/v/extra_forbidden"}]}}',
    );
    c.send('{"type": "step"}');
    expectSameJson(
      await c.next(),
      '{"type":"error","data":{"message":"Invalid message","code":"VALIDATION_ERROR","errors":[{"type":"missing","loc":["data"],"msg":"Field required","input":{"type":"step"},"url":"https://errors.pydantic.dev/2.13/v/missing"}]}}',
    );
    c.send('{"type": "bogus"}');
    expectSameJson(await c.next(), '{"type":"error","data":{"message":"Unknown message type: bogus","code":"UNKNOWN_TYPE"}}');
    c.send('{"type": "step", "data": {"message": "still here"}}');
    expect((await c.nextJson()).data.observation.echoed_message).toBe('still here');
    c.send('{"type": "close"}');
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(server);
  });

  it('(e) a binary frame is a fatal SESSION_ERROR, then close 1000', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.ws.send(Buffer.from('{"type": "reset", "data": {}}'), { binary: true });
    expectSameJson(await c.next(), `{"type":"error","data":{"message":"'text'","code":"SESSION_ERROR"}}`);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(server);
  });
});

describe('/ws envelope rules (§3.2) and error codes (§3.3)', () => {
  it('JSON that is not an object is a fatal SESSION_ERROR', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('[1, 2]');
    expectSameJson(await c.next(), `{"type":"error","data":{"message":"'list' object has no attribute 'get'","code":"SESSION_ERROR"}}`);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(server);
  });

  it('reset data is optional and unvalidated; a step wrapped as {"action": …} is rejected', async () => {
    const server = await servers.start(LEGACY_ECHO);
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('{"type":"reset"}');
    expect((await c.nextJson()).type).toBe('observation');
    c.send('{"type":"reset","data":{"seed":-1,"whatever":[1]}}');
    expect((await c.nextJson()).type).toBe('observation');
    c.send('{"type":"step","data":{"action":{"message":"hi"}}}');
    const err = await c.nextJson();
    expect(err.data.code).toBe('VALIDATION_ERROR');
    expect(err.data.errors.map((e: { type: string; loc: string[] }) => [e.type, e.loc])).toEqual([
      ['missing', ['message']],
      ['extra_forbidden', ['action']],
    ]);
    c.send('{"type":"reset","data":5}');
    const bad = await c.nextJson();
    expect(bad.data.errors[0]).toMatchObject({ type: 'dict_type', loc: ['data'], input: 5 });
    c.send('{"type":"close","x":1}');
    expect((await c.nextJson()).data.errors[0]).toMatchObject({ type: 'extra_forbidden', loc: ['x'] });
    c.send('{"type":null}');
    expectSameJson(await c.next(), '{"type":"error","data":{"message":"Unknown message type: None","code":"UNKNOWN_TYPE"}}');
    c.send('{"type":"close"}');
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('echo: "abc" rewards 0.30000000000000004, an emoji counts once, empty is string_too_short', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('{"type":"step","data":{"message":"abc"}}');
    expect(await c.next()).toContain('"reward":0.30000000000000004');
    c.send('{"type":"step","data":{"message":"👍"}}');
    expect((await c.nextJson()).data).toEqual({ observation: { echoed_message: '👍', message_length: 1 }, reward: 0.1, done: false });
    c.send('{"type":"step","data":{"message":""}}');
    expectSameJson(
      await c.next(),
      '{"type":"error","data":{"message":"Invalid message","code":"VALIDATION_ERROR","errors":[{"type":"string_too_short","loc":["message"],"msg":"String should have at least 1 character","input":"","ctx":{"min_length":1},"url":"https://errors.pydantic.dev/2.13/v/string_too_short"}]}}',
    );
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('EXECUTION_ERROR (env raised) leaves the socket usable', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'catch'));
    c.send('{"type":"reset","data":{"seed":1}}');
    expect((await c.nextJson()).data.observation.game_phase).toBe('initial');
    c.send('{"type":"step","data":{"action_id":7}}');
    expectSameJson(
      await c.next(),
      '{"type":"error","data":{"message":"Illegal action 7 for current player. Legal actions are: [0, 1, 2]","code":"EXECUTION_ERROR"}}',
    );
    c.send('{"type":"step","data":{"action_id":1}}');
    expect((await c.nextJson()).data.observation.game_phase).toBe('playing');
    c.send('{"type":"close"}');
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('FACTORY_ERROR is fatal and frees the slot', async () => {
    const server = await servers.start({ envs: { broken: brokenEnv }, maxConcurrentEnvs: 1 });
    for (let i = 0; i < 2; i++) {
      const c = await RawClient.open(wsBase(server, 'broken'));
      expectSameJson(
        await c.next(),
        `{"type":"error","data":{"message":"Environment factory 'BrokenEnvironment' failed to create instance.","code":"FACTORY_ERROR","factory_name":"BrokenEnvironment"}}`,
      );
      expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    }
    await expectNoLeaks(server);
  });

  it('replies come in request order, one per frame, even when pipelined', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    const messages = Array.from({ length: 50 }, (_, i) => `m${i}`);
    for (const m of messages) c.send(JSON.stringify({ type: 'step', data: { message: m } }));
    c.send('{"type":"state"}');
    for (const m of messages) expect((await c.nextJson()).data.observation.echoed_message).toBe(m);
    expect((await c.nextJson()).data.step_count).toBe(50);
    c.send('{"type":"close"}');
    await c.waitClosed();
    expect(c.pending).toBe(0);
    await expectNoLeaks(server);
  });

  it('mcp frames: tools/* say the env does not support MCP; session/create names this session', async () => {
    const server = await servers.start(LEGACY_ECHO);
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/list","id":1}}');
    expectSameJson(await c.next(), '{"type":"mcp","data":{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Environment does not support MCP","data":null}}}');
    c.send('{"type":"mcp","data":{"jsonrpc":"2.0","method":"nope","id":"a"}}');
    expectSameJson(await c.next(), '{"type":"mcp","data":{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found: nope","data":null}}}');
    c.send('{"type":"mcp","data":{"jsonrpc":"2.0","method":"openenv/session/create","id":2}}');
    const created = await c.nextJson();
    expect(created.data.result.session_id).toMatch(/^[0-9a-f-]{36}$/);
    c.send(JSON.stringify({ type: 'mcp', data: { jsonrpc: '2.0', method: 'openenv/session/close', params: { session_id: created.data.result.session_id }, id: 3 } }));
    expect((await c.nextJson()).data.error).toEqual({ code: -32600, message: 'Cannot close active WebSocket-managed session via MCP method', data: null });
    c.send('{"type":"close"}');
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('an oversized message gets a clear error frame, then close 1000; others are unaffected', async () => {
    const server = await servers.start({ maxMessageBytes: 1000 });
    const other = await RawClient.open(wsBase(server, 'echo'));
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send(JSON.stringify({ type: 'step', data: { message: 'x'.repeat(2000) } }));
    const err = await c.nextJson();
    expect(err.data.code).toBe('SESSION_ERROR');
    expect(err.data.message).toMatch(/^Message too large: 2\d{3} bytes; this server accepts at most 1000 bytes/);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    other.send('{"type":"step","data":{"message":"ok"}}');
    expect((await other.nextJson()).data.observation.echoed_message).toBe('ok');
    other.ws.close();
    await other.waitClosed();
    await expectNoLeaks(server);
  });

  it('logs one line per session open and close, with the reason', async () => {
    const lines: string[] = [];
    const server = await servers.start({ maxConcurrentEnvs: 1, logger: (line) => lines.push(line) });
    const a = await RawClient.open(wsBase(server, 'echo'));
    a.send('{"type":"step","data":{"message":"x"}}');
    await a.next();
    const refused = await RawClient.open(wsBase(server, 'echo'));
    await refused.waitClosed();
    a.send('{"type":"close"}');
    await a.waitClosed();
    const b = await RawClient.open(wsBase(server, 'echo'));
    b.ws.terminate();
    await expectNoLeaks(server);
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.ws.close(1001);
    await c.waitClosed();
    await expectNoLeaks(server);
    expect(lines.map((l) => l.replace(/ ms=\d+$/, ''))).toEqual([
      'session open echo#1 active=1/1',
      'session refused echo#2 at capacity 1/1',
      'session close echo#1 reason="close frame" steps=1',
      'session open echo#3 active=1/1',
      // A client that drops the connection without a close frame went away; the log does not call it a failure.
      'session close echo#3 reason="client went away (no close frame, 1006)" steps=0',
      'session open echo#4 active=1/1',
      'session close echo#4 reason="client went away (1001)" steps=0',
    ]);
  });

  it('unknown env or path: the upgrade is answered 404', async () => {
    const server = await servers.start();
    for (const path of ['/envs/nope/ws', '/envs/echo/wsx', '/ws']) {
      const ws = new RawClient(server.url.replace(/^http/, 'ws') + path);
      await expect(ws.opened).rejects.toThrow(/404/);
    }
    await expectNoLeaks(server);
  });

  it('server close ends live sessions with 1001', async () => {
    const server = await servers.start();
    const c = await RawClient.open(wsBase(server, 'echo'));
    c.send('{"type":"reset"}');
    await c.next();
    await server.close();
    expect((await c.waitClosed()).code).toBe(1001);
    await expectNoLeaks(server);
  });
});
