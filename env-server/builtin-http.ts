// The stateless HTTP routes of one built-in env (specs/openenv-protocol.md §2). Every call that needs
// an env builds a fresh one and closes it. As in OpenEnv, none counts against the session cap, except
// for an env whose instances are scarce (it declares a cap of its own: browsergym's browser contexts):
// there each call holds a slot while it runs, or a burst of HTTP resets would start a browser context
// apiece beyond any cap.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnyEnvInstance, EnvDefinition } from './envs/types.ts';
import { capacityMessage, observationJson, withPydanticUrl } from './frames.ts';
import { BodyTooLargeError, isJsonContentType, readBody, sendBodyTooLarge, sendJson, sendJsonText, sendMethodNotAllowed, sendNotFound } from './http-util.ts';
import { checkResetBody, checkStepBody, parseJsonBody } from './http-models.ts';
import { parseBoundedJson } from './json-limits.ts';
import { docsPage, openApiDocument } from './openapi.ts';
import { handleMcp, JSONRPC, rpcError, type McpSessions } from './mcp.ts';
import type { SlotPool } from './slots.ts';

const ROUTE_METHODS: Record<string, 'GET' | 'POST'> = {
  '/health': 'GET',
  '/metadata': 'GET',
  '/schema': 'GET',
  '/state': 'GET',
  '/reset': 'POST',
  '/step': 'POST',
  '/mcp': 'POST',
  '/openapi.json': 'GET',
  '/docs': 'GET',
};

export interface BuiltinHttpContext {
  def: EnvDefinition<AnyEnvInstance>;
  sessions: McpSessions;
  maxBodyBytes: number;
  maxJsonDepth: number;
  /** Set for an env with scarce instances: the session pool each HTTP call takes a slot of. */
  scarceSlots?: SlotPool;
  log(line: string): void;
}

class AtCapacity extends Error {}

/** Builds a throwaway env (in a slot, for a scarce env), runs `use`, always closes it. */
async function withFreshEnv<T>(ctx: BuiltinHttpContext, use: (env: AnyEnvInstance) => T | Promise<T>): Promise<T> {
  const slots = ctx.scarceSlots;
  if (slots && !slots.tryAcquire()) throw new AtCapacity(capacityMessage(slots.active, slots.capacity));
  try {
    const env = ctx.def.create();
    try {
      return await use(env);
    } finally {
      await env.close();
    }
  } finally {
    slots?.release();
  }
}

const BODY_ROUTES = new Set(['/reset', '/step', '/mcp']);

/** A request from a web page (browsers send these; OpenEnv's Python clients, TRL and curl do not). */
function fromWebPage(req: IncomingMessage): boolean {
  return req.headers.origin !== undefined || req.headers['sec-fetch-site'] !== undefined;
}

/**
 * The MCP sessions as an HTTP `/mcp` request may use them. A session opened over HTTP outlives the
 * page that opened it (nothing notices the tab closing; only the idle timeout frees it), so a web
 * page may not open one of a scarce env: a few requests would hold every browser slot for minutes.
 * Pages use WS `/mcp` or `/ws`, whose sessions end with the socket.
 */
function httpMcpSessions(ctx: BuiltinHttpContext, req: IncomingMessage): McpSessions {
  if (!ctx.scarceSlots || !fromWebPage(req)) return ctx.sessions;
  return {
    ...ctx.sessions,
    create: () => ({
      error: `openenv/session/create over HTTP /mcp is refused from a web page for ${ctx.def.name}: such a session would outlive the page; open WS /mcp or /ws instead`,
      data: { factory_name: ctx.def.metadata.name },
    }),
  };
}


export async function handleBuiltinHttp(ctx: BuiltinHttpContext, req: IncomingMessage, res: ServerResponse, route: string): Promise<void> {
  const method = ROUTE_METHODS[route];
  if (!method) return sendNotFound(res);
  if (req.method !== method && !(method === 'GET' && req.method === 'HEAD')) return sendMethodNotAllowed(res, method);
  const { def } = ctx;
  // FastAPI reads a body as JSON only when it says so (or says nothing); a text/plain one is what a
  // web page sends without a preflight, and no OpenEnv client sends it.
  if (BODY_ROUTES.has(route) && req.headers['content-type'] !== undefined && !isJsonContentType(req.headers['content-type'])) {
    req.resume();
    return sendJson(res, 415, { detail: `${route} takes a JSON body: send it as application/json, not ${JSON.stringify(req.headers['content-type'])}` });
  }
  try {
    switch (route) {
      case '/health':
        return sendJson(res, 200, { status: 'healthy' });
      case '/openapi.json':
        return sendJson(res, 200, openApiDocument(def));
      case '/docs': {
        const page = docsPage(def);
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': String(Buffer.byteLength(page)) });
        res.end(page);
        return;
      }
      case '/metadata':
        return sendJson(res, 200, def.metadata);
      case '/schema':
        return sendJson(res, 200, { action: def.schema.action, observation: def.schema.observation, state: def.schema.state });
      case '/state':
        return sendJson(res, 200, await withFreshEnv(ctx, (env) => env.state()));
      case '/reset': {
        const parsed = parseJsonBody(await readBody(req, ctx.maxBodyBytes), false, ctx.maxJsonDepth);
        if (!parsed.ok) return sendJson(res, 422, { detail: parsed.detail });
        const issues = checkResetBody(parsed.body);
        if (issues.length > 0) return sendJson(res, 422, { detail: issues });
        return sendJsonText(res, 200, observationJson(await withFreshEnv(ctx, (env) => env.reset(parsed.body))));
      }
      case '/step': {
        const parsed = parseJsonBody(await readBody(req, ctx.maxBodyBytes), true, ctx.maxJsonDepth);
        if (!parsed.ok) return sendJson(res, 422, { detail: parsed.detail });
        const issues = checkStepBody(parsed.body);
        if (issues.length > 0) return sendJson(res, 422, { detail: issues });
        const check = def.validateAction(parsed.body.action);
        // Upstream raises HTTPException(detail=e.errors()): the action's own locs, no "body" prefix.
        if (!check.ok) return sendJson(res, 422, { detail: check.errors.map(withPydanticUrl) });
        return sendJsonText(res, 200, observationJson(await withFreshEnv(ctx, (env) => env.step(check.action))));
      }
      default: {
        const raw = (await readBody(req, ctx.maxBodyBytes)).toString('utf8');
        const parsed = parseBoundedJson(raw, ctx.maxJsonDepth);
        if (!parsed.ok) return sendJson(res, 200, rpcError(JSONRPC.PARSE_ERROR));
        return sendJson(res, 200, handleMcp(parsed.value, httpMcpSessions(ctx, req)));
      }
    }
  } catch (err) {
    if (err instanceof BodyTooLargeError) return sendBodyTooLarge(req, res, err.message);
    if (err instanceof AtCapacity) return sendJson(res, 503, { detail: err.message });
    // An env that throws is a 500, as in FastAPI; the log keeps the reason.
    ctx.log(`http ${def.name} ${route}: ${err instanceof Error ? err.message : String(err)}`);
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Internal Server Error');
    }
  }
}
