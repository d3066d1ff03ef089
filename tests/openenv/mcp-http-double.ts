// A test double of an HTTP-only OpenEnv MCP server, as OpenEnv's calendar env serves (specs/
// environment-classes.md §4): `POST /reset`, `/step`, `/mcp` and `GET /schema` only — no `/ws` (the
// upgrade gets a 404), no `/metadata`. It keeps one env between requests, as such a server must for an
// episode to span several. Bodies are OpenEnv's HTTP shapes (specs/openenv-protocol.md §2); reset bodies
// are recorded.

import { createServer, type Server } from 'node:http';

const SCHEMA = {
  action: {
    additionalProperties: false,
    properties: { type: { const: 'call_tool', default: 'call_tool', type: 'string' }, tool_name: { type: 'string' }, arguments: { additionalProperties: true, type: 'object' } },
    required: ['tool_name'],
    title: 'CallToolAction',
    type: 'object',
  },
  observation: { title: 'CallToolObservation', type: 'object' },
  state: { title: 'State', type: 'object' },
};

const TOOL = { name: 'create_event', description: 'Add an event to the calendar.', input_schema: { type: 'object', properties: { title: { type: 'string' } }, required: ['title'] } };

export interface HttpMcpDouble {
  url: string;
  resets: unknown[];
  close(): Promise<void>;
}

export async function startHttpMcpDouble(): Promise<HttpMcpDouble> {
  const resets: unknown[] = [];
  let events: string[] = [];
  const http: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const route = `${req.method} ${(req.url ?? '').replace(/\?.*$/, '')}`;
      const body = raw ? (JSON.parse(raw) as Record<string, any>) : {};
      const send = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (route === 'GET /schema') return send(200, SCHEMA);
      if (route === 'POST /reset') {
        resets.push(body);
        events = [];
        return send(200, { observation: {}, reward: 0.0, done: false });
      }
      if (route === 'POST /step') {
        const action = body.action ?? {};
        if (action.type === 'list_tools') return send(200, { observation: { tools: [TOOL] }, reward: null, done: false });
        if (action.tool_name !== 'create_event' || typeof action.arguments?.title !== 'string') {
          return send(422, { detail: [{ type: 'missing', loc: ['arguments', 'title'], msg: 'Field required', input: action.arguments ?? {} }] });
        }
        events.push(action.arguments.title);
        return send(200, { observation: { tool_name: 'create_event', result: { content: [], structured_content: null, meta: null, data: `created ${events.length}`, is_error: false }, error: null }, reward: 1.0, done: false });
      }
      if (route === 'POST /mcp') return send(200, { jsonrpc: '2.0', id: body.id ?? null, result: { tools: [{ name: TOOL.name, description: TOOL.description, inputSchema: TOOL.input_schema }] } });
      return send(404, { detail: 'Not Found' });
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(http.address() as { port: number }).port}`,
    resets,
    close: () => new Promise<void>((resolve) => { http.close(() => resolve()); http.closeAllConnections(); }),
  };
}
