// A test double of an OpenEnv MCP env shaped like OpenEnv's finqa (specs/environment-classes.md §4,
// specs/openenv-mcp.md §2.2, §2.7, §3): its action class subclasses CallToolAction, so `/schema` names
// `FinQACallToolAction` and a `list_tools` step is refused with pydantic's VALIDATION_ERROR frame, while
// JSON-RPC `tools/list` on the same socket lists the tools; `submit_answer` answers with the env's own
// observation `{}` and reward 1 (not a CallToolObservation). Every frame is the documented wire format;
// no code of env-server/ is shared. Reset frames are recorded so tests see the kwargs that reached reset.

import { createServer, type Server } from 'node:http';
import { WebSocketServer } from 'ws';

const PYDANTIC = 'https://errors.pydantic.dev/2.13/v';

/** pydantic's JSON Schema of a CallToolAction subclass (type const "call_tool", tool_name required). */
const SCHEMA = {
  action: {
    additionalProperties: false,
    properties: {
      metadata: { additionalProperties: true, title: 'Metadata', type: 'object' },
      type: { const: 'call_tool', default: 'call_tool', title: 'Type', type: 'string' },
      tool_name: { description: 'Name of the tool to call', title: 'Tool Name', type: 'string' },
      arguments: { additionalProperties: true, description: 'Arguments to pass to the tool', title: 'Arguments', type: 'object' },
    },
    required: ['tool_name'],
    title: 'FinQACallToolAction',
    type: 'object',
  },
  observation: { properties: {}, title: 'Observation', type: 'object' },
  state: { properties: { episode_id: { anyOf: [{ type: 'string' }, { type: 'null' }], default: null }, step_count: { default: 0, minimum: 0, type: 'integer' } }, title: 'State', type: 'object' },
};

/** JSON-RPC tools/list items are the MCP `Tool` dumps (`inputSchema`, not `input_schema`). */
const TOOLS = [
  { name: 'get_descriptions', title: null, description: 'List the tables of a company.', inputSchema: { properties: { company_name: { type: 'string' } }, required: ['company_name'], type: 'object' }, outputSchema: null, annotations: null, meta: null },
  { name: 'submit_answer', title: null, description: 'Submit the final answer.', inputSchema: { properties: { answer: { type: 'string' } }, required: ['answer'], type: 'object' }, outputSchema: null, annotations: null, meta: null },
];

export interface FinqaDouble {
  url: string;
  /** The `data` of every reset frame received, in order. */
  resets: Record<string, unknown>[];
  close(): Promise<void>;
}

/** The VALIDATION_ERROR frame the server sends when `data` fails the action class. */
function validationError(data: Record<string, unknown>): string {
  return JSON.stringify({
    type: 'error',
    data: {
      message: 'Invalid message',
      code: 'VALIDATION_ERROR',
      errors: [
        { type: 'literal_error', loc: ['type'], msg: "Input should be 'call_tool'", input: data.type, ctx: { expected: "'call_tool'" }, url: `${PYDANTIC}/literal_error` },
        { type: 'missing', loc: ['tool_name'], msg: 'Field required', input: data, url: `${PYDANTIC}/missing` },
      ],
    },
  });
}

const observation = (obs: unknown, reward: number | null, done: boolean) => JSON.stringify({ type: 'observation', data: { observation: obs, reward, done } });

export async function startFinqaDouble(): Promise<FinqaDouble> {
  const resets: Record<string, unknown>[] = [];
  const http: Server = createServer((req, res) => {
    const route = (req.url ?? '').replace(/\?.*$/, '');
    const body = route === '/schema' ? JSON.stringify(SCHEMA) : route === '/metadata' ? '{"name":"FinQAEnvironment","description":"FinQAEnvironment environment","readme_content":null,"version":"1.0.0","author":null,"documentation_url":null}' : null;
    res.writeHead(body === null ? 404 : 200, { 'content-type': 'application/json' });
    res.end(body ?? '{"detail":"Not Found"}');
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req, socket, head) => {
    if (req.url !== '/ws') return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on('message', (raw) => {
        const frame = JSON.parse(raw.toString()) as { type: string; data?: Record<string, any> };
        const data = frame.data ?? {};
        const reply = (() => {
          switch (frame.type) {
            case 'reset':
              resets.push(data);
              return observation({}, 0.0, false);
            case 'close':
              ws.close(1000, '');
              return null;
            case 'mcp':
              if (data.method === 'tools/list') return JSON.stringify({ type: 'mcp', data: { jsonrpc: '2.0', id: data.id ?? null, result: { tools: TOOLS } } });
              return JSON.stringify({ type: 'mcp', data: { jsonrpc: '2.0', id: data.id ?? null, error: { code: -32601, message: `Method not found: ${data.method}`, data: null } } });
            case 'step':
              if (data.type !== undefined && data.type !== 'call_tool') return validationError(data);
              if (data.tool_name === 'submit_answer') return observation({}, 1.0, true);
              return observation({ tool_name: data.tool_name, result: { content: [{ type: 'text', text: 'us_gaap_Revenues', annotations: null, meta: null }], structured_content: { result: 'us_gaap_Revenues' }, meta: null, data: 'us_gaap_Revenues', is_error: false }, error: null }, null, false);
            default:
              return JSON.stringify({ type: 'error', data: { message: `test double: no reply for ${frame.type}`, code: 'EXECUTION_ERROR' } });
          }
        })();
        if (reply !== null) ws.send(reply);
      });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  const port = (http.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    resets,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
