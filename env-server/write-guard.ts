// Who may write to the run store. The server listens on 127.0.0.1, which every web page the user
// visits can reach too; a page can send "simple" cross-origin requests (text/plain bodies, no
// preflight) and read nothing back, which is enough to write. So a write must:
//   - not be marked cross-site by the browser (Sec-Fetch-Site: same-origin, or none for typed URLs);
//   - carry no Origin, or the server's own (`http(s)://<Host>`); over plain http that Host must be
//     an IP literal or localhost, or a DNS-rebinding page (Origin = Host = evil.example) would pass;
//   - be `application/json`, which a cross-origin page can only send after a CORS preflight this
//     server never approves.
// Clients that are not browsers (curl, the CLI) send no Origin and pass the first two checks.
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

export interface WriteRefusal {
  status: 403 | 415;
  detail: string;
}

function loopbackOrIpHost(host: string): boolean {
  const name = host.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost');
}

export function writeRefusal(req: IncomingMessage): WriteRefusal | null {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { status: 403, detail: `Run store writes are accepted only from the app's own origin (Sec-Fetch-Site: ${site})` };
  }
  const origin = req.headers.origin;
  if (origin !== undefined) {
    const host = req.headers.host ?? '';
    const own = origin === `http://${host}` || origin === `https://${host}`;
    if (!own) return { status: 403, detail: `Run store writes are accepted only from the app's own origin, not ${origin}` };
    if (origin.startsWith('http://') && !loopbackOrIpHost(host)) {
      return { status: 403, detail: `Run store writes over plain http are accepted only at an IP address or localhost, not ${host}` };
    }
  }
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') {
    return { status: 415, detail: `Run store writes must be sent as application/json, got ${JSON.stringify(req.headers['content-type'] ?? '')}` };
  }
  return null;
}
