// An env server's HTTP replies are read under a byte cap (src/openenv/http-reply.ts): huge, endless,
// lying and truncated bodies end in an error naming the route, never in unbounded memory or a hang.
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpEpisode } from '../../src/openenv/http-episode.ts';
import { MAX_HTTP_REPLY_BYTES } from '../../src/openenv/http-reply.ts';

let server: Server;
let base = '';
let served = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url === '/reset') return res.end(JSON.stringify({ observation: { text: 'hi' }, reward: null, done: false }));
      if (req.url === '/step') {
        // Endless: chunks until the client stops reading.
        res.writeHead(200, { 'content-type': 'application/json' });
        const chunk = Buffer.alloc(1024 * 1024, 0x20);
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) served += chunk.length;
          if (!res.destroyed) res.once('drain', pump);
        };
        res.on('close', () => {});
        return pump();
      }
      if (req.url === '/mcp') {
        // Says 1 GiB, sends a little.
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(2 ** 30) });
        res.write('{"jsonrpc"');
        return;
      }
      // Truncated: says 100 bytes, sends 10, hangs up.
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"partial"');
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe('HTTP replies of an env server', () => {
  it('a normal reply parses; an endless one stops at the cap; a lying length is refused unread; a truncated one errors', async () => {
    const ep = new HttpEpisode(base, 30_000);
    expect(await ep.reset({})).toMatchObject({ observation: { text: 'hi' } });
    await expect(ep.step({ type: 'noop' })).rejects.toThrow(`Reply to POST ${base}/step is more than ${MAX_HTTP_REPLY_BYTES} bytes, over the ${MAX_HTTP_REPLY_BYTES} bytes an env reply may have`);
    // The client read at most the cap and a little more in flight, not the endless body.
    expect(served).toBeLessThan(MAX_HTTP_REPLY_BYTES * 4);
    await expect(ep.mcp({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).rejects.toThrow(`Reply to POST ${base}/mcp is ${2 ** 30} bytes, over the`);
    const broken = new HttpEpisode(`${base}/truncated`, 30_000);
    await expect(broken.reset({})).rejects.toThrow();
  }, 60_000);
});
