// The echo env against current OpenEnv's captured MCP frames (specs/openenv-mcp.md, fixtures in
// tests/fixtures/openenv-mcp-frames.json): every captured server frame is compared byte for byte,
// random uuid4s aside (those must be uuid4s, and the same one wherever the capture repeats it).

import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { EnvServer } from '../../env-server/server.ts';
import { expectNoLeaks, RawClient, Servers, wsBase } from './helpers.ts';

interface Exchange {
  send: string;
  expect: string | null;
}

const FIXTURES = JSON.parse(readFileSync(new URL('../fixtures/openenv-mcp-frames.json', import.meta.url), 'utf8')) as Record<string, Exchange[]> & {
  schema: unknown;
};

const servers = new Servers();
afterEach(() => servers.closeAll());

const UUID4 = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g;

/**
 * Compares a reply with the captured bytes. Each distinct uuid4 of the capture must map to one
 * distinct uuid4 of ours (kept in `ids` across a session), so "same episode" claims are checked too.
 */
function expectCapturedBytes(actual: string, captured: string, ids: Map<string, string>): void {
  const theirs = captured.match(UUID4) ?? [];
  const ours = actual.match(UUID4) ?? [];
  expect(ours.length, `uuid count in ${actual}`).toBe(theirs.length);
  let mapped = actual;
  theirs.forEach((id, i) => {
    const known = ids.get(id);
    if (known === undefined) ids.set(id, ours[i]!);
    else expect(ours[i], `same id as before for ${id}`).toBe(known);
    mapped = mapped.replace(ours[i]!, id);
  });
  expect(mapped).toBe(captured);
}

async function replayWs(url: string, exchanges: Exchange[]): Promise<RawClient> {
  const c = await RawClient.open(url);
  const ids = new Map<string, string>();
  for (const { send, expect: captured } of exchanges) {
    c.send(send);
    if (send.includes('"type": "close"')) break;
    const reply = await c.next();
    if (captured !== null) expectCapturedBytes(reply, captured, ids);
  }
  return c;
}

async function post(server: EnvServer, path: string, body: string): Promise<{ status: number; text: string; type: string | null }> {
  const reply = await fetch(server.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: reply.status, text: await reply.text(), type: reply.headers.get('content-type') };
}

