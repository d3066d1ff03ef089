// `openenv validate --url` against every built-in env, its six runtime criteria checked the way the
// validator checks them (specs/openenv-mcp.md §4.2), plus /docs, and rewards written as floats.

import { afterEach, describe, expect, it } from 'vitest';
import { BUILTIN_ENVS } from '../../env-server/envs/index.ts';
import { rewardJson } from '../../env-server/frames.ts';
import { RawClient, Servers, wsBase } from './helpers.ts';

const servers = new Servers();
afterEach(() => servers.closeAll());

const isObject = (v: unknown): v is Record<string, any> => typeof v === 'object' && v !== null && !Array.isArray(v);

async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const reply = await fetch(url, init);
  const text = await reply.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: reply.status, body };
}

/** validate_running_environment's criteria, one boolean each, and the mode it reports. */
async function validate(base: string): Promise<{ criteria: Record<string, boolean>; mode: string | null; version: string }> {
  const openapi = await getJson(`${base}/openapi.json`);
  const doc = openapi.body;
  const versionOk = openapi.status === 200 && isObject(doc) && isObject(doc.info) && typeof doc.info.version === 'string';
  const health = await getJson(`${base}/health`);
  const metadata = await getJson(`${base}/metadata`);
  const schema = await getJson(`${base}/schema`);
  const mcp = await getJson(`${base}/mcp`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  const paths = versionOk && isObject((doc as any).paths) ? ((doc as any).paths as Record<string, unknown>) : {};
  let mode: string | null = null;
  let modeOk = false;
  if (Object.keys(paths).length > 0) {
    if ('/reset' in paths) {
      mode = 'simulation';
      modeOk = '/step' in paths && '/state' in paths;
    } else {
      mode = 'production';
      modeOk = !('/step' in paths) && !('/state' in paths);
    }
  }
  const m = metadata.body;
  const s = schema.body;
  return {
    criteria: {
      openapi_version_available: versionOk,
      health_endpoint: health.status === 200 && isObject(health.body) && health.body.status === 'healthy',
      metadata_endpoint: metadata.status === 200 && isObject(m) && typeof m.name === 'string' && typeof m.description === 'string',
      schema_endpoint: schema.status === 200 && isObject(s) && isObject(s.action) && isObject(s.observation) && isObject(s.state),
      mcp_endpoint: mcp.status === 200 && isObject(mcp.body) && mcp.body.jsonrpc === '2.0',
      mode_endpoint_consistency: modeOk,
    },
    mode,
    version: versionOk ? (doc as any).info.version : 'unknown',
  };
}

const ALL_PASS = {
  openapi_version_available: true,
  health_endpoint: true,
  metadata_endpoint: true,
  schema_endpoint: true,
  mcp_endpoint: true,
  mode_endpoint_consistency: true,
};

describe('openenv validate --url', () => {
  it('every built-in env passes all six runtime criteria, in simulation mode, directly and through the proxy', async () => {
    const server = await servers.start();
    const proxy = await servers.start({ envs: {}, upstreams: Object.fromEntries(Object.keys(BUILTIN_ENVS).map((n) => [`up-${n}`, [`${server.url}/envs/${n}`]])) });
    for (const name of Object.keys(BUILTIN_ENVS)) {
      for (const base of [`${server.url}/envs/${name}`, `${proxy.url}/envs/up-${name}`]) {
        const report = await validate(base);
        expect(report, base).toEqual({ criteria: ALL_PASS, mode: 'simulation', version: '1.0.0' });
      }
      const doc = (await getJson(`${server.url}/envs/${name}/openapi.json`)).body as Record<string, any>;
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths)).toEqual(['/reset', '/step', '/state', '/metadata', '/health', '/schema', '/mcp']);
      expect(Object.keys(doc.paths['/reset'])).toEqual(['post']);
      expect(Object.keys(doc.paths['/state'])).toEqual(['get']);
      const docs = await fetch(`${server.url}/envs/${name}/docs`);
      expect([docs.status, docs.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
      expect(await docs.text()).toContain('href="openapi.json"');
    }
  });

  it('the validator logic fails where it should (so the pass above means something)', async () => {
    const server = await servers.start();
    const report = await validate(`${server.url}/envs/nope`);
    expect(Object.values(report.criteria).every((ok) => !ok)).toBe(true);
    expect(report.version).toBe('unknown');
  });
});

describe('rewards are JSON floats, as Python writes them', () => {
  it('rewardJson', () => {
    expect([1, 0, -1, 0.5, 0.30000000000000004, -0, 1e16, 1.5e17, 1e-7, NaN, null, true, false].map((r) => rewardJson(r as number | boolean | null))).toEqual([
      '1.0', '0.0', '-1.0', '0.5', '0.30000000000000004', '-0.0', '1e+16', '1.5e+17', '1e-7', 'null', 'null', '1.0', '0.0',
    ]);
  });

  it('on /ws frames and HTTP routes of catch and wordle', async () => {
    const server = await servers.start();
    for (const name of ['catch', 'wordle']) {
      const c = await RawClient.open(wsBase(server, name));
      c.send('{"type":"reset","data":{"seed":1}}');
      expect(await c.next()).toMatch(/"reward":(null|-?\d+\.\d+(e[+-]\d+)?),"done":(true|false)\}\}$/);
      c.ws.close();
      await c.waitClosed();
      const http = await (await fetch(`${server.url}/envs/${name}/reset`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"seed":1}' })).text();
      expect(http).toMatch(/"reward":(null|-?\d+\.\d+(e[+-]\d+)?),"done":(true|false)\}$/);
    }
    // catch: one step is enough to see a whole-number reward written as 0.0 / 1.0 / -1.0.
    const c = await RawClient.open(wsBase(server, 'catch'));
    c.send('{"type":"reset","data":{"seed":1}}');
    await c.next();
    const rewards: string[] = [];
    for (let i = 0; i < 12; i++) {
      c.send('{"type":"step","data":{"action_id":1}}');
      const frame = await c.next();
      const parsed = JSON.parse(frame);
      if (parsed.type !== 'observation') break;
      rewards.push(/"reward":([^,]+),"done"/.exec(frame)![1]!);
      if (parsed.data.done) break;
    }
    expect(rewards.length).toBeGreaterThan(0);
    for (const r of rewards) expect(r).toMatch(/^(null|-?\d+\.\d+)$/);
    c.ws.close();
    await c.waitClosed();
  });
});
