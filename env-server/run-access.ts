// Who may read what of the run store. A team server (`--host`) is reachable by everyone on the LAN and
// every web page the user visits can send it requests, so a run's id names it but opens nothing:
//   - reading a run needs its share token (in a share link; header or `?share=`) or its write token;
//   - the runs list shows a browser only the runs whose write tokens it presents (its own), never
//     anyone else's ids or share tokens;
//   - the local tools (the CLI, scripts, tests: loopback peer, loopback Host, no Origin, no
//     Sec-Fetch-*) read everything, as the database file on this machine is theirs anyway.
// Write tokens travel only in the `x-webgrpo-write-token` header or a JSON body, never in a URL.
import type { IncomingMessage } from 'node:http';
import type { ReadCredentials } from './runs.ts';

export const WRITE_TOKEN_HEADER = 'x-webgrpo-write-token';
export const SHARE_TOKEN_HEADER = 'x-webgrpo-share-token';
/** The query parameter of read URLs a page navigates to (downloads), where it cannot set headers. */
export const SHARE_TOKEN_PARAM = 'share';

const LOOPBACK_PEER = /^(127\.\d+\.\d+\.\d+|::1|::ffff:127\.\d+\.\d+\.\d+)$/;
/** A Host header a program on this machine sends: a loopback address or `localhost`, with an optional port. */
const LOOPBACK_HOST = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|localhost|\[::1\])(:\d{1,5})?$/i;

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? undefined : v;
}

/**
 * A program on this machine, not a web page: the peer is loopback, the Host names a loopback address
 * (or `localhost`), and the request carries neither of the headers browsers add to a page's requests
 * to a loopback server (Origin on cross-origin and unsafe ones, Sec-Fetch-Site on every one since
 * Chrome 76 / Firefox 90 / Safari 16.4). Node's fetch sends Sec-Fetch-Mode but never these, so scripts
 * count as local tools. The Host matters: to an `--allow-host` name that resolves to loopback,
 * Chromium sends a foreign page's no-cors GET with neither header, so such a name never counts.
 */
export function isLocalTool(req: IncomingMessage): boolean {
  const peer = req.socket.remoteAddress ?? '';
  const host = req.headers.host ?? '';
  return LOOPBACK_PEER.test(peer) && LOOPBACK_HOST.test(host) && req.headers.origin === undefined && req.headers['sec-fetch-site'] === undefined;
}

/** The credentials a read request presents. */
export function readCredentials(req: IncomingMessage, url: URL): ReadCredentials {
  return {
    shareToken: header(req, SHARE_TOKEN_HEADER) ?? url.searchParams.get(SHARE_TOKEN_PARAM) ?? undefined,
    writeToken: header(req, WRITE_TOKEN_HEADER),
  };
}

/** The app's link to a run for readers: the share token rides in the fragment, which is never sent to a server. */
export function shareLink(id: string, shareToken: string): string {
  return `/#/runs/${id}?${SHARE_TOKEN_PARAM}=${shareToken}`;
}
