// WS `/envs/<name>/mcp`: bare JSON-RPC frames on a socket that holds one pooled session (§3.4, §6).

import { afterEach, describe, expect, it } from 'vitest';
import { pythonDumps } from '../../env-server/mcp.ts';
import { expectNoLeaks, RawClient, Servers, wsBase } from './helpers.ts';

const servers = new Servers();
afterEach(() => servers.closeAll());

const mcpUrl = (ws: string) => ws.replace(/\/ws$/, '/mcp');

describe('WS /mcp on a built-in env', () => {
  it('answers JSON-RPC in order; parse errors keep the socket', async () => {
    const server = await servers.start();
    const c = await RawClient.open(mcpUrl(wsBase(server, 'catch')));
    c.send('{"jsonrpc":"2.0","method":"tools/list","id":1}');
    // json.dumps spacing, as upstream writes WS /mcp frames (catch is not an MCP env).
    expect(await c.next()).toBe('{"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Environment does not support MCP", "data": null}}');
    c.send('{oops');
    expect(await c.nextJson()).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'Parse error: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)', data: null },
    });
    c.send('{"jsonrpc":"2.0","method":"openenv/session/create","id":2}');
    expect((await c.nextJson()).result.session_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(server.stats().envs.catch.active).toBe(1);
    c.ws.close();
    await c.waitClosed();
    await expectNoLeaks(server);
  });

  it('shares the cap with /ws and refuses in JSON-RPC (-32000, spaced json.dumps), then close 1000', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const holder = await RawClient.open(wsBase(server, 'echo'));
    holder.send('{"type":"reset"}');
    await holder.next();
    const refused = await RawClient.open(mcpUrl(wsBase(server, 'echo')));
    expect(await refused.next()).toBe(
      '{"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Server at capacity: 1/1 sessions active. Cannot accept new connections.", "data": {"active_sessions": 1, "max_sessions": 1}}}',
    );
    expect(await refused.waitClosed()).toEqual({ code: 1000, reason: '' });
    holder.ws.close();
    await holder.waitClosed();
    await expectNoLeaks(server);
  });

  it('a binary frame ends the session with a -32000 error', async () => {
    const server = await servers.start();
    const c = await RawClient.open(mcpUrl(wsBase(server, 'echo')));
    c.ws.send(Buffer.from('{}'), { binary: true });
    expect(await c.next()).toBe(`{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"'text'","data":null}}`);
    expect(await c.waitClosed()).toEqual({ code: 1000, reason: '' });
    await expectNoLeaks(server);
  });

  it("pythonDumps writes Python's json.dumps defaults", () => {
    expect(pythonDumps({ a: [1, 'é', null], b: { c: true } })).toBe('{"a": [1, "\\u00e9", null], "b": {"c": true}}');
  });
});
