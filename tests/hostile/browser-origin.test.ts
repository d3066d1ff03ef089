// The run store's origin rules as a real browser exercises them: a page on another origin (another
// port, another host name) posts a run to `webgrpo start` on 127.0.0.1 the way any web page can —
// a no-cors text/plain fetch needs no preflight — and nothing reaches the store; the app's own
// page posts JSON the way src/app/api.ts does, and it is stored.
import Database from 'better-sqlite3';
import http from 'node:http';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../browser/harness.ts';
import { fakeDist, startServerProcess, tempDir, type ServerProcess } from './server-process.ts';

let work: ReturnType<typeof tempDir>;
let app: ServerProcess;
let evil: http.Server;
let evilPort = 0;
let browser: Browser;

beforeAll(async () => {
  work = tempDir('webgrpo-origin-');
  fakeDist(path.join(work.dir, 'dist'), 0, 0);
  app = await startServerProcess('start', ['--data', path.join(work.dir, 'data'), '--dist', path.join(work.dir, 'dist')]);
  evil = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>some other site</title>');
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', () => r()));
  evilPort = (evil.address() as { port: number }).port;
  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await app?.stop();
  await new Promise<void>((r) => (evil ? evil.close(() => r()) : r()));
  work?.cleanup();
});

function storedRuns(): string[] {
  const db = new Database(path.join(work.dir, 'data', 'runs.db'), { readonly: true });
  try {
    return (db.prepare('SELECT name FROM runs').all() as { name: string }[]).map((r) => r.name);
  } finally {
    db.close();
  }
}

describe('run store writes from a browser', () => {
  it('refuses a cross-origin text/plain post and accepts the app page\'s own JSON post', async () => {
    const page = await browser.newPage();
    try {
      for (const other of [`http://127.0.0.1:${evilPort}/`, `http://localhost:${evilPort}/`]) {
        await page.goto(other);
        const sent = await page.evaluate(async (target) => {
          const body = JSON.stringify({ name: 'planted', config: {}, model: {}, env: {} });
          // The only kind of write a foreign page can make without the server's consent.
          const r = await fetch(target, { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body });
          return r.type;
        }, `${app.url}/api/runs`);
        expect(sent).toBe('opaque');
      }
      expect(storedRuns()).toEqual([]);

      await page.goto(`${app.url}/`);
      const own = await page.evaluate(async () => {
        const r = await fetch('/api/runs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'mine', config: {}, model: {}, env: {} }) });
        return r.status;
      });
      expect(own).toBe(201);
      expect(storedRuns()).toEqual(['mine']);
      expect(app.stderr()).not.toMatch(/Run store failure/);
    } finally {
      await page.close();
    }
  }, 60_000);
});
