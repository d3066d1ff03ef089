// A test double of current OpenEnv's MCP echo server, built only from the frames captured from the
// real one (tests/fixtures/openenv-mcp-frames.json, specs/openenv-mcp.md): it answers with the captured
// bytes, the echoed text substituted where the capture echoed another. It shares no code with
// env-server/, so the client and trainer tests that drive it check our side against upstream's wire,
// not against our own server.

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';

interface Exchange {
  send: string;
  expect: string | null;
}

const F = JSON.parse(readFileSync(new URL('../fixtures/openenv-mcp-frames.json', import.meta.url), 'utf8')) as Record<string, Exchange[]> & { schema: unknown };

function captured(section: string, index: number): string {
  const reply = F[section]![index]!.expect;
  if (reply === null) throw new Error(`fixture ${section}[${index}] has no full reply`);
  return reply;
}

/** The captured replies the double is made of (indices into the fixture's exchanges, checked below). */
const RESET = captured('ws_session', 0);
const STATE = captured('ws_session', 1); // episode eb3dea78-…, step_count 0
const LIST_TOOLS = captured('ws_session', 2);
const ECHO_HELLO_WORLD = captured('ws_session', 4); // echo_message("Hello, World!")
const UNKNOWN_NOPE = captured('ws_session', 7); // tool_not_found for "nope"
const CAPTURED_ID = 'eb3dea78-7f36-4e94-9c56-07b682f3543f';
if (!STATE.includes(CAPTURED_ID) || !ECHO_HELLO_WORLD.includes('"data":"Hello, World!"') || !UNKNOWN_NOPE.includes("'nope'")) {
  throw new Error('the MCP frame fixtures changed: update tests/openenv/mcp-echo-double.ts');
}
const METADATA = '{"name":"EchoEnvironment","description":"EchoEnvironment environment","readme_content":null,"version":"1.0.0","author":null,"documentation_url":null}';

/** `s` as it sits inside a JSON string on the wire (compact, raw UTF-8). */
const inJson = (s: string) => JSON.stringify(s).slice(1, -1);

export interface McpEchoDouble {
  url: string;
  /** Every client frame received, in order. */
  received: string[];
  close(): Promise<void>;
}

export interface DoubleOptions {
  /** Answer every echo_message call with the captured tool_not_found error (an env that errors). */
  failCalls?: boolean;
  /** Another class name in /metadata: an MCP env that none of the built-in tasks knows. */
  metadataName?: string;
}

export async function startMcpEchoDouble(options: DoubleOptions = {}): Promise<McpEchoDouble> {
  const received: string[] = [];
  const http: Server = createServer((req, res) => {
    const route = (req.url ?? '').replace(/\?.*$/, '');
    const metadata = options.metadataName ? METADATA.split('EchoEnvironment').join(options.metadataName) : METADATA;
    const body = route === '/schema' ? JSON.stringify(F.schema) : route === '/metadata' ? metadata : route === '/health' ? '{"status":"healthy"}' : null;
    res.writeHead(body === null ? 404 : 200, { 'content-type': 'application/json' });
    res.end(body ?? '{"detail":"Not Found"}');
  });
  const wss = new WebSocketServer({ noServer: true });
  http.on('upgrade', (req, socket, head) => {
    if (req.url !== '/ws') return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      let episodeId: string = randomUUID();
      let steps = 0;
      ws.on('message', (data) => {
        const text = data.toString();
        received.push(text);
        const frame = JSON.parse(text) as { type: string; data?: Record<string, any> };
        const action = frame.data ?? {};
        const reply = (() => {
          switch (frame.type) {
            case 'reset':
              episodeId = typeof action.episode_id === 'string' && action.episode_id ? action.episode_id : randomUUID();
              steps = 0;
              return RESET;
            case 'state':
              return STATE.replace(CAPTURED_ID, episodeId).replace('"step_count":0', `"step_count":${steps}`);
            case 'close':
              ws.close(1000, '');
              return null;
            case 'step':
              steps++;
              if (action.type === 'list_tools') return LIST_TOOLS;
              if (action.tool_name === 'echo_message' && typeof action.arguments?.message === 'string' && !options.failCalls) {
                return ECHO_HELLO_WORLD.split('Hello, World!').join(inJson(action.arguments.message));
              }
              return UNKNOWN_NOPE.split('nope').join(inJson(String(action.tool_name)));
            default:
              return `{"type":"error","data":{"message":"test double: no captured reply for ${inJson(text)}","code":"EXECUTION_ERROR"}}`;
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
    received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close();
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
