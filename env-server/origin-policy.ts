// Who may reach the env-server (Host) and who may make it do anything (Origin). The server listens
// on 127.0.0.1, which every web page the user visits can reach too, so:
//   - Host: only loopback names and addresses, the bound host and `--allow-host` values. A page on
//     evil.example whose name was re-pointed at 127.0.0.1 (DNS rebinding) sends `Host: evil.example`
//     and is turned away before any route runs, so it can read nothing, not even the runs list.
//   - Origin: a WebSocket upgrade, and every request that changes state, opens a session or starts
//     work, is accepted only with no Origin (curl, the CLI, OpenEnv's Python clients, TRL: they send
//     none) or the server's own origin (plus `--allow-origin` values). Browsers send Origin on every
//     WebSocket handshake and every POST, no-cors ones included, and mark cross-site fetches with
//     Sec-Fetch-Site even where they omit Origin (a no-cors GET). `Origin: null` is a sandboxed page,
//     a data: or file: URL: foreign, always; it is what the upstream pages served here (sandboxed,
//     see server.ts) send.
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';

export interface Refusal {
  status: 403 | 421;
  detail: string;
}

export interface RequestPolicyOptions {
  /** The address the server is bound to (a name or address there is accepted as Host). */
  boundHost?: string;
  /** More Host names to serve (`--allow-host`), e.g. the name of a server bound elsewhere. */
  allowHosts?: string[];
  /** More origins to trust (`--allow-origin`), e.g. `http://localhost:5173`. */
  allowOrigins?: string[];
}

export interface RequestPolicy {
  /** Null when the request's Host is one this server answers to. */
  hostRefusal(headers: IncomingHttpHeaders): Refusal | null;
  /** Null when the request comes from no browser page, or from the app's own (or an allowed) origin. */
  originRefusal(headers: IncomingHttpHeaders): Refusal | null;
}

/** The hostname of a Host header value, lowercased, IPv6 without brackets; null when it is not a host[:port]. */
function hostnameOf(host: string): string | null {
  if (host === '' || /[/?#@\\\s]/.test(host)) return null;
  try {
    const url = new URL(`http://${host}/`);
    return url.hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '');
  } catch {
    return null;
  }
}

function isLoopback(hostname: string): boolean {
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return true;
  if (isIP(hostname) === 4) return hostname.startsWith('127.');
  return hostname === '::1';
}

/** A host name or address as given on the command line (IPv6 with or without brackets) → hostname; null if it is not one. */
function addressName(value: string): string | null {
  const bare = value.replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare) === 6) return hostnameOf(`[${bare}]`);
  return bare.includes(':') ? null : hostnameOf(bare) || null;
}

function checkedHost(value: string): string {
  const hostname = addressName(value);
  if (hostname === null) throw new Error(`--allow-host: expected a host name or address without scheme, port or path, got '${value}'`);
  return hostname;
}

/** `--allow-origin` value → its serialized origin; throws naming the value unless it is exactly an http(s) origin. */
function checkedOrigin(value: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  const bare = url !== null && url.pathname === '/' && url.search === '' && url.hash === '' && url.username === '' && url.password === '';
  if (url === null || !/^https?:$/.test(url.protocol) || !bare) {
    throw new Error(`--allow-origin: expected an origin such as http://localhost:5173 (scheme, host, optional port; no path), got '${value}'`);
  }
  return url.origin;
}

/** One header value; a repeated one is joined, so it never equals an allowed value. */
function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(', ') : value;
}

export function createRequestPolicy(options: RequestPolicyOptions = {}): RequestPolicy {
  const allowedHosts = new Set((options.allowHosts ?? []).map(checkedHost));
  const bound = options.boundHost === undefined ? null : addressName(options.boundHost);
  // A wildcard bind address is not a name anyone reaches the server by.
  if (bound !== null && bound !== '0.0.0.0' && bound !== '::') allowedHosts.add(bound);
  const allowedOrigins = new Set((options.allowOrigins ?? []).map(checkedOrigin));

  return {
    hostRefusal(headers) {
      // HTTP/1.1 without Host never reaches us (Node answers 400); HTTP/1.0 without one is no browser.
      const host = single(headers.host);
      if (host === undefined) return null;
      const hostname = hostnameOf(host);
      if (hostname !== null && (isLoopback(hostname) || allowedHosts.has(hostname))) return null;
      return {
        status: 421,
        detail: `Host ${JSON.stringify(host)} is not served here: this server answers only to loopback names and addresses, its bound host and --allow-host values (a foreign Host is how DNS rebinding reaches a local server)`,
      };
    },

    originRefusal(headers) {
      const origin = single(headers.origin);
      if (origin !== undefined && allowedOrigins.has(origin)) return null;
      const site = single(headers['sec-fetch-site']);
      const from = origin === undefined ? '' : ` (Origin: ${origin})`;
      if (site !== undefined && site !== 'same-origin' && site !== 'none') {
        return { status: 403, detail: `Refused a ${site} request${from}: only the app's own origin and clients that are not web pages may use this server (--allow-origin trusts another origin)` };
      }
      if (origin === undefined || isOwnOrigin(origin, single(headers.host))) return null;
      const what = origin === 'null' ? 'null (a sandboxed page, or a data: or file: URL)' : origin;
      return { status: 403, detail: `Refused a request from the web page origin ${what}: only the app's own origin and clients that are not web pages may use this server (--allow-origin trusts another origin)` };
    },
  };
}

/** The page was served by this very server: its origin is `http(s)://<Host>` (Host is allowlisted already). */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  const scheme = /^(https?):\/\//.exec(origin)?.[1];
  if (scheme === undefined) return false;
  try {
    return new URL(`${scheme}://${host}`).origin === new URL(origin).origin && new URL(origin).origin === origin;
  } catch {
    return false;
  }
}
