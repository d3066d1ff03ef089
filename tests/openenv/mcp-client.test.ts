// Our OpenEnv client against current OpenEnv's MCP form: protocol detection by what the server says
// (specs/openenv-mcp.md §6), list_tools / call_tool as the Python MCPToolClient reads them (§5.2), on a
// test double built from the captured frames, on our own echo, and on action envs.

import { afterEach, describe, expect, it } from 'vitest';
import { connect, detectProtocol, envProtocol, McpToolError, parseToolList, toolResultText, wsMcpProbe } from '../../src/openenv/index.ts';
import { Servers } from '../server/helpers.ts';
import { legacyEchoEnv } from '../../env-server/envs/legacy-echo.ts';
import { startMcpEchoDouble, type McpEchoDouble } from './mcp-echo-double.ts';

const servers = new Servers();
const doubles: McpEchoDouble[] = [];
afterEach(async () => {
  await servers.closeAll();
  await Promise.all(doubles.splice(0).map((d) => d.close()));
});

async function double(): Promise<McpEchoDouble> {
  const d = await startMcpEchoDouble();
  doubles.push(d);
  return d;
}

describe('telling an MCP env from an action env (§6)', () => {
  it('MCP: the captured echo double and our echo; action: catch, wordle and the legacy echo', async () => {
    const d = await double();
    const server = await servers.start();
    const legacy = await servers.start({ envs: { echo: legacyEchoEnv } });
    expect(await detectProtocol(d.url, wsMcpProbe)).toBe('mcp');
    // The schema alone decided: the double received no /ws frame.
    expect(d.received).toEqual([]);
    expect(await envProtocol(`${server.url}/envs/echo/`)).toBe('mcp');
    expect(await detectProtocol(`${server.url}/envs/catch`, wsMcpProbe)).toBe('action');
    expect(await detectProtocol(`${server.url}/envs/wordle`, wsMcpProbe)).toBe('action');
    expect(await detectProtocol(`${legacy.url}/envs/echo`, wsMcpProbe)).toBe('action');
    // The probe left no session behind.
    expect(server.stats().activeSessions).toBe(0);
  });

  it('the tools/list probe waits out a full server like an episode does (capacity refusals are retried)', async () => {
    const server = await servers.start({ maxConcurrentEnvs: 1 });
    const holder = await connect(`${server.url}/envs/catch`);
    await holder.reset();
    const detected = detectProtocol(`${server.url}/envs/catch`, wsMcpProbe);
    setTimeout(() => void holder.close(), 300);
    expect(await detected).toBe('action');
  });

  it('a bare `Action` schema is confirmed by the tools/list probe; a custom action class with tools is mcp-rpc', async () => {
    const schema = (title: string) => ({ action: { title, type: 'object', properties: {} }, observation: {}, state: {} });
    const fakeFetch = (title: string) => (async () => new Response(JSON.stringify(schema(title)))) as unknown as typeof fetch;
    const tools = async () => ({ jsonrpc: '2.0' as const, id: 1, result: { tools: [] } });
    const noMcp = async () => ({ jsonrpc: '2.0' as const, id: 1, error: { code: -32603, message: 'Environment does not support MCP', data: null } });
    expect(await detectProtocol('http://x', tools, fakeFetch('Action'))).toBe('mcp');
    expect(await detectProtocol('http://x', tools, fakeFetch('MyAction'))).toBe('mcp-rpc');
    expect(await detectProtocol('http://x', noMcp, fakeFetch('MyAction'))).toBe('action');
    expect(await detectProtocol('http://x', async () => 'unsupported', fakeFetch('Action'))).toBe('action');
  });
});

describe('list_tools / call_tool over /ws (§5.1–§5.2)', () => {
  it('the Python client session of §5.1 through our client, on the double and on our echo', async () => {
    const d = await double();
    const server = await servers.start();
    for (const base of [d.url, `${server.url}/envs/echo`]) {
      const session = await connect(base);
      expect((await session.reset()).observation).toEqual({});
      const tools = await session.listTools();
      expect(tools.map((t) => [t.name, t.description])).toEqual([
        ['echo_message', 'Echo back the provided message.'],
        ['echo_with_length', 'Echo back the message with its length.'],
      ]);
      expect(tools[0]!.inputSchema).toEqual({ type: 'object', additionalProperties: false, properties: { message: { type: 'string', description: 'The message to echo back' } }, required: ['message'] });
      const hello = await session.callTool('echo_message', { message: 'Hello!' });
      expect(hello.value).toBe('Hello!');
      expect(hello.step.reward).toBeNull();
      expect(toolResultText((hello.step.observation as { result: unknown }).result)).toBe('Hello!');
      const err = await session.callTool('nope', { x: 1 }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpToolError);
      // Python: RuntimeError("Tool 'nope' failed: Unknown tool: 'nope' (type: tool_not_found)")
      expect((err as Error).message).toBe("Tool 'nope' failed: Unknown tool: 'nope' (type: tool_not_found)");
      expect((await session.state()).step_count).toBe(3);
      await session.reset({ seed: 7, episode_id: 'ep-42' });
      expect(await session.state()).toEqual({ episode_id: 'ep-42', step_count: 0 });
      await session.close();
    }
  });

  it('tool lists accept inputSchema (mcp 1.x) and reject what Python rejects; result text follows §8', () => {
    expect(parseToolList({ tools: [{ name: 'a', inputSchema: { type: 'object' } }, { name: 'b' }] })).toEqual([
      { name: 'a', description: '', inputSchema: { type: 'object' } },
      { name: 'b', description: '', inputSchema: {} },
    ]);
    expect(() => parseToolList({ tools: [{ name: 'a', description: null }] })).toThrow(/must be strings/);
    expect(() => parseToolList({})).toThrow(/no 'tools' array/);
    expect(toolResultText({ content: [{ type: 'text', text: '[true' }, { type: 'text', text: ',"x"]' }], data: null })).toBe('[true,"x"]');
    expect(toolResultText({ data: { message: 'a', length: 1 } })).toBe('{"message":"a","length":1}');
    expect(toolResultText(5)).toBe('5');
  });
});
