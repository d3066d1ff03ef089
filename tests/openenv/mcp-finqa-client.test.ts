// The OpenEnv client on an MCP env shaped like OpenEnv's finqa (tests/openenv/mcp-finqa-double.ts): as
// OpenEnv's own MCPToolClient, it lists tools over JSON-RPC when the `list_tools` step is refused, takes a
// call's non-CallToolObservation reply as the result, and quotes the server's validation errors.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect, envProtocol, OpenEnvError } from '../../src/openenv/index.ts';
import { startFinqaDouble, type FinqaDouble } from './mcp-finqa-double.ts';

let finqa: FinqaDouble;
beforeAll(async () => { finqa = await startFinqaDouble(); });
afterAll(async () => { await finqa.close(); });

describe('an MCP env whose action class subclasses CallToolAction (finqa)', () => {
  it('is MCP by its /schema; its tools come from JSON-RPC tools/list after the list_tools step is refused', async () => {
    expect(await envProtocol(finqa.url)).toBe('mcp');
    const session = await connect(finqa.url, { timeoutMs: 10_000 });
    await session.reset();
    expect((await session.listTools()).map((t) => [t.name, t.inputSchema.required])).toEqual([['get_descriptions', ['company_name']], ['submit_answer', ['answer']]]);
    await session.close();
  });

  it("a call answered with the env's own observation is the result, with the step's reward", async () => {
    const session = await connect(finqa.url, { timeoutMs: 10_000 });
    await session.reset();
    const answer = await session.callTool('submit_answer', { answer: '42' });
    expect(answer.value).toEqual({});
    expect([answer.step.reward, answer.step.done]).toEqual([1, true]);
    await session.close();
  });

  it("a refused step quotes pydantic's errors, not only 'Invalid message'", async () => {
    const session = await connect(finqa.url, { timeoutMs: 10_000 });
    await session.reset();
    const err = await session.step({ type: 'list_tools' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenEnvError);
    expect((err as Error).message).toBe("Invalid message: type: Input should be 'call_tool' [literal_error]; tool_name: Field required [missing] (code: VALIDATION_ERROR)");
    await session.close();
  });
});
