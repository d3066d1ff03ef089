// GET /openapi.json and GET /docs of a built-in env (specs/openenv-mcp.md §4.1–§4.2). `openenv
// validate --url` reads `info.version` (a string) and decides the env's mode from the keys of `paths`:
// `/reset` with `/step` and `/state` is "simulation", which is what every built-in env is.

import type { AnyEnvInstance, EnvDefinition } from './envs/types.ts';

type Operation = { method: 'get' | 'post'; summary: string; requestBody?: string; response: string };

/** The seven routes upstream's app lists, in its order (WebSocket routes are not in OpenAPI). */
const ROUTES: Record<string, Operation> = {
  '/reset': { method: 'post', summary: 'Reset the environment', requestBody: 'ResetRequest', response: 'ResetResponse' },
  '/step': { method: 'post', summary: 'Execute an action in the environment', requestBody: 'StepRequest', response: 'StepResponse' },
  '/state': { method: 'get', summary: 'Get current environment state', response: 'State' },
  '/metadata': { method: 'get', summary: 'Get environment metadata', response: 'EnvironmentMetadata' },
  '/health': { method: 'get', summary: 'Health check', response: 'HealthResponse' },
  '/schema': { method: 'get', summary: 'Get all JSON schemas', response: 'SchemaResponse' },
  '/mcp': { method: 'post', summary: 'Mcp Endpoint', response: 'JsonRpcResponse' },
};

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const object = (properties: Record<string, unknown>, required: string[] = []) => ({ type: 'object', properties, ...(required.length ? { required } : {}) });
const reward = { anyOf: [{ type: 'number' }, { type: 'null' }], title: 'Reward' };

function componentSchemas(def: EnvDefinition<AnyEnvInstance>): Record<string, unknown> {
  return {
    EnvironmentMetadata: object({ name: { type: 'string' }, description: { type: 'string' }, version: { type: 'string' } }, ['name', 'description']),
    HealthResponse: object({ status: ref('HealthStatus') }, ['status']),
    HealthStatus: { type: 'string', enum: ['healthy', 'unhealthy', 'degraded'], title: 'HealthStatus' },
    JsonRpcResponse: object({ jsonrpc: { type: 'string', const: '2.0' }, id: {}, result: {}, error: {} }, ['jsonrpc']),
    ResetRequest: { ...object({ seed: { anyOf: [{ type: 'integer', minimum: 0 }, { type: 'null' }] }, episode_id: { anyOf: [{ type: 'string', maxLength: 255 }, { type: 'null' }] } }), additionalProperties: true },
    ResetResponse: object({ observation: { type: 'object', additionalProperties: true }, reward, done: { type: 'boolean' } }, ['observation']),
    SchemaResponse: object({ action: def.schema.action, observation: def.schema.observation, state: def.schema.state }, ['action', 'observation', 'state']),
    State: def.schema.state,
    StepRequest: { ...object({ action: { type: 'object', additionalProperties: true }, timeout_s: { anyOf: [{ type: 'number', exclusiveMinimum: 0 }, { type: 'null' }] }, request_id: { anyOf: [{ type: 'string' }, { type: 'null' }] } }, ['action']), additionalProperties: true },
    StepResponse: object({ observation: { type: 'object', additionalProperties: true }, reward, done: { type: 'boolean' } }, ['observation']),
    HTTPValidationError: object({ detail: { type: 'array', items: ref('ValidationError') } }),
    ValidationError: object({ loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } }, msg: { type: 'string' }, type: { type: 'string' } }, ['loc', 'msg', 'type']),
  };
}

/** An OpenAPI 3.1 document for one built-in env. */
export function openApiDocument(def: EnvDefinition<AnyEnvInstance>): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const [path, op] of Object.entries(ROUTES)) {
    const responses: Record<string, unknown> = { '200': { description: 'Successful Response', content: { 'application/json': { schema: ref(op.response) } } } };
    if (op.requestBody) responses['422'] = { description: 'Validation Error', content: { 'application/json': { schema: ref('HTTPValidationError') } } };
    const operation: Record<string, unknown> = { summary: op.summary, operationId: `${op.method}_${path.slice(1)}`, responses };
    if (op.requestBody) operation.requestBody = { content: { 'application/json': { schema: ref(op.requestBody) } }, required: path === '/step' };
    paths[path] = { [op.method]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'OpenEnv Environment HTTP API',
      version: '1.0.0',
      description: `${def.metadata.name} served by the webgrpo env-server: HTTP reset/step/state, WebSocket sessions at \`/ws\`, JSON-RPC at \`/mcp\`.`,
    },
    paths,
    components: { schemas: componentSchemas(def) },
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** A self-contained page listing the routes (no CDN: the env-server may run offline). */
export function docsPage(def: EnvDefinition<AnyEnvInstance>): string {
  const rows = Object.entries(ROUTES)
    .map(([path, op]) => `<tr><td><code>${op.method.toUpperCase()}</code></td><td><code>${path}</code></td><td>${escapeHtml(op.summary)}</td></tr>`)
    .join('\n');
  const name = escapeHtml(def.metadata.name);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${name} - OpenEnv Environment HTTP API</title></head>
<body>
<h1>${name}</h1>
<p>OpenEnv Environment HTTP API 1.0.0. The machine-readable document is <a href="openapi.json">openapi.json</a>.
WebSocket sessions: <code>ws://…/ws</code>; JSON-RPC over WebSocket: <code>ws://…/mcp</code>.</p>
<table>
<tr><th>method</th><th>path</th><th>summary</th></tr>
${rows}
</table>
</body></html>
`;
}
