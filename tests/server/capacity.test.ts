// The session cap (§3.4), `--queue` with its bounded wait, slot release on every kind of ending,
// and the idle timeout (§3.5, webgrpo's choice: an error frame, then close).

import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually, expectNoLeaks, expectSameJson, RawClient, Servers, wsBase } from './helpers.ts';

const servers = new Servers();
afterEach(() => servers.closeAll());

const REFUSAL_2 =
  '{"type":"error","data":{"message":"Server at capacity: 2/2 sessions active. Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":2,"max_sessions":2}}';

async function session(url: string): Promise<RawClient> {
  const c = await RawClient.open(url);
  c.send('{"type":"reset"}');
  expect((await c.nextJson()).type).toBe('observation');
  return c;
}

describe('capacity without --queue (OpenEnv behaviour)', () => {
  it('cap+1-th socket: 101, one CAPACITY_REACHED frame with counts, close 1000 ""', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 2 });
    const url = wsBase(server, 'echo');
    const a = await session(url);
    const b = await session(url);
    const refused = await RawClient.open(url); // the handshake succeeds
    expectSameJson(await refused.next(), REFUSAL_2);
    expect(await refused.waitClosed()).toEqual({ code: 1000, reason: '' });
    expect(refused.pending).toBe(0);
    // The cap is per env: another env still has room.
    const other = await session(wsBase(server, 'catch'));
    for (const c of [a, b, other]) c.ws.close();
    await Promise.all([a, b, other].map((c) => c.waitClosed()));
    await expectNoLeaks(server);
  });

  it('a slot freed by a close frame, a client close or a TCP drop serves the very next connection', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const url = wsBase(server, 'echo');
    const endings: Array<[string, (c: RawClient) => void]> = [
      ['close frame', (c) => c.send('{"type":"close"}')],
      ['client close', (c) => c.ws.close()],
      ['TCP drop', (c) => c.ws.terminate()],
    ];
    for (const [, end] of endings) {
      const holder = await session(url);
      end(holder);
      await holder.closed;
      await eventually(() => server.stats().activeSessions === 0, 'slot release');
      const next = await session(url);
      next.ws.close();
      await next.waitClosed();
      await eventually(() => server.stats().activeSessions === 0, 'slot release');
    }
    await expectNoLeaks(server);
  });

  it('HTTP calls do not count against the cap (an env without scarce instances, as OpenEnv)', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const holder = await session(wsBase(server, 'echo'));
    const reply = await fetch(`${server.url}/envs/echo/reset`, { method: 'POST' });
    expect(reply.status).toBe(200);
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(server);
  });

  it('MCP-created sessions share the pool with /ws', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const rpc = async (body: object) =>
      (await fetch(`${server.url}/envs/echo/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json() as Promise<any>;
    const created = await rpc({ jsonrpc: '2.0', method: 'openenv/session/create', id: 1 });
    const sessionId = created.result.session_id;
    const refused = await RawClient.open(wsBase(server, 'echo'));
    expect((await refused.nextJson()).data).toMatchObject({ code: 'CAPACITY_REACHED', active_sessions: 1, max_sessions: 1 });
    await refused.waitClosed();
    const full = await rpc({ jsonrpc: '2.0', method: 'openenv/session/create', id: 2 });
    expect(full.error).toEqual({
      code: -32000,
      message: 'Server at capacity: 1/1 sessions active. Cannot accept new connections.',
      data: { active_sessions: 1, max_sessions: 1 },
    });
    expect((await rpc({ jsonrpc: '2.0', method: 'tools/list', params: { session_id: 'nope' }, id: 3 })).error.message).toBe('Unknown session_id: nope');
    expect((await rpc({ jsonrpc: '2.0', method: 'openenv/session/close', params: { session_id: sessionId }, id: 4 })).result).toEqual({
      session_id: sessionId,
      closed: true,
    });
    expect((await rpc({ jsonrpc: '2.0', method: 'openenv/session/close', params: { session_id: sessionId }, id: 5 })).error).toEqual({
      code: -32602,
      message: `Unknown session_id: ${sessionId}`,
      data: null,
    });
    await expectNoLeaks(server);
  });
});

describe('--queue', () => {
  it('holds the extra socket until a slot frees, keeping its early frames in order', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1, queue: true, queueTimeoutMs: 10_000 });
    const url = wsBase(server, 'echo');
    const holder = await session(url);
    const waiting = await RawClient.open(url);
    waiting.send('{"type":"step","data":{"message":"first"}}');
    waiting.send('{"type":"step","data":{"message":"second"}}');
    await eventually(() => server.stats().queuedSessions === 1, 'the socket to queue');
    expect(waiting.pending).toBe(0);
    holder.send('{"type":"close"}');
    await holder.waitClosed();
    expect((await waiting.nextJson()).data.observation.echoed_message).toBe('first');
    expect((await waiting.nextJson()).data.observation.echoed_message).toBe('second');
    expect(server.stats().envs.echo.active).toBe(1);
    waiting.ws.close();
    await waiting.waitClosed();
    await expectNoLeaks(server);
  });

  it('serves waiters first-in first-out', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1, queue: true, queueTimeoutMs: 10_000 });
    const url = wsBase(server, 'echo');
    const holder = await session(url);
    const first = await RawClient.open(url);
    await eventually(() => server.stats().queuedSessions === 1, 'first to queue');
    const second = await RawClient.open(url);
    await eventually(() => server.stats().queuedSessions === 2, 'second to queue');
    second.send('{"type":"step","data":{"message":"2"}}');
    first.send('{"type":"step","data":{"message":"1"}}');
    holder.ws.close();
    expect((await first.nextJson()).data.observation.echoed_message).toBe('1');
    expect(second.pending).toBe(0);
    first.ws.close();
    expect((await second.nextJson()).data.observation.echoed_message).toBe('2');
    second.ws.close();
    await Promise.all([first.waitClosed(), second.waitClosed()]);
    await expectNoLeaks(server);
  });

  it('a bounded wait: when it runs out, a CAPACITY_REACHED frame saying so, then close 1000', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1, queue: true, queueTimeoutMs: 200 });
    const url = wsBase(server, 'echo');
    const holder = await session(url);
    const waiting = await RawClient.open(url);
    expectSameJson(
      await waiting.next(),
      '{"type":"error","data":{"message":"Server at capacity: 1/1 sessions active. Waited 0.2 s in the queue and no slot freed.","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}}',
    );
    expect(await waiting.waitClosed()).toEqual({ code: 1000, reason: '' });
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(server);
  });

  it('a client that leaves the queue is forgotten', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1, queue: true, queueTimeoutMs: 10_000 });
    const url = wsBase(server, 'echo');
    const holder = await session(url);
    const quitter = await RawClient.open(url);
    await eventually(() => server.stats().queuedSessions === 1, 'the socket to queue');
    quitter.ws.terminate();
    await eventually(() => server.stats().queuedSessions === 0, 'the queue to empty');
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(server);
  });
});

describe('idle timeout (--session-timeout)', () => {
  it('reaps an idle session with SESSION_ERROR + close 1000; state is not activity, step is', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1, sessionTimeoutSec: 1 });
    const url = wsBase(server, 'echo');
    const busy = await session(url);
    // Steps every 100 ms for 1.5 s (longer than the timeout) keep it alive.
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      busy.send('{"type":"step","data":{"message":"x"}}');
      expect((await busy.nextJson()).type).toBe('observation');
    }
    // Only `state` from now on: it does not count, so the reaper ends the session.
    const polling = setInterval(() => busy.ws.readyState === busy.ws.OPEN && busy.send('{"type":"state"}'), 50);
    let frame = await busy.nextJson();
    while (frame.type === 'state') frame = await busy.nextJson();
    clearInterval(polling);
    expectSameJson(JSON.stringify(frame), '{"type":"error","data":{"message":"Session idle timeout (1 s)","code":"SESSION_ERROR"}}');
    expect(await busy.waitClosed()).toEqual({ code: 1000, reason: '' });
    // The reaped slot is free again.
    const next = await session(url);
    next.ws.close();
    await next.waitClosed();
    await expectNoLeaks(server);
  });

  it('is off by default for built-ins', async () => {
    const server = await servers.start();
    expect(server.stats().envs.echo.kind).toBe('builtin');
    const c = await session(wsBase(server, 'echo'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(c.closeEvent).toBeNull();
    expect(c.pending).toBe(0);
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(server);
  });
});

describe('heartbeat', () => {
  it('drops a peer that stops answering pings and frees its slot', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1, heartbeatMs: 100 });
    const url = wsBase(server, 'echo');
    // A client whose pongs never come: what a vanished laptop looks like from the server.
    const silent = new WebSocket(url, { autoPong: false });
    const closed = new Promise<number>((resolve) => silent.on('close', (code) => resolve(code)));
    await new Promise((resolve) => silent.once('open', resolve));
    silent.send('{"type":"reset"}');
    expect(await closed).toBe(1006);
    const next = await session(url);
    next.ws.close();
    await next.waitClosed();
    await expectNoLeaks(server);
  });

  it('keeps a live peer whose process was busy: a late tick judges nobody (a trainer blocking its own in-process server)', async () => {
    const server = await servers.start({ heartbeatMs: 100 });
    const ws = new WebSocket(wsBase(server, 'echo'));
    let closedCode: number | null = null;
    ws.on('close', (code) => (closedCode = code));
    await new Promise((resolve) => ws.once('open', resolve));
    let blocks = 0;
    // ws answers each ping with a pong before it emits 'ping'; blocking here keeps that pong unread by the
    // server (same process) until after its next, overdue tick — what a long synchronous step does.
    ws.on('ping', () => {
      if (blocks >= 3) return;
      blocks++;
      const until = Date.now() + 400;
      while (Date.now() < until) {
        // busy: the event loop is held
      }
    });
    await eventually(() => blocks === 3, 'three pings answered while the process was busy');
    await new Promise((resolve) => setTimeout(resolve, 400)); // two ticks on time after the last block
    expect(closedCode).toBeNull();
    ws.send(JSON.stringify({ type: 'reset' }));
    const reply = await new Promise<string>((resolve) => ws.once('message', (d) => resolve(String(d))));
    expect(JSON.parse(reply).type).toBe('observation');
    ws.close();
  });
});

describe('MAX_CONCURRENT_ENVS', () => {
  it('sets the cap when no option is given; bad values are named', async () => {
    const { resolveMaxConcurrentEnvs } = await import('../../env-server/server.ts');
    expect(resolveMaxConcurrentEnvs(undefined, {})).toBe(64);
    expect(resolveMaxConcurrentEnvs(undefined, { MAX_CONCURRENT_ENVS: '3' })).toBe(3);
    expect(resolveMaxConcurrentEnvs(5, { MAX_CONCURRENT_ENVS: '3' })).toBe(5);
    expect(() => resolveMaxConcurrentEnvs(undefined, { MAX_CONCURRENT_ENVS: 'lots' })).toThrow(/MAX_CONCURRENT_ENVS must be an integer ≥ 1, got "lots"/);
    expect(() => resolveMaxConcurrentEnvs(0)).toThrow(/maxConcurrentEnvs/);
  });
});
