// The proxy (§8) against a second env-server on loopback, and against raw sockets that misbehave:
// verbatim passthrough, closes both ways, refusal before dialing, upstream refusal, upstream death,
// connect failures and timeouts, idle timeout, replicas, HTTP forwarding.

import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { EnvServer } from '../../env-server/server.ts';
import { eventually, expectNoLeaks, expectSameJson, RawClient, Servers, withTimeout, wsBase } from './helpers.ts';

const servers = new Servers();
const extraClosers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await servers.closeAll();
  await Promise.all(extraClosers.splice(0).map((close) => close()));
});

/** An env-server whose session-open log lines we count, to prove what was (not) dialed. */
async function upstreamServer(maxConcurrentEnvs = 8): Promise<{ server: EnvServer; opens: () => number }> {
  const lines: string[] = [];
  const server = await servers.start({ maxConcurrentEnvs, logger: (line) => lines.push(line) });
  return { server, opens: () => lines.filter((l) => l.startsWith('session open')).length };
}


async function closedPort(): Promise<number> {
  const tcp = createTcpServer();
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve()));
  const port = (tcp.address() as { port: number }).port;
  await new Promise<void>((resolve) => tcp.close(() => resolve()));
  return port;
}

describe('proxy passthrough', () => {
  it('forwards frames verbatim both ways: proxied replies equal direct ones byte for byte', async () => {
    const { server: upstream } = await upstreamServer();
    const proxy = await servers.start({ envs: {}, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const frames = [
      '{"type": "reset", "data": {}}',
      '{"type": "step", "data": {"message": "héllo ✓", "metadata": {"k": "v"}}}',
      '{"type": "step", "data": {"msg": "x"}}',
      'not json',
      '{"type": "state", "data": {}}',
      '{"type":"mcp","data":{"jsonrpc":"2.0","method":"tools/list","id":1}}',
    ];
    const replies = async (url: string) => {
      const c = await RawClient.open(url);
      const out: string[] = [];
      for (const f of frames) {
        c.send(f);
        out.push(await c.next());
      }
      c.send('{"type": "close"}');
      return { out, close: await c.waitClosed() };
    };
    const direct = await replies(wsBase(upstream, 'echo'));
    const proxied = await replies(wsBase(proxy, 'remote'));
    expect(proxied).toEqual(direct);
    expect(proxied.close).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it('a binary frame reaches the upstream, whose SESSION_ERROR and close come back', async () => {
    const { server: upstream } = await upstreamServer();
    const proxy = await servers.start({ envs: {}, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const c = await RawClient.open(wsBase(proxy, 'remote'));
    c.ws.send(Buffer.from('{"type":"reset"}'), { binary: true });
    expectSameJson(await c.next(), `{"type":"error","data":{"message":"'text'","code":"SESSION_ERROR"}}`);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it('a client that drops its TCP connection frees the upstream session too', async () => {
    const { server: upstream } = await upstreamServer();
    const proxy = await servers.start({ envs: {}, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const c = await RawClient.open(wsBase(proxy, 'remote'));
    c.send('{"type":"reset"}');
    await c.next();
    expect(upstream.stats().activeSessions).toBe(1);
    c.ws.terminate();
    await eventually(() => upstream.stats().activeSessions === 0, 'the upstream session to end');
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });
});

describe('proxy capacity', () => {
  it('refuses over the local cap with the exact §3.4 sequence, without dialing the upstream', async () => {
    const { server: upstream, opens } = await upstreamServer(8);
    const proxy = await servers.start({ envs: {}, maxConcurrentEnvs: 1, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const holder = await RawClient.open(wsBase(proxy, 'remote'));
    holder.send('{"type":"reset"}');
    await holder.next();
    const refused = await RawClient.open(wsBase(proxy, 'remote'));
    expectSameJson(
      await refused.next(),
      '{"type":"error","data":{"message":"Server at capacity: 1/1 sessions active. Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}}',
    );
    expect(await refused.waitClosed()).toEqual({ code: 1000, reason: '' });
    expect(opens()).toBe(1);
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it("passes the upstream's own refusal through unchanged", async () => {
    const { server: upstream } = await upstreamServer(1);
    const proxy = await servers.start({ envs: {}, maxConcurrentEnvs: 5, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const holder = await RawClient.open(wsBase(proxy, 'remote'));
    holder.send('{"type":"reset"}');
    await holder.next();
    const refused = await RawClient.open(wsBase(proxy, 'remote'));
    expect(await refused.next()).toBe(
      '{"type":"error","data":{"message":"Server at capacity: 1/1 sessions active. Cannot accept new connections.","code":"CAPACITY_REACHED","active_sessions":1,"max_sessions":1}}',
    );
    expect(await refused.waitClosed()).toEqual({ code: 1000, reason: '' });
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it('queues over the cap with --queue and dials once a slot frees', async () => {
    const { server: upstream, opens } = await upstreamServer(8);
    const proxy = await servers.start({ envs: {}, maxConcurrentEnvs: 1, queue: true, queueTimeoutMs: 10_000, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const holder = await RawClient.open(wsBase(proxy, 'remote'));
    holder.send('{"type":"reset"}');
    await holder.next();
    const waiting = await RawClient.open(wsBase(proxy, 'remote'));
    waiting.send('{"type":"step","data":{"message":"queued"}}');
    await eventually(() => proxy.stats().queuedSessions === 1, 'the socket to queue');
    expect(opens()).toBe(1);
    holder.send('{"type":"close"}');
    expect((await waiting.nextJson()).data.observation.echoed_message).toBe('queued');
    expect(opens()).toBe(2);
    waiting.send('{"type":"close"}');
    await Promise.all([holder.waitClosed(), waiting.waitClosed()]);
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it('spreads sessions over replicas, least loaded first', async () => {
    const a = await upstreamServer(8);
    const b = await upstreamServer(8);
    const proxy = await servers.start({ envs: {}, maxConcurrentEnvs: 1, upstreams: { remote: [`${a.server.url}/envs/echo`, `${b.server.url}/envs/catch`] } });
    expect(proxy.stats().envs.remote.maxConcurrentEnvs).toBe(2);
    const clients = [await RawClient.open(wsBase(proxy, 'remote')), await RawClient.open(wsBase(proxy, 'remote'))];
    for (const c of clients) {
      c.send('{"type":"reset"}');
      await c.next();
    }
    expect([a.server.stats().activeSessions, b.server.stats().activeSessions]).toEqual([1, 1]);
    expect(proxy.stats().envs.remote.replicas!.map((r) => r.active)).toEqual([1, 1]);
    for (const c of clients) c.ws.close();
    await Promise.all(clients.map((c) => c.waitClosed()));
    await expectNoLeaks(proxy);
    await expectNoLeaks(a.server);
    await expectNoLeaks(b.server);
  });
});

describe('proxy failures reach the client as SESSION_ERROR naming the upstream', () => {
  it('upstream refuses the TCP connection', async () => {
    const port = await closedPort();
    const proxy = await servers.start({ envs: {}, upstreams: { dead: [`http://127.0.0.1:${port}`] } });
    const c = await RawClient.open(wsBase(proxy, 'dead'));
    const err = await c.nextJson();
    expect(err.data.code).toBe('SESSION_ERROR');
    expect(err.data.message).toMatch(new RegExp(`^Upstream connect failed: ws://127\\.0\\.0\\.1:${port}/ws: .*ECONNREFUSED`));
    expect(err.data.upstream).toBe(`dead ws://127.0.0.1:${port}/ws`);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
  });

  it('upstream accepts TCP but never completes the handshake: connect timeout', async () => {
    const accepted = new Set<import('node:net').Socket>();
    const silent: TcpServer = createTcpServer((socket) => accepted.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    extraClosers.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of accepted) socket.destroy();
          silent.close(() => resolve());
        }),
    );
    const port = (silent.address() as { port: number }).port;
    const proxy = await servers.start({ envs: {}, upstreamConnectTimeoutMs: 200, upstreams: { slow: [`http://127.0.0.1:${port}`] } });
    const c = await RawClient.open(wsBase(proxy, 'slow'));
    const err = await c.nextJson();
    expect(err.data).toMatchObject({ code: 'SESSION_ERROR', upstream: `slow ws://127.0.0.1:${port}/ws` });
    expect(err.data.message).toMatch(/^Upstream connect failed: .*handshake has timed out/);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
  });

  it('upstream dies mid-session', async () => {
    const { base } = await servers.rawWs((ws) => {
      ws.once('message', () => {
        ws.send('{"type":"observation","data":{"observation":{},"reward":null,"done":false}}');
        setTimeout(() => ws.terminate(), 20);
      });
    });
    const proxy = await servers.start({ envs: {}, upstreams: { flaky: [base] } });
    const c = await RawClient.open(wsBase(proxy, 'flaky'));
    c.send('{"type":"reset"}');
    expect((await c.nextJson()).type).toBe('observation');
    const wsUrl = `${base.replace('http', 'ws')}/ws`;
    expectSameJson(
      await c.next(),
      JSON.stringify({ type: 'error', data: { message: 'Upstream closed: 1006 connection lost', code: 'SESSION_ERROR', upstream: `flaky ${wsUrl}` } }),
    );
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
  });

  it('upstream closes with a non-1000 code and reason', async () => {
    const { base } = await servers.rawWs((ws) => ws.once('message', () => ws.close(1011, 'env crashed')));
    const proxy = await servers.start({ envs: {}, upstreams: { flaky: [base] } });
    const c = await RawClient.open(wsBase(proxy, 'flaky'));
    c.send('{"type":"reset"}');
    expect((await c.nextJson()).data.message).toBe('Upstream closed: 1011 env crashed');
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
  });

  it('an upstream that stops replying is reported, not waited on forever', async () => {
    const { base } = await servers.rawWs(() => {});
    const proxy = await servers.start({ envs: {}, proxySessionTimeoutSec: 0.3, upstreams: { stuck: [base] } });
    const c = await RawClient.open(wsBase(proxy, 'stuck'));
    c.send('{"type":"reset"}');
    const err = await c.nextJson();
    expect(err.data).toEqual({ message: 'Upstream did not reply within 0.3 s', code: 'SESSION_ERROR', upstream: `stuck ${base.replace('http', 'ws')}/ws` });
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
  });

  it('proxied sessions have an idle timeout, reported with the idle frame', async () => {
    const { server: upstream } = await upstreamServer();
    const proxy = await servers.start({ envs: {}, proxySessionTimeoutSec: 0.3, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const c = await RawClient.open(wsBase(proxy, 'remote'));
    c.send('{"type":"reset"}');
    await c.next();
    expectSameJson(await withTimeout(c.next(), 'idle frame'), '{"type":"error","data":{"message":"Session idle timeout (0.3 s)","code":"SESSION_ERROR"}}');
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });
});

describe('proxy liveness', () => {
  it('by default a proxied session idle far longer than the heartbeat stays open: a live client is never reaped', async () => {
    const { server: upstream } = await upstreamServer();
    // Heartbeat every 250 ms: the client (ws answers pings itself) proves it is alive ~10 times while idle.
    // (At 50 ms a pong delayed by a loaded 2-core machine already counted as a dead peer.)
    const proxy = await servers.start({ envs: {}, heartbeatMs: 250, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const c = await RawClient.open(wsBase(proxy, 'remote'));
    c.send('{"type":"reset"}');
    await c.next();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(c.pending).toBe(0);
    c.send('{"type":"step","data":{"message":"late"}}');
    expect((await c.nextJson()).data.observation.echoed_message).toBe('late');
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it('--session-timeout (sessionTimeoutSec) also bounds proxied sessions when asked for', async () => {
    const { server: upstream } = await upstreamServer();
    const proxy = await servers.start({ envs: {}, sessionTimeoutSec: 0.3, upstreams: { remote: [`${upstream.url}/envs/echo`] } });
    const c = await RawClient.open(wsBase(proxy, 'remote'));
    c.send('{"type":"reset"}');
    await c.next();
    expectSameJson(await withTimeout(c.next(), 'idle frame'), '{"type":"error","data":{"message":"Session idle timeout (0.3 s)","code":"SESSION_ERROR"}}');
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(proxy);
  });
});

describe('proxy HTTP', () => {
  it('forwards the stateless routes to the upstream, status and body unchanged', async () => {
    const { server: upstream } = await upstreamServer();
    const proxy = await servers.start({ envs: {}, upstreams: { remote: [`${upstream.url}/envs/echo/`] } });
    const health = await fetch(`${proxy.url}/envs/remote/health`);
    expect([health.status, await health.text()]).toEqual([200, '{"status":"healthy"}']);
    const step = await fetch(`${proxy.url}/envs/remote/step`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"action":{"message":"Hello"}}' });
    expect([step.status, await step.text()]).toEqual([200, '{"observation":{"echoed_message":"Hello","message_length":5},"reward":0.5,"done":false}']);
    const bad = await fetch(`${proxy.url}/envs/remote/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"seed":-1}' });
    expect(bad.status).toBe(422);
    await expectNoLeaks(proxy);
    await expectNoLeaks(upstream);
  });

  it('an unreachable upstream is a 502 naming it; unconfigured names are 404', async () => {
    const port = await closedPort();
    const proxy = await servers.start({ envs: {}, upstreams: { dead: [`http://127.0.0.1:${port}`] } });
    const reply = await fetch(`${proxy.url}/envs/dead/health`);
    expect(reply.status).toBe(502);
    expect((await reply.json()).detail).toMatch(new RegExp(`^Upstream dead \\(http://127\\.0\\.0\\.1:${port}/health\\) unreachable`));
    expect((await fetch(`${proxy.url}/envs/other/health`)).status).toBe(404);
    await expectNoLeaks(proxy);
  });

  it('probes every upstream at startup: a refused one is a warning with the reason, and /envs says unreachable until a session gets through', async () => {
    const port = await closedPort();
    const { server: upstream } = await upstreamServer();
    const lines: string[] = [];
    const proxy = await servers.start({ envs: {}, logger: (l) => lines.push(l), upstreams: { dead: [`http://127.0.0.1:${port}`], live: [`${upstream.url}/envs/echo`] } });
    expect(lines.filter((l) => l.startsWith('warning:'))).toEqual([
      `warning: upstream 'dead' replica http://127.0.0.1:${port} is unreachable: connection refused (GET /health); sessions to it will fail until it answers`,
    ]);
    const listing = async () => Object.fromEntries(((await (await fetch(`${proxy.url}/envs`)).json()).envs as { name: string }[]).map((e) => [e.name, e]));
    expect((await listing()).dead).toMatchObject({ kind: 'proxy', reachable: false, error: 'connection refused (GET /health)' });
    expect((await listing()).live).toMatchObject({ kind: 'proxy', reachable: true });
    expect((await listing()).live).not.toHaveProperty('error');
    // The upstream goes away: the next session's failed dial is what /envs says now.
    await upstream.close();
    const c = await RawClient.open(wsBase(proxy, 'live'));
    expect((await c.nextJson()).data.code).toBe('SESSION_ERROR');
    await c.waitClosed();
    expect((await listing()).live).toMatchObject({ reachable: false, error: expect.stringMatching(/ECONNREFUSED.*\(session dial\)$/) });
    await expectNoLeaks(proxy);
  });

  it('rejects bad upstream configuration with a clear error', async () => {
    await expect(servers.start({ envs: {}, upstreams: { x: [] } })).rejects.toThrow("Upstream 'x' has no replica URLs");
    await expect(servers.start({ envs: {}, upstreams: { x: ['ftp://h'] } })).rejects.toThrow(/must be http\(s\):\/\/ or ws\(s\):\/\//);
    await expect(servers.start({ upstreams: { echo: ['http://h'] } })).rejects.toThrow(/clashes with a built-in/);
  });
});