describe('MCP echo: captured frames replayed byte for byte', () => {
  it('the /ws worked session (§2.8): list_tools, calls, errors, episode_id, step_count, close 1000', async () => {
    const server = await servers.start();
    const c = await replayWs(wsBase(server, 'echo'), FIXTURES.ws_session);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(server);
  });

  it("the Python EchoEnv client's own session (§5.1)", async () => {
    const server = await servers.start();
    const c = await replayWs(wsBase(server, 'echo'), FIXTURES.python_client_session);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(server);
  });

  it('JSON-RPC inside /ws (§3.7), without touching step_count', async () => {
    const server = await servers.start();
    const c = await replayWs(wsBase(server, 'echo'), FIXTURES.ws_mcp_frames);
    c.send('{"type":"state"}');
    expect(JSON.parse(await c.next()).data.step_count).toBe(0);
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('POST /mcp (§3.7): always 200, compact', async () => {
    const server = await servers.start();
    for (const { send, expect: captured } of FIXTURES.http_mcp) {
      const reply = await post(server, '/envs/echo/mcp', send);
      expect([reply.status, reply.type, reply.text]).toEqual([200, 'application/json', captured]);
    }
    await expectNoLeaks(server);
  });

  it('WS /mcp (§3.7): spaced, ASCII-escaped json.dumps replies', async () => {
    const server = await servers.start();
    const c = await replayWs(wsBase(server, 'echo').replace(/\/ws$/, '/mcp'), FIXTURES.mcp_socket);
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('GET /schema is the captured document, byte for byte', async () => {
    const server = await servers.start();
    const text = await (await fetch(`${server.url}/envs/echo/schema`)).text();
    expect(text).toBe(JSON.stringify(FIXTURES.schema));
  });
});

describe('MCP echo: the rest of the spec', () => {
  async function session(server: EnvServer) {
    const c = await RawClient.open(wsBase(server, 'echo'));
    const step = async (data: unknown) => {
      c.send(JSON.stringify({ type: 'step', data }));
      return JSON.parse(await c.next());
    };
    return { c, step };
  }

  it('argument errors carry pydantic texts and are classified by them (§2.7)', async () => {
    const server = await servers.start();
    const { c, step } = await session(server);
    const link = (t: string) => `\n    For further information visit https://errors.pydantic.dev/2.13/v/${t}`;
    expect((await step({ type: 'call_tool', tool_name: 'echo_message', arguments: {} })).data.observation.error).toEqual({
      error_type: 'invalid_args',
      message: `1 validation error for call[echo_message]\nmessage\n  Missing required argument [type=missing_argument, input_value={}, input_type=dict]${link('missing_argument')}`,
    });
    expect((await step({ type: 'call_tool', tool_name: 'echo_message' })).data.observation.error.error_type).toBe('invalid_args');
    expect((await step({ type: 'call_tool', tool_name: 'echo_message', arguments: { message: 5 } })).data.observation.error).toEqual({
      error_type: 'execution_error',
      message: `1 validation error for call[echo_message]\nmessage\n  Input should be a valid string [type=string_type, input_value=5, input_type=int]${link('string_type')}`,
    });
    const extra = (await step({ type: 'call_tool', tool_name: 'echo_message', arguments: { message: 'a', extra: 1 } })).data.observation.error;
    expect(extra.error_type).toBe('invalid_args');
    expect(extra.message).toContain(`extra\n  Unexpected keyword argument [type=unexpected_keyword_argument, input_value=1, input_type=int]`);
    expect((await step({ type: 'call_tool', tool_name: 'reset', arguments: {} })).data.observation).toEqual({
      tool_name: 'reset',
      result: null,
      error: { error_type: 'tool_not_found', message: "Unknown tool: 'reset'" },
    });
    // Every call above was a step, failed or not (§2.5).
    c.send('{"type":"state"}');
    expect(JSON.parse(await c.next()).data.step_count).toBe(5);
    c.ws.close();
    await c.waitClosed();
  });

  it('shape errors are VALIDATION_ERROR frames and do not count as steps; the legacy {message} action still works', async () => {
    const server = await servers.start();
    const { c, step } = await session(server);
    const errors = async (data: unknown) => {
      const frame = await step(data);
      expect(frame.type).toBe('error');
      expect(frame.data.code).toBe('VALIDATION_ERROR');
      return frame.data.errors.map((e: { type: string; loc: unknown[] }) => [e.type, e.loc]);
    };
    expect(await errors({ type: 'call_tool', tool_name: 'echo_message', arguments: 'x' })).toEqual([['dict_type', ['arguments']]]);
    expect(await errors({ type: 'call_tool', tool_name: 5 })).toEqual([['string_type', ['tool_name']]]);
    expect(await errors({ type: 'call_tool' })).toEqual([['missing', ['tool_name']]]);
    expect(await errors({ type: 'list_tools', extra: 1 })).toEqual([['extra_forbidden', ['extra']]]);
    const bogus = await step({ type: 'bogus' });
    expect(bogus.data.errors[0]).toMatchObject({ type: 'literal_error', loc: ['type'], msg: "Input should be 'call_tool'", ctx: { expected: "'call_tool'" } });
    expect(bogus.data.errors[1]).toMatchObject({ type: 'missing', loc: ['tool_name'] });
    // No type means call_tool (§2.2).
    expect((await step({ tool_name: 'echo_message', arguments: { message: 'x' } })).data.observation.result.data).toBe('x');
    // The older EchoAction form (openenv-protocol.md §5.1), kept: reward = code points × 0.1.
    c.send('{"type":"step","data":{"message":"abc"}}');
    expect(await c.next()).toBe('{"type":"observation","data":{"observation":{"echoed_message":"abc","message_length":3},"reward":0.30000000000000004,"done":false}}');
    expect(await errors({ message: '' })).toEqual([['string_too_short', ['message']]]);
    c.send('{"type":"state"}');
    expect(JSON.parse(await c.next()).data.step_count).toBe(2);
    c.ws.close();
    await c.waitClosed();
  });

  it('echo_with_length counts code points; content text is compact raw-UTF-8 JSON (§2.8)', async () => {
    const server = await servers.start();
    const { c, step } = await session(server);
    const message = 'a👍"q"\n\t<\u2028é\u0301';
    const result = (await step({ type: 'call_tool', tool_name: 'echo_with_length', arguments: { message } })).data.observation.result;
    expect(result.data).toEqual({ message, length: 11 });
    expect(result.content[0].text).toBe(JSON.stringify({ message, length: 11 }));
    c.ws.close();
    await c.waitClosed();
  });

  it('HTTP /step takes MCP actions; HTTP /mcp sessions list and call tools, then close (§3.6)', async () => {
    const server = await servers.start();
    const listed = await post(server, '/envs/echo/step', '{"action":{"type":"list_tools"}}');
    expect(listed.status).toBe(200);
    expect(JSON.parse(listed.text).observation.tools.map((t: { name: string }) => t.name)).toEqual(['echo_message', 'echo_with_length']);
    expect(listed.text.endsWith(',"reward":null,"done":false}')).toBe(true);
    expect((await post(server, '/envs/echo/step', '{"action":{"message":"hi"}}')).text).toBe(
      '{"observation":{"echoed_message":"hi","message_length":2},"reward":0.2,"done":false}',
    );
    expect((await post(server, '/envs/echo/reset', '{}')).text).toBe('{"observation":{},"reward":0.0,"done":false}');

    const rpc = async (method: string, params: Record<string, unknown>, id: number) =>
      JSON.parse((await post(server, '/envs/echo/mcp', JSON.stringify({ jsonrpc: '2.0', method, params, id }))).text);
    const sessionId = (await rpc('openenv/session/create', {}, 1)).result.session_id;
    expect(server.stats().envs.echo.active).toBe(1);
    const tools = (await rpc('tools/list', { session_id: sessionId }, 2)).result.tools;
    expect(tools.map((t: Record<string, unknown>) => Object.keys(t))[0]).toEqual([
      'name', 'title', 'description', 'input_schema', 'execution', 'output_schema', 'icons', 'annotations', 'meta', 'inputSchema',
    ]);
    expect(tools[0].title).toBe('Echo Message');
    const call = await post(server, '/envs/echo/mcp', JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'echo_with_length', arguments: { message: 'abc' }, session_id: sessionId }, id: 3 }));
    expect(call.text).toBe(
      '{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"{\\"message\\":\\"abc\\",\\"length\\":3}","annotations":null,"meta":null}],"structured_content":{"message":"abc","length":3},"meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo_env","version":"4.0.10"}},"data":{"message":"abc","length":3},"is_error":false}}',
    );
    expect((await rpc('tools/call', { name: 'nope', arguments: {} }, 4)).error).toEqual({ code: -32603, message: "Unknown tool: 'nope'", data: null });
    expect((await rpc('openenv/session/close', { session_id: sessionId }, 5)).result).toEqual({ session_id: sessionId, closed: true });
    expect((await rpc('openenv/session/close', { session_id: sessionId }, 6)).error).toEqual({ code: -32602, message: `Unknown session_id: ${sessionId}`, data: null });
    // POST /mcp {} is what `openenv validate` sends: -32600 with the pydantic text, id null.
    const empty = JSON.parse((await post(server, '/envs/echo/mcp', '{}')).text);
    expect(empty.id).toBeNull();
    expect(empty.error.code).toBe(-32600);
    expect(empty.error.message).toMatch(/^Invalid request: 2 validation errors for JsonRpcRequest\njsonrpc\n {2}Field required \[type=missing, input_value=\{\}, input_type=dict\]/);
    await expectNoLeaks(server);
  });
});
