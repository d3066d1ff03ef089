// The OpenEnv client (src/openenv) in Node against the env-server and against raw sockets:
// URL mapping, typed results and errors, refusal read from the buffered first frame, timeouts that
// close the socket, and withEpisode's one-connection-per-episode retries.

import { afterEach, describe, expect, it } from 'vitest';
import { connect, OpenEnvError, withEpisode, wsUrl } from '../../src/openenv/index.ts';
import { eventually, expectNoLeaks, RawClient, Servers, wsBase } from '../server/helpers.ts';

const servers = new Servers();
afterEach(async () => {
  await servers.closeAll();
});

describe('wsUrl (§7)', () => {
  it.each([
    ['http://127.0.0.1:8765', 'ws://127.0.0.1:8765/ws'],
    ['https://h/prefix', 'wss://h/prefix/ws'],
    ['https://h/prefix/', 'wss://h/prefix/ws'],
    ['ws://h:1/envs/echo', 'ws://h:1/envs/echo/ws'],
    ['wss://h', 'wss://h/ws'],
    ['localhost:8000', 'ws://localhost:8000/ws'],
  ])('%s → %s', (base, ws) => {
    expect(wsUrl(base)).toBe(ws);
  });

  it('rejects empty and unsupported URLs by name', () => {
    expect(() => wsUrl('')).toThrow('OpenEnv base URL must be a non-empty string, got ""');
    expect(() => wsUrl('ftp://h')).toThrow('unsupported scheme (want http, https, ws or wss): ftp://h');
  });
});

describe('OpenEnvSession', () => {
  it('reset / step / state / close against the env-server', async () => {
    const server = await servers.start();
    const session = await connect(`${server.url}/envs/echo`);
    // The built-in echo is current OpenEnv's MCP echo (reset `{}`) and still takes the older {message} action.
    expect(await session.reset()).toEqual({ observation: {}, reward: 0, done: false });
    expect(await session.step({ message: 'abc' })).toEqual({ observation: { echoed_message: 'abc', message_length: 3 }, reward: 0.30000000000000004, done: false });
    expect((await session.state()).step_count).toBe(1);
    expect((await session.mcp({ jsonrpc: '2.0', method: 'tools/list', id: 1 })).jsonrpc).toBe('2.0');
    await session.close();
    expect(session.closed).toBe(true);
    await expect(session.step({ message: 'late' })).rejects.toMatchObject({ code: 'CLOSED' });
    await expectNoLeaks(server);
  });

  it('error frames become OpenEnvError with the code and the whole data', async () => {
    const server = await servers.start();
    const session = await connect(`${server.url}/envs/echo/`);
    const err = await session.step({ msg: 'x' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenEnvError);
    expect(err).toMatchObject({ code: 'VALIDATION_ERROR', message: 'Invalid message: tool_name: Field required [missing]; msg: Extra inputs are not permitted [extra_forbidden] (code: VALIDATION_ERROR)' });
    expect((err as OpenEnvError).data!.errors!.map((e) => e.type)).toEqual(['missing', 'extra_forbidden']);
    // Still usable after a non-fatal error.
    expect((await session.step({ message: 'ok' })).observation).toMatchObject({ echoed_message: 'ok' });
    await session.close();
    await expectNoLeaks(server);
  });

  it('detects a capacity refusal from the buffered first frame, even after the close arrived', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const holder = await RawClient.open(wsBase(server, 'echo'));
    holder.send('{"type":"reset"}');
    await holder.next();
    const refused = await connect(`${server.url}/envs/echo`);
    await eventually(() => refused.closed, 'the server to close the refused socket');
    const err = await refused.reset().catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'CAPACITY_REACHED',
      data: { message: 'Server at capacity: 1/1 sessions active. Cannot accept new connections.', code: 'CAPACITY_REACHED', active_sessions: 1, max_sessions: 1 },
    });
    await expect(refused.reset()).rejects.toMatchObject({ code: 'CLOSED' });
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(server);
  });

  it('a reply timeout rejects with TIMEOUT and closes the socket', async () => {
    const { base, clients } = await servers.rawWs(() => {});
    const session = await connect(base, { timeoutMs: 200 });
    await expect(session.reset()).rejects.toMatchObject({ code: 'TIMEOUT', message: `No reply to 'reset' from ${wsUrl(base)} within 200 ms (code: TIMEOUT)` });
    expect(session.closed).toBe(true);
    await eventually(() => clients.size === 0, 'the server to see the socket close');
  });

  it('a failed connection is CONNECT_FAILED naming the URL', async () => {
    const server = await servers.start();
    await expect(connect(`${server.url}/envs/nope`)).rejects.toMatchObject({ code: 'CONNECT_FAILED' });
    await expect(connect(`${server.url}/envs/nope`)).rejects.toThrow(`Cannot connect to ${server.url.replace('http', 'ws')}/envs/nope/ws: Unexpected server response: 404`);
    await expectNoLeaks(server);
  });

  it('a frame that is not OpenEnv JSON is a PROTOCOL error', async () => {
    const { base } = await servers.rawWs((ws) => ws.on('message', (data) => (String(data).includes('"close"') ? ws.close(1000) : ws.send('hello'))));
    const session = await connect(base);
    await expect(session.state()).rejects.toMatchObject({ code: 'PROTOCOL' });
    await session.close();
  });
});

describe('withEpisode', () => {
  it('plays one episode on its own connection, then closes it', async () => {
    const server = await servers.start();
    const result = await withEpisode(`${server.url}/envs/catch`, async (session, first) => {
      expect(first.reward).toBeNull();
      let last = first;
      let steps = 0;
      while (!last.done) {
        last = await session.step({ action_id: 1 });
        steps++;
      }
      return { steps, reward: last.reward };
    }, { reset: { seed: 3 } });
    expect(result.steps).toBe(9);
    expect([1, -1]).toContain(result.reward);
    await expectNoLeaks(server);
  });

  it('retries CAPACITY_REACHED with jittered backoff until a slot frees', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const holder = await RawClient.open(wsBase(server, 'echo'));
    holder.send('{"type":"reset"}');
    await holder.next();
    let draws = 0;
    const random = () => {
      // Free the slot once the helper has been refused twice.
      if (++draws === 2) holder.ws.close();
      return 0.5;
    };
    const echoed = await withEpisode(`${server.url}/envs/echo`, async (session) => (await session.step({ message: 'in' })).observation.echoed_message, {
      retries: 10,
      backoffMs: 20,
      random,
    });
    expect(echoed).toBe('in');
    expect(draws).toBeGreaterThanOrEqual(2);
    await expectNoLeaks(server);
  });

  it('gives up after the retries, with the refusal', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const holder = await RawClient.open(wsBase(server, 'echo'));
    holder.send('{"type":"reset"}');
    await holder.next();
    let draws = 0;
    await expect(
      withEpisode(`${server.url}/envs/echo`, async () => 'never', { retries: 2, backoffMs: 1, random: () => (draws++, 0) }),
    ).rejects.toMatchObject({ code: 'CAPACITY_REACHED' });
    expect(draws).toBe(2);
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(server);
  });

  it('does not retry other failures, and still closes the connection', async () => {
    const server = await servers.start();
    await expect(
      withEpisode(`${server.url}/envs/echo`, async (session) => {
        await session.step({ message: '' });
      }),
    ).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await expectNoLeaks(server);
  });
});
