// The stateless HTTP routes of one built-in env (specs/openenv-protocol.md §2). Every call that needs
// an env builds a fresh one and closes it; none counts against the session cap.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnyEnvInstance, EnvDefinition } from './envs/types.ts';
import { observationJson, withPydanticUrl } from './frames.ts';
import { BodyTooLargeError, readBody, sendBodyTooLarge, sendJson, sendJsonText, sendMethodNotAllowed, sendNotFound } from './http-util.ts';
import { checkResetBody, checkStepBody, parseJsonBody } from './http-models.ts';
import { parseBoundedJson } from './json-limits.ts';
import { docsPage, openApiDocument } from './openapi.ts';
import { handleMcp, JSONRPC, rpcError, type McpSessions } from './mcp.ts';

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
  log(line: string): void;
}

/** Builds a throwaway env, runs `use`, always closes it. */
async function withFreshEnv<T>(def: EnvDefinition<AnyEnvInstance>, use: (env: AnyEnvInstance) => T | Promise<T>): Promise<T> {
  const env = def.create();
  try {
    return await use(env);
  } finally {
    await env.close();
  }
}


export async function handleBuiltinHttp(ctx: BuiltinHttpContext, req: IncomingMessage, res: ServerResponse, route: string): Promise<void> {
  const method = ROUTE_METHODS[route];
  if (!method) return sendNotFound(res);
  if (req.method !== method && !(method === 'GET' && req.method === 'HEAD')) return sendMethodNotAllowed(res, method);
  const { def } = ctx;
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
        return sendJson(res, 200, await withFreshEnv(def, (env) => env.state()));
      case '/reset': {
        const parsed = parseJsonBody(await readBody(req, ctx.maxBodyBytes), false, ctx.maxJsonDepth);
        if (!parsed.ok) return sendJson(res, 422, { detail: parsed.detail });
        const issues = checkResetBody(parsed.body);
        if (issues.length > 0) return sendJson(res, 422, { detail: issues });
        return sendJsonText(res, 200, observationJson(await withFreshEnv(def, (env) => env.reset(parsed.body))));
      }
      case '/step': {
        const parsed = parseJsonBody(await readBody(req, ctx.maxBodyBytes), true, ctx.maxJsonDepth);
        if (!parsed.ok) return sendJson(res, 422, { detail: parsed.detail });
        const issues = checkStepBody(parsed.body);
        if (issues.length > 0) return sendJson(res, 422, { detail: issues });
        const check = def.validateAction(parsed.body.action);
        // Upstream raises HTTPException(detail=e.errors()): the action's own locs, no "body" prefix.
        if (!check.ok) return sendJson(res, 422, { detail: check.errors.map(withPydanticUrl) });
        return sendJsonText(res, 200, observationJson(await withFreshEnv(def, (env) => env.step(check.action))));
      }
      default: {
        const raw = (await readBody(req, ctx.maxBodyBytes)).toString('utf8');
        const parsed = parseBoundedJson(raw, ctx.maxJsonDepth);
        if (!parsed.ok) return sendJson(res, 200, rpcError(JSONRPC.PARSE_ERROR));
        return sendJson(res, 200, handleMcp(parsed.value, ctx.sessions));
      }
    }
  } catch (err) {
    if (err instanceof BodyTooLargeError) return sendBodyTooLarge(req, res, err.message);
    // An env that throws is a 500, as in FastAPI; the log keeps the reason.
    ctx.log(`http ${def.name} ${route}: ${err instanceof Error ? err.message : String(err)}`);
    if (!res.headersSent) {
      res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('Internal Server Error');
    }
  }
}
