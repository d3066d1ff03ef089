// Property-based fuzzing (fast-check) of the run store's bulk surfaces on a real `webgrpo start`
// process: imports (valid exports with hostile names, metrics and rollouts; broken, truncated and
// deep ones; bodies cut off halfway) and artifact uploads (any bundle, name, base64 and size, over
// the limit too). Properties: the process lives; no reply is a 5xx but the in-flight budget's 503;
// a refusal names its reason; an accepted import reads back exactly as it was sent (the export
// round-trips); a refused one leaves no run behind. Seeded, so a failure replays.
import http from 'node:http';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fakeDist, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

const SEED = 20261207;
const RUNS = 150;
const MiB = 1024 * 1024;

let work: ReturnType<typeof tempDir>;
let server: ServerProcess;
let run = { id: '', writeToken: '' };

beforeAll(async () => {
  work = tempDir('webgrpo-fuzz-store-');
  fakeDist(path.join(work.dir, 'dist'), 0, 0);
  server = await startServerProcess('start', [
    '--data', path.join(work.dir, 'data'), '--dist', path.join(work.dir, 'dist'),
    '--max-rollouts-per-step', '8', '--max-rollouts-per-run', '20', '--max-import-bytes', String(2 * MiB), '--max-inflight-body-bytes', String(4 * MiB),
  ]);
  run = (await (await fetch(`${server.url}/api/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"config":{},"model":{},"env":{}}' })).json()) as typeof run;
}, 90_000);

afterAll(async () => {
  await server?.stop();
  work?.cleanup();
});

// ---- what is thrown -------------------------------------------------------------------------

/** Names as they come: plain, unicode, empty, long, with controls, NUL, bidi overrides and isolates. */
const runName = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }), weight: 6 },
  { arbitrary: fc.constantFrom('', '  ', 'a\u0000b', 'evil\u202etxt.exe', 'x\u2066y\u2069', '\u0085', 'line\u2028break', 'x'.repeat(200), 'x'.repeat(201), 'tab\there'), weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 },
);
const metrics = fc.dictionary(fc.string({ maxLength: 12 }), fc.oneof({ arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }), weight: 16 }, { arbitrary: fc.constant(null), weight: 3 }, { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 }), { maxKeys: 4 });
const rolloutData = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 });
/** An export: mostly well formed, steps distinct or not, rollouts within the caps (8 a step, 20 a run) or over. */
const runExport = fc.record({
  format: fc.oneof({ arbitrary: fc.constant('webgrpo-run'), weight: 9 }, { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 }),
  version: fc.oneof({ arbitrary: fc.constant(1), weight: 9 }, { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 }),
  run: fc.record({
    name: runName,
    status: fc.oneof({ arbitrary: fc.constantFrom('finished', 'running', 'created', 'failed', 'stopped', 'paused'), weight: 9 }, { arbitrary: fc.constant('bogus'), weight: 1 }),
    config: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
    model: fc.constant({ name: 'm' }),
    env: fc.constant({ name: 'echo' }),
  }, { requiredKeys: ['config', 'model', 'env'] }),
  // Distinct steps mostly; now and then a repeated, negative or fractional one.
  steps: fc.oneof(
    { arbitrary: fc.uniqueArray(fc.record({ step: fc.nat({ max: 30 }), metrics }), { maxLength: 12, selector: (s) => s.step }), weight: 6 },
    { arbitrary: fc.array(fc.record({ step: fc.oneof(fc.nat({ max: 30 }), fc.integer({ min: -3, max: -1 }), fc.constant(1.5)), metrics }), { maxLength: 12 }), weight: 1 },
  ),
  rollouts: fc.array(fc.record({ step: fc.nat({ max: 6 }), index: fc.nat(), data: rolloutData }), { maxLength: 16 }),
});
/** The text sent: an export, or one cut short, or nested too deep, or anything JSON. */
const importBody = fc.oneof(
  { arbitrary: runExport.map((e) => JSON.stringify(e)), weight: 8 },
  { arbitrary: runExport.chain((e) => fc.nat({ max: JSON.stringify(e).length }).map((n) => JSON.stringify(e).slice(0, n))), weight: 1 },
  { arbitrary: fc.integer({ min: 200, max: 2000 }).map((n) => `{"format":"webgrpo-run","version":1,"run":${'['.repeat(n)}`), weight: 1 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), weight: 1 },
);
const upload = fc.record({
  bundle: fc.constantFrom('adapter', 'model', 'checkpoint', 'other', '..', '%2e%2e'),
  files: fc.array(fc.record({
    name: fc.oneof(fc.constantFrom('adapter_model.safetensors', 'adapter_config.json', '../x', '', '.hidden', 'a/b', 'x'.repeat(200)), fc.jsonValue({ maxDepth: 1 })),
    base64: fc.oneof(fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64')), fc.constantFrom('!!!', '', '====', 'QQ'), fc.jsonValue({ maxDepth: 1 })),
  }), { maxLength: 3 }),
  /** Bytes of padding base64 (zeros), past the 2 MiB body limit sometimes. */
  padding: fc.constantFrom(0, 0, 0, 64 * 1024, 3 * MiB),
});
const action = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('import' as const), body: importBody, cutAfter: fc.oneof({ arbitrary: fc.constant(null), weight: 8 }, { arbitrary: fc.nat({ max: 200 }), weight: 1 }) }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('upload' as const), upload }), weight: 1 },
);

// ---- how it is thrown -----------------------------------------------------------------------

/** POST a body; `cutAfter` sends only that many bytes, then drops the connection. Status 0: no reply. */
function post(route: string, body: string, headers: Record<string, string> = {}, cutAfter: number | null = null): Promise<{ status: number; json: any }> {
  return new Promise((resolve) => {
    const req = http.request(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('end', () => {
        let json: unknown = null;
        try {
          json = JSON.parse(text);
        } catch {
          // left null: asserted below
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', () => resolve({ status: 0, json: null }));
    });
    req.on('error', () => resolve({ status: 0, json: null }));
    req.setTimeout(60_000, () => req.destroy());
    if (cutAfter === null) req.end(body);
    else {
      req.write(body.slice(0, cutAfter));
      setTimeout(() => req.destroy(), 20);
    }
  });
}

const totalRuns = async (): Promise<number> => ((await (await fetch(`${server.url}/api/runs?limit=1`)).json()) as { total: number }).total;

/** What the store keeps of an accepted export: steps and rollouts as sent (rollouts indexed per step, in order). */
function expectRoundTrip(sent: any, exported: any): void {
  expect(exported.steps).toEqual(sent.steps.map((s: any) => ({ step: s.step, metrics: s.metrics })).sort((a: any, b: any) => a.step - b.step));
  const perStep = new Map<number, unknown[]>();
  for (const r of sent.rollouts) perStep.set(r.step, [...(perStep.get(r.step) ?? []), r.data]);
  const expected = [...perStep].sort(([a], [b]) => a - b).flatMap(([step, list]) => list.map((data, index) => ({ step, index, data })));
  expect(exported.rollouts).toEqual(expected);
  expect(exported.run.name).toBe(typeof sent.run.name === 'string' ? sent.run.name.trim() : 'imported run');
}

describe('fuzzing the run store: imports and artifact uploads', () => {
  it(`survives ${RUNS} random imports and uploads, and keeps only whole, faithful runs`, async () => {
    const counts = { imported: 0, refused: 0, cut: 0, uploads: 0 };
    await fc.assert(
      fc.asyncProperty(action, async (a) => {
        if (a.kind === 'upload') {
          counts.uploads++;
          const files = a.upload.padding > 0 ? [...a.upload.files, { name: 'pad.bin', base64: 'A'.repeat(a.upload.padding) }] : a.upload.files;
          const reply = await post(`/api/runs/${run.id}/artifacts/${a.upload.bundle}`, JSON.stringify({ files }), { 'x-webgrpo-write-token': run.writeToken });
          expect(reply.status === 200 || (reply.status >= 400 && reply.status < 500), JSON.stringify(reply)).toBe(true);
          if (reply.status !== 200) expect(reply.json?.detail).toEqual(expect.any(String));
        } else {
          const before = await totalRuns();
          const reply = await post('/api/runs/import', a.body, {}, a.cutAfter);
          if (a.cutAfter !== null) {
            counts.cut++;
          } else {
            expect(reply.status === 201 || reply.status === 503 || (reply.status >= 400 && reply.status < 500), `${reply.status} ${JSON.stringify(reply.json)}`).toBe(true);
            if (reply.status === 201) {
              counts.imported++;
              const exported = await (await fetch(`${server.url}/api/runs/${reply.json.id}/export`)).json();
              expectRoundTrip(JSON.parse(a.body), exported);
              expect(await totalRuns()).toBe(before + 1);
            } else {
              counts.refused++;
              expect(reply.json?.detail).toEqual(expect.any(String));
            }
          }
          if (reply.status !== 201) expect(await totalRuns()).toBe(before);
        }
        expect(server.exited(), server.stderr().slice(-2000)).toBeNull();
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    expect(counts.imported).toBeGreaterThan(0);
    expect(counts.refused).toBeGreaterThan(0);
    console.log(JSON.stringify({ fuzzRunStore: counts }));
  }, 600_000);
});
